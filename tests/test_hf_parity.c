/* Parity with Hugging Face transformers: the tiny random LlamaForCausalLM models of
 * tests/fixtures/hf/ (made once by make_llama_fixtures.py: llama_gqa with grouped-query
 * attention, llama3 rope scaling and an untied head; llama_bias with attention_bias,
 * mlp_bias and a tied head), read from their model directories, give HF's logits and
 * loss on the fixture's batch, and after 3 AdamW steps on it HF's weights.
 *
 * Tolerances (fp32 everywhere; HF sums in other orders, so bits differ):
 *   logits  max |ours - HF| / max |HF|             <= 1e-5
 *   loss    |ours - HF| / |HF|                     <= 1e-5
 *   weights rms(ours - HF) / rms(HF) after 3 steps <= 1e-4 (Adam divides each gradient
 *           by its own running magnitude, so a near-zero gradient's rounding can move
 *           its element by up to lr: the rms, not the max, is the measure)
 * Each is run at ZeRO stage 0 and 3 (which the exactness contract makes the same bits). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"
#include "zero/zero.h"

#define LOGITS_TOL 1e-5
#define LOSS_TOL 1e-5
#define WEIGHTS_TOL 1e-4

static const char *const variants[] = {"llama_gqa", "llama_bias"};

static void fixture_path(char *out, size_t n, const char *variant, const char *file)
{
    const char *src = getenv("ZERO_TEST_SRCDIR");
    snprintf(out, n, "%s/fixtures/hf/%s%s%s", src ? src : "tests", variant, file ? "/" : "",
             file ? file : "");
}

/* tensor `name` of an open safetensors file, as want (numel elements), malloc'd */
static void *read_tensor(struct zero_st_file *f, const char *name, enum zero_dtype want,
                         size_t *numel)
{
    int i = zero_st_find(f, name);
    ck_assert_msg(i >= 0, "fixture tensor %s missing", name);
    *numel = zero_st_numel(zero_st_tensor(f, i));
    void *p = malloc(*numel * zero_dtype_size(want) + 1);
    struct zero_error err = {0};
    ck_assert_msg(zero_st_read(f, i, p, want, *numel, &err) == 0, "%s", err.msg);
    return p;
}

struct fixture {
    struct zero_llama_config c;
    int64_t B, T;
    int32_t *tokens, *targets; /* (B*T) */
    float *logits;             /* (B*T, V) */
    float loss;
    struct zero_st_file *after; /* the weights after 3 steps */
};

static void fixture_open(struct fixture *x, const char *variant)
{
    char path[512];
    struct zero_error err = {0};
    fixture_path(path, sizeof path, variant, "config.json");
    ck_assert_msg(zero_hf_config_read(&x->c, path, NULL, 0, &err) == 0, "%s", err.msg);
    struct zero_st_file *f = NULL;
    fixture_path(path, sizeof path, variant, "expected.safetensors");
    ck_assert_msg(zero_st_open(&f, path, &err) == 0, "%s", err.msg);
    size_t n;
    x->tokens = read_tensor(f, "tokens", ZERO_I32, &n);
    x->B = zero_st_tensor(f, zero_st_find(f, "tokens"))->shape[0];
    x->T = zero_st_tensor(f, zero_st_find(f, "tokens"))->shape[1];
    x->targets = read_tensor(f, "targets", ZERO_I32, &n);
    x->logits = read_tensor(f, "logits", ZERO_F32, &n);
    ck_assert_int_eq((int64_t)n, x->B * x->T * x->c.vocab_size);
    float *loss = read_tensor(f, "loss", ZERO_F32, &n);
    x->loss = *loss;
    free(loss);
    zero_st_close(f);
    fixture_path(path, sizeof path, variant, "after3.safetensors");
    ck_assert_msg(zero_st_open(&x->after, path, &err) == 0, "%s", err.msg);
}

static void fixture_close(struct fixture *x)
{
    free(x->tokens);
    free(x->targets);
    free(x->logits);
    zero_st_close(x->after);
}

struct trainer {
    struct zero_device *dev;
    struct zero_model *m;
    struct zero_engine *e;
};

/* The fixture's model directory read into an engine at `stage`, with HF's AdamW. */
static void trainer_open(struct trainer *t, const struct fixture *x, const char *variant, int stage)
{
    struct zero_error err = {0};
    MPI_Comm comm = MPI_COMM_WORLD;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    ck_assert_msg(zero_device_open(&t->dev, "cpu", &comm, &opt, &err) == 0, "%s", err.msg);
    ck_assert_msg(zero_nn_build_llama(&t->m, &x->c, &(struct zero_llama_build){.block_size = x->T},
                                      &err) == 0,
                  "%s", err.msg);
    struct zero_config cfg;
    zero_config_defaults(&cfg);
    cfg.zero_optimization.stage = stage;
    cfg.optimizer.type = ZERO_OPTIM_ADAMW;
    cfg.optimizer.lr = 1e-2, cfg.optimizer.betas[0] = 0.9, cfg.optimizer.betas[1] = 0.95;
    cfg.optimizer.eps = 1e-8, cfg.optimizer.weight_decay = 0.1;
    cfg.gradient_clipping = 0;
    cfg.train_micro_batch_size_per_gpu = x->B;
    cfg.gradient_accumulation_steps = 1;
    ck_assert_msg(zero_engine_create(&t->e, &cfg, t->m, t->dev, &err) == 0, "%s", err.msg);
    char dir[512];
    fixture_path(dir, sizeof dir, variant, NULL);
    struct zero_hf_weights *w = NULL;
    ck_assert_msg(zero_hf_weights_open(&w, dir, &err) == 0, "%s", err.msg);
    ck_assert_msg(zero_hf_weights_check_llama(w, &x->c, &err) == 0, "%s", err.msg);
    for (int k = 0; k < zero_llama_tensor_count(&x->c); k++) {
        struct zero_llama_tensor lt;
        ck_assert(zero_llama_tensor(&x->c, k, &lt, &err) == 0);
        size_t numel = (size_t)(lt.shape[0] * (lt.ndim == 2 ? lt.shape[1] : 1));
        float *host = malloc(numel * sizeof *host);
        ck_assert_msg(zero_hf_weights_read(w, zero_hf_weights_find(w, lt.name), host, ZERO_F32,
                                           numel, &err) == 0,
                      "%s", err.msg);
        ck_assert_msg(zero_engine_write_param(t->e, lt.unit, lt.param, host, &err) == 0, "%s",
                      err.msg);
        free(host);
    }
    zero_hf_weights_close(w);
}

static void trainer_close(struct trainer *t)
{
    zero_engine_destroy(t->e);
    zero_model_destroy(t->m);
    zero_device_close(t->dev);
}

START_TEST(test_hf_llama_logits_and_loss_match_transformers)
{
    const char *variant = variants[_i % 2];
    int stage = _i / 2 ? 3 : 0;
    struct fixture x;
    fixture_open(&x, variant);
    struct trainer t;
    trainer_open(&t, &x, variant, stage);
    struct zero_error err = {0};
    struct zero_batch b = {.rows = x.B * x.T, .tokens = x.tokens, .labels = x.targets};
    size_t n = (size_t)(x.B * x.T * x.c.vocab_size);
    float *logits = malloc(n * sizeof *logits);
    ck_assert_msg(zero_engine_predict(t.e, &b, logits, &err) == 0, "%s", err.msg);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs((double)logits[i] - x.logits[i]));
        scale = fmax(scale, fabs((double)x.logits[i]));
    }
    float loss;
    ck_assert_msg(zero_engine_eval(t.e, &b, &loss, &err) == 0, "%s", err.msg);
    double loss_rel = fabs((double)loss - x.loss) / fabs((double)x.loss);
    printf("%s stage %d: logits max rel %.3g, loss %.9g vs HF %.9g (rel %.3g)\n", variant, stage,
           worst / scale, loss, x.loss, loss_rel);
    ck_assert_msg(worst / scale <= LOGITS_TOL, "%s: logits differ by %g relative", variant,
                  worst / scale);
    ck_assert_msg(loss_rel <= LOSS_TOL, "%s: loss %.9g, HF's %.9g", variant, loss, x.loss);
    free(logits);
    trainer_close(&t);
    fixture_close(&x);
}
END_TEST

START_TEST(test_hf_llama_three_adamw_steps_match_transformers)
{
    const char *variant = variants[_i % 2];
    int stage = _i / 2 ? 3 : 0;
    struct fixture x;
    fixture_open(&x, variant);
    struct trainer t;
    trainer_open(&t, &x, variant, stage);
    struct zero_error err = {0};
    struct zero_batch b = {.rows = x.B * x.T, .tokens = x.tokens, .labels = x.targets};
    for (int step = 0; step < 3; step++) {
        ck_assert_msg(zero_engine_forward(t.e, &b, NULL, &err) == 0, "%s", err.msg);
        ck_assert_msg(zero_engine_backward(t.e, &err) == 0, "%s", err.msg);
        ck_assert_msg(zero_engine_step(t.e, NULL, &err) == 0, "%s", err.msg);
    }
    double diff2 = 0, ref2 = 0;
    for (int k = 0; k < zero_llama_tensor_count(&x.c); k++) {
        struct zero_llama_tensor lt;
        ck_assert(zero_llama_tensor(&x.c, k, &lt, &err) == 0);
        size_t numel;
        float *hf = read_tensor(x.after, lt.name, ZERO_F32, &numel);
        float *ours = malloc(numel * sizeof *ours);
        ck_assert_msg(zero_engine_read_param(t.e, lt.unit, lt.param, ours, &err) == 0, "%s",
                      err.msg);
        for (size_t i = 0; i < numel; i++) {
            diff2 += ((double)ours[i] - hf[i]) * ((double)ours[i] - hf[i]);
            ref2 += (double)hf[i] * hf[i];
        }
        free(hf);
        free(ours);
    }
    double rel = sqrt(diff2 / ref2);
    printf("%s stage %d: weights after 3 AdamW steps rms rel %.3g\n", variant, stage, rel);
    ck_assert_msg(rel <= WEIGHTS_TOL, "%s: 3-step weights differ by %g rms relative", variant, rel);
    trainer_close(&t);
    fixture_close(&x);
}
END_TEST

static Suite *parity_suite(void)
{
    Suite *s = suite_create("hf_parity");
    TCase *tc = tcase_create("transformers");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_hf_llama_logits_and_loss_match_transformers, 0, 4);
    tcase_add_loop_test(tc, test_hf_llama_three_adamw_steps_match_transformers, 0, 4);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_check_main(&argc, &argv, parity_suite);
}

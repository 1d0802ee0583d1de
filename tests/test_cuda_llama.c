/* The llama group on cuda against the cpu's bits: every kernel on the same random
 * inputs gives the same bits (exact mode, and native mode, which these kernels do not
 * change), and a tiny Llama (GQA, llama3 rope, untied head) trained at stages 0 and 3
 * ends with the cpu's weights bit for bit. Skips (77) where no CUDA device is found. */
#include <check.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_pair.h"
#include "mpi_check.h"
#include "zero/backend_llama.h"
#include "zero/zero.h"

static struct zero_device *cpu, *gpu;

static uint64_t rng = 12345;
static float uniform(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(rng >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
}

/* n floats on device d, copied from host h (NULL: uninitialized) */
static float *up(struct zero_device *d, const float *h, size_t n)
{
    void *p = NULL;
    ck_assert_int_eq(d->be->alloc(d->self, n * sizeof(float), ZERO_TAG_WORKSPACE, &p), 0);
    if (h != NULL)
        ck_assert_int_eq(d->be->from_host(d->self, p, h, n * sizeof(float)), 0);
    return p;
}

static void same(struct zero_device *a, const float *da, struct zero_device *b, const float *db,
                 size_t n, const char *what)
{
    float *ha = malloc(n * sizeof(float)), *hb = malloc(n * sizeof(float));
    ck_assert_int_eq(a->be->to_host(a->self, ha, da, n * sizeof(float)), 0);
    ck_assert_int_eq(b->be->to_host(b->self, hb, db, n * sizeof(float)), 0);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(memcmp(&ha[i], &hb[i], sizeof(float)) == 0, "%s[%zu]: cpu %.9g, cuda %.9g",
                      what, i, (double)ha[i], (double)hb[i]);
    free(ha), free(hb);
}

/* Runs one entry on both devices with the same inputs and compares every output. */
START_TEST(test_cuda_llama_kernels_give_the_cpu_bits)
{
    const int64_t rows = 37, C = 96, T = 5, H = 6, KV = 2, D = 16;
    const size_t nx = (size_t)(rows * C), nq = (size_t)(rows * H * D), nk = (size_t)(rows * KV * D);
    float *hx = malloc(nx * 4), *hw = malloc((size_t)C * 4), *hq = malloc(3 * nq * 4);
    for (size_t i = 0; i < nx; i++)
        hx[i] = uniform() * 3.0f;
    for (int64_t i = 0; i < C; i++)
        hw[i] = uniform();
    for (size_t i = 0; i < 3 * nq; i++)
        hq[i] = uniform() * 4.0f;
    struct zero_device *dev[2] = {cpu, gpu};
    float *x[2], *w[2], *y[2], *rstd[2], *dx[2], *dw[2], *cs[2], *sn[2], *q[2], *k[2], *v[2];
    float *qkv[2], *h[2];
    const struct zero_rope_params p = {.theta = 500000.0,
                                       .llama3 = 1,
                                       .factor = 8.0,
                                       .low_freq_factor = 1.0,
                                       .high_freq_factor = 4.0,
                                       .original_max_position_embeddings = 4.0};
    for (int j = 0; j < 2; j++) {
        const struct zero_llama_ops *ops = dev[j]->be->llama;
        void *sf = dev[j]->self;
        ck_assert_ptr_nonnull(ops);
        x[j] = up(dev[j], hx, nx), w[j] = up(dev[j], hw, (size_t)C);
        y[j] = up(dev[j], NULL, nx), rstd[j] = up(dev[j], NULL, (size_t)rows);
        dx[j] = up(dev[j], hx, nx), dw[j] = up(dev[j], hw, (size_t)C);
        ck_assert_int_eq(ops->rmsnorm_forward(sf, y[j], rstd[j], x[j], w[j], rows, C, 1e-6f), 0);
        ck_assert_int_eq(
            ops->rmsnorm_backward(sf, dx[j], dw[j], y[j], x[j], w[j], rstd[j], rows, C, 1.0f, 1.0f),
            0);
        cs[j] = up(dev[j], NULL, (size_t)(T * D / 2)),
        sn[j] = up(dev[j], NULL, (size_t)(T * D / 2));
        ck_assert_int_eq(ops->rope_table(sf, cs[j], sn[j], T, D, &p), 0);
        q[j] = up(dev[j], hq, nq), k[j] = up(dev[j], hq + nq, nk),
        v[j] = up(dev[j], hq + 2 * nq, nk);
        ck_assert_int_eq(ops->rope_apply(sf, q[j], cs[j], sn[j], rows, T, H, D, 0), 0);
        ck_assert_int_eq(ops->rope_apply(sf, k[j], cs[j], sn[j], rows, T, KV, D, 1), 0);
        qkv[j] = up(dev[j], NULL, 3 * nq);
        ck_assert_int_eq(ops->gqa_pack(sf, qkv[j], q[j], k[j], v[j], rows, H, KV, D), 0);
        ck_assert_int_eq(ops->gqa_unpack(sf, q[j], k[j], v[j], qkv[j], rows, H, KV, D), 0);
        h[j] = up(dev[j], NULL, nq);
        ck_assert_int_eq(ops->swiglu_forward(sf, h[j], q[j], qkv[j], nq), 0);
        ck_assert_int_eq(ops->swiglu_backward(sf, q[j], qkv[j], h[j], q[j], qkv[j] + nq, nq), 0);
        ck_assert_int_eq(dev[j]->be->synchronize(sf), 0);
    }
    same(cpu, y[0], gpu, y[1], nx, "rmsnorm y");
    same(cpu, rstd[0], gpu, rstd[1], (size_t)rows, "rmsnorm rstd");
    same(cpu, dx[0], gpu, dx[1], nx, "rmsnorm dx");
    same(cpu, dw[0], gpu, dw[1], (size_t)C, "rmsnorm dweight");
    same(cpu, cs[0], gpu, cs[1], (size_t)(T * D / 2), "rope cos");
    same(cpu, sn[0], gpu, sn[1], (size_t)(T * D / 2), "rope sin");
    same(cpu, k[0], gpu, k[1], nk, "gqa dk");
    same(cpu, v[0], gpu, v[1], nk, "gqa dv");
    same(cpu, h[0], gpu, h[1], nq, "swiglu h");
    same(cpu, q[0], gpu, q[1], nq, "swiglu dgate");
    same(cpu, qkv[0], gpu, qkv[1], nq, "swiglu dup");
    for (int j = 0; j < 2; j++) {
        float *all[] = {x[j],  w[j], y[j], rstd[j], dx[j],  dw[j], cs[j],
                        sn[j], q[j], k[j], v[j],    qkv[j], h[j]};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            dev[j]->be->free(dev[j]->self, all[i]);
    }
    free(hx), free(hw), free(hq);
}
END_TEST

#define T_SEQ 8
#define MICRO 2
#define STEPS 3

static int train(struct zero_device *d, int stage, float *final, int64_t *n, struct zero_error *err)
{
    struct zero_config cfg;
    zero_config_defaults(&cfg);
    cfg.zero_optimization.stage = stage;
    cfg.zero_optimization.stage3_param_persistence_threshold = 0;
    cfg.optimizer.type = ZERO_OPTIM_ADAMW;
    cfg.optimizer.lr = 1e-2;
    cfg.train_micro_batch_size_per_gpu = MICRO;
    cfg.libzero.align = 64;
    struct zero_llama_config c;
    zero_llama_config_default(&c);
    c.vocab_size = 24, c.hidden_size = 16, c.intermediate_size = 24, c.num_hidden_layers = 2;
    c.num_attention_heads = 4, c.num_key_value_heads = 2, c.head_dim = 4;
    c.max_position_embeddings = 32, c.rope_scaling.type = ZERO_ROPE_SCALING_LLAMA3;
    c.rope_scaling.factor = 8, c.rope_scaling.low_freq_factor = 1,
    c.rope_scaling.high_freq_factor = 4;
    c.rope_scaling.original_max_position_embeddings = 16;
    struct zero_model *m = NULL;
    struct zero_engine *e = NULL;
    int rc = zero_nn_build_llama(&m, &c, &(struct zero_llama_build){.block_size = T_SEQ}, err);
    if (!rc)
        rc = zero_engine_create(&e, &cfg, m, d, err);
    for (int step = 0; step < STEPS && !rc; step++) {
        int32_t tokens[MICRO * T_SEQ], labels[MICRO * T_SEQ];
        for (int i = 0; i < MICRO * T_SEQ; i++) {
            tokens[i] = (int32_t)((step * 5 + i * 3 + d->rank) % 24);
            labels[i] = (int32_t)((step * 5 + i * 3 + 3 + d->rank) % 24);
        }
        struct zero_batch b = {.rows = MICRO * T_SEQ, .tokens = tokens, .labels = labels};
        if (!(rc = zero_engine_forward(e, &b, NULL, err)) && !(rc = zero_engine_backward(e, err)))
            rc = zero_engine_step(e, NULL, err);
    }
    int64_t at = 0;
    for (int u = 0; !rc && u < m->nunits; u++)
        for (int p = 0; !rc && p < m->units[u]->nparams; p++) {
            rc = zero_engine_read_param(e, u, p, final + at, err);
            at += zero_param_numel(&m->units[u]->params[p]);
        }
    *n = at;
    zero_engine_destroy(e);
    zero_model_destroy(m);
    return rc;
}

START_TEST(test_cuda_trains_a_tiny_llama_to_the_cpu_bits_at_stages_0_and_3)
{
    static float want[1 << 14], got[1 << 14];
    for (int stage = 0; stage < 4; stage += 3) {
        struct zero_error err = {0};
        int64_t n = 0, n2 = 0;
        ck_assert_msg(train(cpu, stage, want, &n, &err) == 0, "cpu: %s", err.msg);
        ck_assert_msg(train(gpu, stage, got, &n2, &err) == 0, "cuda: %s", err.msg);
        ck_assert_int_eq(n, n2);
        for (int64_t i = 0; i < n; i++)
            ck_assert_msg(memcmp(&want[i], &got[i], sizeof(float)) == 0,
                          "stage %d: weight %lld: cpu %.9g, cuda %.9g", stage, (long long)i,
                          (double)want[i], (double)got[i]);
    }
}
END_TEST

static Suite *llama_suite(void)
{
    Suite *s = suite_create("cuda_llama");
    TCase *tc = tcase_create("llama");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_cuda_llama_kernels_give_the_cpu_bits);
    tcase_add_test(tc, test_cuda_trains_a_tiny_llama_to_the_cpu_bits_at_stages_0_and_3);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int opened = cuda_pair_open("test_cuda_llama", &cpu, &gpu);
    if (opened != 0) {
        MPI_Finalize();
        return opened;
    }
    int status = mpi_check_run(llama_suite);
    zero_device_close(gpu);
    zero_device_close(cpu);
    MPI_Finalize();
    return status;
}

/* The cuda backend trains like the cpu backend: the toy MLP and a tiny GPT, 10 optimizer
 * steps with the same configuration and data on backend "cpu" and backend "cuda", ZeRO
 * stages 0-3, then the final parameters compared.
 *
 * Metric: rel = max_i |cuda_i - cpu_i| / max_i |cpu_i| over every parameter, whole, as
 * zero_engine_read_param gives it (the fp32 master). It is relative to the largest
 * weight, not element by element: a weight near zero may differ by a larger fraction of
 * itself and still be as accurate as the model needs.
 *
 *   fp32: rel <= 1e-5. The backends differ only where cuBLAS sums a GEMM in another
 *   order than OpenBLAS and in expf/tanhf (GELU, softmax), a few ulp; every other kernel
 *   and every exact-mode collective gives the cpu's bits (test_cuda_backend.c). Simulated
 *   on the cpu backend (noise of 1e-7 and 1e-6 relative on the initial weights, then the
 *   10 steps below, 1 rank) both models ended less than 1e-6 apart.
 *
 *   bf16: rel <= 2e-3. Parameters and gradients are bf16 and so are the GEMM operands
 *   (libzero.matmul = compute on both backends: what "auto" picks on cuda), 8
 *   significant bits: where the two backends' fp32 results straddle a rounding boundary
 *   their bf16 values differ by one ulp (2^-8 to 2^-7 relative), and the updates carry
 *   such flips into the fp32 master. Each backend's bf16 run is a rounding of the same fp32 run,
 * which the two fp32 runs agree on to 1e-6, so cuda and cpu in bf16 differ by at most about twice
 *   the distance from bf16 to fp32 training. On the cpu backend that distance is 9e-4
 *   (MLP) and 5e-4 (GPT) after these 10 steps: 2e-3 is twice the larger, rounded up.
 *   (The simulation above, in bf16, ended 5e-4 apart at most.)
 *
 * A tolerance means something only if training moves the weights by more: every run
 * also checks max|cpu - initial| / max|cpu| >= 10 x the tolerance: a cuda backend that
 * did not update at all then fails by a factor of 10.
 *
 * Optimizer: SGD with momentum, not Adam. Adam divides each update by sqrt(v): a
 * gradient that is zero in exact arithmetic but rounding noise in floating point (the
 * attention key bias: softmax ignores a per-query constant) gets an update of up to lr
 * whatever its size, its sign set by the noise, so two backends' Adam runs differ by
 * ~lr there after one step (the simulation with AdamW, lr 1e-3: 1e-5 apart from 1e-7
 * noise, 3e-4 from 1e-6). SGD passes gradient differences on scaled by lr. The Adam
 * kernel itself is compared bit for bit in test_cuda_backend.c.
 *
 * With its states on NVMe (offload device nvme) the cuda run is held to the fp32
 * tolerance too: the update is the host optimizer's, the path the same.
 *
 * Runs at 1 and 2 ranks; skips (exit 77) where no CUDA device is found. Ranks that share
 * one GPU use the host-staged mode (ZERO_CUDA_COMM=auto unless set). */
#include <check.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cuda_pair.h"
#include "mpi_check.h"
#include "zero/gpt.h"
#include "zero/zero.h"

#define STEPS 10
#define FP32_TOL 1e-5
#define BF16_TOL 2e-3
#define MICRO 4 /* samples (MLP) or sequences (GPT) per rank and step */

/* toy MLP: 3 residual blocks of width 64, 8 classes */
#define MLP_WIDTH 64
#define MLP_LAYERS 3
#define MLP_CLASSES 8
/* tiny GPT: 2 layers, 2 heads, 32 wide, 16 tokens, a 48-token vocabulary */
static const struct zero_gpt_config tiny_gpt = {
    .n_layer = 2, .n_head = 2, .n_embd = 32, .block_size = 16, .vocab_size = 48};

enum model_kind { TOY_MLP, TINY_GPT };

static struct zero_device *cpu, *gpu;
static int rank_;

/* One training run's inputs and what it leaves behind. */
struct run {
    enum model_kind kind;
    int stage, bf16;
    int nvme; /* states on NVMe (ZeRO-Infinity): 1 through page-locked rings, 2 through ordinary */
    float losses[STEPS];
    float *initial, *final; /* (n) every parameter, whole, in model order */
    int64_t n;
};

static void configure(struct zero_config *c, const struct run *r, const struct zero_device *d)
{
    zero_config_defaults(c);
    snprintf(c->libzero.backend, sizeof c->libzero.backend, "%s", d->be->name);
    c->zero_optimization.stage = r->stage;
    /* every unit really released and gathered under stage 3 */
    c->zero_optimization.stage3_param_persistence_threshold = 0;
    c->optimizer.type = ZERO_OPTIM_SGD; /* see the file comment */
    c->optimizer.lr = r->kind == TOY_MLP ? 0.05 : 0.1;
    c->optimizer.momentum = 0.9;
    c->optimizer.weight_decay = 0.01;
    c->gradient_clipping = 1.0;
    c->train_micro_batch_size_per_gpu = MICRO;
    c->gradient_accumulation_steps = 1;
    c->bf16.enabled = r->bf16;
    c->libzero.matmul = ZERO_MATMUL_COMPUTE; /* both backends alike; fp32 training ignores it */
    c->libzero.align = 64; /* small blocks: tiny units still split over the ranks */
    if (r->nvme) {
        struct zero_optimization_config *z = &c->zero_optimization;
        const char *dir = "/tmp/libzero-test-cuda-nvme";
        mkdir(dir, 0700); /* every rank: its own files in it */
        z->offload_optimizer.device = ZERO_OFFLOAD_NVME;
        z->offload_optimizer.pin_memory = r->nvme == 1;
        z->offload_optimizer.pipeline_read = z->offload_optimizer.pipeline_write = 1;
        snprintf(z->offload_optimizer.nvme_path, sizeof z->offload_optimizer.nvme_path, "%s", dir);
        z->sub_group_size = 2048; /* several chunks per unit */
        if (r->stage == 3) {
            z->offload_param.device = ZERO_OFFLOAD_NVME;
            z->offload_param.pin_memory = r->nvme == 1;
            z->offload_param.max_in_cpu = 0;
            snprintf(z->offload_param.nvme_path, sizeof z->offload_param.nvme_path, "%s", dir);
        }
    }
}

/* Token t of global sequence s: mostly 3 x the previous token + 1, now and then a jump,
 * so there is something to learn and the loss moves. */
static int32_t token_at(int64_t s, int64_t t)
{
    const int64_t V = tiny_gpt.vocab_size;
    int64_t x = (s * 17 + 5) % V;
    for (int64_t i = 0; i < t; i++)
        x = ((s + i) % 7 == 0) ? (x + 11) % V : (3 * x + 1) % V;
    return (int32_t)x;
}

/* The micro-batch of MICRO samples or sequences from global sample `first`:
 * x (MICRO, width) for the MLP; tokens and labels (MICRO * T) for the GPT. */
static struct zero_batch make_batch(enum model_kind k, int64_t first, float *x, int32_t *tokens,
                                    int32_t *labels)
{
    if (k == TOY_MLP) {
        zero_synthetic_samples(11, MLP_WIDTH, MLP_CLASSES, first, MICRO, x, labels);
        return (struct zero_batch){.rows = MICRO, .inputs = x, .labels = labels};
    }
    const int64_t T = tiny_gpt.block_size;
    for (int64_t i = 0; i < MICRO * T; i++) {
        tokens[i] = token_at(first + i / T, i % T);
        labels[i] = token_at(first + i / T, i % T + 1);
    }
    return (struct zero_batch){.rows = MICRO * T, .tokens = tokens, .labels = labels};
}

/* out (n) = every parameter of m, whole, in model order */
static int read_all(struct zero_engine *e, const struct zero_model *m, float *out,
                    struct zero_error *err)
{
    int64_t at = 0;
    for (int u = 0; u < m->nunits; u++)
        for (int p = 0; p < m->units[u]->nparams; p++) {
            int rc = zero_engine_read_param(e, u, p, out + at, err);
            if (rc)
                return rc;
            at += zero_param_numel(&m->units[u]->params[p]);
        }
    return ZERO_OK;
}

/* Trains r on device d for STEPS steps; fills its losses and weights (caller frees). */
static int train(struct run *r, struct zero_device *d, struct zero_error *err)
{
    struct zero_config cfg;
    configure(&cfg, r, d);
    struct zero_model *m = NULL;
    struct zero_engine *e = NULL;
    int rc = r->kind == TOY_MLP ? zero_nn_build_mlp(&m, MLP_WIDTH, MLP_LAYERS, MLP_CLASSES, err)
                                : zero_nn_build_gpt(&m, &tiny_gpt, err);
    if (!rc)
        rc = zero_engine_create(&e, &cfg, m, d, err);
    const int64_t rows = MICRO * tiny_gpt.block_size; /* the larger of the two models' */
    float *x = malloc(MICRO * MLP_WIDTH * sizeof *x);
    int32_t *tokens = malloc((size_t)rows * sizeof *tokens);
    int32_t *labels = malloc((size_t)rows * sizeof *labels);
    if (!rc) {
        r->n = zero_model_numel(m);
        r->initial = malloc((size_t)r->n * sizeof(float));
        r->final = malloc((size_t)r->n * sizeof(float));
        if (!x || !tokens || !labels || !r->initial || !r->final)
            rc = zero_fail(err, ZERO_ENOMEM, "rank %d: training buffers", rank_);
    }
    if (!rc)
        rc = read_all(e, m, r->initial, err);
    for (int step = 0; step < STEPS && !rc; step++) {
        int64_t first = zero_atom_first_sample(step, 0, d->rank, d->size, 1, MICRO);
        struct zero_batch b = make_batch(r->kind, first, x, tokens, labels);
        if (!(rc = zero_engine_forward(e, &b, NULL, err)) && !(rc = zero_engine_backward(e, err)))
            rc = zero_engine_step(e, NULL, err);
        if (!rc)
            r->losses[step] = (float)zero_engine_last_step(e)->loss;
    }
    if (!rc)
        rc = read_all(e, m, r->final, err);
    free(x);
    free(tokens);
    free(labels);
    zero_engine_destroy(e);
    zero_model_destroy(m);
    return rc;
}

/* max_i |a_i - b_i| / max_i |b_i| (the file comment's metric) */
static double rel_diff(const float *a, const float *b, int64_t n)
{
    double diff = 0.0, scale = 0.0;
    for (int64_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)a[i] - (double)b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return scale > 0.0 ? diff / scale : diff;
}

static void run_free(struct run *r)
{
    free(r->initial);
    free(r->final);
}

/* Both backends at every stage; fails on the first stage out of tolerance. */
static void check_cuda_trains_like_cpu(enum model_kind kind, int bf16)
{
    const char *what = kind == TOY_MLP ? "toy MLP" : "tiny GPT";
    const double tol = bf16 ? BF16_TOL : FP32_TOL;
    for (int stage = 0; stage < 4; stage++) {
        struct run want = {.kind = kind, .stage = stage, .bf16 = bf16}, got = want;
        struct zero_error err = {0};
        int rc = train(&want, cpu, &err);
        if (!rc)
            rc = train(&got, gpu, &err);
        ck_assert_msg(mpi_check_all(rc == ZERO_OK), "%s stage %d: %s", what, stage,
                      rc ? err.msg : "training failed on another rank");
        double rel = rel_diff(got.final, want.final, want.n);
        double moved = rel_diff(want.initial, want.final, want.n);
        double start = rel_diff(got.initial, want.initial, want.n);
        if (rank_ == 0)
            printf("cuda vs cpu: %-8s %s stage %d: rel %.2e (tolerance %.0e), training moved "
                   "the weights %.2e, loss %.6f -> %.6f (cpu) %.6f (cuda)\n",
                   what, bf16 ? "bf16" : "fp32", stage, rel, tol, moved, want.losses[0],
                   want.losses[STEPS - 1], got.losses[STEPS - 1]);
        run_free(&want);
        run_free(&got);
        /* the same seed gives the same initial weights on both backends */
        ck_assert_msg(start == 0.0, "%s stage %d: initial weights differ (rel %.3g)", what, stage,
                      start);
        ck_assert_msg(moved >= 10 * tol,
                      "%s stage %d: training moved the weights by only %.3g (< 10 x %.0e): the "
                      "comparison would prove nothing",
                      what, stage, moved, tol);
        ck_assert_msg(rel <= tol, "%s %s stage %d: cuda's weights are %.3g from the cpu's (> %.0e)",
                      what, bf16 ? "bf16" : "fp32", stage, rel, tol);
    }
}

START_TEST(test_cuda_trains_toy_mlp_like_cpu_in_fp32_at_stages_0_to_3)
{
    check_cuda_trains_like_cpu(TOY_MLP, 0);
}
END_TEST

START_TEST(test_cuda_trains_tiny_gpt_like_cpu_in_fp32_at_stages_0_to_3)
{
    check_cuda_trains_like_cpu(TINY_GPT, 0);
}
END_TEST

START_TEST(test_cuda_trains_toy_mlp_like_cpu_in_bf16_at_stages_0_to_3)
{
    check_cuda_trains_like_cpu(TOY_MLP, 1);
}
END_TEST

START_TEST(test_cuda_trains_tiny_gpt_like_cpu_in_bf16_at_stages_0_to_3)
{
    check_cuda_trains_like_cpu(TINY_GPT, 1);
}
END_TEST

/* ZeRO-Infinity on the cuda backend: the gradient copied into a ring buffer, updated by
 * the host optimizer, the parameters copied back (and at stage 3 the shards read from
 * NVMe for every gather), against the cpu backend with its states in memory. */
START_TEST(test_cuda_trains_toy_mlp_with_states_on_nvme_like_cpu)
{
    for (int stage = 1; stage < 4; stage++)
        for (int nvme = 1; nvme <= 2; nvme++) {
            struct run want = {.kind = TOY_MLP, .stage = stage}, got = want;
            got.nvme = nvme;
            struct zero_error err = {0};
            int rc = train(&want, cpu, &err);
            if (!rc)
                rc = train(&got, gpu, &err);
            ck_assert_msg(mpi_check_all(rc == ZERO_OK), "nvme stage %d: %s", stage,
                          rc ? err.msg : "training failed on another rank");
            double rel = rel_diff(got.final, want.final, want.n);
            double moved = rel_diff(want.initial, want.final, want.n);
            if (rank_ == 0)
                printf("cuda (states on NVMe, %s rings) vs cpu: stage %d: rel %.2e (tolerance "
                       "%.0e), training moved the weights %.2e\n",
                       nvme == 1 ? "page-locked" : "ordinary", stage, rel, FP32_TOL, moved);
            run_free(&want);
            run_free(&got);
            ck_assert(moved >= 10 * FP32_TOL);
            ck_assert_msg(rel <= FP32_TOL, "nvme stage %d: cuda's weights are %.3g from the cpu's",
                          stage, rel);
        }
}
END_TEST

static Suite *training_suite(void)
{
    Suite *s = suite_create("cuda training vs cpu training");
    TCase *tc = tcase_create("train");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_cuda_trains_toy_mlp_like_cpu_in_fp32_at_stages_0_to_3);
    tcase_add_test(tc, test_cuda_trains_tiny_gpt_like_cpu_in_fp32_at_stages_0_to_3);
    tcase_add_test(tc, test_cuda_trains_toy_mlp_like_cpu_in_bf16_at_stages_0_to_3);
    tcase_add_test(tc, test_cuda_trains_tiny_gpt_like_cpu_in_bf16_at_stages_0_to_3);
    tcase_add_test(tc, test_cuda_trains_toy_mlp_with_states_on_nvme_like_cpu);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    int opened = cuda_pair_open("test_cuda_training", &cpu, &gpu);
    if (opened != 0) {
        MPI_Finalize();
        return opened;
    }
    int status = mpi_check_run(training_suite);
    zero_device_close(gpu);
    zero_device_close(cpu);
    MPI_Finalize();
    return status;
}

/* The cuda backend trains like the cpu backend: the toy MLP and a tiny GPT, 10 optimizer
 * steps with the same configuration and data on backend "cpu" and backend "cuda", ZeRO
 * stages 0-3, then the final parameters compared. The cpu backend runs in exact mode;
 * the cuda backend in native mode (cuBLAS, the fast kernels: within the tolerances
 * below) and in exact mode (its fixed-order GEMM, cuda_exact_gemm.cu, and the shared
 * deterministic math: every bit the cpu's).
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
 * Stage 3 with offload_param (the shard in host memory, streamed in by each gather) must
 * give the bits of stage 3 with the same offloaded optimizer and the shard on the
 * device: only where the shard lives differs. The model is sized so that the host
 * queues work well ahead of the GPU (a 1024-wide MLP, 512 rows a step: ~100 us per
 * GEMM), and the live limit of two blocks makes each prefetch take the block that the
 * previous unit's release just freed while that unit's forward is still queued: a gather
 * whose host-to-device copy does not wait for the compute stream overwrites weights
 * that forward is still reading (the race of issue 15), and the weights go wrong.
 * Plain stage 3 (the device optimizer) is compared too, within FP32_TOL.
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

#include "../backends/cuda/zero_cuda_profile.h"
#include "cuda_pair.h"
#include "mpi_check.h"
#include "zero/backend_classifier.h"
#include "zero/backend_device_step.h"
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
/* the offload race: a wider MLP and more rows, so that the GPU lags the host */
#ifndef RACE_WIDTH
#define RACE_WIDTH 1024
#endif
#define RACE_ROWS 512
/* tiny GPT: 2 layers, 2 heads, 32 wide, 16 tokens, a 48-token vocabulary */
static const struct zero_gpt_config tiny_gpt = {
    .n_layer = 2, .n_head = 2, .n_embd = 32, .block_size = 16, .vocab_size = 48};

enum model_kind { TOY_MLP, TINY_GPT };

static struct zero_device *cpu, *gpu;
static int rank_;

enum offload { NO_OFFLOAD, OFFLOAD_OPTIMIZER, OFFLOAD_PARAM /* and optimizer */ };

/* One training run's inputs and what it leaves behind. */
struct run {
    enum model_kind kind;
    int stage, bf16;
    int act_compute; /* libzero.activations = compute: the GPT blocks' activations in bf16 */
    enum offload offload;
    int native;           /* libzero.collectives = native: on cuda, cuBLAS and the fast kernels */
    int64_t width, micro; /* the MLP's width and rows per rank and step; 0: the defaults */
    int64_t max_live;     /* stage3_max_live_parameters; 0: the default */
    int nvme;  /* states on NVMe (ZeRO-Infinity): 1 through page-locked rings, 2 through ordinary */
    int accum; /* gradient_accumulation_steps; 0: 1 */
    int graphs;         /* libzero.cuda_graphs */
    int two_buffers;    /* the backend's table without xent_fused: the GPT head's two (rows, V) */
    int64_t peak_total; /* the ledger's peak, all tags, after the run */
    int bad_step; /* 1 + the step whose first micro-batch has a bad token id on the last rank */
    int step_rc[STEPS];
    char bad_msg[ZERO_ERRMSG_LEN]; /* zero_engine_step's message at the bad step */
    float *before_bad, *after_bad; /* (n) the parameters around the bad step */
    struct zero_cuda_blockers last_before, last_after; /* around the last step (cuda) */
    float losses[STEPS];
    float *initial, *final; /* (n) every parameter, whole, in model order */
    int64_t n;
};

static void configure(struct zero_config *c, const struct run *r, const struct zero_device *d)
{
    zero_config_defaults(c);
    snprintf(c->libzero.backend, sizeof c->libzero.backend, "%s", d->be->name);
    c->libzero.coll_mode = r->native ? ZERO_COLL_NATIVE : ZERO_COLL_EXACT;
    c->zero_optimization.stage = r->stage;
    /* every unit really released and gathered under stage 3 */
    c->zero_optimization.stage3_param_persistence_threshold = 0;
    c->optimizer.type = ZERO_OPTIM_SGD; /* see the file comment */
    c->optimizer.lr = r->kind == TOY_MLP ? 0.05 : 0.1;
    c->optimizer.momentum = 0.9;
    c->optimizer.weight_decay = 0.01;
    c->gradient_clipping = 1.0;
    c->train_micro_batch_size_per_gpu = MICRO;
    c->gradient_accumulation_steps = r->accum > 0 ? r->accum : 1;
    c->libzero.cuda_graphs = r->graphs;
    c->bf16.enabled = r->bf16;
    c->libzero.matmul = ZERO_MATMUL_COMPUTE; /* both backends alike; fp32 training ignores it */
    c->libzero.activations = r->act_compute ? ZERO_ACTIVATIONS_COMPUTE : ZERO_ACTIVATIONS_FP32;
    c->libzero.align = 64; /* small blocks: tiny units still split over the ranks */
    if (r->offload >= OFFLOAD_OPTIMIZER)
        c->zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
    if (r->offload == OFFLOAD_PARAM)
        c->zero_optimization.offload_param.device = ZERO_OFFLOAD_CPU;
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
    if (r->max_live > 0) { /* release after use, prefetch one unit ahead */
        c->zero_optimization.stage3_max_live_parameters = r->max_live;
        c->zero_optimization.stage3_prefetch_bucket_size = r->max_live / 2;
        c->zero_optimization.stage3_max_reuse_distance = 0;
    }
}

static int64_t width_of(const struct run *r)
{
    return r->width > 0 ? r->width : MLP_WIDTH;
}

static int64_t micro_of(const struct run *r)
{
    return r->micro > 0 ? r->micro : MICRO;
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

/* The micro-batch of r's samples or sequences from global sample `first`:
 * x (micro, width) for the MLP; tokens and labels (MICRO * T) for the GPT. */
static struct zero_batch make_batch(const struct run *r, int64_t first, float *x, int32_t *tokens,
                                    int32_t *labels)
{
    if (r->kind == TOY_MLP) {
        zero_synthetic_samples(11, width_of(r), MLP_CLASSES, first, micro_of(r), x, labels);
        return (struct zero_batch){.rows = micro_of(r), .inputs = x, .labels = labels};
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
    const struct zero_backend *own = d->be;
    static struct zero_backend unfused;
    if (r->two_buffers) { /* src/nn then takes xent_forward / xent_backward */
        unfused = *own;
        unfused.classifier = NULL;
        d->be = &unfused;
    }
    int rc = r->kind == TOY_MLP ? zero_nn_build_mlp(&m, width_of(r), MLP_LAYERS, MLP_CLASSES, err)
                                : zero_nn_build_gpt(&m, &tiny_gpt, err);
    if (!rc)
        rc = zero_engine_create(&e, &cfg, m, d, err);
    int64_t rows = MICRO * tiny_gpt.block_size;
    if (r->kind == TOY_MLP)
        rows = micro_of(r);
    float *x = malloc((size_t)(micro_of(r) * width_of(r)) * sizeof *x);
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
    const int accum = r->accum > 0 ? r->accum : 1;
    const int is_cuda = strcmp(d->be->name, "cuda") == 0;
    for (int step = 0; step < STEPS && !rc; step++) {
        if (is_cuda && step == STEPS - 1)
            zero_cuda_graph_blockers(d->self, &r->last_before);
        if (step + 1 == r->bad_step && !(r->before_bad = malloc((size_t)r->n * sizeof(float))))
            rc = zero_fail(err, ZERO_ENOMEM, "rank %d: parameters", rank_);
        if (!rc && step + 1 == r->bad_step)
            rc = read_all(e, m, r->before_bad, err);
        for (int micro = 0; micro < accum && !rc; micro++) {
            int64_t first =
                zero_atom_first_sample(step, micro, d->rank, d->size, accum, micro_of(r));
            struct zero_batch b = make_batch(r, first, x, tokens, labels);
            if (step + 1 == r->bad_step && micro == 0 && d->rank == d->size - 1 && b.tokens)
                tokens[3] = (int32_t)tiny_gpt.vocab_size + 1;
            if ((rc = zero_engine_forward(e, &b, NULL, err)) || (rc = zero_engine_backward(e, err)))
                break;
            struct zero_error step_err = {0};
            r->step_rc[step] = zero_engine_step(e, NULL, &step_err);
            if (r->step_rc[step] && step + 1 == r->bad_step)
                snprintf(r->bad_msg, sizeof r->bad_msg, "%s", step_err.msg);
            else if (r->step_rc[step])
                rc = zero_fail(err, r->step_rc[step], "%s", step_err.msg);
        }
        if (!rc)
            r->losses[step] = (float)zero_engine_last_step(e)->loss;
        if (!rc && step + 1 == r->bad_step) {
            if (!(r->after_bad = malloc((size_t)r->n * sizeof(float))))
                rc = zero_fail(err, ZERO_ENOMEM, "rank %d: parameters", rank_);
            else
                rc = read_all(e, m, r->after_bad, err);
        }
    }
    if (is_cuda)
        zero_cuda_graph_blockers(d->self, &r->last_after);
    if (!rc)
        rc = read_all(e, m, r->final, err);
    if (!rc)
        r->peak_total = zero_engine_ledger(e)->peak_total;
    free(x);
    free(tokens);
    free(labels);
    zero_engine_destroy(e);
    zero_model_destroy(m);
    d->be = own;
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
    free(r->before_bad);
    free(r->after_bad);
}

/* Both backends at every stage; fails on the first stage out of tolerance. */
static void check_cuda_trains_like_cpu_with(enum model_kind kind, int bf16, int act_compute)
{
    const char *what = kind == TOY_MLP ? "toy MLP"
                       : act_compute   ? "tiny GPT, bf16 activations"
                                       : "tiny GPT";
    const double tol = bf16 ? BF16_TOL : FP32_TOL;
    for (int stage = 0; stage < 4; stage++) {
        struct run want = {.kind = kind, .stage = stage, .bf16 = bf16, .act_compute = act_compute},
                   got = want;
        got.native = 1;
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

/* Exact mode on both backends: the same bits after 10 steps, at every stage, in fp32
 * and bf16 (_i: bit 0 bf16, bit 1 the tiny GPT). Holds once the cpu backend's GEMM is
 * the same fixed-order chain and both backends call the same deterministic math. */
static void check_exact_mode_gives_the_cpu_bits(enum model_kind kind, int bf16, int act_compute)
{
    const char *what = kind == TOY_MLP ? "toy MLP"
                       : act_compute   ? "tiny GPT, bf16 activations"
                                       : "tiny GPT";
    for (int stage = 0; stage < 4; stage++) {
        struct run want = {.kind = kind, .stage = stage, .bf16 = bf16, .act_compute = act_compute},
                   got = want;
        struct zero_error err = {0};
        int rc = train(&want, cpu, &err);
        if (!rc)
            rc = train(&got, gpu, &err);
        ck_assert_msg(mpi_check_all(rc == ZERO_OK), "%s stage %d: %s", what, stage,
                      rc ? err.msg : "training failed on another rank");
        int64_t first = -1;
        for (int64_t i = 0; i < want.n && first < 0; i++)
            if (memcmp(&got.final[i], &want.final[i], sizeof(float)) != 0)
                first = i;
        int loss_step = -1;
        for (int st = 0; st < STEPS && loss_step < 0; st++)
            if (memcmp(&got.losses[st], &want.losses[st], sizeof(float)) != 0)
                loss_step = st;
        double rel = rel_diff(got.final, want.final, want.n);
        if (rank_ == 0)
            printf("cuda vs cpu, exact: %-8s %s stage %d: %s (rel %.2e; first differing "
                   "parameter element %lld, first differing loss at step %d)\n",
                   what, bf16 ? "bf16" : "fp32", stage, first < 0 ? "same bits" : "DIFFERENT", rel,
                   (long long)first, loss_step);
        run_free(&want);
        run_free(&got);
        ck_assert_msg(first < 0 && loss_step < 0,
                      "%s %s stage %d exact mode: cuda differs from cpu: parameter element %lld "
                      "(rel %.3g), loss of step %d",
                      what, bf16 ? "bf16" : "fp32", stage, (long long)first, rel, loss_step);
    }
}

START_TEST(test_cuda_exact_mode_trains_to_the_cpu_bits_at_stages_0_to_3)
{
    check_exact_mode_gives_the_cpu_bits(_i & 2 ? TINY_GPT : TOY_MLP, _i & 1, 0);
}
END_TEST

/* libzero.activations = compute, bf16 (the blocks' saved activations stored in bf16,
 * rounded by the cast kernels, 128-bit packs): exact mode gives the cpu's bits at
 * every stage, as with fp32 activations (the same kernels, the same roundings). */
START_TEST(test_cuda_exact_mode_with_bf16_activations_trains_to_the_cpu_bits)
{
    check_exact_mode_gives_the_cpu_bits(TINY_GPT, 1, 1);
}
END_TEST

/* Native mode with bf16 activations: within the bf16 tolerance of the cpu's run in the
 * same mode. On the cpu backend bf16 activations move the tiny GPT's loss by 2.0e-3
 * relative at most from fp32 activations (test_gpt_stages, Adam, 10 steps): each
 * backend's run rounds the same values at the same places, so the bf16 tolerance's
 * reasoning (twice the distance from fp32 training) still covers it. */
START_TEST(test_cuda_trains_tiny_gpt_with_bf16_activations_like_cpu)
{
    check_cuda_trains_like_cpu_with(TINY_GPT, 1, 1);
}
END_TEST

/* The GPT head's one (rows, V) buffer on cuda (xent_fused over the logits in place)
 * against its two without the fused classifier: exact mode, the same bits at stages 0
 * and 3 in fp32 and bf16 (xent_fused's reference is xent_forward then xent_backward);
 * native mode (the fused kernel, no probability workspace), the ledger's peak no higher
 * and the weights within the bf16 tolerance (the fused kernel against the online
 * forward and the backward: fp32 rounding apart). Exact mode's xent_fused keeps a
 * probability workspace while it runs (the reference kernels are not in place), so
 * there the peak does not fall. */
START_TEST(test_cuda_one_buffer_head_gives_the_two_buffer_bits_and_drops_the_scratch_logits)
{
    for (int run = 0; run < 5; run++) {
        const int native = run == 4, stage = native ? 0 : 3 * (run % 2), bf16 = run >= 2;
        struct run two = {.kind = TINY_GPT, .stage = stage, .bf16 = bf16, .native = native},
                   one = two;
        two.two_buffers = 1;
        struct zero_error err = {0};
        int rc = train(&two, gpu, &err);
        if (!rc)
            rc = train(&one, gpu, &err);
        ck_assert_msg(mpi_check_all(rc == ZERO_OK), "stage %d: %s", stage,
                      rc ? err.msg : "training failed on another rank");
        const int64_t rows = MICRO * tiny_gpt.block_size, V = tiny_gpt.vocab_size;
        const double rel = rel_diff(one.final, two.final, one.n);
        if (rank_ == 0)
            printf("cuda head, %s stage %d %s: one buffer vs two rel %.2e, peak %lld -> %lld\n",
                   native ? "native" : "exact", stage, bf16 ? "bf16" : "fp32", rel,
                   (long long)two.peak_total, (long long)one.peak_total);
        if (native) {
            ck_assert_msg(rel <= BF16_TOL, "native: one buffer %.3g from two", rel);
            /* never more at any moment (the same buffers less the scratch logits, and no
             * workspace in the fused kernel); exactly rows * V * 4 less where the head
             * makes the step's peak, which tests/test_gpt_stages.c checks on the cpu */
            ck_assert_msg(mpi_check_all(one.peak_total <= two.peak_total),
                          "native: peak %lld with one buffer, %lld with two (scratch logits %lld)",
                          (long long)one.peak_total, (long long)two.peak_total,
                          (long long)(rows * V * 4));
        } else {
            ck_assert_msg(mpi_check_all(memcmp(one.final, two.final, (size_t)one.n * 4) == 0 &&
                                        memcmp(one.losses, two.losses, sizeof one.losses) == 0),
                          "exact stage %d %s: the one-buffer head changed the bits (rel %.3g)",
                          stage, bf16 ? "bf16" : "fp32", rel);
        }
        run_free(&one);
        run_free(&two);
    }
}
END_TEST

/* bf16 logits (libzero.activations = compute in bf16: the head's GEMM stores bf16 logits,
 * xent_fused writes bf16 dlogits over them) are covered by the bf16-activations tests
 * above: exact mode gives the cpu's bits (the exact GEMM rounds its bf16 store once,
 * xent_fused widens, runs the reference kernels, rounds once, as the cpu's does), native
 * mode stays within the bf16 tolerance. */

static void check_cuda_trains_like_cpu(enum model_kind kind, int bf16)
{
    check_cuda_trains_like_cpu_with(kind, bf16, 0);
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

/* The offload race: offload_param against the shard on the device (see the file comment). */
START_TEST(test_cuda_stage3_offload_param_gives_the_bits_of_stage3_with_the_shard_on_device)
{
    /* stage3_max_live_parameters: two residual blocks (2 x 8 w^2 + 5 w, padded) */
    const int64_t w = RACE_WIDTH, block = 8 * w * w + 5 * w + 64 * 8;
    struct run base = {
        .kind = TOY_MLP, .stage = 3, .width = w, .micro = RACE_ROWS, .max_live = 2 * block};
    struct run plain = base, on_device = base, on_host = base;
    on_device.offload = OFFLOAD_OPTIMIZER;
    on_host.offload = OFFLOAD_PARAM;
    struct zero_error err = {0};
    int rc = train(&plain, gpu, &err);
    if (!rc)
        rc = train(&on_device, gpu, &err);
    if (!rc)
        rc = train(&on_host, gpu, &err);
    ck_assert_msg(mpi_check_all(rc == ZERO_OK), "stage-3 offload: %s",
                  rc ? err.msg : "training failed on another rank");
    double rel = rel_diff(on_host.final, on_device.final, on_device.n);
    double rel_plain = rel_diff(on_host.final, plain.final, plain.n);
    double moved = rel_diff(on_device.initial, on_device.final, on_device.n);
    int first_bad = -1;
    for (int s = 0; s < STEPS && first_bad < 0; s++)
        if (memcmp(&on_host.losses[s], &on_device.losses[s], sizeof(float)) != 0)
            first_bad = s;
    if (rank_ == 0)
        printf("cuda stage 3 offload_param vs the shard on the device: rel %.2e (want 0), vs "
               "plain stage 3 rel %.2e (tolerance %.0e); losses %.6f -> %.6f (offload_param) "
               "%.6f (device shard); training moved the weights %.2e\n",
               rel, rel_plain, FP32_TOL, on_host.losses[0], on_host.losses[STEPS - 1],
               on_device.losses[STEPS - 1], moved);
    run_free(&plain);
    run_free(&on_device);
    run_free(&on_host);
    ck_assert_msg(moved >= 10 * FP32_TOL, "training moved the weights by only %.3g", moved);
    ck_assert_msg(first_bad < 0,
                  "stage 3 offload_param: the loss of step %d differs from the device shard's: "
                  "a gather overwrote a block that compute still read?",
                  first_bad);
    ck_assert_msg(rel == 0.0,
                  "stage 3 offload_param: weights %.3g from those with the shard on the device "
                  "(want the same bits)",
                  rel);
    ck_assert_msg(rel_plain <= FP32_TOL,
                  "stage 3 offload_param: weights %.3g from plain stage 3's (> %.0e)", rel_plain,
                  FP32_TOL);
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

/* ---- CUDA Graphs (libzero.cuda_graphs) ---- */

/* 1 where this device captures; else checks that the engine refuses the graphs with the
 * backend's reason (the host-staged collectives of ranks sharing a GPU) and returns 0. */
static int graphs_possible(void)
{
    int ok = gpu->be->device_step->graph_open(gpu->self) == ZERO_OK;
    char why[512];
    snprintf(why, sizeof why, "%s", gpu->be->last_error(gpu->self));
    if (ok)
        gpu->be->device_step->graph_close(gpu->self);
    if (!mpi_check_all(ok)) {
        struct run r = {.kind = TINY_GPT, .stage = 2, .graphs = 1};
        struct zero_error err = {0};
        int rc = train(&r, gpu, &err);
        run_free(&r);
        ck_assert_msg(mpi_check_all(rc == ZERO_ENOTSUP && strstr(err.msg, "host-staged")),
                      "graphs where the device cannot capture: %d \"%s\" (graph_open: %s)", rc,
                      err.msg, why);
        if (rank_ == 0)
            printf("cuda graphs: not checked here (%s)\n", why);
        return 0;
    }
    return 1;
}

/* The captured passes give the uncaptured run's bits (the same kernels in the same
 * order): losses and parameters after 10 steps of 2 micro-steps, the tiny GPT in
 * native mode (bf16, the fast path) and exact mode, stages 0-3. In the captured steady
 * state (the last step) nothing reached cudaMalloc or waited inside a capture, and each
 * micro-step launched its two graphs, updated in place. */
START_TEST(test_cuda_graphs_replay_the_uncaptured_bits_at_stages_0_to_3)
{
    if (!graphs_possible())
        return;
    const int native = _i & 1, stage = _i >> 1;
    struct run plain = {
        .kind = TINY_GPT, .stage = stage, .native = native, .bf16 = native, .accum = 2};
    struct run captured = plain;
    captured.graphs = 1;
    struct zero_error err = {0};
    int rc = train(&plain, gpu, &err);
    if (!rc)
        rc = train(&captured, gpu, &err);
    ck_assert_msg(mpi_check_all(rc == ZERO_OK), "stage %d %s: %s", stage,
                  native ? "native" : "exact", rc ? err.msg : "training failed on another rank");
    int same = memcmp(plain.losses, captured.losses, sizeof plain.losses) == 0 &&
               memcmp(plain.final, captured.final, (size_t)plain.n * sizeof(float)) == 0;
    struct zero_cuda_blockers a = captured.last_before, b = captured.last_after;
    if (rank_ == 0)
        printf("cuda graphs: stage %d %s: %s bits; last step: %lld launches, %lld updates, "
               "%lld instantiations, %lld cudaMalloc, %lld in capture, %lld host waits\n",
               stage, native ? "native bf16" : "exact fp32", same ? "the same" : "different",
               (long long)(b.graph_launches - a.graph_launches),
               (long long)(b.graph_updates - a.graph_updates),
               (long long)(b.graph_instantiations - a.graph_instantiations),
               (long long)(b.device_mallocs - a.device_mallocs),
               (long long)(b.in_capture - a.in_capture),
               (long long)(b.stream_syncs - a.stream_syncs));
    run_free(&plain);
    run_free(&captured);
    ck_assert_msg(mpi_check_all(same), "stage %d: the captured run's bits differ", stage);
    ck_assert_int_eq(b.graph_launches - a.graph_launches, 2 * 2);
    /* the last step's: the first captured step's pool misses reach cudaMalloc inside a
     * capture (relaxed mode) and count there, by design (docs/gpu.md) */
    ck_assert_int_eq(b.in_capture - a.in_capture, 0);
    ck_assert_int_eq(b.device_mallocs - a.device_mallocs, 0);
    ck_assert_int_eq(b.graph_instantiations - a.graph_instantiations, 0);
}
END_TEST

/* A bad token id on the last rank, in a captured step: every rank's zero_engine_step
 * fails at the step's end naming it (or its rank), the parameters are the bits before
 * the step, and the next steps train on. */
START_TEST(test_cuda_graphs_report_a_bad_token_id_at_step_end_and_apply_nothing)
{
    if (!graphs_possible())
        return;
    struct run r = {
        .kind = TINY_GPT, .stage = 2, .native = 1, .accum = 2, .graphs = 1, .bad_step = 3};
    struct zero_error err = {0};
    int rc = train(&r, gpu, &err);
    ck_assert_msg(mpi_check_all(rc == ZERO_OK), "%s", rc ? err.msg : "on another rank");
    int last = rank_ == mpi_check_size() - 1;
    char want[256];
    snprintf(want, sizeof want, "embedding_forward: row 3: token id %d is outside [0, %d)",
             (int)tiny_gpt.vocab_size + 1, (int)tiny_gpt.vocab_size);
    int ok = r.step_rc[2] == ZERO_EINVAL &&
             strstr(r.bad_msg, last ? want : "stopped step 3 at its end") != NULL &&
             strstr(r.bad_msg, "nothing of this step was applied") != NULL &&
             memcmp(r.before_bad, r.after_bad, (size_t)r.n * sizeof(float)) == 0 &&
             memcmp(r.after_bad, r.final, (size_t)r.n * sizeof(float)) != 0;
    ck_assert_msg(mpi_check_all(ok), "rank %d: step rc %d, message \"%s\"", rank_, r.step_rc[2],
                  r.bad_msg);
    run_free(&r);
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
    tcase_add_loop_test(tc, test_cuda_exact_mode_trains_to_the_cpu_bits_at_stages_0_to_3, 0, 4);
    tcase_add_test(tc, test_cuda_exact_mode_with_bf16_activations_trains_to_the_cpu_bits);
    tcase_add_test(tc, test_cuda_trains_tiny_gpt_with_bf16_activations_like_cpu);
    tcase_add_test(
        tc, test_cuda_one_buffer_head_gives_the_two_buffer_bits_and_drops_the_scratch_logits);
    tcase_add_test(
        tc, test_cuda_stage3_offload_param_gives_the_bits_of_stage3_with_the_shard_on_device);
    tcase_add_test(tc, test_cuda_trains_toy_mlp_with_states_on_nvme_like_cpu);
    tcase_add_loop_test(tc, test_cuda_graphs_replay_the_uncaptured_bits_at_stages_0_to_3, 0, 8);
    tcase_add_test(tc, test_cuda_graphs_report_a_bad_token_id_at_step_end_and_apply_nothing);
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

/* Mixed precision: fp16 and bf16 keep the exactness contract (stages 0-3 give
 * the same bits), the ledger holds the paper's 2 + 2 + 12 bytes per parameter
 * to the byte, and an overflow on one rank skips the step on all of them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_harness.h"
#include "mpi_check.h"

static int run_ok(struct harness_run *r)
{
    struct zero_error err = {0};
    int rc = harness_train(r, MPI_COMM_WORLD, &err);
    if (rc)
        fprintf(stderr, "rank %d: %s\n", mpi_check_rank(), err.msg);
    return mpi_check_all(rc == 0);
}

static void check_stages_match_matmul(enum zero_dtype precision, int accum, double clip,
                                      enum zero_matmul matmul)
{
    struct harness_run base, r;
    for (int stage = 0; stage <= 3; stage++) {
        struct harness_run *x = stage == 0 ? &base : &r;
        harness_defaults(x, stage);
        x->precision = precision;
        x->steps = 4;
        x->cfg.gradient_accumulation_steps = accum;
        x->cfg.gradient_clipping = clip;
        x->cfg.libzero.matmul = matmul;
        ck_assert(run_ok(x));
        if (stage > 0) {
            ck_assert_msg(mpi_check_all(harness_same_bits(&base, &r)),
                          "%s: stage %d differs from stage 0 (accum %d, clip %g)",
                          zero_dtype_name(precision), stage, accum, clip);
            free(r.weights);
        }
    }
    /* training happened: not every step was skipped, the weights moved */
    int applied = 0;
    for (int i = 0; i < base.steps; i++)
        applied += !base.skipped[i];
    ck_assert_int_gt(applied, 0);
    free(base.weights);
}

static void check_stages_match(enum zero_dtype precision, int accum, double clip)
{
    check_stages_match_matmul(precision, accum, clip, ZERO_MATMUL_AUTO);
}

/* libzero.matmul = compute: GEMM operands in the compute dtype (what "auto"
 * picks on the cuda backend). Stages still agree to the bit; the result is a
 * different rounding of the same training, close to the fp32-operand one. */
START_TEST(test_low_precision_matmul_keeps_stages_bit_identical)
{
    check_stages_match_matmul(ZERO_BF16, 2, 0.05, ZERO_MATMUL_COMPUTE);
    check_stages_match_matmul(ZERO_F16, 1, 0.0, ZERO_MATMUL_COMPUTE);
    struct harness_run f32ops, lowops;
    for (int i = 0; i < 2; i++) {
        struct harness_run *x = i ? &lowops : &f32ops;
        harness_defaults(x, 2);
        x->precision = ZERO_BF16;
        x->steps = 4;
        x->cfg.libzero.matmul = i ? ZERO_MATMUL_COMPUTE : ZERO_MATMUL_FP32;
        ck_assert(run_ok(x));
    }
    double diff = 0.0, norm = 0.0; /* squared 2-norms */
    for (int64_t i = 0; i < f32ops.nweights; i++) {
        double d = (double)lowops.weights[i] - (double)f32ops.weights[i];
        diff += d * d;
        norm += (double)f32ops.weights[i] * f32ops.weights[i];
    }
    /* the activations' rounding changed the result (the option did something),
     * by little: Adam turns a gradient's flipped sign into a step of lr, so the
     * difference is measured in norm, not element by element */
    ck_assert_msg(diff > 0.0, "matmul compute gave the fp32-operand bits");
    ck_assert_msg(sqrt(diff / norm) < 1e-2, "matmul compute is %g (relative 2-norm) away",
                  sqrt(diff / norm));
    ck_assert(fabs(lowops.losses[3] - f32ops.losses[3]) < 1e-2 * fabs(f32ops.losses[3]));
    free(f32ops.weights);
    free(lowops.weights);
}
END_TEST

START_TEST(test_fp16_stages_bit_identical_with_accumulation_and_clipping)
{
    check_stages_match(ZERO_F16, 3, 0.05);
    check_stages_match(ZERO_F16, 1, 0.0);
}
END_TEST

START_TEST(test_bf16_stages_bit_identical_with_accumulation_and_clipping)
{
    check_stages_match(ZERO_BF16, 3, 0.05);
    check_stages_match(ZERO_BF16, 1, 0.0);
}
END_TEST

START_TEST(test_mixed_precision_ledger_equals_the_paper)
{
    for (int p = 0; p < 2; p++) {
        for (int stage = 0; stage <= 3; stage++) {
            struct harness_run r;
            harness_defaults(&r, stage);
            r.precision = p ? ZERO_BF16 : ZERO_F16;
            r.steps = 1;
            ck_assert(run_ok(&r));
            const struct zero_ledger *l = &r.ledger_after_create;
            int64_t n = mpi_check_size(), P = r.theory.psi_padded;
            /* 2 + 2 + 4 + 8 bytes per parameter, written out from the ZeRO paper */
            int64_t expect[4] = {16 * P, 4 * P + 12 * P / n, 2 * P + 14 * P / n, 16 * P / n};
            ck_assert_int_eq(zero_ledger_model_states(l), expect[stage]);
            ck_assert_int_eq(r.theory.model_state_bytes, expect[stage]);
            int64_t shard = P / n, whole_or_shard = stage == 0 ? P : shard;
            ck_assert_int_eq(l->current[ZERO_TAG_PARAMS], 2 * (stage == 3 ? shard : P));
            ck_assert_int_eq(l->current[ZERO_TAG_GRADS], 2 * (stage >= 2 ? shard : P));
            ck_assert_int_eq(l->current[ZERO_TAG_MASTER], 4 * whole_or_shard);
            ck_assert_int_eq(l->current[ZERO_TAG_OPTIM], 8 * whole_or_shard);
            /* the wire carries the compute dtype: half the fp32 bytes */
            const struct zero_comm_stats *c = &r.last_comm;
            int64_t sent = c->kind[ZERO_COLL_REDUCE_SCATTER].sent_bytes +
                           c->kind[ZERO_COLL_ALL_GATHER].sent_bytes +
                           c->kind[ZERO_COLL_ALL_REDUCE].sent_bytes;
            ck_assert_int_eq(sent, 2 * r.theory.sent_elements_per_step);
            free(r.weights);
        }
    }
}
END_TEST

/* A unit that passes activations through and, on one rank at one step, plants
 * an inf in its parameter's gradient: an overflow the others don't see. */
struct poison {
    int rank, step, *calls;
};

static int poison_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                          float *y)
{
    return ctx->be->copy(ctx->bself, y, x, (size_t)(ctx->rows * u->in_width) * sizeof(float));
}

static int poison_backward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                           const float *dy, float *dx)
{
    (void)x;
    struct poison *p = u->impl;
    int rc = ctx->be->copy(ctx->bself, dx, dy, (size_t)(ctx->rows * u->in_width) * sizeof(float));
    double v = mpi_check_rank() == p->rank && *p->calls == p->step ? INFINITY : 0.0;
    (*p->calls)++;
    return rc ? rc : ctx->be->fill(ctx->bself, ctx->grad[0], ZERO_F32, v, 4);
}

static size_t nothing(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    (void)u;
    (void)ctx;
    return 0;
}

static const struct zero_unit_ops poison_ops = {
    .kind = "poison",
    .saved_bytes = nothing,
    .scratch_bytes = nothing,
    .forward = poison_forward,
    .backward = poison_backward,
};

START_TEST(test_inf_on_one_rank_skips_the_step_everywhere_and_lowers_the_scale)
{
    int world = mpi_check_size(), calls = 0;
    struct poison p = {.rank = world - 1, .step = 1, .calls = &calls};
    for (int stage = 0; stage <= 3; stage++) {
        calls = 0;
        struct zero_config cfg;
        zero_config_defaults(&cfg);
        cfg.zero_optimization.stage = stage;
        cfg.train_micro_batch_size_per_gpu = 2;
        cfg.libzero.align = 32;
        cfg.fp16.enabled = 1;
        cfg.fp16.initial_scale_power = 8; /* hysteresis 1: the first overflow halves */
        struct zero_error err = {0};
        struct zero_device *dev = NULL;
        struct zero_model *m = NULL;
        struct zero_engine *e = NULL;
        struct zero_unit *u = NULL, *cls = NULL, *lin = NULL;
        MPI_Comm comm = MPI_COMM_WORLD;
        struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
        int64_t shape[1] = {4};
        int rc = zero_device_open(&dev, "cpu", &comm, &opt, &err);
        if (!rc)
            rc = zero_model_create(&m, &err);
        if (!rc && !(rc = zero_nn_linear(&lin, "lin", 6, 6, 1, &err)))
            rc = zero_model_add(m, lin, &err);
        if (!rc && !(rc = zero_unit_new(&u, "poison", &poison_ops, &p, 6, 6, &err)) &&
            zero_unit_add_param(u, "weight", 1, shape, ZERO_INIT_ZEROS, 0.0f, &err) < 0)
            rc = err.code;
        if (!rc)
            rc = zero_model_add(m, u, &err);
        if (!rc && !(rc = zero_nn_classifier(&cls, "classifier", 6, 3, &err)))
            rc = zero_model_add(m, cls, &err);
        if (!rc)
            rc = zero_engine_create(&e, &cfg, m, dev, &err);
        ck_assert_msg(mpi_check_all(rc == 0), "%s", err.msg);
        float x[12], before[36], after[36];
        int32_t y[2];
        double scales[3];
        for (int step = 0; step < 3; step++) {
            zero_synthetic_samples(5, 6, 3, 2 * (step * world + mpi_check_rank()), 2, x, y);
            struct zero_batch b = {.rows = 2, .inputs = x, .labels = y};
            ck_assert(mpi_check_all(zero_engine_read_param(e, 0, 0, before, &err) == 0));
            scales[step] = zero_engine_loss_scale(e);
            ck_assert(mpi_check_all(zero_engine_forward(e, &b, NULL, &err) == 0 &&
                                    zero_engine_backward(e, &err) == 0 &&
                                    zero_engine_step(e, NULL, &err) == 0));
            ck_assert(mpi_check_all(zero_engine_read_param(e, 0, 0, after, &err) == 0));
            int skipped = zero_engine_last_step(e)->skipped;
            ck_assert_int_eq(skipped, step == 1); /* same verdict on every rank */
            ck_assert_int_eq(memcmp(before, after, sizeof before) == 0, step == 1);
        }
        ck_assert(scales[0] == 256.0 && scales[1] == 256.0);
        ck_assert_msg(scales[2] == 128.0, "stage %d: scale after the overflow %g", stage,
                      scales[2]);
        ck_assert_int_eq(zero_engine_applied_steps(e), 2);
        ck_assert_int_eq(zero_engine_global_steps(e), 3);
        zero_engine_destroy(e);
        zero_model_destroy(m);
        zero_device_close(dev);
    }
}
END_TEST

START_TEST(test_world_sizes_1_2_4_bit_identical_in_mixed_precision)
{
    /* the reduced gradient is rounded to the compute dtype once, after the whole
     * tree over atoms, so the world size does not show in the bits */
    int world = mpi_check_size();
    enum zero_dtype precisions[2] = {ZERO_BF16, ZERO_F16};
    for (int p = 0; p < 2; p++)
        for (int stage = 0; stage <= 3; stage += 3) {
            struct harness_run one, r;
            harness_defaults(&one, stage);
            one.precision = precisions[p];
            one.steps = 4;
            one.cfg.gradient_clipping = 0.05;
            one.cfg.gradient_accumulation_steps = 4; /* global batch 8 = 1 x 4 x 2 */
            harness_run_on_first(&one, 1);
            for (int n = 2; n <= world; n *= 2) {
                harness_defaults(&r, stage);
                r.precision = precisions[p];
                r.steps = 4;
                r.cfg.gradient_clipping = 0.05;
                r.cfg.gradient_accumulation_steps = 4 / n;
                int here = harness_run_on_first(&r, n);
                int ok = !here || mpi_check_rank() != 0 || harness_same_bits(&one, &r);
                ck_assert_msg(mpi_check_all(ok), "%s stage %d: world %d differs from world 1",
                              zero_dtype_name(precisions[p]), stage, n);
                if (here)
                    free(r.weights);
            }
            if (mpi_check_rank() == 0)
                free(one.weights);
        }
}
END_TEST

/* The direct route (a weight's gradient written by its GEMM straight in the compute
 * dtype, placement.c) against the old one (ZERO_DIRECT_LOWP_GRAD=0: fp32, converted
 * after the unit): the same bits with accumulation, offload, rank-major atoms and
 * compute-dtype GEMM operands, and the route really taken. */
enum route_variant {
    ROUTE_PLAIN,
    ROUTE_OFFLOAD,
    ROUTE_RANK_MAJOR,
    ROUTE_LOWP_MATMUL,
    ROUTE_NVARIANTS
};

static void run_route(struct harness_run *r, enum zero_dtype precision, int stage,
                      enum route_variant v, int direct)
{
    harness_defaults(r, stage);
    r->precision = precision;
    r->steps = 3;
    r->cfg.gradient_accumulation_steps = 2;
    r->cfg.gradient_clipping = 0.05;
    if (v == ROUTE_OFFLOAD)
        r->cfg.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
    if (v == ROUTE_RANK_MAJOR)
        r->cfg.libzero.atom_order = ZERO_ATOM_RANK_MAJOR;
    if (v == ROUTE_LOWP_MATMUL)
        r->cfg.libzero.matmul = ZERO_MATMUL_COMPUTE;
    if (!direct)
        setenv("ZERO_DIRECT_LOWP_GRAD", "0", 1);
    int ok = run_ok(r);
    unsetenv("ZERO_DIRECT_LOWP_GRAD");
    ck_assert(ok);
}

START_TEST(test_direct_lowp_gradients_give_the_old_bits)
{
    enum zero_dtype precisions[2] = {ZERO_BF16, ZERO_F16};
    for (int p = 0; p < 2; p++)
        for (int stage = 0; stage <= 3; stage++)
            for (int v = 0; v < ROUTE_NVARIANTS; v++) {
                if (v == ROUTE_OFFLOAD && stage == 0)
                    continue; /* offload needs stage 1-3 */
                struct harness_run old, direct;
                run_route(&old, precisions[p], stage, v, 0);
                run_route(&direct, precisions[p], stage, v, 1);
                const char *name = zero_dtype_name(precisions[p]);
                ck_assert_msg(mpi_check_all(old.direct_grad_elements == 0),
                              "%s stage %d variant %d: ZERO_DIRECT_LOWP_GRAD=0 still wrote %lld "
                              "elements directly",
                              name, stage, v, (long long)old.direct_grad_elements);
                /* every micro-step writes each block's weight gradient directly */
                ck_assert_msg(mpi_check_all(direct.direct_grad_elements > 0),
                              "%s stage %d variant %d: the direct route was never taken", name,
                              stage, v);
                ck_assert_msg(mpi_check_all(harness_same_bits(&old, &direct)),
                              "%s stage %d variant %d: the direct route changed the bits", name,
                              stage, v);
                free(old.weights);
                free(direct.weights);
            }
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("mixed_precision");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_fp16_stages_bit_identical_with_accumulation_and_clipping);
    tcase_add_test(tc, test_bf16_stages_bit_identical_with_accumulation_and_clipping);
    tcase_add_test(tc, test_low_precision_matmul_keeps_stages_bit_identical);
    tcase_add_test(tc, test_mixed_precision_ledger_equals_the_paper);
    tcase_add_test(tc, test_inf_on_one_rank_skips_the_step_everywhere_and_lowers_the_scale);
    tcase_add_test(tc, test_world_sizes_1_2_4_bit_identical_in_mixed_precision);
    tcase_add_test(tc, test_direct_lowp_gradients_give_the_old_bits);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_check_main(&argc, &argv, make_suite);
}

/* The engine's API around training: whole-parameter access, the
 * gathered-parameters scope under every stage, disagreements between ranks
 * reported instead of hanging, and call-order errors. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_harness.h"
#include "zero/config_json.h"
#include "mpi_check.h"

struct fixture {
    struct zero_device *dev;
    struct zero_model *model;
    struct zero_engine *e;
};

static int open_engine(struct fixture *f, struct zero_config *cfg, int64_t hidden,
                       struct zero_error *err)
{
    memset(f, 0, sizeof *f);
    MPI_Comm comm = MPI_COMM_WORLD;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    int rc = zero_device_open(&f->dev, "cpu", &comm, &opt, err);
    if (!rc)
        rc = zero_nn_build_mlp(&f->model, hidden, 2, 3, err);
    if (!rc)
        rc = zero_engine_create(&f->e, cfg, f->model, f->dev, err);
    return rc;
}

static void close_engine(struct fixture *f)
{
    zero_engine_destroy(f->e);
    zero_model_destroy(f->model);
    zero_device_close(f->dev);
}

static void small_config(struct zero_config *c, int stage)
{
    zero_config_defaults(c);
    c->zero_optimization.stage = stage;
    c->train_micro_batch_size_per_gpu = 2;
    c->libzero.align = 32;
    c->zero_optimization.stage3_param_persistence_threshold = 0;
}

START_TEST(test_scope_change_on_modifier_rank_reaches_every_shard)
{
    int world = mpi_check_size(), modifier = world - 1;
    for (int stage = 0; stage <= 3; stage++) {
        struct zero_config cfg;
        small_config(&cfg, stage);
        struct fixture f;
        struct zero_error err = {0};
        ck_assert_msg(mpi_check_all(open_engine(&f, &cfg, 8, &err) == 0), "%s", err.msg);
        int unit = 1; /* layers.1: "0.weight" is (32, 8) */
        ck_assert(mpi_check_all(zero_engine_gathered_begin(f.e, &unit, 1, modifier, &err) == 0));
        ck_assert_int_eq(zero_engine_unit_state(f.e, unit), ZERO_UNIT_AVAILABLE);
        float *w = zero_engine_param_ptr(f.e, unit, 0, NULL);
        ck_assert_ptr_nonnull(w);
        float values[256];
        for (int i = 0; i < 256; i++) /* only the modifier's change may survive */
            values[i] = mpi_check_rank() == modifier ? 0.5f + (float)i : -1.0f;
        f.dev->be->from_host(f.dev->self, w, values, sizeof values);
        ck_assert(mpi_check_all(zero_engine_gathered_end(f.e, &err) == 0));
        if (stage == 3)
            ck_assert_int_eq(zero_engine_unit_state(f.e, unit), ZERO_UNIT_NOT_AVAILABLE);
        float back[256];
        ck_assert(mpi_check_all(zero_engine_read_param(f.e, unit, 0, back, &err) == 0));
        int ok = 1;
        for (int i = 0; i < 256; i++)
            ok &= back[i] == 0.5f + (float)i;
        ck_assert_msg(mpi_check_all(ok), "stage %d: modifier's values not in the shards", stage);
        close_engine(&f);
    }
}
END_TEST

START_TEST(test_scope_without_modifier_discards_changes)
{
    struct zero_config cfg;
    small_config(&cfg, 3);
    struct fixture f;
    struct zero_error err = {0};
    ck_assert(mpi_check_all(open_engine(&f, &cfg, 8, &err) == 0));
    float before[8], after[8], junk[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    ck_assert(mpi_check_all(zero_engine_read_param(f.e, 0, 3, before, &err) == 0));
    int unit = 0;
    ck_assert(mpi_check_all(zero_engine_gathered_begin(f.e, &unit, 1, -1, &err) == 0));
    f.dev->be->from_host(f.dev->self, zero_engine_param_ptr(f.e, 0, 3, NULL), junk, sizeof junk);
    ck_assert(mpi_check_all(zero_engine_gathered_end(f.e, &err) == 0));
    ck_assert(mpi_check_all(zero_engine_read_param(f.e, 0, 3, after, &err) == 0));
    ck_assert(memcmp(before, after, sizeof before) == 0);
    close_engine(&f);
}
END_TEST

START_TEST(test_scope_with_different_units_on_ranks_is_an_error_not_a_hang)
{
    if (mpi_check_size() < 2)
        return;
    struct zero_config cfg;
    small_config(&cfg, 3);
    struct fixture f;
    struct zero_error err = {0};
    ck_assert(mpi_check_all(open_engine(&f, &cfg, 8, &err) == 0));
    int unit = mpi_check_rank() == 1 ? 2 : 1;
    int rc = zero_engine_gathered_begin(f.e, &unit, 1, 0, &err);
    ck_assert(mpi_check_all(rc == ZERO_EMISMATCH));
    ck_assert_ptr_nonnull(strstr(err.msg, "different units"));
    close_engine(&f);
}
END_TEST

START_TEST(test_ranks_with_different_models_are_reported)
{
    if (mpi_check_size() < 2)
        return;
    struct zero_config cfg;
    small_config(&cfg, 2);
    struct fixture f;
    struct zero_error err = {0};
    int rc = open_engine(&f, &cfg, mpi_check_rank() == 1 ? 12 : 8, &err);
    ck_assert(mpi_check_all(rc == ZERO_EMISMATCH));
    ck_assert_ptr_nonnull(strstr(err.msg, "disagree"));
    close_engine(&f);
}
END_TEST

/* Bytes that hold no value (a struct's padding, the tail of a string after its
 * end) differ between ranks, as they may between processes: the ranks still
 * agree, because the rank check compares values, field by field. */
START_TEST(test_bytes_that_hold_no_value_do_not_make_ranks_disagree)
{
    struct zero_config cfg;
    small_config(&cfg, 2);
    if (mpi_check_rank() == 1) {
        unsigned char *z = (unsigned char *)&cfg.zero_optimization;
        size_t gap = offsetof(struct zero_optimization_config, reduce_scatter) + sizeof(int);
        size_t next = offsetof(struct zero_optimization_config, reduce_bucket_size);
        memset(z + gap, 0xa5, next - gap);
        char *path = cfg.zero_optimization.offload_optimizer.nvme_path;
        size_t used = strlen(path) + 1;
        memset(path + used, 0x5a, sizeof cfg.zero_optimization.offload_optimizer.nvme_path - used);
    }
    struct fixture f;
    struct zero_error err = {0};
    ck_assert_msg(mpi_check_all(open_engine(&f, &cfg, 8, &err) == 0), "%s", err.msg);
    close_engine(&f);
}
END_TEST

START_TEST(test_ranks_with_different_stages_are_reported)
{
    if (mpi_check_size() < 2)
        return;
    struct zero_config cfg;
    small_config(&cfg, mpi_check_rank() == 1 ? 1 : 2);
    struct fixture f;
    struct zero_error err = {0};
    int rc = open_engine(&f, &cfg, 8, &err);
    ck_assert(mpi_check_all(rc == ZERO_EMISMATCH));
    close_engine(&f);
}
END_TEST

START_TEST(test_ranks_with_different_configs_name_the_key_and_ranks)
{
    if (mpi_check_size() < 2)
        return;
    struct zero_config cfg;
    small_config(&cfg, 1);
    if (mpi_check_rank() == 1)
        cfg.optimizer.lr = 5e-4;
    struct fixture f;
    struct zero_error err = {0};
    int rc = open_engine(&f, &cfg, 8, &err);
    ck_assert(mpi_check_all(rc == ZERO_EMISMATCH));
    ck_assert_msg(strstr(err.msg, "optimizer.params.lr") && strstr(err.msg, "ranks 0 and 1"), "%s",
                  err.msg);
    close_engine(&f);
}
END_TEST

START_TEST(test_unsupported_config_is_refused_by_the_engine)
{
    struct zero_config cfg;
    small_config(&cfg, 2);
    cfg.aio.use_gds = 1;
    struct fixture f;
    struct zero_error err = {0};
    int rc = open_engine(&f, &cfg, 8, &err);
    ck_assert(mpi_check_all(rc == ZERO_ENOTSUP));
    ck_assert_msg(strstr(err.msg, "aio.use_gds=true"), "%s", err.msg);
    close_engine(&f);
}
END_TEST

/* The engine runs zero config's validation (offload ratio, a bad trace step list)
 * and refuses an "auto" nobody resolved. */
START_TEST(test_engine_refuses_what_zero_config_refuses_and_unresolved_auto)
{
    struct zero_config cfg;
    struct fixture f;
    struct zero_error err = {0};
    small_config(&cfg, 2);
    cfg.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
    cfg.zero_optimization.offload_optimizer.ratio = 0.3;
    ck_assert(mpi_check_all(open_engine(&f, &cfg, 8, &err) == ZERO_ENOTSUP));
    ck_assert_msg(strstr(err.msg, "offload_optimizer.ratio=0.3"), "%s", err.msg);
    close_engine(&f);

    small_config(&cfg, 1);
    snprintf(cfg.libzero.trace_steps, sizeof cfg.libzero.trace_steps, "%s", "0");
    ck_assert(mpi_check_all(open_engine(&f, &cfg, 8, &err) == ZERO_EINVAL));
    ck_assert_msg(strstr(err.msg, "libzero.trace.steps"), "%s", err.msg);
    close_engine(&f);

    const char *json = "{\"gradient_clipping\": \"auto\"}";
    small_config(&cfg, 1);
    ck_assert_int_eq(
        zero_config_load_string(&cfg, NULL, json, strlen(json), 0, ZERO_CONFIG_KEEP, &err), 0);
    ck_assert(mpi_check_all(open_engine(&f, &cfg, 8, &err) == ZERO_EINVAL));
    ck_assert_msg(strstr(err.msg, "gradient_clipping is \"auto\""), "%s", err.msg);
    close_engine(&f);
}
END_TEST

START_TEST(test_call_order_errors)
{
    struct zero_config cfg;
    small_config(&cfg, 1);
    struct fixture f;
    struct zero_error err = {0};
    ck_assert(mpi_check_all(open_engine(&f, &cfg, 8, &err) == 0));
    ck_assert_int_eq(zero_engine_backward(f.e, &err), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "without a forward"));
    float x[16] = {0};
    int32_t y[2] = {0, 1};
    struct zero_batch b = {.rows = 2, .inputs = x, .labels = y};
    ck_assert(mpi_check_all(zero_engine_forward(f.e, &b, NULL, &err) == 0));
    ck_assert_int_eq(zero_engine_forward(f.e, &b, NULL, &err), ZERO_EINVAL);
    ck_assert_int_eq(zero_engine_step(f.e, NULL, &err), ZERO_EINVAL);
    ck_assert(mpi_check_all(zero_engine_backward(f.e, &err) == 0));
    int stepped = 0;
    ck_assert(mpi_check_all(zero_engine_step(f.e, &stepped, &err) == 0));
    ck_assert_int_eq(stepped, 1);
    ck_assert_int_eq(zero_engine_global_steps(f.e), 1);
    close_engine(&f);
}
END_TEST

START_TEST(test_bad_label_names_the_unit_and_row)
{
    struct zero_config cfg;
    small_config(&cfg, 3);
    struct fixture f;
    struct zero_error err = {0};
    ck_assert(mpi_check_all(open_engine(&f, &cfg, 8, &err) == 0));
    float x[16] = {0};
    int32_t y[2] = {0, 7}; /* 3 classes */
    struct zero_batch b = {.rows = 2, .inputs = x, .labels = y};
    ck_assert(mpi_check_all(zero_engine_forward(f.e, &b, NULL, &err) != 0));
    ck_assert_ptr_nonnull(strstr(err.msg, "classifier"));
    ck_assert_ptr_nonnull(strstr(err.msg, "7"));
    close_engine(&f);
}
END_TEST

START_TEST(test_write_then_read_param_round_trips_in_every_stage)
{
    for (int stage = 0; stage <= 3; stage++) {
        struct zero_config cfg;
        small_config(&cfg, stage);
        struct fixture f;
        struct zero_error err = {0};
        ck_assert(mpi_check_all(open_engine(&f, &cfg, 8, &err) == 0));
        float w[3 * 8], back[3 * 8];
        for (int i = 0; i < 24; i++)
            w[i] = (float)i * 0.25f - 3.0f;
        int cls = f.model->nunits - 1;
        ck_assert(mpi_check_all(zero_engine_write_param(f.e, cls, 0, w, &err) == 0));
        ck_assert(mpi_check_all(zero_engine_read_param(f.e, cls, 0, back, &err) == 0));
        ck_assert(mpi_check_all(memcmp(w, back, sizeof w) == 0));
        ck_assert_int_eq(zero_engine_read_param(f.e, cls, 9, back, &err), ZERO_EINVAL);
        close_engine(&f);
    }
}
END_TEST

START_TEST(test_eval_and_predict_match_training_forward_and_leave_no_trace)
{
    for (int stage = 0; stage <= 3; stage++) {
        struct zero_config cfg;
        small_config(&cfg, stage);
        struct fixture f;
        struct zero_error err = {0};
        ck_assert(mpi_check_all(open_engine(&f, &cfg, 8, &err) == 0));
        float x[4 * 8], logits[4 * 3];
        int32_t y[4];
        zero_synthetic_samples(3, 8, 3, 4 * mpi_check_rank(), 4, x, y);
        struct zero_batch b = {.rows = 4, .inputs = x, .labels = y};
        float eval_loss = 0, train_loss = 0;
        int64_t before = f.dev->ledger.current_total;
        ck_assert(mpi_check_all(zero_engine_eval(f.e, &b, &eval_loss, &err) == 0));
        ck_assert(mpi_check_all(zero_engine_predict(f.e, &b, logits, &err) == 0));
        ck_assert_int_eq(f.dev->ledger.current_total, before); /* nothing left behind */
        ck_assert(mpi_check_all(zero_engine_forward(f.e, &b, &train_loss, &err) == 0));
        ck_assert(eval_loss == train_loss);
        /* the loss recomputed from the predicted logits, in double */
        double sum = 0.0;
        for (int r = 0; r < 4; r++) {
            double mx = logits[r * 3], z = 0.0;
            for (int c = 1; c < 3; c++)
                mx = logits[r * 3 + c] > mx ? logits[r * 3 + c] : mx;
            for (int c = 0; c < 3; c++)
                z += exp(logits[r * 3 + c] - mx);
            sum += log(z) + mx - logits[r * 3 + y[r]];
        }
        ck_assert_double_eq_tol(sum / 4, train_loss, 1e-5);
        ck_assert(mpi_check_all(zero_engine_backward(f.e, &err) == 0));
        ck_assert(mpi_check_all(zero_engine_step(f.e, NULL, &err) == 0));
        close_engine(&f);
    }
}
END_TEST

/* A unit whose sizes depend on the backend (saved_bytes and scratch_bytes of its ctx, as an
 * attention that keeps no T x T matrix where the backend's fused kernel needs none):
 * the engine sizes with them, shows the backend to them, hands forward and backward
 * buffers that large and counts them in the ledger. The wrapped layer keeps its own
 * buffers at the start; a pattern in the extra floats must reach the backward. */
enum { EXTRA_SAVED = 37, EXTRA_SCRATCH = 53 }; /* floats per row */
static const struct zero_unit_ops *sized_inner;
static int sized_blind_calls; /* sizing calls that did not see the backend */

static size_t sized_saved(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    sized_blind_calls += ctx->be == NULL || ctx->bself == NULL;
    return sized_inner->saved_bytes(u, ctx) + (size_t)ctx->rows * EXTRA_SAVED * sizeof(float);
}

static size_t sized_scratch(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    sized_blind_calls += ctx->be == NULL || ctx->bself == NULL;
    return sized_inner->scratch_bytes(u, ctx) + (size_t)ctx->rows * EXTRA_SCRATCH * sizeof(float);
}

/* the extra saved floats (rows, EXTRA_SAVED) past the wrapped unit's own (cpu memory) */
static float *sized_extra(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    return (float *)((char *)ctx->saved + sized_inner->saved_bytes(u, ctx));
}

static void sized_fill_scratch(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    memset(ctx->scratch, 0xff, sized_scratch(u, ctx)); /* every byte it was promised */
}

static int sized_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                         float *y)
{
    int rc = sized_inner->forward(u, ctx, x, y);
    float *extra = sized_extra(u, ctx);
    for (int64_t i = 0; i < ctx->rows * EXTRA_SAVED; i++)
        extra[i] = (float)i + 0.5f;
    sized_fill_scratch(u, ctx);
    return rc;
}

static int sized_backward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                          const float *dy, float *dx)
{
    const float *extra = sized_extra(u, ctx);
    for (int64_t i = 0; i < ctx->rows * EXTRA_SAVED; i++)
        if (extra[i] != (float)i + 0.5f) {
            snprintf(ctx->errmsg, ctx->errlen, "saved float %lld lost", (long long)i);
            return ZERO_EINVAL;
        }
    int rc = sized_inner->backward(u, ctx, x, dy, dx);
    sized_fill_scratch(u, ctx);
    return rc;
}

/* two steps of the MLP at stage, layers.1 sized through the backend or not */
static void sized_run(int stage, int sized, float *w, struct zero_ledger *ledger)
{
    struct zero_config cfg;
    small_config(&cfg, stage);
    struct fixture f;
    struct zero_error err = {0};
    ck_assert_msg(mpi_check_all(open_engine(&f, &cfg, 8, &err) == 0), "%s", err.msg);
    struct zero_unit *unit = f.model->units[1];
    const struct zero_unit_ops *own = unit->ops;
    struct zero_unit_ops ops = *own;
    if (sized) {
        sized_inner = own;
        ops.saved_bytes = sized_saved;
        ops.scratch_bytes = sized_scratch;
        ops.forward = sized_forward;
        ops.backward = sized_backward;
        unit->ops = &ops;
    }
    float x[4 * 8];
    int32_t y[4];
    for (int step = 0; step < 2; step++) {
        zero_synthetic_samples(3, 8, 3, 4 * (2 * step + mpi_check_rank()), 4, x, y);
        struct zero_batch b = {.rows = 4, .inputs = x, .labels = y};
        ck_assert_msg(mpi_check_all(zero_engine_forward(f.e, &b, NULL, &err) == 0), "%s", err.msg);
        ck_assert_msg(mpi_check_all(zero_engine_backward(f.e, &err) == 0), "%s", err.msg);
        ck_assert_msg(mpi_check_all(zero_engine_step(f.e, NULL, &err) == 0), "%s", err.msg);
    }
    ck_assert(mpi_check_all(zero_engine_read_param(f.e, 1, 0, w, &err) == 0));
    *ledger = f.dev->ledger;
    zero_engine_destroy(f.e);
    unit->ops = own;
    zero_model_destroy(f.model);
    zero_device_close(f.dev);
}

START_TEST(test_unit_sized_by_the_backend_gets_buffers_of_that_size)
{
    for (int stage = 0; stage <= 3; stage++) {
        float plain_w[32 * 8], sized_w[32 * 8];
        struct zero_ledger plain, sized;
        sized_blind_calls = 0;
        sized_run(stage, 0, plain_w, &plain);
        sized_run(stage, 1, sized_w, &sized);
        ck_assert_int_eq(sized_blind_calls, 0);
        ck_assert(memcmp(plain_w, sized_w, sizeof plain_w) == 0);
        /* layers.1's saved activations live from its forward to its backward */
        ck_assert_int_eq(sized.peak[ZERO_TAG_ACTIVATIONS] - plain.peak[ZERO_TAG_ACTIVATIONS],
                         4 * EXTRA_SAVED * (int64_t)sizeof(float));
        ck_assert_int_ge(sized.peak[ZERO_TAG_WORKSPACE] - plain.peak[ZERO_TAG_WORKSPACE],
                         4 * EXTRA_SCRATCH * (int64_t)sizeof(float));
    }
}
END_TEST

/* A step inside an open scope would be undone by the scope's end (the whole
 * copy is broadcast back): refused with the scope named, in every stage. */
START_TEST(test_step_inside_scope_is_refused_and_the_update_survives)
{
    for (int stage = 0; stage <= 3; stage++) {
        struct zero_config cfg;
        small_config(&cfg, stage);
        struct fixture f;
        struct zero_error err = {0};
        ck_assert_msg(mpi_check_all(open_engine(&f, &cfg, 8, &err) == 0), "%s", err.msg);
        float x[16], before[256], after[256];
        for (int i = 0; i < 16; i++)
            x[i] = 0.25f * (float)(i % 5) - 0.5f;
        int32_t y[2] = {0, 1};
        struct zero_batch b = {.rows = 2, .inputs = x, .labels = y};
        int unit = 1;
        ck_assert(mpi_check_all(zero_engine_read_param(f.e, unit, 0, before, &err) == 0));
        ck_assert(mpi_check_all(zero_engine_gathered_begin(f.e, &unit, 1, 0, &err) == 0));
        ck_assert(mpi_check_all(zero_engine_forward(f.e, &b, NULL, &err) == ZERO_EINVAL));
        ck_assert_ptr_nonnull(strstr(err.msg, "gathered-parameters scope (units layers.1"));
        ck_assert(mpi_check_all(zero_engine_gathered_end(f.e, &err) == 0));
        ck_assert(mpi_check_all(zero_engine_forward(f.e, &b, NULL, &err) == 0));
        ck_assert(mpi_check_all(zero_engine_backward(f.e, &err) == 0));
        ck_assert(mpi_check_all(zero_engine_gathered_begin(f.e, &unit, 1, 0, &err) == 0));
        int stepped = 1;
        ck_assert(mpi_check_all(zero_engine_step(f.e, &stepped, &err) == ZERO_EINVAL));
        ck_assert_int_eq(stepped, 0);
        ck_assert_ptr_nonnull(strstr(err.msg, "zero_engine_step inside the open"));
        ck_assert_ptr_nonnull(strstr(err.msg, "layers.1"));
        ck_assert(mpi_check_all(zero_engine_gathered_end(f.e, &err) == 0));
        ck_assert(mpi_check_all(zero_engine_step(f.e, &stepped, &err) == 0));
        ck_assert_int_eq(stepped, 1);
        ck_assert(mpi_check_all(zero_engine_read_param(f.e, unit, 0, after, &err) == 0));
        int moved = 0;
        for (int i = 0; i < 256; i++)
            moved += after[i] != before[i];
        ck_assert_msg(mpi_check_all(moved > 0), "stage %d: the step changed nothing", stage);
        close_engine(&f);
    }
}
END_TEST

struct gather_count {
    int gathers, releases;
};

static void count_gathers(void *user, const struct zero_event *ev)
{
    struct gather_count *c = user;
    c->gathers += ev->kind == ZERO_EV_GATHER;
    c->releases += ev->kind == ZERO_EV_RELEASE;
}

/* Stage 3: the scope's gathers are events like any other and stay under
 * stage3_max_live_parameters; a scope that cannot fit is refused and leaves
 * nothing pinned. */
START_TEST(test_scope_gathers_emit_events_and_respect_the_live_limit)
{
    struct zero_config cfg;
    small_config(&cfg, 3);
    struct fixture f;
    struct zero_error err = {0};
    ck_assert(mpi_check_all(open_engine(&f, &cfg, 8, &err) == 0));
    struct gather_count n = {0};
    zero_engine_set_observer(f.e, count_gathers, &n);
    int units[2] = {0, 1};
    ck_assert(mpi_check_all(zero_engine_gathered_begin(f.e, units, 2, -1, &err) == 0));
    ck_assert_int_eq(n.gathers, 2);
    int64_t live = zero_engine_peak_live_elements(f.e);
    ck_assert(mpi_check_all(zero_engine_gathered_end(f.e, &err) == 0));
    ck_assert_int_eq(n.releases, 2);
    close_engine(&f);

    /* room for one of the two units only */
    cfg.zero_optimization.stage3_max_live_parameters = live - 1;
    ck_assert(mpi_check_all(open_engine(&f, &cfg, 8, &err) == 0));
    int rc = zero_engine_gathered_begin(f.e, units, 2, -1, &err);
    ck_assert(mpi_check_all(rc == ZERO_EINVAL));
    ck_assert_ptr_nonnull(strstr(err.msg, "stage3_max_live_parameters"));
    ck_assert_int_eq(zero_engine_unit_state(f.e, 0), ZERO_UNIT_NOT_AVAILABLE);
    ck_assert_int_eq(zero_engine_unit_state(f.e, 1), ZERO_UNIT_NOT_AVAILABLE);
    ck_assert(mpi_check_all(zero_engine_gathered_end(f.e, &err) == ZERO_EINVAL)); /* not open */
    close_engine(&f);
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("engine_api");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_scope_change_on_modifier_rank_reaches_every_shard);
    tcase_add_test(tc, test_scope_without_modifier_discards_changes);
    tcase_add_test(tc, test_scope_with_different_units_on_ranks_is_an_error_not_a_hang);
    tcase_add_test(tc, test_ranks_with_different_models_are_reported);
    tcase_add_test(tc, test_ranks_with_different_stages_are_reported);
    tcase_add_test(tc, test_bytes_that_hold_no_value_do_not_make_ranks_disagree);
    tcase_add_test(tc, test_ranks_with_different_configs_name_the_key_and_ranks);
    tcase_add_test(tc, test_unsupported_config_is_refused_by_the_engine);
    tcase_add_test(tc, test_engine_refuses_what_zero_config_refuses_and_unresolved_auto);
    tcase_add_test(tc, test_call_order_errors);
    tcase_add_test(tc, test_step_inside_scope_is_refused_and_the_update_survives);
    tcase_add_test(tc, test_scope_gathers_emit_events_and_respect_the_live_limit);
    tcase_add_test(tc, test_bad_label_names_the_unit_and_row);
    tcase_add_test(tc, test_write_then_read_param_round_trips_in_every_stage);
    tcase_add_test(tc, test_eval_and_predict_match_training_forward_and_leave_no_trace);
    tcase_add_test(tc, test_unit_sized_by_the_backend_gets_buffers_of_that_size);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_check_main(&argc, &argv, make_suite);
}

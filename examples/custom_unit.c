/* custom_unit: how to write your own unit and train it under ZeRO stage 3.
 *
 *     mpirun -np 2 custom_unit
 *
 * A unit is the group of parameters ZeRO gathers and releases together. To
 * write one you give it
 *   1. a zero_unit_ops table: its saved/scratch memory needs, forward, backward;
 *   2. its parameters, declared with zero_unit_add_param (name, shape, init).
 * The engine owns every byte: it gathers the parameters before forward and
 * backward, hands the unit pointers to them, and reduces the gradients the
 * unit writes. The unit computes only through the backend table ctx->be, so
 * the same code runs on any backend.
 *
 * Our unit is a "residual linear" layer, y = x + x W^T with W (width, width):
 * a linear layer without bias plus a skip connection. */
#include <stdio.h>

#include "zero/zero.h" /* and zero/job.h: the job's start and end, its communicators */

/* ---- the unit ---- */

/* Nothing is kept from forward to backward: backward gets x again. */
static size_t residual_saved_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    (void)u;
    (void)ctx;
    return 0;
}

static size_t residual_scratch_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    (void)u;
    (void)ctx;
    return 0;
}

/* y (rows, width) = x (rows, width) + x @ W^T */
static int residual_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                            float *y)
{
    const struct zero_backend *be = ctx->be;
    int64_t rows = ctx->rows, width = u->in_width;
    const float *w = ctx->param[0]; /* (width, width), gathered by the engine */
    int rc = be->copy(ctx->bself, y, x, (size_t)(rows * width) * sizeof(float));
    if (!rc) /* y += x @ W^T: gemm with beta = 1 adds to the copy of x */
        rc = be->gemm(ctx->bself, 0, 1, rows, width, width, 1.0f, x, ZERO_F32, width, w, ZERO_F32,
                      width, 1.0f, y, ZERO_F32, width);
    if (rc)
        snprintf(ctx->errmsg, ctx->errlen, "residual forward: %s", be->last_error(ctx->bself));
    return rc;
}

/* dx (rows, width) = dy + dy @ W;  dW (width, width) (+)= dy^T @ x */
static int residual_backward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                             const float *dy, float *dx)
{
    const struct zero_backend *be = ctx->be;
    int64_t rows = ctx->rows, width = u->in_width;
    const float *w = ctx->param[0];
    float *dw = ctx->grad[0];
    /* The engine says whether dW already holds another contribution this
     * micro-step (a shared parameter): then add (beta 1), else overwrite. */
    float beta = ctx->grad_accumulate[0] ? 1.0f : 0.0f;
    int rc = be->gemm(ctx->bself, 1, 0, width, width, rows, 1.0f, dy, ZERO_F32, width, x, ZERO_F32,
                      width, beta, dw, ZERO_F32, width);
    if (!rc && dx) /* dx is NULL when this is the model's first unit */
        rc = be->copy(ctx->bself, dx, dy, (size_t)(rows * width) * sizeof(float));
    if (!rc && dx)
        rc = be->gemm(ctx->bself, 0, 0, rows, width, width, 1.0f, dy, ZERO_F32, width, w, ZERO_F32,
                      width, 1.0f, dx, ZERO_F32, width);
    if (rc)
        snprintf(ctx->errmsg, ctx->errlen, "residual backward: %s", be->last_error(ctx->bself));
    return rc;
}

static const struct zero_unit_ops residual_ops = {
    .kind = "residual_linear",
    .saved_bytes = residual_saved_bytes,
    .scratch_bytes = residual_scratch_bytes,
    .forward = residual_forward,
    .backward = residual_backward,
    .destroy = NULL, /* no impl to free */
};

/* Creates the unit, appends it to model m, and declares its one parameter,
 * "weight" (width, width), initialized N(0, 0.02^2) so the unit starts close
 * to the identity map. The model owns the unit from zero_model_add on (also
 * when that fails), so every error path is cleaned up with the model. */
static int add_residual_linear(struct zero_model *m, const char *name, int64_t width,
                               struct zero_error *err)
{
    struct zero_unit *u;
    int rc = zero_unit_new(&u, name, &residual_ops, NULL, width, width, err);
    if (!rc)
        rc = zero_model_add(m, u, err);
    const int64_t shape[2] = {width, width};
    if (!rc && zero_unit_add_param(u, "weight", 2, shape, ZERO_INIT_NORMAL, 0.02f, err) < 0)
        rc = err->code;
    return rc;
}

/* ---- a model using it: Linear -> residual linear -> classifier ---- */

enum { IN = 16, WIDTH = 32, CLASSES = 4, MICRO_BATCH = 4, STEPS = 8 };

static int build_model(struct zero_model **m, struct zero_error *err)
{
    struct zero_unit *u;
    int rc = zero_model_create(m, err);
    if (!rc && !(rc = zero_nn_linear(&u, "embed", IN, WIDTH, 1, err)))
        rc = zero_model_add(*m, u, err);
    if (!rc)
        rc = add_residual_linear(*m, "mix", WIDTH, err); /* ours, between built-in layers */
    if (!rc && !(rc = zero_nn_classifier(&u, "classifier", WIDTH, CLASSES, err)))
        rc = zero_model_add(*m, u, err);
    return rc;
}

/* ---- training at stage 3 ---- */

static int train(struct zero_engine *e, int rank, int world, struct zero_error *err)
{
    float x[MICRO_BATCH * IN]; /* (MICRO_BATCH, IN) */
    int32_t y[MICRO_BATCH];
    for (int step = 0; step < STEPS; step++) {
        int64_t first = zero_atom_first_sample(step, 0, rank, world, 1, MICRO_BATCH);
        zero_synthetic_samples(42, IN, CLASSES, first, MICRO_BATCH, x, y);
        struct zero_batch b = {.rows = MICRO_BATCH, .inputs = x, .labels = y};
        int rc;
        if ((rc = zero_engine_forward(e, &b, NULL, err)) || (rc = zero_engine_backward(e, err)) ||
            (rc = zero_engine_step(e, NULL, err)))
            return rc;
        if (rank == 0)
            printf("step %d | loss %.4f\n", step + 1, zero_engine_last_step(e)->loss);
    }
    return ZERO_OK;
}

int main(int argc, char **argv)
{
    struct zero_error err = {0};
    int owned;
    if (zero_job_init(&argc, &argv, &owned, &err)) {
        fprintf(stderr, "custom_unit: %s\n", err.msg);
        return 1;
    }
    struct zero_device *dev = NULL;
    struct zero_model *model = NULL;
    struct zero_engine *e = NULL;

    struct zero_config cfg;
    zero_config_defaults(&cfg);
    cfg.zero_optimization.stage = 3;
    cfg.zero_optimization.stage3_param_persistence_threshold = 0; /* gather every unit */
    cfg.optimizer.type = ZERO_OPTIM_ADAMW;
    cfg.optimizer.lr = 1e-2;
    cfg.gradient_clipping = 0.0; /* off (DeepSpeed's default clips at 1.0) */
    cfg.train_micro_batch_size_per_gpu = MICRO_BATCH;
    cfg.libzero.align = 64; /* small shards for a small model */

    struct zero_backend_options opt = {.coll_mode = cfg.libzero.coll_mode, .device = -1};
    int rc = zero_device_open(&dev, "cpu", zero_comm_device_handle(zero_comm_world()), &opt, &err);
    if (!rc)
        rc = build_model(&model, &err);
    if (!rc)
        rc = zero_engine_create(&e, &cfg, model, dev, &err);
    if (!rc) {
        if (dev->rank == 0)
            printf("custom_unit: %lld parameters, unit 'mix' is a residual_linear, stage 3 on "
                   "%d ranks\n",
                   (long long)zero_model_numel(model), dev->size);
        rc = train(e, dev->rank, dev->size, &err);
    }
    if (rc)
        fprintf(stderr, "custom_unit: %s\n", err.msg);
    zero_engine_destroy(e);
    zero_model_destroy(model);
    zero_device_close(dev);
    if (rc)
        zero_job_abort(1); /* a rank that failed alone: the others may wait for it */
    zero_job_finalize();
    return 0;
}

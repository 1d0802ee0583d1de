/* RMSNorm, LlamaRMSNorm: y = x * rsqrt(mean(x^2) + eps) * weight in fp32. The sub-layer
 * the Llama block uses twice, and the standalone unit model.norm. */
#include <stdlib.h>

#include "llama_internal.h"

const struct zero_llama_ops *llama_ops(struct zero_unit_ctx *ctx)
{
    if (ctx->be->llama == NULL)
        nn_unit_fail(ctx, ZERO_ENOTSUP,
                     "backend '%s' has no llama group (RMSNorm, rope, SwiGLU kernels)",
                     ctx->be->name);
    return ctx->be->llama;
}

int llama_rmsnorm_forward(struct zero_unit_ctx *ctx, int p, const float *x, float *y, float *rstd,
                          int64_t C, float eps)
{
    const struct zero_llama_ops *ops = llama_ops(ctx);
    if (ops == NULL)
        return ZERO_ENOTSUP;
    int rc = ops->rmsnorm_forward(ctx->bself, y, rstd, x, ctx->param[p], ctx->rows, C, eps);
    return rc != ZERO_OK ? nn_backend_fail(ctx, rc, "rmsnorm_forward") : ZERO_OK;
}

int llama_rmsnorm_backward(struct zero_unit_ctx *ctx, int p, const float *x, const float *dy,
                           const float *rstd, float *dx, float dx_beta, int64_t C)
{
    const struct zero_llama_ops *ops = llama_ops(ctx);
    if (ops == NULL)
        return ZERO_ENOTSUP;
    int rc = ops->rmsnorm_backward(ctx->bself, dx, ctx->grad[p], dy, x, ctx->param[p], rstd,
                                   ctx->rows, C, dx_beta, ctx->grad_accumulate[p] ? 1.0f : 0.0f);
    return rc != ZERO_OK ? nn_backend_fail(ctx, rc, "rmsnorm_backward") : ZERO_OK;
}

/* saved: rstd (rows); the backward reads the input x the engine keeps */
static size_t norm_saved_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    (void)u;
    return (size_t)ctx->rows * sizeof(float);
}

/* scratch: dx (rows, C) when the caller wants none (a first unit, in tests) */
static size_t norm_scratch_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    return (size_t)(ctx->rows * u->in_width) * sizeof(float);
}

/* y (rows, C) = RMSNorm(x) */
static int norm_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                        float *y)
{
    const struct llama_dims *d = u->impl;
    return llama_rmsnorm_forward(ctx, 0, x, y, ctx->saved, d->C, d->eps);
}

/* dx (rows, C), dweight (C) from dy (rows, C) */
static int norm_backward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                         const float *dy, float *dx)
{
    const struct llama_dims *d = u->impl;
    return llama_rmsnorm_backward(ctx, 0, x, dy, ctx->saved, dx != NULL ? dx : ctx->scratch, 0.0f,
                                  d->C);
}

static void norm_destroy(struct zero_unit *u)
{
    free(u->impl);
    u->impl = NULL;
}

static const struct zero_unit_ops rmsnorm_ops = {
    .kind = "rmsnorm",
    .saved_bytes = norm_saved_bytes,
    .scratch_bytes = norm_scratch_bytes,
    .forward = norm_forward,
    .backward = norm_backward,
    .destroy = norm_destroy,
};

int llama_rmsnorm_unit(struct zero_unit **u, const char *name, int64_t C, float eps,
                       struct zero_error *err)
{
    *u = NULL;
    struct llama_dims *d = calloc(1, sizeof *d);
    if (d == NULL)
        return zero_fail(err, ZERO_ENOMEM, "unit %s: out of memory", name);
    d->C = C, d->eps = eps;
    int rc = zero_unit_new(u, name, &rmsnorm_ops, d, C, C, err);
    if (rc != ZERO_OK) {
        free(d);
        return rc;
    }
    if (zero_unit_add_param(*u, "weight", 1, &C, ZERO_INIT_ONES, 0.0f, err) < 0) {
        rc = err != NULL ? err->code : ZERO_EINVAL;
        zero_unit_destroy(*u);
        *u = NULL;
    }
    return rc;
}

/* LayerNorm (GPT-2's: eps 1e-5 inside the root, affine weight and bias): the
 * sub-layer the block and the head use, and a standalone unit. */
#include <stdio.h>

#include "gpt_internal.h"
#include "nn_internal.h"
#include "zero/backend_fused.h"
#include "zero/backend_stored.h"

int gpt_add_layernorm_params(struct zero_unit *u, const char *prefix, int64_t C,
                             struct zero_error *err)
{
    char name[ZERO_NAME_LEN];
    snprintf(name, sizeof(name), "%sweight", prefix);
    if (zero_unit_add_param(u, name, 1, &C, ZERO_INIT_ONES, 0.0f, err) < 0)
        return err != NULL ? err->code : ZERO_EINVAL;
    snprintf(name, sizeof(name), "%sbias", prefix);
    if (zero_unit_add_param(u, name, 1, &C, ZERO_INIT_ZEROS, 0.0f, err) < 0)
        return err != NULL ? err->code : ZERO_EINVAL;
    return ZERO_OK;
}

/* y (rows, C; stored) = (x - mean) * rstd * weight + bias; mean, rstd (rows, fp32) */
int gpt_layernorm_forward(struct zero_unit_ctx *ctx, int p, const float *x, void *y, float *mean,
                          float *rstd, int64_t C)
{
    const struct zero_backend *be = ctx->be;
    if (ctx->act_type != ZERO_F32 && be->stored != NULL) { /* stored as written */
        int rc = be->stored->layernorm_forward_stored(ctx->bself, y, ctx->act_type, mean, rstd, x,
                                                      NULL, NULL, NULL, ctx->param[p],
                                                      ctx->param[p + 1], ctx->rows, C, GPT_LN_EPS);
        return rc != ZERO_OK ? nn_backend_fail(ctx, rc, "layernorm_forward_stored") : ZERO_OK;
    }
    const size_t n = (size_t)(ctx->rows * C);
    float *y32;
    void *tmp;
    int rc = nn_act_begin(ctx, y, n, &y32, &tmp);
    if (rc == ZERO_OK &&
        (rc = be->layernorm_forward(ctx->bself, y32, mean, rstd, x, ctx->param[p],
                                    ctx->param[p + 1], ctx->rows, C, GPT_LN_EPS)) != ZERO_OK)
        rc = nn_backend_fail(ctx, rc, "layernorm_forward");
    return nn_act_end(ctx, rc, y, n, tmp);
}

/* res (rows, C) += b, then y = LN(res) as above: one pass where the backend fuses the
 * two (residual_layernorm_forward), else axpy and layernorm_forward */
int gpt_residual_layernorm_forward(struct zero_unit_ctx *ctx, int p, float *res, const float *b,
                                   void *y, float *mean, float *rstd, int64_t C)
{
    if (ctx->act_type != ZERO_F32 && ctx->be->stored != NULL) {
        int rc = ctx->be->stored->layernorm_forward_stored(
            ctx->bself, y, ctx->act_type, mean, rstd, NULL, res, res, b, ctx->param[p],
            ctx->param[p + 1], ctx->rows, C, GPT_LN_EPS);
        return rc != ZERO_OK ? nn_backend_fail(ctx, rc, "layernorm_forward_stored (residual)")
                             : ZERO_OK;
    }
    if (ctx->be->fused == NULL) {
        int rc = ctx->be->axpy(ctx->bself, 1.0f, b, res, (size_t)(ctx->rows * C));
        if (rc != ZERO_OK)
            return nn_backend_fail(ctx, rc, "axpy (residual)");
        return gpt_layernorm_forward(ctx, p, res, y, mean, rstd, C);
    }
    const size_t n = (size_t)(ctx->rows * C);
    float *y32;
    void *tmp;
    int rc = nn_act_begin(ctx, y, n, &y32, &tmp);
    if (rc == ZERO_OK && (rc = ctx->be->fused->residual_layernorm_forward(
                              ctx->bself, res, y32, mean, rstd, res, b, ctx->param[p],
                              ctx->param[p + 1], ctx->rows, C, GPT_LN_EPS)) != ZERO_OK)
        rc = nn_backend_fail(ctx, rc, "residual_layernorm_forward");
    return nn_act_end(ctx, rc, y, n, tmp);
}

/* dx (rows, C) = dLN/dx (dy) + dx_beta * dx; dweight = sum dy * xhat; dbias = sum dy */
int gpt_layernorm_backward(struct zero_unit_ctx *ctx, int p, const float *x, const float *dy,
                           const float *mean, const float *rstd, float *dx, float dx_beta,
                           int64_t C)
{
    int rc = ctx->be->layernorm_backward(ctx->bself, dx, ctx->grad[p], ctx->grad[p + 1], dy, x,
                                         ctx->param[p], mean, rstd, ctx->rows, C, dx_beta,
                                         ctx->grad_accumulate[p] ? 1.0f : 0.0f,
                                         ctx->grad_accumulate[p + 1] ? 1.0f : 0.0f);
    return rc != ZERO_OK ? nn_backend_fail(ctx, rc, "layernorm_backward") : ZERO_OK;
}

/* ---- the standalone unit: parameters weight (C), bias (C) ---- */

/* saved: mean (rows), rstd (rows) */
static size_t layernorm_saved_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    (void)u;
    return 2 * (size_t)ctx->rows * sizeof(float);
}

/* scratch: dx (rows, C) when the caller wants none (the first unit) */
static size_t layernorm_scratch_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    return (size_t)ctx->rows * (size_t)u->in_width * sizeof(float);
}

static int layernorm_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                             float *y)
{
    float *mean = ctx->saved, *rstd = mean + ctx->rows;
    return gpt_layernorm_forward(ctx, 0, x, y, mean, rstd, u->in_width);
}

static int layernorm_backward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                              const float *dy, float *dx)
{
    const float *mean = ctx->saved, *rstd = mean + ctx->rows;
    return gpt_layernorm_backward(ctx, 0, x, dy, mean, rstd, dx != NULL ? dx : ctx->scratch, 0.0f,
                                  u->in_width);
}

static const struct zero_unit_ops layernorm_ops = {
    .kind = "layernorm",
    .saved_bytes = layernorm_saved_bytes,
    .scratch_bytes = layernorm_scratch_bytes,
    .forward = layernorm_forward,
    .backward = layernorm_backward,
    .destroy = NULL,
};

int zero_nn_layernorm(struct zero_unit **u, const char *name, int64_t C, struct zero_error *err)
{
    int rc = zero_unit_new(u, name, &layernorm_ops, NULL, C, C, err);
    if (rc == ZERO_OK && C <= 0)
        rc = zero_fail(err, ZERO_EINVAL, "unit %s: layernorm needs C > 0, not %lld", name,
                       (long long)C);
    if (rc == ZERO_OK)
        rc = gpt_add_layernorm_params(*u, "", C, err);
    if (rc != ZERO_OK) {
        zero_unit_destroy(*u);
        *u = NULL;
    }
    return rc;
}

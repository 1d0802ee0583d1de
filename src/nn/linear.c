/* linear: y = x @ weight^T + bias, torch.nn.Linear. Its affine math is shared
 * with the other layers that contain a linear map (mlp_block, classifier). */
#include <math.h>
#include <stdio.h>

#include "zero/nn.h"

#include "nn_internal.h"

int nn_add_affine_params(struct zero_unit *u, const char *prefix, int64_t in, int64_t out, int bias,
                         struct zero_error *err)
{
    char name[ZERO_NAME_LEN];
    const float bound = 1.0f / sqrtf((float)in);
    const int64_t wshape[2] = {out, in};
    snprintf(name, sizeof(name), "%sweight", prefix);
    int w = zero_unit_add_param(u, name, 2, wshape, ZERO_INIT_UNIFORM, bound, err);
    if (w < 0)
        return err != NULL ? err->code : ZERO_EINVAL;
    u->params[w].gemm_only = 1; /* nn_affine_forward/backward read it through nn_gemm only */
    if (!bias)
        return ZERO_OK;
    snprintf(name, sizeof(name), "%sbias", prefix);
    if (zero_unit_add_param(u, name, 1, &out, ZERO_INIT_UNIFORM, bound, err) < 0)
        return err != NULL ? err->code : ZERO_EINVAL;
    return ZERO_OK;
}

int nn_affine_forward(struct zero_unit_ctx *ctx, struct nn_operand x, int w, const float *b,
                      float *y, int64_t in, int64_t out)
{
    const int64_t rows = ctx->rows;
    /* y (rows, out) = x (rows, in) @ w^T (in, out) + b (out): the bias in the GEMM's
     * epilogue where the backend has one */
    if (b != NULL)
        return nn_gemm_bias(ctx, "gemm y = x w^T + b", 0, 1, rows, out, in, x, in, nn_param(ctx, w),
                            in, b, y, NULL);
    return nn_gemm(ctx, "gemm y = x w^T", 0, 1, rows, out, in, x, in, nn_param(ctx, w), in, 0.0f, y,
                   out);
}

int nn_affine_backward(struct zero_unit_ctx *ctx, struct nn_operand x, int w, const float *dy,
                       float *dx, float dx_beta, float *db, int acc_b, int64_t in, int64_t out)
{
    return nn_affine_backward_stored(ctx, x, w, nn_act(dy), dx, dx_beta, db, acc_b, in, out);
}

int nn_affine_backward_stored(struct zero_unit_ctx *ctx, struct nn_operand x, int w,
                              struct nn_operand g, float *dx, float dx_beta, float *db, int acc_b,
                              int64_t in, int64_t out)
{
    const int64_t rows = ctx->rows;
    if (db != NULL && g.x == NULL)
        return nn_unit_fail(ctx, ZERO_EINVAL, "a bias gradient needs dy in fp32");
    void *tmp; /* g rounded once for both products (a no-op where it is stored rounded) */
    int rc = nn_lower(ctx, &g, (size_t)(rows * out), &tmp);
    /* dw (out, in) = dy^T (out, rows) @ x (rows, in); beta 0 writes a micro-step's
     * gradient fresh, which the exactness contract relies on.
     * db (out) = sum over rows of dy (rows, out), in the same GEMM where fused */
    if (rc == ZERO_OK && db != NULL)
        rc = nn_gemm_bgrad(ctx, "gemm dw = dy^T x, db = sum dy", w, 1, 0, out, in, rows, g, out, x,
                           in, 0, db, acc_b ? 1.0f : 0.0f);
    else if (rc == ZERO_OK)
        rc = nn_gemm_grad(ctx, "gemm dw = dy^T x", w, 1, 0, out, in, rows, g, out, x, in);
    /* dx (rows, in) = dy (rows, out) @ w (out, in) + dx_beta * dx */
    if (rc == ZERO_OK && dx != NULL)
        rc = nn_gemm(ctx, "gemm dx = dy w", 0, 0, rows, in, out, g, out, nn_param(ctx, w), in,
                     dx_beta, dx, in);
    nn_release(ctx, tmp);
    return rc;
}

/* Parameters: 0 weight (out, in), 1 bias (out) when present. */
static int has_bias(const struct zero_unit *u)
{
    return u->nparams == 2;
}

static size_t linear_saved_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    (void)u, (void)ctx;
    return 0; /* backward needs only its input x, which the engine keeps */
}

static size_t linear_scratch_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    (void)u, (void)ctx;
    return 0;
}

/* y (rows, out) = x (rows, in) @ weight^T + bias */
static int linear_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                          float *y)
{
    return nn_affine_forward(ctx, nn_act(x), 0, has_bias(u) ? ctx->param[1] : NULL, y, u->in_width,
                             u->out_width);
}

/* dx (rows, in) = dy @ weight; dweight (out, in) = dy^T @ x; dbias (out) = sum_rows dy */
static int linear_backward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                           const float *dy, float *dx)
{
    const int bias = has_bias(u);
    return nn_affine_backward(ctx, nn_act(x), 0, dy, dx, 0.0f, bias ? ctx->grad[1] : NULL,
                              bias ? ctx->grad_accumulate[1] : 0, u->in_width, u->out_width);
}

static const struct zero_unit_ops linear_ops = {
    .kind = "linear",
    .saved_bytes = linear_saved_bytes,
    .scratch_bytes = linear_scratch_bytes,
    .forward = linear_forward,
    .backward = linear_backward,
    .destroy = NULL,
};

int zero_nn_linear(struct zero_unit **u, const char *name, int64_t in, int64_t out, int bias,
                   struct zero_error *err)
{
    int rc = zero_unit_new(u, name, &linear_ops, NULL, in, out, err);
    if (rc == ZERO_OK && in <= 0)
        rc = zero_fail(err, ZERO_EINVAL, "unit %s: linear needs in > 0, not %lld", name,
                       (long long)in);
    if (rc == ZERO_OK)
        rc = nn_add_affine_params(*u, "", in, out, bias, err);
    if (rc != ZERO_OK) {
        zero_unit_destroy(*u);
        *u = NULL;
    }
    return rc;
}

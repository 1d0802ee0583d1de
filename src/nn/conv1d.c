/* GPT-2's Conv1D: an affine map whose weight is stored [in, out], y = x W + b.
 * Storing it as GPT-2 does makes weight files a plain copy; the GEMMs take the
 * layout as it is (no transposed copies). */
#include <stdio.h>

#include "gpt_internal.h"
#include "nn_internal.h"

int gpt_add_conv1d_params(struct zero_unit *u, const char *prefix, int64_t in, int64_t out,
                          float std, struct zero_error *err)
{
    char name[ZERO_NAME_LEN];
    const int64_t wshape[2] = {in, out};
    snprintf(name, sizeof(name), "%sweight", prefix);
    if (zero_unit_add_param(u, name, 2, wshape, ZERO_INIT_NORMAL, std, err) < 0)
        return err != NULL ? err->code : ZERO_EINVAL;
    snprintf(name, sizeof(name), "%sbias", prefix);
    if (zero_unit_add_param(u, name, 1, &out, ZERO_INIT_ZEROS, 0.0f, err) < 0)
        return err != NULL ? err->code : ZERO_EINVAL;
    return ZERO_OK;
}

int gpt_conv1d_forward(struct zero_unit_ctx *ctx, int p, struct nn_operand x, float *y, int64_t in,
                       int64_t out)
{
    /* y (rows, out, fp32) = x (rows, in) @ w (in, out) + b (out) */
    return nn_gemm_bias(ctx, "gemm y = x w + b", 0, 0, ctx->rows, out, in, x, in, nn_param(ctx, p),
                        out, ctx->param[p + 1], y, NULL);
}

int gpt_conv1d_gelu_forward(struct zero_unit_ctx *ctx, int p, struct nn_operand x, void *y,
                            void *gelu, int64_t in, int64_t out)
{
    /* y (rows, out, stored) = x @ w + b; gelu (stored) = gelu_tanh(y), from y's fp32
     * value (as the GEMM's epilogue computes it), both rounded once when stored */
    return nn_gemm_bias_stored(ctx, "gemm y = x w + b", 0, 0, ctx->rows, out, in, x, in,
                               nn_param(ctx, p), out, ctx->param[p + 1], y, gelu);
}

/* gpt_conv1d_backward; with pre, dx = (dy w^T) * gelu'(pre) (dx_beta 0) */
static int conv1d_backward(struct zero_unit_ctx *ctx, int p, struct nn_operand x, const float *dy,
                           float *dx, float dx_beta, const void *pre, int64_t in, int64_t out)
{
    const int64_t rows = ctx->rows;
    struct nn_operand g = nn_act(dy); /* rounded once for both products */
    void *tmp;
    int rc = nn_lower(ctx, &g, (size_t)(rows * out), &tmp);
    /* dw (in, out) = x^T (in, rows) @ dy (rows, out); beta 0 writes it fresh;
     * db (out) = sum over rows of dy (rows, out), in the same GEMM where fused */
    if (rc == ZERO_OK)
        rc = nn_gemm_bgrad(ctx, "gemm dw = x^T dy, db = sum dy", p, 1, 0, in, out, rows, x, in, g,
                           out, 1, ctx->grad[p + 1], ctx->grad_accumulate[p + 1] ? 1.0f : 0.0f);
    /* dx (rows, in) = dy (rows, out) @ w^T (out, in) + dx_beta * dx, or times gelu'(pre) */
    if (rc == ZERO_OK && dx != NULL && pre != NULL) /* pre read as stored where it can be */
        rc = nn_gemm_dgelu_stored(ctx, "gemm dx = (dy w^T) gelu'(pre)", 0, 1, rows, in, out, g, out,
                                  nn_param(ctx, p), out, dx, pre);
    else if (rc == ZERO_OK && dx != NULL)
        rc = nn_gemm(ctx, "gemm dx = dy w^T", 0, 1, rows, in, out, g, out, nn_param(ctx, p), out,
                     dx_beta, dx, in);
    nn_release(ctx, tmp);
    return rc;
}

int gpt_conv1d_backward(struct zero_unit_ctx *ctx, int p, struct nn_operand x, const float *dy,
                        float *dx, float dx_beta, int64_t in, int64_t out)
{
    return conv1d_backward(ctx, p, x, dy, dx, dx_beta, NULL, in, out);
}

int gpt_conv1d_backward_dgelu(struct zero_unit_ctx *ctx, int p, struct nn_operand x,
                              const float *dy, float *dx, const void *pre, int64_t in, int64_t out)
{
    return conv1d_backward(ctx, p, x, dy, dx, 0.0f, pre, in, out);
}

/* mlp_block: the residual MLP of a transformer block without its norm,
 *   y = x + Linear(hidden, width)(gelu(Linear(width, hidden)(x)))
 * named like nn.Sequential(Linear, GELU, Linear) so "0.weight" etc. match PyTorch. */
#include "zero/nn.h"

#include "nn_internal.h"

/* Parameters, in declaration order. */
enum { W1 = 0, B1, W2, B2 };

static int64_t hidden_of(const struct zero_unit *u)
{
    return u->params[W1].shape[0];
}

/* saved: h (rows, hidden) = x W1^T + b1, then a (rows, hidden) = gelu(h) */
static size_t mlp_block_saved_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    return 2 * (size_t)ctx->rows * (size_t)hidden_of(u) * sizeof(float);
}

/* scratch: da (rows, hidden), overwritten in place by dh */
static size_t mlp_block_scratch_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    return (size_t)ctx->rows * (size_t)hidden_of(u) * sizeof(float);
}

static int mlp_block_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                             float *y)
{
    const int64_t width = u->in_width, hidden = hidden_of(u);
    const size_t nh = (size_t)(ctx->rows * hidden);
    float *h = ctx->saved; /* (rows, hidden) */
    float *a = h + nh;     /* (rows, hidden) */

    /* h (rows, hidden) = x (rows, width) @ W1^T + b1 */
    int rc = nn_affine_forward(ctx, nn_act(x), W1, ctx->param[B1], h, width, hidden);
    if (rc != ZERO_OK)
        return rc;
    /* a (rows, hidden) = gelu(h) */
    rc = ctx->be->gelu_forward(ctx->bself, a, h, nh, ZERO_GELU_ERF);
    if (rc != ZERO_OK)
        return nn_backend_fail(ctx, rc, "gelu_forward");
    /* y (rows, width) = a @ W2^T + b2 */
    rc = nn_affine_forward(ctx, nn_act(a), W2, ctx->param[B2], y, hidden, width);
    if (rc != ZERO_OK)
        return rc;
    /* y (rows, width) += x: the residual */
    rc = ctx->be->axpy(ctx->bself, 1.0f, x, y, (size_t)(ctx->rows * width));
    return rc != ZERO_OK ? nn_backend_fail(ctx, rc, "axpy y += x") : ZERO_OK;
}

static int mlp_block_backward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                              const float *dy, float *dx)
{
    const int64_t width = u->in_width, hidden = hidden_of(u);
    const size_t nh = (size_t)(ctx->rows * hidden);
    const float *h = ctx->saved; /* (rows, hidden) */
    const float *a = h + nh;     /* (rows, hidden) */
    float *dh = ctx->scratch;    /* (rows, hidden): first da, then dh in place */

    /* dW2 (width, hidden) = dy^T a; db2 (width) = sum_rows dy; da (rows, hidden) = dy W2 */
    int rc = nn_affine_backward(ctx, nn_act(a), W2, dy, dh, 0.0f, ctx->grad[B2],
                                ctx->grad_accumulate[B2], hidden, width);
    if (rc != ZERO_OK)
        return rc;
    /* dh (rows, hidden) = da * gelu'(h) */
    rc = ctx->be->gelu_backward(ctx->bself, dh, h, dh, nh, ZERO_GELU_ERF);
    if (rc != ZERO_OK)
        return nn_backend_fail(ctx, rc, "gelu_backward");
    /* dx (rows, width) = dy (the residual path) + dh W1 */
    if (dx != NULL && dx != dy) {
        rc = ctx->be->copy(ctx->bself, dx, dy, (size_t)(ctx->rows * width) * sizeof(float));
        if (rc != ZERO_OK)
            return nn_backend_fail(ctx, rc, "copy dx = dy");
    }
    /* dW1 (hidden, width) = dh^T x; db1 (hidden) = sum_rows dh; dx += dh W1 */
    return nn_affine_backward(ctx, nn_act(x), W1, dh, dx, 1.0f, ctx->grad[B1],
                              ctx->grad_accumulate[B1], width, hidden);
}

static const struct zero_unit_ops mlp_block_ops = {
    .kind = "mlp_block",
    .saved_bytes = mlp_block_saved_bytes,
    .scratch_bytes = mlp_block_scratch_bytes,
    .forward = mlp_block_forward,
    .backward = mlp_block_backward,
    .destroy = NULL,
};

int zero_nn_mlp_block(struct zero_unit **u, const char *name, int64_t width, int64_t hidden,
                      struct zero_error *err)
{
    int rc = zero_unit_new(u, name, &mlp_block_ops, NULL, width, width, err);
    if (rc == ZERO_OK && (width <= 0 || hidden <= 0))
        rc = zero_fail(err, ZERO_EINVAL,
                       "unit %s: mlp_block widths must be positive (width "
                       "%lld, hidden %lld)",
                       name, (long long)width, (long long)hidden);
    if (rc == ZERO_OK)
        rc = nn_add_affine_params(*u, "0.", width, hidden, 1, err);
    if (rc == ZERO_OK)
        rc = nn_add_affine_params(*u, "2.", hidden, width, 1, err);
    if (rc != ZERO_OK) {
        zero_unit_destroy(*u);
        *u = NULL;
    }
    return rc;
}

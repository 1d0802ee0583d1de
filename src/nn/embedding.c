/* The GPT embeddings, two units so that parameter names are GPT-2's:
 *   wte (token_embedding):    y (rows, C) = weight (V, C) [tokens]
 *   wpe (position_embedding): y (rows, C) = x + weight (T, C) [r % T]
 * The position add is a bias over whole sequences: viewing y as (B, T*C),
 * weight (T*C) is added to each of its B rows, so the backend's bias_add and
 * bias_grad (rows summed in order) do it. */
#include "gpt_internal.h"
#include "nn_internal.h"

static size_t no_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    (void)u, (void)ctx;
    return 0;
}

/* ---- token embedding ---- */

static int token_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                         float *y)
{
    (void)x;
    const struct gpt_dims *d = u->impl;
    if (ctx->tokens == NULL)
        return nn_unit_fail(ctx, ZERO_EINVAL, "the batch has no tokens");
    int rc = ctx->be->embedding_forward(ctx->bself, y, ctx->tokens, ctx->param[0], ctx->rows, d->C,
                                        d->V);
    return rc != ZERO_OK ? nn_backend_fail(ctx, rc, "embedding_forward") : ZERO_OK;
}

/* dweight (V, C) = (accumulate ? dweight : 0) + dy rows scattered to their tokens */
static int token_backward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                          const float *dy, float *dx)
{
    (void)x, (void)dx;
    const struct gpt_dims *d = u->impl;
    int rc = ctx->be->embedding_backward(ctx->bself, ctx->grad[0], ctx->tokens, dy, ctx->rows, d->C,
                                         d->V, ctx->grad_accumulate[0] ? 1.0f : 0.0f);
    return rc != ZERO_OK ? nn_backend_fail(ctx, rc, "embedding_backward") : ZERO_OK;
}

static const struct zero_unit_ops token_ops = {
    .kind = "token_embedding",
    .saved_bytes = no_bytes,
    .scratch_bytes = no_bytes,
    .forward = token_forward,
    .backward = token_backward,
    .destroy = gpt_unit_destroy,
};

int zero_nn_token_embedding(struct zero_unit **u, const char *name, int64_t vocab, int64_t C,
                            struct zero_error *err)
{
    *u = NULL;
    if (vocab <= 0 || C <= 0)
        return zero_fail(err, ZERO_EINVAL,
                         "unit %s: token embedding needs vocab > 0 and C > 0 "
                         "(got %lld, %lld)",
                         name, (long long)vocab, (long long)C);
    const struct gpt_dims d = {.C = C, .V = vocab};
    const int64_t shape[2] = {vocab, C};
    int rc = gpt_unit_new(u, name, &token_ops, &d, 0, C, err);
    if (rc == ZERO_OK &&
        zero_unit_add_param(*u, "weight", 2, shape, ZERO_INIT_NORMAL, GPT_INIT_STD, err) < 0)
        rc = err != NULL ? err->code : ZERO_EINVAL;
    if (rc != ZERO_OK) {
        zero_unit_destroy(*u);
        *u = NULL;
    }
    return rc;
}

/* ---- position embedding ---- */

static int position_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                            float *y)
{
    const struct gpt_dims *d = u->impl;
    int64_t B;
    int rc = gpt_sequences(ctx, d, &B);
    if (rc != ZERO_OK)
        return rc;
    /* y (B, T*C) = x + weight (T*C) broadcast over the B sequences */
    rc = ctx->be->copy(ctx->bself, y, x, (size_t)(ctx->rows * d->C) * sizeof(float));
    if (rc != ZERO_OK)
        return nn_backend_fail(ctx, rc, "copy y = x");
    rc = ctx->be->bias_add(ctx->bself, y, ctx->param[0], B, d->T * d->C);
    return rc != ZERO_OK ? nn_backend_fail(ctx, rc, "bias_add") : ZERO_OK;
}

/* dweight (T*C) = sum over sequences of dy (B, T*C); dx = dy */
static int position_backward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                             const float *dy, float *dx)
{
    (void)x;
    const struct gpt_dims *d = u->impl;
    int64_t B;
    int rc = gpt_sequences(ctx, d, &B);
    if (rc != ZERO_OK)
        return rc;
    rc = ctx->be->bias_grad(ctx->bself, ctx->grad[0], dy, B, d->T * d->C,
                            ctx->grad_accumulate[0] ? 1.0f : 0.0f);
    if (rc != ZERO_OK)
        return nn_backend_fail(ctx, rc, "bias_grad");
    if (dx != NULL &&
        (rc = ctx->be->copy(ctx->bself, dx, dy, (size_t)(ctx->rows * d->C) * sizeof(float))))
        return nn_backend_fail(ctx, rc, "copy dx = dy");
    return ZERO_OK;
}

static const struct zero_unit_ops position_ops = {
    .kind = "position_embedding",
    .saved_bytes = no_bytes,
    .scratch_bytes = no_bytes,
    .forward = position_forward,
    .backward = position_backward,
    .destroy = gpt_unit_destroy,
};

int zero_nn_position_embedding(struct zero_unit **u, const char *name, int64_t T, int64_t C,
                               struct zero_error *err)
{
    *u = NULL;
    if (T <= 0 || C <= 0)
        return zero_fail(err, ZERO_EINVAL,
                         "unit %s: position embedding needs T > 0 and C > 0 "
                         "(got %lld, %lld)",
                         name, (long long)T, (long long)C);
    const struct gpt_dims d = {.C = C, .T = T};
    const int64_t shape[2] = {T, C};
    int rc = gpt_unit_new(u, name, &position_ops, &d, C, C, err);
    if (rc == ZERO_OK &&
        zero_unit_add_param(*u, "weight", 2, shape, ZERO_INIT_NORMAL, GPT_INIT_STD, err) < 0)
        rc = err != NULL ? err->code : ZERO_EINVAL;
    if (rc != ZERO_OK) {
        zero_unit_destroy(*u);
        *u = NULL;
    }
    return rc;
}

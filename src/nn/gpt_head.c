/* gpt_head: the loss unit of GPT-2, named after what it owns, ln_f.
 *   h (rows, C)      = ln_f(x)
 *   logits (rows, V) = h @ wte^T      (the LM head tied to the token embedding)
 *   loss (rows)      = cross_entropy(logits, label)
 * wte (V, C) belongs to the embedding unit and is used here as an external
 * parameter, so its gradient gets this unit's share first (the backward runs
 * last unit first) and the embedding's scatter is added to it. */
#include "gpt_internal.h"
#include "nn_internal.h"

/* ctx->param / ctx->grad slots: own weight, bias, then the external wte. */
enum { LNF = 0, WTE = 2 };

/* saved: mean (rows), rstd (rows), probs (rows, V), fp32, then h (rows, C) stored
 * (ctx->act_type); a backend with the fused classifier (xent_fused) leaves dlogits in
 * probs' place instead, from the forward's dloss (the step's constant, the same in the
 * backward) */
static size_t head_saved_bytes_as(const struct zero_unit *u, int64_t rows, enum zero_dtype act)
{
    const struct gpt_dims *d = u->impl;
    return (size_t)(rows * (2 + d->V)) * sizeof(float) +
           (size_t)(rows * d->C) * zero_dtype_size(act);
}

static size_t head_saved_bytes(const struct zero_unit *u, int64_t rows)
{
    return head_saved_bytes_as(u, rows, ZERO_F32);
}

/* scratch: logits or dlogits (rows, V), dh (rows, C), and dx (rows, C) when the
 * caller wants none (only as a first unit, in tests) */
static size_t head_scratch_bytes(const struct zero_unit *u, int64_t rows)
{
    const struct gpt_dims *d = u->impl;
    return (size_t)(rows * (d->V + 2 * d->C)) * sizeof(float);
}

struct head_saved {
    float *mean, *rstd, *probs;
    void *h;
};

static void head_saved_map(const struct gpt_dims *d, int64_t rows, float *base,
                           struct head_saved *s)
{
    s->mean = base;
    s->rstd = s->mean + rows;
    s->probs = s->rstd + rows;
    s->h = s->probs + rows * d->V;
}

/* logits (rows, V) = ln_f(x) @ wte^T, h kept in s */
static int head_logits(const struct gpt_dims *d, struct zero_unit_ctx *ctx, const float *x,
                       const struct head_saved *s, float *logits)
{
    int rc = gpt_layernorm_forward(ctx, LNF, x, s->h, s->mean, s->rstd, d->C);
    if (rc == ZERO_OK)
        rc = nn_affine_forward(ctx, nn_stored(ctx, s->h), WTE, NULL, logits, d->C, d->V);
    return rc;
}

/* y (rows, 1) = -log softmax(logits)[label] */
static int head_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                        float *y)
{
    const struct gpt_dims *d = u->impl;
    struct head_saved s;
    head_saved_map(d, ctx->rows, ctx->saved, &s);
    float *logits = ctx->scratch; /* (rows, V) */
    if (ctx->labels == NULL)
        return nn_unit_fail(ctx, ZERO_EINVAL, "the batch has no labels");
    int rc = head_logits(d, ctx, x, &s, logits);
    if (rc == ZERO_OK && ctx->be->xent_fused != NULL &&
        (rc = ctx->be->xent_fused(ctx->bself, y, s.probs, logits, ZERO_F32, ctx->labels, ctx->rows,
                                  d->V, ctx->dloss)))
        return nn_backend_fail(ctx, rc, "xent_fused");
    if (rc == ZERO_OK && ctx->be->xent_fused == NULL &&
        (rc = ctx->be->xent_forward(ctx->bself, y, s.probs, logits, ctx->labels, ctx->rows, d->V)))
        return nn_backend_fail(ctx, rc, "xent_forward");
    return rc;
}

/* dlogits = (probs - onehot) * dloss; dwte (V, C) += dlogits^T h; dh = dlogits wte;
 * then through ln_f */
static int head_backward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                         const float *dy, float *dx)
{
    (void)dy; /* a loss unit starts from ctx->dloss */
    const struct gpt_dims *d = u->impl;
    struct head_saved s;
    head_saved_map(d, ctx->rows, ctx->saved, &s);
    float *dlogits = ctx->scratch;            /* (rows, V) */
    float *dh = dlogits + ctx->rows * d->V;   /* (rows, C) */
    float *unused_dx = dh + ctx->rows * d->C; /* (rows, C) */
    int rc = ZERO_OK;
    if (ctx->be->xent_fused != NULL) /* the forward left dlogits in place of probs */
        dlogits = s.probs;
    else if ((rc = ctx->be->xent_backward(ctx->bself, dlogits, s.probs, ctx->labels, ctx->rows,
                                          d->V, ctx->dloss)) != ZERO_OK)
        return nn_backend_fail(ctx, rc, "xent_backward");
    rc = nn_affine_backward(ctx, nn_stored(ctx, s.h), WTE, dlogits, dh, 0.0f, NULL, 0, d->C, d->V);
    if (rc == ZERO_OK)
        rc = gpt_layernorm_backward(ctx, LNF, x, dh, s.mean, s.rstd, dx != NULL ? dx : unused_dx,
                                    0.0f, d->C);
    return rc;
}

/* y (rows, V) = the logits */
static int head_predict(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                        float *y)
{
    struct head_saved s;
    head_saved_map(u->impl, ctx->rows, ctx->saved, &s);
    return head_logits(u->impl, ctx, x, &s, y);
}

static const struct zero_unit_ops head_ops = {
    .kind = "gpt_head",
    .saved_bytes = head_saved_bytes,
    .scratch_bytes = head_scratch_bytes,
    .forward = head_forward,
    .backward = head_backward,
    .destroy = gpt_unit_destroy,
    .predict = head_predict,
    .saved_bytes_as = head_saved_bytes_as,
};

int zero_nn_gpt_head(struct zero_unit **u, const char *name, int64_t C, int64_t vocab, int wte_unit,
                     int wte_param, struct zero_error *err)
{
    *u = NULL;
    if (C <= 0 || vocab <= 0)
        return zero_fail(err, ZERO_EINVAL,
                         "unit %s: GPT head needs C > 0 and vocab > 0 (got "
                         "%lld, %lld)",
                         name, (long long)C, (long long)vocab);
    const struct gpt_dims d = {.C = C, .V = vocab};
    int rc = gpt_unit_new(u, name, &head_ops, &d, C, 1, err);
    if (rc == ZERO_OK)
        rc = gpt_add_layernorm_params(*u, "", C, err);
    if (rc != ZERO_OK) {
        zero_unit_destroy(*u);
        *u = NULL;
        return rc;
    }
    (*u)->is_loss = 1;
    (*u)->predict_width = vocab;
    (*u)->nexternal = 1;
    (*u)->external[0] = (struct zero_external_ref){.unit = wte_unit, .param = wte_param};
    return ZERO_OK;
}

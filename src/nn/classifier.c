/* classifier: the loss unit. logits = x @ weight^T + bias, then softmax
 * cross-entropy against ctx->labels, one loss per row (torch's
 * F.cross_entropy(reduction="none")); the engine sums them with dloss. */
#include "zero/nn.h"

#include "nn_internal.h"

/* Parameters: 0 weight (classes, in), 1 bias (classes). */
static int64_t classes_of(const struct zero_unit *u)
{
    return u->params[0].shape[0];
}

/* saved: probs (rows, classes) = softmax(logits) */
static size_t classifier_saved_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    return (size_t)ctx->rows * (size_t)classes_of(u) * sizeof(float);
}

/* scratch: logits (rows, classes) in forward, dlogits (rows, classes) in backward */
static size_t classifier_scratch_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    return (size_t)ctx->rows * (size_t)classes_of(u) * sizeof(float);
}

/* y (rows, 1) = -log softmax(x (rows, in) @ weight^T + bias)[label] */
static int classifier_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                              float *y)
{
    const int64_t classes = classes_of(u);
    float *logits = ctx->scratch; /* (rows, classes) */
    float *probs = ctx->saved;    /* (rows, classes) */
    if (ctx->labels == NULL && ctx->rows > 0)
        return nn_unit_fail(ctx, ZERO_EINVAL, "the batch has no labels");
    int rc = nn_affine_forward(ctx, nn_act(x), 0, ctx->param[1], logits, u->in_width, classes);
    if (rc != ZERO_OK)
        return rc;
    rc = ctx->be->xent_forward(ctx->bself, y, probs, logits, ctx->labels, ctx->rows, classes);
    return rc != ZERO_OK ? nn_backend_fail(ctx, rc, "xent_forward") : ZERO_OK;
}

/* dlogits (rows, classes) = (probs - onehot(labels)) * dloss, then as linear:
 * dx = dlogits @ weight; dweight = dlogits^T @ x; dbias = sum_rows dlogits */
static int classifier_backward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                               const float *dy, float *dx)
{
    (void)dy; /* a loss unit starts the backward pass from ctx->dloss */
    const int64_t classes = classes_of(u);
    float *dlogits = ctx->scratch;   /* (rows, classes) */
    const float *probs = ctx->saved; /* (rows, classes) */
    int rc = ctx->be->xent_backward(ctx->bself, dlogits, probs, ctx->labels, ctx->rows, classes,
                                    ctx->dloss);
    if (rc != ZERO_OK)
        return nn_backend_fail(ctx, rc, "xent_backward");
    return nn_affine_backward(ctx, nn_act(x), 0, dlogits, dx, 0.0f, ctx->grad[1],
                              ctx->grad_accumulate[1], u->in_width, classes);
}

/* y (rows, classes) = logits: what the loss would be computed from */
static int classifier_predict(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                              float *y)
{
    return nn_affine_forward(ctx, nn_act(x), 0, ctx->param[1], y, u->in_width, classes_of(u));
}

static const struct zero_unit_ops classifier_ops = {
    .kind = "classifier",
    .saved_bytes = classifier_saved_bytes,
    .scratch_bytes = classifier_scratch_bytes,
    .forward = classifier_forward,
    .backward = classifier_backward,
    .destroy = NULL,
    .predict = classifier_predict,
};

int zero_nn_classifier(struct zero_unit **u, const char *name, int64_t in, int64_t classes,
                       struct zero_error *err)
{
    int rc = zero_unit_new(u, name, &classifier_ops, NULL, in, 1, err);
    if (rc == ZERO_OK && (in <= 0 || classes <= 0))
        rc = zero_fail(err, ZERO_EINVAL,
                       "unit %s: classifier widths must be positive (in %lld, "
                       "classes %lld)",
                       name, (long long)in, (long long)classes);
    if (rc == ZERO_OK)
        rc = nn_add_affine_params(*u, "", in, classes, 1, err);
    if (rc != ZERO_OK) {
        zero_unit_destroy(*u);
        *u = NULL;
        return rc;
    }
    (*u)->is_loss = 1;
    (*u)->predict_width = classes;
    return ZERO_OK;
}

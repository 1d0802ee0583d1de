/* gelu: y = gelu(x) elementwise, erf form (torch.nn.GELU()) or tanh form
 * (torch.nn.GELU(approximate="tanh")). No parameters. */
#include <stdlib.h>

#include "zero/nn.h"

#include "nn_internal.h"

struct gelu_impl {
    enum zero_gelu kind;
};

static enum zero_gelu gelu_kind(const struct zero_unit *u)
{
    return ((const struct gelu_impl *)u->impl)->kind;
}

static size_t gelu_saved_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    (void)u, (void)ctx;
    return 0; /* gelu'(x) is computed from the input x, which the engine keeps */
}

static size_t gelu_scratch_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    (void)u, (void)ctx;
    return 0;
}

/* y (rows, width) = gelu(x (rows, width)) */
static int gelu_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                        float *y)
{
    int rc =
        ctx->be->gelu_forward(ctx->bself, y, x, (size_t)(ctx->rows * u->out_width), gelu_kind(u));
    return rc != ZERO_OK ? nn_backend_fail(ctx, rc, "gelu_forward") : ZERO_OK;
}

/* dx (rows, width) = dy (rows, width) * gelu'(x) */
static int gelu_backward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                         const float *dy, float *dx)
{
    if (dx == NULL)
        return ZERO_OK; /* first unit: nothing upstream needs the gradient */
    int rc = ctx->be->gelu_backward(ctx->bself, dx, x, dy, (size_t)(ctx->rows * u->out_width),
                                    gelu_kind(u));
    return rc != ZERO_OK ? nn_backend_fail(ctx, rc, "gelu_backward") : ZERO_OK;
}

static void gelu_destroy(struct zero_unit *u)
{
    free(u->impl);
    u->impl = NULL;
}

static const struct zero_unit_ops gelu_ops = {
    .kind = "gelu",
    .saved_bytes = gelu_saved_bytes,
    .scratch_bytes = gelu_scratch_bytes,
    .forward = gelu_forward,
    .backward = gelu_backward,
    .destroy = gelu_destroy,
};

int zero_nn_gelu(struct zero_unit **u, const char *name, int64_t width, enum zero_gelu kind,
                 struct zero_error *err)
{
    *u = NULL;
    if (kind != ZERO_GELU_ERF && kind != ZERO_GELU_TANH)
        return zero_fail(err, ZERO_EINVAL, "unit %s: unknown gelu kind %d",
                         name != NULL ? name : "(null)", (int)kind);
    struct gelu_impl *impl = malloc(sizeof(*impl));
    if (impl == NULL)
        return zero_fail(err, ZERO_ENOMEM, "unit %s: out of memory",
                         name != NULL ? name : "(null)");
    impl->kind = kind;
    int rc = zero_unit_new(u, name, &gelu_ops, impl, width, width, err);
    if (rc != ZERO_OK)
        free(impl); /* zero_unit_new does not take impl when it fails */
    return rc;
}

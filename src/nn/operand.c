/* GEMM operands (struct nn_operand, nn_internal.h): an fp32 activation, a
 * parameter slot, and the rounding of an activation into a workspace once for
 * several products. A floor below matmul.c and activation.c, which both build
 * operands: the products read them, stored activations make them. */
#include "nn_internal.h"

struct nn_operand nn_act(const float *x)
{
    return (struct nn_operand){.x = x, .param = -1};
}

struct nn_operand nn_param(const struct zero_unit_ctx *ctx, int i)
{
    return (struct nn_operand){.x = ctx->param[i], .param = i};
}

int nn_lower(struct zero_unit_ctx *ctx, struct nn_operand *o, size_t n, void **tmp)
{
    const struct zero_backend *be = ctx->be;
    *tmp = NULL;
    if (ctx->matmul_type == ZERO_F32 || o->lowp != NULL)
        return ZERO_OK;
    int rc = be->alloc(ctx->bself, n * zero_dtype_size(ctx->matmul_type), ZERO_TAG_WORKSPACE, tmp);
    if (rc == ZERO_OK)
        rc = be->cast(ctx->bself, *tmp, ctx->matmul_type, o->x, ZERO_F32, n);
    if (rc == ZERO_OK) {
        o->lowp = *tmp;
        o->lowp_type = ctx->matmul_type;
    }
    return rc == ZERO_OK ? ZERO_OK : nn_backend_fail(ctx, rc, "rounding a GEMM operand");
}

void nn_release(struct zero_unit_ctx *ctx, void *tmp)
{
    ctx->be->free(ctx->bself, tmp);
}

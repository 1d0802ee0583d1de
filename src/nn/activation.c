/* Stored activations (libzero.activations): the buffers a layer saves for its
 * backward and hands from one sub-layer to the next, in ctx->act_type.
 *
 * fp32: the buffer is the kernel's own input or output, nothing moves. Compute
 * dtype (fp16/bf16, as llm.c keeps them): a kernel that computes in fp32 writes
 * into an fp32 workspace that is rounded once into the stored buffer (the
 * backend's cast: round to nearest even), and a kernel that reads a stored
 * buffer reads it widened exactly into a workspace. Where the backend stores or
 * reads 16 bits itself (layernorm_forward_stored; gemm_bias_stored and gemm_dgelu_stored through
 * nn_gemm_bias_stored and nn_gemm_dgelu_stored) there is no workspace and no separate
 * pass, and the contract of those entries gives the same bits. The rounding happens at the
 * same places on every rank and stage, so the exactness contract holds in this
 * mode too; it differs from the fp32 mode by those roundings. */
#include "nn_internal.h"

size_t nn_act_bytes(const struct zero_unit_ctx *ctx, size_t n)
{
    return n * zero_dtype_size(ctx->act_type);
}

void *nn_act_at(const struct zero_unit_ctx *ctx, void *base, size_t n)
{
    return (char *)base + nn_act_bytes(ctx, n);
}

struct nn_operand nn_stored(const struct zero_unit_ctx *ctx, const void *x)
{
    if (ctx->act_type == ZERO_F32)
        return nn_act(x);
    return (struct nn_operand){.param = -1, .lowp = x, .lowp_type = ctx->act_type};
}

int nn_act_load(struct zero_unit_ctx *ctx, const void *x, size_t n, const float **out, void **tmp)
{
    *tmp = NULL;
    *out = x;
    if (ctx->act_type == ZERO_F32)
        return ZERO_OK;
    const struct zero_backend *be = ctx->be;
    int rc = be->alloc(ctx->bself, n * sizeof(float), ZERO_TAG_WORKSPACE, tmp);
    if (rc == ZERO_OK)
        rc = be->cast(ctx->bself, *tmp, ZERO_F32, x, ctx->act_type, n);
    *out = *tmp;
    return rc == ZERO_OK ? ZERO_OK : nn_backend_fail(ctx, rc, "widening a stored activation");
}

int nn_act_begin(struct zero_unit_ctx *ctx, void *y, size_t n, float **out, void **tmp)
{
    *tmp = NULL;
    *out = y;
    if (ctx->act_type == ZERO_F32)
        return ZERO_OK;
    int rc = ctx->be->alloc(ctx->bself, n * sizeof(float), ZERO_TAG_WORKSPACE, tmp);
    *out = *tmp;
    return rc == ZERO_OK ? ZERO_OK : nn_backend_fail(ctx, rc, "an activation's fp32 workspace");
}

int nn_act_end(struct zero_unit_ctx *ctx, int rc, void *y, size_t n, void *tmp)
{
    if (rc == ZERO_OK && tmp != NULL &&
        (rc = ctx->be->cast(ctx->bself, y, ctx->act_type, tmp, ZERO_F32, n)) != ZERO_OK)
        rc = nn_backend_fail(ctx, rc, "rounding a stored activation");
    nn_release(ctx, tmp);
    return rc;
}

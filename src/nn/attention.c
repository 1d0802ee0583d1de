/* Causal self-attention, GPT2Attention: qkv = c_attn(x) fused into one (C, 3C)
 * projection, multi-head causal softmax attention (the backend's
 * attention_forward), then c_proj. The sub-layer the block uses, and a
 * standalone unit with GPT2Attention's parameter names. */
#include <math.h>
#include <stdio.h>

#include "gpt_internal.h"
#include "nn_internal.h"
#include "zero/backend_attention.h"

/* Parameter offsets from the sub-layer's first index. */
enum { C_ATTN_W = 0, C_ATTN_B, C_PROJ_W, C_PROJ_B };

int gpt_add_attention_params(struct zero_unit *u, const char *prefix, int64_t C, float proj_std,
                             struct zero_error *err)
{
    char name[ZERO_NAME_LEN];
    snprintf(name, sizeof(name), "%sc_attn.", prefix);
    int rc = gpt_add_conv1d_params(u, name, C, 3 * C, GPT_INIT_STD, err);
    if (rc != ZERO_OK)
        return rc;
    snprintf(name, sizeof(name), "%sc_proj.", prefix);
    return gpt_add_conv1d_params(u, name, C, C, proj_std, err);
}

/* The floats of att (saved) and of the kernel's scratch: the contract's B*NH*T*T
 * each, or what the backend's attention group says for this ctx (a fused
 * attention that keeps per-query statistics only). No backend: the contract's. */
static void attn_state_floats(const struct zero_unit_ctx *ctx, const struct gpt_dims *d,
                              size_t *att, size_t *scratch)
{
    const int64_t B = ctx->rows / d->T;
    *att = *scratch = (size_t)(B * d->NH * d->T * d->T);
    if (ctx->be != NULL && ctx->be->attention != NULL)
        ctx->be->attention->attention_state_floats(ctx->bself, B, d->T, d->C, d->NH,
                                                   ctx->matmul_type, att, scratch);
}

/* att (att floats, fp32), then qkv (rows, 3C) and atty (rows, C) stored in act */
static size_t saved_bytes_with(const struct gpt_dims *d, int64_t rows, enum zero_dtype act,
                               size_t att)
{
    return att * sizeof(float) + (size_t)(rows * 4 * d->C) * zero_dtype_size(act);
}

size_t gpt_attn_saved_bytes(const struct zero_unit_ctx *ctx, const struct gpt_dims *d)
{
    size_t att, scratch;
    attn_state_floats(ctx, d, &att, &scratch);
    return saved_bytes_with(d, ctx->rows, ctx->act_type, att);
}

void gpt_attn_saved_map(const struct zero_unit_ctx *ctx, const struct gpt_dims *d, void *base,
                        struct gpt_attn_saved *s)
{
    size_t att, scratch;
    attn_state_floats(ctx, d, &att, &scratch);
    s->att = base;
    s->qkv = s->att + att;
    s->atty = (char *)s->qkv + (size_t)(ctx->rows * 3 * d->C) * zero_dtype_size(ctx->act_type);
}

/* backward: datty (rows, C) + dqkv (rows, 3C) + the kernel's scratch */
size_t gpt_attn_scratch_floats(const struct zero_unit_ctx *ctx, const struct gpt_dims *d)
{
    size_t att, scratch;
    attn_state_floats(ctx, d, &att, &scratch);
    return (size_t)(ctx->rows * 4 * d->C) + scratch;
}

int gpt_attn_forward(struct zero_unit_ctx *ctx, const struct gpt_dims *d, int p,
                     struct nn_operand x, float *y, const struct gpt_attn_saved *s)
{
    const int64_t C = d->C, rows = ctx->rows;
    int64_t B;
    int rc = gpt_sequences(ctx, d, &B);
    const size_t nqkv = (size_t)(rows * 3 * C), ny = (size_t)(rows * C);
    /* qkv (rows, 3C) = x (rows, C) @ c_attn.weight (C, 3C) + c_attn.bias, stored */
    if (rc == ZERO_OK)
        rc = gpt_conv1d_gelu_forward(ctx, p + C_ATTN_W, x, s->qkv, NULL, C, 3 * C);
    if (rc != ZERO_OK)
        return rc;
    /* atty (rows, C) = per head softmax(q k^T / sqrt(hs), causal) v; att: the state.
     * The head products take their operands in the layers' GEMM dtype too. Stored 16-bit
     * qkv and atty: the _stored entry reads and writes them as they are where the backend
     * has it; otherwise the kernel reads qkv widened and atty is stored rounded (the
     * same bits). att stays fp32: a backend may keep other statistics there (cuda's
     * flash attention: its log-sum-exp, which a 16-bit rounding would spoil). */
    if (ctx->act_type != ZERO_F32 && ctx->be->attention != NULL) {
        if ((rc = ctx->be->attention->attention_forward_stored(ctx->bself, s->atty, s->att, s->qkv,
                                                               ctx->act_type, B, d->T, C, d->NH,
                                                               ctx->matmul_type)) != ZERO_OK)
            return nn_backend_fail(ctx, rc, "attention_forward_stored");
    } else {
        const float *qkv32;
        float *y32 = NULL;
        void *tq, *tyy = NULL;
        rc = nn_act_load(ctx, s->qkv, nqkv, &qkv32, &tq);
        if (rc == ZERO_OK)
            rc = nn_act_begin(ctx, s->atty, ny, &y32, &tyy);
        if (rc == ZERO_OK &&
            (rc = ctx->be->attention_forward(ctx->bself, y32, s->att, qkv32, B, d->T, C, d->NH,
                                             ctx->matmul_type)) != ZERO_OK)
            rc = nn_backend_fail(ctx, rc, "attention_forward");
        nn_release(ctx, tq);
        rc = nn_act_end(ctx, rc, s->atty, ny, tyy);
    }
    /* y (rows, C) = atty @ c_proj.weight (C, C) + c_proj.bias */
    if (rc == ZERO_OK)
        rc = gpt_conv1d_forward(ctx, p + C_PROJ_W, nn_stored(ctx, s->atty), y, C, C);
    return rc;
}

int gpt_attn_backward(struct zero_unit_ctx *ctx, const struct gpt_dims *d, int p,
                      struct nn_operand x, const struct gpt_attn_saved *s, const float *dy,
                      float *dx, float dx_beta, float *scratch)
{
    const int64_t C = d->C, rows = ctx->rows;
    int64_t B;
    int rc = gpt_sequences(ctx, d, &B);
    float *datty = scratch;            /* (rows, C) */
    float *dqkv = datty + rows * C;    /* (rows, 3C) */
    float *katt = dqkv + rows * 3 * C; /* the kernel's scratch (gpt_attn_scratch_floats) */
    /* dc_proj from atty and dy; datty (rows, C) = dy @ c_proj.weight^T */
    if (rc == ZERO_OK)
        rc = gpt_conv1d_backward(ctx, p + C_PROJ_W, nn_stored(ctx, s->atty), dy, datty, 0.0f, C, C);
    if (rc != ZERO_OK)
        return rc;
    /* dqkv (rows, 3C) from datty through the attention: stored 16-bit qkv read as it
     * is by the _stored entry, else widened */
    if (ctx->act_type != ZERO_F32 && ctx->be->attention != NULL) {
        if ((rc = ctx->be->attention->attention_backward_stored(
                 ctx->bself, dqkv, katt, datty, s->qkv, ctx->act_type, s->att, B, d->T, C, d->NH,
                 ctx->matmul_type)) != ZERO_OK)
            return nn_backend_fail(ctx, rc, "attention_backward_stored");
    } else {
        const float *qkv32 = NULL;
        void *tq;
        rc = nn_act_load(ctx, s->qkv, (size_t)(rows * 3 * C), &qkv32, &tq);
        if (rc == ZERO_OK &&
            (rc = ctx->be->attention_backward(ctx->bself, dqkv, katt, datty, qkv32, s->att, B, d->T,
                                              C, d->NH, ctx->matmul_type)) != ZERO_OK)
            rc = nn_backend_fail(ctx, rc, "attention_backward");
        nn_release(ctx, tq);
    }
    /* dc_attn from x and dqkv; dx (rows, C) = dqkv @ c_attn.weight^T + dx_beta * dx */
    if (rc == ZERO_OK)
        rc = gpt_conv1d_backward(ctx, p + C_ATTN_W, x, dqkv, dx, dx_beta, C, 3 * C);
    return rc;
}

/* ---- the standalone unit ---- */

static size_t attention_saved_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    return gpt_attn_saved_bytes(ctx, u->impl);
}

static size_t attention_scratch_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    return gpt_attn_scratch_floats(ctx, u->impl) * sizeof(float);
}

static int attention_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                             float *y)
{
    struct gpt_attn_saved s;
    gpt_attn_saved_map(ctx, u->impl, ctx->saved, &s);
    return gpt_attn_forward(ctx, u->impl, 0, nn_act(x), y, &s);
}

static int attention_backward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                              const float *dy, float *dx)
{
    struct gpt_attn_saved s;
    gpt_attn_saved_map(ctx, u->impl, ctx->saved, &s);
    return gpt_attn_backward(ctx, u->impl, 0, nn_act(x), &s, dy, dx, 0.0f, ctx->scratch);
}

static const struct zero_unit_ops attention_ops = {
    .kind = "causal_self_attention",
    .saved_bytes = attention_saved_bytes,
    .scratch_bytes = attention_scratch_bytes,
    .forward = attention_forward,
    .backward = attention_backward,
    .destroy = gpt_unit_destroy,
    .stored_activations = 1,
};

int zero_nn_causal_self_attention(struct zero_unit **u, const char *name, int64_t C, int n_head,
                                  int64_t T, struct zero_error *err)
{
    *u = NULL;
    if (C <= 0 || T <= 0 || n_head <= 0 || C % n_head != 0)
        return zero_fail(err, ZERO_EINVAL,
                         "unit %s: attention needs C > 0, T > 0 and n_head "
                         "dividing C (C %lld, n_head %d, T %lld)",
                         name, (long long)C, n_head, (long long)T);
    const struct gpt_dims d = {.C = C, .NH = n_head, .T = T};
    int rc = gpt_unit_new(u, name, &attention_ops, &d, C, C, err);
    if (rc == ZERO_OK)
        rc = gpt_add_attention_params(*u, "", C, GPT_INIT_STD, err);
    if (rc != ZERO_OK) {
        zero_unit_destroy(*u);
        *u = NULL;
    }
    return rc;
}

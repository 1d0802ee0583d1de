/* gpt_block: one GPT-2 transformer block, the ZeRO-3 fetch unit of the model.
 *   x2 = x + attn(ln_1(x))
 *   y  = x2 + mlp(ln_2(x2)),  mlp(h) = c_proj(gelu_tanh(c_fc(h)))
 * Parameter names are GPT2Block's (ln_1.weight, attn.c_attn.weight, ...). */
#include <math.h>

#include "gpt_internal.h"
#include "nn_internal.h"

/* Parameter indices, in declaration order (= Hugging Face's order). */
enum { LN1 = 0, ATTN = 2, LN2 = 6, FC = 8, PROJ = 10, NPARAMS = 12 };

/* The saved activations, llm.c's layout for one layer (rows = B*T): the residual
 * x2 and the statistics in fp32, then the attention's (att fp32, qkv and atty
 * stored), then the rest stored (ctx->act_type). */
struct block_saved {
    float *x2;                  /* (rows, C): x + attention, ln_2's input (the residual) */
    float *ln1_mean, *ln1_rstd; /* (rows) each */
    float *ln2_mean, *ln2_rstd; /* (rows) each */
    struct gpt_attn_saved attn; /* att, qkv, atty */
    void *ln1, *ln2;            /* (rows, C) each */
    void *fch, *fch_gelu;       /* (rows, 4C) each */
};

/* x2, ln1/ln2 mean and rstd (fp32), the attention's (gpt_attn_saved_bytes), then ln1,
 * ln2 (rows, C) and fch, fch_gelu (rows, 4C) stored in ctx->act_type */
static size_t block_saved_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    const struct gpt_dims *d = u->impl;
    return (size_t)(ctx->rows * (d->C + 4)) * sizeof(float) + gpt_attn_saved_bytes(ctx, d) +
           (size_t)(ctx->rows * 10 * d->C) * zero_dtype_size(ctx->act_type);
}

static void block_saved_map(const struct gpt_dims *d, const struct zero_unit_ctx *ctx, void *base,
                            struct block_saved *s)
{
    const int64_t C = d->C, rows = ctx->rows;
    const size_t n = (size_t)(rows * C);
    s->x2 = base;
    s->ln1_mean = s->x2 + n;
    s->ln1_rstd = s->ln1_mean + rows;
    s->ln2_mean = s->ln1_rstd + rows;
    s->ln2_rstd = s->ln2_mean + rows;
    gpt_attn_saved_map(ctx, d, s->ln2_rstd + rows, &s->attn);
    s->ln1 = (char *)(s->ln2_rstd + rows) + gpt_attn_saved_bytes(ctx, d);
    s->ln2 = nn_act_at(ctx, s->ln1, n);
    s->fch = nn_act_at(ctx, s->ln2, n);
    s->fch_gelu = nn_act_at(ctx, s->fch, 4 * n);
}

/* backward scratch: dx2 (rows, C), dln (rows, C), then either dfch (rows, 4C)
 * or, once the MLP is done, the attention's scratch (attn floats) */
static size_t block_scratch_floats(const struct gpt_dims *d, int64_t rows, size_t attn)
{
    size_t mlp = (size_t)(rows * 4 * d->C);
    return (size_t)(rows * 2 * d->C) + (mlp > attn ? mlp : attn);
}

static size_t block_scratch_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    return block_scratch_floats(u->impl, ctx->rows, gpt_attn_scratch_floats(ctx, u->impl)) *
           sizeof(float);
}

static int block_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                         float *y)
{
    const struct gpt_dims *d = u->impl;
    const int64_t C = d->C;
    const size_t n = (size_t)(ctx->rows * C);
    struct block_saved s;
    block_saved_map(d, ctx, ctx->saved, &s);

    /* x2 (rows, C) = x + attn(ln_1(x)) */
    int rc = gpt_layernorm_forward(ctx, LN1, x, s.ln1, s.ln1_mean, s.ln1_rstd, C);
    if (rc == ZERO_OK)
        rc = gpt_attn_forward(ctx, d, ATTN, nn_stored(ctx, s.ln1), s.x2, &s.attn);
    /* x2 += x and ln_2(x2) in one pass where the backend fuses them;
     * y (rows, C) = x2 + c_proj(gelu(c_fc(ln_2(x2)))) */
    if (rc == ZERO_OK)
        rc = gpt_residual_layernorm_forward(ctx, LN2, s.x2, x, s.ln2, s.ln2_mean, s.ln2_rstd, C);
    if (rc == ZERO_OK) /* fch (rows, 4C) = c_fc(ln2), fch_gelu = gelu_tanh(fch) */
        rc = gpt_conv1d_gelu_forward(ctx, FC, nn_stored(ctx, s.ln2), s.fch, s.fch_gelu, C, 4 * C);
    if (rc == ZERO_OK)
        rc = gpt_conv1d_forward(ctx, PROJ, nn_stored(ctx, s.fch_gelu), y, 4 * C, C);
    if (rc == ZERO_OK && (rc = ctx->be->axpy(ctx->bself, 1.0f, s.x2, y, n)) != ZERO_OK)
        return nn_backend_fail(ctx, rc, "axpy y += x2");
    return rc;
}

static int block_backward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                          const float *dy, float *dx)
{
    const struct gpt_dims *d = u->impl;
    const int64_t C = d->C;
    const size_t n = (size_t)(ctx->rows * C);
    struct block_saved s;
    block_saved_map(d, ctx, ctx->saved, &s);
    float *dx2 = ctx->scratch; /* (rows, C) */
    float *dln = dx2 + n;      /* (rows, C): dln2, later dln1 */
    float *rest = dln + n;     /* dfch (rows, 4C), later the attention's scratch */

    /* dx2 = dy (the residual), then the MLP's share through ln_2 is added */
    int rc = ctx->be->copy(ctx->bself, dx2, dy, n * sizeof(float));
    if (rc != ZERO_OK)
        return nn_backend_fail(ctx, rc, "copy dx2 = dy");
    /* dfch (rows, 4C) = (dy c_proj^T) * gelu'(fch), one GEMM where the backend fuses it */
    rc =
        gpt_conv1d_backward_dgelu(ctx, PROJ, nn_stored(ctx, s.fch_gelu), dy, rest, s.fch, 4 * C, C);
    /* dln2 (rows, C) = dfch c_fc^T;  dx2 += ln_2'(dln2) */
    if (rc == ZERO_OK)
        rc = gpt_conv1d_backward(ctx, FC, nn_stored(ctx, s.ln2), rest, dln, 0.0f, C, 4 * C);
    if (rc == ZERO_OK)
        rc = gpt_layernorm_backward(ctx, LN2, s.x2, dln, s.ln2_mean, s.ln2_rstd, dx2, 1.0f, C);
    /* dln1 (rows, C) from dx2 through the attention */
    if (rc == ZERO_OK)
        rc = gpt_attn_backward(ctx, d, ATTN, nn_stored(ctx, s.ln1), &s.attn, dx2, dln, 0.0f, rest);
    if (rc != ZERO_OK)
        return rc;
    /* dx = dx2 (the residual) + ln_1'(dln1); without dx (first unit) ln_1's parameter
     * gradients are still needed, and dx2 takes the unused input gradient */
    if (dx != NULL && (rc = ctx->be->copy(ctx->bself, dx, dx2, n * sizeof(float))) != ZERO_OK)
        return nn_backend_fail(ctx, rc, "copy dx = dx2");
    return gpt_layernorm_backward(ctx, LN1, x, dln, s.ln1_mean, s.ln1_rstd, dx != NULL ? dx : dx2,
                                  dx != NULL ? 1.0f : 0.0f, C);
}

static const struct zero_unit_ops block_ops = {
    .kind = "gpt_block",
    .saved_bytes = block_saved_bytes,
    .scratch_bytes = block_scratch_bytes,
    .forward = block_forward,
    .backward = block_backward,
    .destroy = gpt_unit_destroy,
    .stored_activations = 1,
};

int zero_nn_gpt_block(struct zero_unit **u, const char *name, int64_t C, int n_head, int64_t T,
                      int n_layer, struct zero_error *err)
{
    *u = NULL;
    if (C <= 0 || T <= 0 || n_head <= 0 || C % n_head != 0 || n_layer <= 0)
        return zero_fail(err, ZERO_EINVAL,
                         "unit %s: a GPT block needs C > 0, T > 0, n_layer > "
                         "0 and n_head dividing C (C %lld, n_head %d, T %lld, n_layer %d)",
                         name, (long long)C, n_head, (long long)T, n_layer);
    const struct gpt_dims d = {.C = C, .NH = n_head, .T = T};
    const float proj_std = GPT_INIT_STD / sqrtf(2.0f * (float)n_layer);
    int rc = gpt_unit_new(u, name, &block_ops, &d, C, C, err);
    if (rc == ZERO_OK)
        rc = gpt_add_layernorm_params(*u, "ln_1.", C, err);
    if (rc == ZERO_OK)
        rc = gpt_add_attention_params(*u, "attn.", C, proj_std, err);
    if (rc == ZERO_OK)
        rc = gpt_add_layernorm_params(*u, "ln_2.", C, err);
    if (rc == ZERO_OK)
        rc = gpt_add_conv1d_params(*u, "mlp.c_fc.", C, 4 * C, GPT_INIT_STD, err);
    if (rc == ZERO_OK)
        rc = gpt_add_conv1d_params(*u, "mlp.c_proj.", 4 * C, C, proj_std, err);
    if (rc == ZERO_OK && (*u)->nparams != NPARAMS)
        rc = zero_fail(err, ZERO_EINVAL, "unit %s: %d parameters declared, %d expected", name,
                       (*u)->nparams, NPARAMS);
    if (rc != ZERO_OK) {
        zero_unit_destroy(*u);
        *u = NULL;
    }
    return rc;
}

/* llama_block: one LlamaDecoderLayer, the ZeRO-3 fetch unit of the model.
 *   n1 = input_layernorm(x)                         RMSNorm
 *   q, k, v = q_proj(n1), k_proj(n1), v_proj(n1)    rope on q and k
 *   h  = x + o_proj(attention(q, k, v))             causal, grouped-query
 *   n2 = post_attention_layernorm(h)
 *   y  = h + down_proj(silu(gate_proj(n2)) * up_proj(n2))
 * Grouped-query attention runs on the core table's multi-head attention: k and v are
 * repeated over their groups into one (rows, 3 H D) qkv (the llama group's gqa_pack,
 * Hugging Face's repeat_kv) and the group's gradients summed back (gqa_unpack).
 * Parameter names and shapes are Hugging Face's (zero/llama.h); activations fp32. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llama_internal.h"
#include "zero/backend_attention.h"

/* The floats of att (saved) and of the attention kernel's scratch for ctx: the
 * contract's B*H*T*T each, or what the backend's attention group says. */
static void attn_floats(const struct zero_unit_ctx *ctx, const struct llama_dims *d, size_t *att,
                        size_t *scratch)
{
    const int64_t B = ctx->rows / d->T;
    *att = *scratch = (size_t)(B * d->H * d->T * d->T);
    if (ctx->be != NULL && ctx->be->attention != NULL)
        ctx->be->attention->attention_state_floats(ctx->bself, B, d->T, d->H * d->D, d->H,
                                                   ctx->matmul_type, att, scratch);
}

/* What forward keeps for backward (rows = B*T, Q = H*D), all fp32. */
struct block_saved {
    float *cos, *sin;       /* (T, D/2) each: the rope's tables */
    float *n1, *rstd1;      /* (rows, C), (rows): input_layernorm's output and statistic */
    float *qkv;             /* (rows, 3Q): q, k repeated, v repeated, after the rope */
    float *att;             /* (att floats): the attention's state */
    float *atty;            /* (rows, Q): the heads' outputs, o_proj's input */
    float *h, *n2, *rstd2;  /* (rows, C) x2, (rows) */
    float *gate, *up, *act; /* (rows, I) each: gate_proj, up_proj, silu(gate) * up */
};

static size_t rows_floats(const struct llama_dims *d)
{
    return (size_t)(3 * d->C + 4 * d->H * d->D + 3 * d->I + 2);
}

static size_t block_saved_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    const struct llama_dims *d = u->impl;
    size_t att, scratch;
    attn_floats(ctx, d, &att, &scratch);
    return ((size_t)(d->T * d->D) + (size_t)ctx->rows * rows_floats(d) + att) * sizeof(float);
}

static void block_saved_map(const struct llama_dims *d, const struct zero_unit_ctx *ctx,
                            struct block_saved *s)
{
    const int64_t rows = ctx->rows, C = d->C, Q = d->H * d->D, I = d->I;
    size_t att, scratch;
    attn_floats(ctx, d, &att, &scratch);
    s->cos = ctx->saved;
    s->sin = s->cos + d->T * d->D / 2;
    s->n1 = s->sin + d->T * d->D / 2;
    s->rstd1 = s->n1 + rows * C;
    s->qkv = s->rstd1 + rows;
    s->att = s->qkv + rows * 3 * Q;
    s->atty = s->att + att;
    s->h = s->atty + rows * Q;
    s->n2 = s->h + rows * C;
    s->rstd2 = s->n2 + rows * C;
    s->gate = s->rstd2 + rows;
    s->up = s->gate + rows * I;
    s->act = s->up + rows * I;
}

/* forward scratch: q (rows, Q), k, v (rows, KV D) before packing.
 * backward scratch: dh (rows, C), dn (rows, C), then either the MLP's da, dgate, dup
 * (rows, I) each, or the attention's dqkv (rows, 3Q) followed by datty (rows, Q) and
 * the kernel's scratch, which dq (rows, Q), dk, dv (rows, KV D) overwrite after. */
static size_t block_scratch_floats(const struct llama_dims *d, const struct zero_unit_ctx *ctx)
{
    size_t att, scratch;
    attn_floats(ctx, d, &att, &scratch);
    const size_t rows = (size_t)ctx->rows, Q = (size_t)(d->H * d->D), K = (size_t)(d->KV * d->D);
    const size_t mlp = rows * 3 * (size_t)d->I;
    const size_t tail =
        rows * Q + scratch > rows * (Q + 2 * K) ? rows * Q + scratch : rows * (Q + 2 * K);
    const size_t attn = rows * 3 * Q + tail;
    return rows * 2 * (size_t)d->C + (mlp > attn ? mlp : attn);
}

static size_t block_scratch_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    return block_scratch_floats(u->impl, ctx) * sizeof(float);
}

/* the bias of slot b, or NULL where the layer has none */
static const float *bias(const struct zero_unit_ctx *ctx, int b)
{
    return b >= 0 ? ctx->param[b] : NULL;
}

static int block_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                         float *y)
{
    const struct llama_dims *d = u->impl;
    const struct zero_llama_ops *ops = llama_ops(ctx);
    if (ops == NULL)
        return ZERO_ENOTSUP;
    const int64_t C = d->C, I = d->I, Q = d->H * d->D, K = d->KV * d->D, rows = ctx->rows;
    if (rows % d->T != 0)
        return nn_unit_fail(ctx, ZERO_EINVAL, "%lld rows are not whole sequences of %lld tokens",
                            (long long)rows, (long long)d->T);
    const int64_t B = rows / d->T;
    struct block_saved s;
    block_saved_map(d, ctx, &s);
    float *q = ctx->scratch, *k = q + rows * Q, *v = k + rows * K; /* (rows, Q), (rows, K) x2 */

    int rc = ops->rope_table(ctx->bself, s.cos, s.sin, d->T, d->D, &d->rope);
    if (rc != ZERO_OK)
        return nn_backend_fail(ctx, rc, "rope_table");
    /* n1 (rows, C) = input_layernorm(x); q, k, v = the projections of n1 */
    rc = llama_rmsnorm_forward(ctx, d->ln1, x, s.n1, s.rstd1, C, d->eps);
    if (rc == ZERO_OK)
        rc = nn_affine_forward(ctx, nn_act(s.n1), d->q, bias(ctx, d->qb), q, C, Q);
    if (rc == ZERO_OK)
        rc = nn_affine_forward(ctx, nn_act(s.n1), d->k, bias(ctx, d->kb), k, C, K);
    if (rc == ZERO_OK)
        rc = nn_affine_forward(ctx, nn_act(s.n1), d->v, bias(ctx, d->vb), v, C, K);
    if (rc != ZERO_OK)
        return rc;
    /* rope on q and k, then qkv (rows, 3Q) with k and v repeated over their groups */
    if ((rc = ops->rope_apply(ctx->bself, q, s.cos, s.sin, rows, d->T, d->H, d->D, 0)) ||
        (rc = ops->rope_apply(ctx->bself, k, s.cos, s.sin, rows, d->T, d->KV, d->D, 0)))
        return nn_backend_fail(ctx, rc, "rope_apply");
    if ((rc = ops->gqa_pack(ctx->bself, s.qkv, q, k, v, rows, d->H, d->KV, d->D)) != ZERO_OK)
        return nn_backend_fail(ctx, rc, "gqa_pack");
    /* atty (rows, Q) = causal softmax(q k^T / sqrt(D)) v per head */
    if ((rc = ctx->be->attention_forward(ctx->bself, s.atty, s.att, s.qkv, B, d->T, Q, d->H,
                                         ctx->matmul_type)) != ZERO_OK)
        return nn_backend_fail(ctx, rc, "attention_forward");
    /* h (rows, C) = x + o_proj(atty) */
    rc = nn_affine_forward(ctx, nn_act(s.atty), d->o, bias(ctx, d->ob), s.h, Q, C);
    if (rc == ZERO_OK && (rc = ctx->be->axpy(ctx->bself, 1.0f, x, s.h, (size_t)(rows * C))))
        return nn_backend_fail(ctx, rc, "axpy h += x");
    /* n2 (rows, C) = post_attention_layernorm(h); act (rows, I) = silu(gate) * up */
    if (rc == ZERO_OK)
        rc = llama_rmsnorm_forward(ctx, d->ln2, s.h, s.n2, s.rstd2, C, d->eps);
    if (rc == ZERO_OK)
        rc = nn_affine_forward(ctx, nn_act(s.n2), d->gate, bias(ctx, d->gateb), s.gate, C, I);
    if (rc == ZERO_OK)
        rc = nn_affine_forward(ctx, nn_act(s.n2), d->up, bias(ctx, d->upb), s.up, C, I);
    if (rc == ZERO_OK &&
        (rc = ops->swiglu_forward(ctx->bself, s.act, s.gate, s.up, (size_t)(rows * I))))
        return nn_backend_fail(ctx, rc, "swiglu_forward");
    /* y (rows, C) = h + down_proj(act) */
    if (rc == ZERO_OK)
        rc = nn_affine_forward(ctx, nn_act(s.act), d->down, bias(ctx, d->downb), y, I, C);
    if (rc == ZERO_OK && (rc = ctx->be->axpy(ctx->bself, 1.0f, s.h, y, (size_t)(rows * C))))
        return nn_backend_fail(ctx, rc, "axpy y += h");
    return rc;
}

/* the bias gradient of slot b (NULL where none) and whether it is added to */
static float *dbias(const struct zero_unit_ctx *ctx, int b)
{
    return b >= 0 ? ctx->grad[b] : NULL;
}
static int acc(const struct zero_unit_ctx *ctx, int b)
{
    return b >= 0 ? ctx->grad_accumulate[b] : 0;
}

static int block_backward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                          const float *dy, float *dx)
{
    const struct llama_dims *d = u->impl;
    const struct zero_llama_ops *ops = llama_ops(ctx);
    if (ops == NULL)
        return ZERO_ENOTSUP;
    const int64_t C = d->C, I = d->I, Q = d->H * d->D, K = d->KV * d->D, rows = ctx->rows;
    const int64_t B = rows / d->T;
    const size_t n = (size_t)(rows * C);
    struct block_saved s;
    block_saved_map(d, ctx, &s);
    size_t att, attn_scratch;
    attn_floats(ctx, d, &att, &attn_scratch);
    float *dh = ctx->scratch; /* (rows, C) */
    float *dn = dh + n;       /* (rows, C): dn2, later dn1 */
    float *rest = dn + n;
    float *da = rest, *dgate = da + rows * I, *dup = dgate + rows * I; /* (rows, I) each */
    float *dqkv = rest, *datty = dqkv + rows * 3 * Q, *kscratch = datty + rows * Q;
    float *dq = datty, *dk = dq + rows * Q, *dv = dk + rows * K; /* after the attention */

    /* dh = dy (the residual), then the MLP's share through post_attention_layernorm */
    int rc = ctx->be->copy(ctx->bself, dh, dy, n * sizeof(float));
    if (rc != ZERO_OK)
        return nn_backend_fail(ctx, rc, "copy dh = dy");
    /* da (rows, I) = dy down^T; dgate, dup through the SwiGLU; dn2 = dgate gate + dup up */
    rc = nn_affine_backward(ctx, nn_act(s.act), d->down, dy, da, 0.0f, dbias(ctx, d->downb),
                            acc(ctx, d->downb), I, C);
    if (rc == ZERO_OK &&
        (rc = ops->swiglu_backward(ctx->bself, dgate, dup, da, s.gate, s.up, (size_t)(rows * I))))
        return nn_backend_fail(ctx, rc, "swiglu_backward");
    if (rc == ZERO_OK)
        rc = nn_affine_backward(ctx, nn_act(s.n2), d->gate, dgate, dn, 0.0f, dbias(ctx, d->gateb),
                                acc(ctx, d->gateb), C, I);
    if (rc == ZERO_OK)
        rc = nn_affine_backward(ctx, nn_act(s.n2), d->up, dup, dn, 1.0f, dbias(ctx, d->upb),
                                acc(ctx, d->upb), C, I);
    if (rc == ZERO_OK)
        rc = llama_rmsnorm_backward(ctx, d->ln2, s.h, dn, s.rstd2, dh, 1.0f, C);
    /* datty (rows, Q) = dh o^T; dqkv (rows, 3Q) through the attention */
    if (rc == ZERO_OK)
        rc = nn_affine_backward(ctx, nn_act(s.atty), d->o, dh, datty, 0.0f, dbias(ctx, d->ob),
                                acc(ctx, d->ob), Q, C);
    if (rc != ZERO_OK)
        return rc;
    if ((rc = ctx->be->attention_backward(ctx->bself, dqkv, kscratch, datty, s.qkv, s.att, B, d->T,
                                          Q, d->H, ctx->matmul_type)) != ZERO_OK)
        return nn_backend_fail(ctx, rc, "attention_backward");
    /* dq, dk, dv: the groups summed back, the rope undone (its transpose) */
    if ((rc = ops->gqa_unpack(ctx->bself, dq, dk, dv, dqkv, rows, d->H, d->KV, d->D)) != ZERO_OK)
        return nn_backend_fail(ctx, rc, "gqa_unpack");
    if ((rc = ops->rope_apply(ctx->bself, dq, s.cos, s.sin, rows, d->T, d->H, d->D, 1)) ||
        (rc = ops->rope_apply(ctx->bself, dk, s.cos, s.sin, rows, d->T, d->KV, d->D, 1)))
        return nn_backend_fail(ctx, rc, "rope_apply (inverse)");
    /* dn1 (rows, C) = dq q_proj + dk k_proj + dv v_proj */
    rc = nn_affine_backward(ctx, nn_act(s.n1), d->q, dq, dn, 0.0f, dbias(ctx, d->qb),
                            acc(ctx, d->qb), C, Q);
    if (rc == ZERO_OK)
        rc = nn_affine_backward(ctx, nn_act(s.n1), d->k, dk, dn, 1.0f, dbias(ctx, d->kb),
                                acc(ctx, d->kb), C, K);
    if (rc == ZERO_OK)
        rc = nn_affine_backward(ctx, nn_act(s.n1), d->v, dv, dn, 1.0f, dbias(ctx, d->vb),
                                acc(ctx, d->vb), C, K);
    if (rc != ZERO_OK)
        return rc;
    /* dx = dh (the residual) + input_layernorm'(dn1); without dx (a first unit) the
     * weight's gradient is still needed and dh takes the unused input gradient */
    if (dx != NULL && (rc = ctx->be->copy(ctx->bself, dx, dh, n * sizeof(float))) != ZERO_OK)
        return nn_backend_fail(ctx, rc, "copy dx = dh");
    return llama_rmsnorm_backward(ctx, d->ln1, x, dn, s.rstd1, dx != NULL ? dx : dh,
                                  dx != NULL ? 1.0f : 0.0f, C);
}

static void block_destroy(struct zero_unit *u)
{
    free(u->impl);
    u->impl = NULL;
}

static const struct zero_unit_ops block_ops = {
    .kind = "llama_block",
    .saved_bytes = block_saved_bytes,
    .scratch_bytes = block_scratch_bytes,
    .forward = block_forward,
    .backward = block_backward,
    .destroy = block_destroy,
};

/* The slots of the layer's parameters, by name (llama_layer_param's order). */
static void assign_slots(struct llama_dims *d, const struct zero_unit *u)
{
    struct {
        const char *name;
        int *slot;
    } names[] = {
        {"self_attn.q_proj.weight", &d->q},  {"self_attn.q_proj.bias", &d->qb},
        {"self_attn.k_proj.weight", &d->k},  {"self_attn.k_proj.bias", &d->kb},
        {"self_attn.v_proj.weight", &d->v},  {"self_attn.v_proj.bias", &d->vb},
        {"self_attn.o_proj.weight", &d->o},  {"self_attn.o_proj.bias", &d->ob},
        {"mlp.gate_proj.weight", &d->gate},  {"mlp.gate_proj.bias", &d->gateb},
        {"mlp.up_proj.weight", &d->up},      {"mlp.up_proj.bias", &d->upb},
        {"mlp.down_proj.weight", &d->down},  {"mlp.down_proj.bias", &d->downb},
        {"input_layernorm.weight", &d->ln1}, {"post_attention_layernorm.weight", &d->ln2},
    };
    for (size_t j = 0; j < sizeof names / sizeof names[0]; j++) {
        *names[j].slot = -1;
        for (int i = 0; i < u->nparams; i++)
            if (strcmp(u->params[i].name, names[j].name) == 0)
                *names[j].slot = i;
    }
}

int llama_block_unit(struct zero_unit **u, const char *name, const struct zero_llama_config *c,
                     int64_t T, struct zero_error *err)
{
    *u = NULL;
    struct llama_dims *d = calloc(1, sizeof *d);
    if (d == NULL)
        return zero_fail(err, ZERO_ENOMEM, "unit %s: out of memory", name);
    *d = (struct llama_dims){
        .C = c->hidden_size,
        .I = c->intermediate_size,
        .H = c->num_attention_heads,
        .KV = c->num_key_value_heads,
        .D = c->head_dim,
        .T = T,
        .eps = (float)c->rms_norm_eps,
        .rope = {.theta = c->rope_theta,
                 .llama3 = c->rope_scaling.type == ZERO_ROPE_SCALING_LLAMA3,
                 .factor = c->rope_scaling.factor,
                 .low_freq_factor = c->rope_scaling.low_freq_factor,
                 .high_freq_factor = c->rope_scaling.high_freq_factor,
                 .original_max_position_embeddings =
                     (double)c->rope_scaling.original_max_position_embeddings},
    };
    int rc = zero_unit_new(u, name, &block_ops, d, d->C, d->C, err);
    if (rc != ZERO_OK) {
        free(d);
        return rc;
    }
    for (int i = 0; rc == ZERO_OK && i < llama_layer_nparams(c); i++) {
        const char *pname;
        int ndim;
        int64_t shape[2];
        llama_layer_param(c, i, &pname, &ndim, shape);
        /* weights N(0, initializer_range^2), biases 0, the norms' weights 1 */
        const int norm = strstr(pname, "layernorm") != NULL;
        const enum zero_init_kind init = ndim == 2 ? ZERO_INIT_NORMAL
                                         : norm    ? ZERO_INIT_ONES
                                                   : ZERO_INIT_ZEROS;
        int p = zero_unit_add_param(*u, pname, ndim, shape, init, LLAMA_INIT_STD, err);
        if (p < 0)
            rc = err != NULL ? err->code : ZERO_EINVAL;
        else if (ndim == 2)
            (*u)->params[p].gemm_only = 1; /* read only through nn_gemm */
    }
    if (rc == ZERO_OK)
        assign_slots(d, *u);
    if (rc != ZERO_OK) {
        zero_unit_destroy(*u);
        *u = NULL;
    }
    return rc;
}

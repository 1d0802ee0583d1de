/* gpt_head: the loss unit of GPT-2, named after what it owns, ln_f.
 *   h (rows, C)      = ln_f(x)
 *   logits (rows, V) = h @ wte^T      (the LM head tied to the token embedding)
 *   loss (rows)      = cross_entropy(logits, label)
 * (logits and dlogits in one buffer where the backend has the fused classifier, bf16
 * with bf16 stored activations)
 * wte (V, C) belongs to the embedding unit and is used here as an external
 * parameter, so its gradient gets this unit's share first (the backward runs
 * last unit first) and the embedding's scatter is added to it. */
#include <stdlib.h>
#include <string.h>

#include "gpt_internal.h"
#include "llama_internal.h"
#include "nn_internal.h"
#include "zero/backend_classifier.h"
#include "zero/knobs.h"

/* ctx->param / ctx->grad slots: own weight, bias, then the external wte. Llama's
 * lm_head (no norm) has its output weight at slot 0; the tied Llama head its RMSNorm
 * weight at 0 and the embedding at 1. */
enum { LNF = 0, WTE = 2 };
static int wte_slot(const struct gpt_dims *d)
{
    return d->head_norm == GPT_HEAD_NONE ? 0 : d->head_norm == GPT_HEAD_RMSNORM ? 1 : WTE;
}

/* Two ways through the loss, by what the backend has:
 * - the fused classifier (xent_fused; the cpu and cuda backends): one (rows, V) buffer
 *   in the saved region. The GEMM writes the logits there, xent_fused overwrites them
 *   with dlogits in place (from the forward's dloss, the step's constant, the same in
 *   the backward) and the backward reads them there: no probabilities, no scratch
 *   logits (llm.c's layout);
 * - without it: the logits in scratch, xent_forward's probs (rows, V) saved, and
 *   xent_backward's dlogits in scratch: two (rows, V) fp32 buffers. */
static int one_buffer(const struct zero_unit_ctx *ctx)
{
    return ctx->be != NULL && ctx->be->classifier != NULL; /* no backend: the contract's */
}

/* The dtype of the one buffer, logits and then dlogits: bf16 where the unit stores its
 * activations in bf16 (libzero.activations "compute" in bf16 training, as llm.c keeps
 * them), else fp32. The GEMM rounds each fp32 logit once as it stores it, xent_fused
 * widens them exactly and rounds each dlogit once, and the backward GEMMs read that
 * bf16 operand, which bf16 GEMMs would have rounded to anyway. fp16 stays fp32: the
 * fused classifier has no fp16 form, and fp16 dlogits would carry the loss scale (the
 * label's up to scale / rows, past 65504 at the 2^32 start; docs/design.md).
 * ZERO_FP32_LOGITS=1 keeps fp32 (the comparison of tests/test_gpt_stages.c). */
static enum zero_dtype logits_type(const struct zero_unit_ctx *ctx)
{
    const char *env = zero_knob(ZERO_KNOB_FP32_LOGITS);
    int fp32 = env != NULL && strcmp(env, "1") == 0;
    return one_buffer(ctx) && ctx->act_type == ZERO_BF16 && !fp32 ? ZERO_BF16 : ZERO_F32;
}

/* saved: mean (rows), rstd (rows), fp32; the (rows, V) buffer: with the fused classifier
 * the logits, then dlogits, in logits_type; without it probs, fp32; then h (rows, C)
 * stored (ctx->act_type) */
static size_t head_saved_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    const struct gpt_dims *d = u->impl;
    const int64_t rows = ctx->rows;
    const size_t norm = d->head_norm == GPT_HEAD_NONE
                            ? 0
                            : (size_t)(rows * 2) * sizeof(float) +
                                  (size_t)(rows * d->C) * zero_dtype_size(ctx->act_type);
    return norm + (size_t)(rows * d->V) * zero_dtype_size(logits_type(ctx));
}

/* scratch: without the fused classifier the logits, then dlogits (rows, V); dh (rows,
 * C), and dx (rows, C) when the caller wants none (only as a first unit, in tests); fp32 */
static size_t head_scratch_bytes(const struct zero_unit *u, const struct zero_unit_ctx *ctx)
{
    const struct gpt_dims *d = u->impl;
    return (size_t)(ctx->rows * ((one_buffer(ctx) ? 0 : d->V) + 2 * d->C)) * sizeof(float);
}

struct head_saved {
    float *mean, *rstd;
    void *vbuf; /* (rows, V): probs, or the logits and then dlogits in logits_type */
    void *h;
};

static void head_saved_map(const struct gpt_dims *d, const struct zero_unit_ctx *ctx,
                           struct head_saved *s)
{
    const int64_t rows = ctx->rows;
    const enum zero_dtype lt = logits_type(ctx);
    s->mean = ctx->saved;
    s->rstd = s->mean + rows;
    s->vbuf = d->head_norm == GPT_HEAD_NONE ? ctx->saved : (void *)(s->rstd + rows);
    s->h = (char *)s->vbuf + (size_t)(rows * d->V) * zero_dtype_size(lt);
}

/* logits (rows, V; lt) = ln_f(x) @ wte^T, h kept in s; a bf16 logit is the fp32 one
 * rounded once as the GEMM stores it */
static int head_logits(const struct gpt_dims *d, struct zero_unit_ctx *ctx, const float *x,
                       const struct head_saved *s, void *logits, enum zero_dtype lt)
{
    int rc = ZERO_OK;
    if (d->head_norm == GPT_HEAD_LAYERNORM) {
        rc = gpt_layernorm_forward(ctx, LNF, x, s->h, s->mean, s->rstd, d->C);
    } else if (d->head_norm == GPT_HEAD_RMSNORM) { /* h stored: rounded once where 16-bit */
        const size_t n = (size_t)(ctx->rows * d->C);
        float *h32;
        void *tmp;
        rc = nn_act_begin(ctx, s->h, n, &h32, &tmp);
        if (rc == ZERO_OK)
            rc = llama_rmsnorm_forward(ctx, LNF, x, h32, s->rstd, d->C, d->eps);
        rc = nn_act_end(ctx, rc, s->h, n, tmp);
    }
    const struct nn_operand h = d->head_norm == GPT_HEAD_NONE ? nn_act(x) : nn_stored(ctx, s->h);
    if (rc == ZERO_OK && lt == ZERO_F32)
        rc = nn_affine_forward(ctx, h, wte_slot(d), NULL, logits, d->C, d->V);
    else if (rc == ZERO_OK)
        rc = nn_gemm_stored(ctx, "gemm logits = h wte^T", 0, 1, ctx->rows, d->V, d->C, h, d->C,
                            nn_param(ctx, wte_slot(d)), d->C, logits, lt, d->V);
    return rc;
}

/* y (rows, 1) = -log softmax(logits)[label] */
static int head_forward(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                        float *y)
{
    const struct gpt_dims *d = u->impl;
    struct head_saved s;
    head_saved_map(d, ctx, &s);
    if (ctx->labels == NULL)
        return nn_unit_fail(ctx, ZERO_EINVAL, "the batch has no labels");
    if (one_buffer(ctx)) { /* logits, then dlogits in place: (rows, V) in s.vbuf */
        const enum zero_dtype lt = logits_type(ctx);
        int rc = head_logits(d, ctx, x, &s, s.vbuf, lt);
        if (rc == ZERO_OK &&
            (rc = ctx->be->classifier->xent_fused(ctx->bself, y, s.vbuf, s.vbuf, lt, ctx->labels,
                                                  ctx->rows, d->V, ctx->dloss)))
            return nn_backend_fail(ctx, rc, "xent_fused");
        return rc;
    }
    float *logits = ctx->scratch; /* (rows, V) */
    int rc = head_logits(d, ctx, x, &s, logits, ZERO_F32);
    if (rc == ZERO_OK &&
        (rc = ctx->be->xent_forward(ctx->bself, y, s.vbuf, logits, ctx->labels, ctx->rows, d->V)))
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
    head_saved_map(d, ctx, &s);
    float *dh = ctx->scratch; /* (rows, C), after the scratch logits where there are any */
    struct nn_operand dlogits;
    int rc = ZERO_OK;
    if (one_buffer(ctx)) { /* the forward left dlogits in s.vbuf */
        dlogits = logits_type(ctx) == ZERO_F32
                      ? nn_act(s.vbuf)
                      : (struct nn_operand){.param = -1, .lowp = s.vbuf, .lowp_type = ZERO_BF16};
    } else {
        float *d32 = ctx->scratch; /* (rows, V) */
        dh = d32 + ctx->rows * d->V;
        if ((rc = ctx->be->xent_backward(ctx->bself, d32, s.vbuf, ctx->labels, ctx->rows, d->V,
                                         ctx->dloss)) != ZERO_OK)
            return nn_backend_fail(ctx, rc, "xent_backward");
        dlogits = nn_act(d32);
    }
    float *unused_dx = dh + ctx->rows * d->C; /* (rows, C) */
    if (d->head_norm == GPT_HEAD_NONE)        /* dx (rows, C) = dlogits w straight */
        return nn_affine_backward_stored(ctx, nn_act(x), 0, dlogits, dx != NULL ? dx : unused_dx,
                                         0.0f, NULL, 0, d->C, d->V);
    rc = nn_affine_backward_stored(ctx, nn_stored(ctx, s.h), wte_slot(d), dlogits, dh, 0.0f, NULL,
                                   0, d->C, d->V);
    if (rc == ZERO_OK && d->head_norm == GPT_HEAD_RMSNORM)
        return llama_rmsnorm_backward(ctx, LNF, x, dh, s.rstd, dx != NULL ? dx : unused_dx, 0.0f,
                                      d->C);
    if (rc == ZERO_OK)
        rc = gpt_layernorm_backward(ctx, LNF, x, dh, s.mean, s.rstd, dx != NULL ? dx : unused_dx,
                                    0.0f, d->C);
    return rc;
}

/* y (rows, V) = the logits, fp32 (the saved region's (rows, V) buffer is not used) */
static int head_predict(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                        float *y)
{
    struct head_saved s;
    head_saved_map(u->impl, ctx, &s);
    return head_logits(u->impl, ctx, x, &s, y, ZERO_F32);
}

static const struct zero_unit_ops head_ops = {
    .kind = "gpt_head",
    .saved_bytes = head_saved_bytes,
    .scratch_bytes = head_scratch_bytes,
    .forward = head_forward,
    .backward = head_backward,
    .destroy = gpt_unit_destroy,
    .predict = head_predict,
    .stored_activations = 1,
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

/* the same code without ln_f: Llama's lm_head */
static const struct zero_unit_ops lm_head_ops = {
    .kind = "lm_head",
    .saved_bytes = head_saved_bytes,
    .scratch_bytes = head_scratch_bytes,
    .forward = head_forward,
    .backward = head_backward,
    .destroy = gpt_unit_destroy,
    .predict = head_predict,
    .stored_activations = 1,
};

int gpt_lm_head_unit(struct zero_unit **u, const char *name, int64_t C, int64_t vocab,
                     float rms_eps, int tied_unit, int tied_param, struct zero_error *err)
{
    *u = NULL;
    if (C <= 0 || vocab <= 0)
        return zero_fail(err, ZERO_EINVAL,
                         "unit %s: lm_head needs C > 0 and vocab > 0 (got %lld, %lld)", name,
                         (long long)C, (long long)vocab);
    const struct gpt_dims d = {.C = C,
                               .V = vocab,
                               .head_norm = rms_eps > 0.0f ? GPT_HEAD_RMSNORM : GPT_HEAD_NONE,
                               .eps = rms_eps};
    int rc = gpt_unit_new(u, name, &lm_head_ops, &d, C, 1, err);
    int p = 0;
    if (rc == ZERO_OK && rms_eps > 0.0f) {
        p = zero_unit_add_param(*u, "weight", 1, &C, ZERO_INIT_ONES, 0.0f, err);
    } else if (rc == ZERO_OK) {
        const int64_t shape[2] = {vocab, C};
        p = zero_unit_add_param(*u, "weight", 2, shape, ZERO_INIT_NORMAL, GPT_INIT_STD, err);
    }
    if (rc == ZERO_OK && p < 0)
        rc = err != NULL ? err->code : ZERO_EINVAL;
    if (rc != ZERO_OK) {
        zero_unit_destroy(*u);
        *u = NULL;
        return rc;
    }
    (*u)->is_loss = 1;
    (*u)->predict_width = vocab;
    if (rms_eps > 0.0f) {
        (*u)->nexternal = 1;
        (*u)->external[0] = (struct zero_external_ref){.unit = tied_unit, .param = tied_param};
    }
    return ZERO_OK;
}

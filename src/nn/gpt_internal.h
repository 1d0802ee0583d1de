/* Pieces the GPT units share (not installed): their dimensions, GPT-2's Conv1D
 * affine map, and the LayerNorm and attention sub-layers that the block, the
 * head and the standalone units are built from. Sub-layers find their
 * parameters in ctx->param / ctx->grad starting at a given index. */
#ifndef ZERO_NN_GPT_INTERNAL_H
#define ZERO_NN_GPT_INTERNAL_H

#include "nn_internal.h"
#include "zero/gpt.h"

#define GPT_LN_EPS 1e-5f
#define GPT_INIT_STD 0.02f

/* The impl of every GPT unit. */
struct gpt_dims {
    int64_t C;  /* n_embd */
    int64_t NH; /* heads */
    int64_t T;  /* tokens per sequence */
    int64_t V;  /* vocabulary */
    /* head: the norm before the logits: ln_f (GPT-2), none (Llama's lm_head after the
     * model.norm unit) or RMSNorm with eps (a tied Llama's model.norm + head) */
    enum { GPT_HEAD_LAYERNORM = 0, GPT_HEAD_NONE, GPT_HEAD_RMSNORM } head_norm;
    float eps;
};

/* A unit with a copy of dims as its impl (freed by the unit's destroy). */
int gpt_unit_new(struct zero_unit **u, const char *name, const struct zero_unit_ops *ops,
                 const struct gpt_dims *dims, int64_t in_width, int64_t out_width,
                 struct zero_error *err);
void gpt_unit_destroy(struct zero_unit *u);
/* B = rows / T, failing (in ctx) when rows is not a multiple of T. */
int gpt_sequences(struct zero_unit_ctx *ctx, const struct gpt_dims *d, int64_t *B);

/* gpt_head.c as Llama's head. rms_eps <= 0: the lm_head, the logits straight from x
 * (rows, C) (model.norm is a unit before it) with its own weight (V, C) N(0, 0.02).
 * rms_eps > 0, for a tied head (tie_word_embeddings): model.norm and the head in one
 * unit, RMSNorm's weight (C) its only own parameter and the logits from parameter
 * tied_param of unit tied_unit, as GPT-2's ln_f + wte. */
int gpt_lm_head_unit(struct zero_unit **u, const char *name, int64_t C, int64_t vocab,
                     float rms_eps, int tied_unit, int tied_param, struct zero_error *err);

/* ---- conv1d.c: y (rows, out) = x (rows, in) @ w (in, out) + b (out) ----
 * x is a GEMM operand: nn_act (fp32) or nn_stored (a stored activation). */

/* "<prefix>weight" (in, out) N(0, std) and "<prefix>bias" (out) zeros */
int gpt_add_conv1d_params(struct zero_unit *u, const char *prefix, int64_t in, int64_t out,
                          float std, struct zero_error *err);
/* weight at ctx->param[p], bias at p + 1; y fp32 */
int gpt_conv1d_forward(struct zero_unit_ctx *ctx, int p, struct nn_operand x, float *y, int64_t in,
                       int64_t out);
/* y (rows, out) as gpt_conv1d_forward but stored (ctx->act_type), then gelu (rows,
 * out, stored) = gelu_tanh(y) when gelu is not NULL: one GEMM with its epilogue where
 * the backend fuses them (gemm_bias) */
int gpt_conv1d_gelu_forward(struct zero_unit_ctx *ctx, int p, struct nn_operand x, void *y,
                            void *gelu, int64_t in, int64_t out);
/* dw (in, out) = x^T dy, db (out) = sum_rows dy (each added when ctx->grad_accumulate
 * says so); dx (rows, in) = dy w^T + dx_beta * dx (skipped when dx is NULL) */
int gpt_conv1d_backward(struct zero_unit_ctx *ctx, int p, struct nn_operand x, const float *dy,
                        float *dx, float dx_beta, int64_t in, int64_t out);
/* as gpt_conv1d_backward with dx = (dy w^T) * gelu_tanh'(pre) (rows, in), pre stored,
 * the input's GELU backward taken in the same GEMM where the backend fuses it
 * (gemm_dgelu) */
int gpt_conv1d_backward_dgelu(struct zero_unit_ctx *ctx, int p, struct nn_operand x,
                              const float *dy, float *dx, const void *pre, int64_t in, int64_t out);

/* ---- layernorm.c ---- */

/* "<prefix>weight" (C) ones and "<prefix>bias" (C) zeros */
int gpt_add_layernorm_params(struct zero_unit *u, const char *prefix, int64_t C,
                             struct zero_error *err);
/* y (rows, C; stored, ctx->act_type), mean (rows), rstd (rows) from x (rows, C);
 * weight at ctx->param[p]; the statistics fp32 */
int gpt_layernorm_forward(struct zero_unit_ctx *ctx, int p, const float *x, void *y, float *mean,
                          float *rstd, int64_t C);
/* res (rows, C) += b (rows, C), then y, mean, rstd from res as gpt_layernorm_forward */
int gpt_residual_layernorm_forward(struct zero_unit_ctx *ctx, int p, float *res, const float *b,
                                   void *y, float *mean, float *rstd, int64_t C);
/* dx (rows, C) = LayerNorm's input gradient + dx_beta * dx; parameter gradients by
 * ctx->grad_accumulate */
int gpt_layernorm_backward(struct zero_unit_ctx *ctx, int p, const float *x, const float *dy,
                           const float *mean, const float *rstd, float *dx, float dx_beta,
                           int64_t C);

/* ---- attention.c: y = c_proj(attention(c_attn(x))), params at p .. p+3 ---- */

/* What the attention sub-layer keeps from forward to backward: att in fp32 (what
 * attention_forward saved: the probabilities, or a backend's own statistics), qkv and
 * atty stored (ctx->act_type). */
struct gpt_attn_saved {
    float *att; /* (B, NH, T, T), or the backend's attention_state_floats */
    void *qkv;  /* (rows, 3C) */
    void *atty; /* (rows, C): the heads' outputs before c_proj */
};

int gpt_add_attention_params(struct zero_unit *u, const char *prefix, int64_t C, float proj_std,
                             struct zero_error *err);
/* Bytes saved for ctx (rows, act_type, and att as ctx's backend sizes it: its attention
 * group; ctx->be NULL: the plain entries' contract); what forward and backward use. */
size_t gpt_attn_saved_bytes(const struct zero_unit_ctx *ctx, const struct gpt_dims *d);
/* Lays the saved buffers out from base (gpt_attn_saved_bytes(ctx) of them). */
void gpt_attn_saved_map(const struct zero_unit_ctx *ctx, const struct gpt_dims *d, void *base,
                        struct gpt_attn_saved *s);
/* Backward scratch floats for ctx, as the saved bytes above */
size_t gpt_attn_scratch_floats(const struct zero_unit_ctx *ctx, const struct gpt_dims *d);
/* y (rows, C, fp32) from x (rows, C): nn_act or nn_stored */
int gpt_attn_forward(struct zero_unit_ctx *ctx, const struct gpt_dims *d, int p,
                     struct nn_operand x, float *y, const struct gpt_attn_saved *s);
/* dx (rows, C) = input gradient + dx_beta * dx; scratch: gpt_attn_scratch_floats */
int gpt_attn_backward(struct zero_unit_ctx *ctx, const struct gpt_dims *d, int p,
                      struct nn_operand x, const struct gpt_attn_saved *s, const float *dy,
                      float *dx, float dx_beta, float *scratch);

#endif

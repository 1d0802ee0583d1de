/* Pieces the Llama units share (not installed): the units' places in the model and the
 * decoder layer's parameter list, which both the block's constructor and the tensor
 * enumeration (llama_tensors.c) read. */
#ifndef ZERO_NN_LLAMA_INTERNAL_H
#define ZERO_NN_LLAMA_INTERNAL_H

#include "nn_internal.h"
#include "zero/backend_llama.h"
#include "zero/llama.h"

/* Unit indices in zero_nn_build_llama's model: the embedding, layer l at
 * LLAMA_UNIT_LAYER0 + l, then model.norm and lm_head. */
enum { LLAMA_UNIT_EMBED = 0, LLAMA_UNIT_LAYER0 = 1 };

#define LLAMA_INIT_STD 0.02f /* LlamaConfig.initializer_range */

/* Parameters of one decoder layer: 9, + 4 with attention_bias, + 3 with mlp_bias. */
int llama_layer_nparams(const struct zero_llama_config *c);
/* Parameter i of a decoder layer (the order of zero/llama.h's table): its name within
 * the layer, ndim and shape; ZERO_EINVAL past the last. */
int llama_layer_param(const struct zero_llama_config *c, int i, const char **name, int *ndim,
                      int64_t shape[2]);

/* The impl of the Llama block and of the standalone RMSNorm (model.norm). */
struct llama_dims {
    int64_t C, I;     /* hidden_size, intermediate_size */
    int64_t H, KV, D; /* query heads, kv heads, head_dim */
    int64_t T;        /* tokens per sequence */
    float eps;        /* rms_norm_eps */
    struct zero_rope_params rope;
    /* the block's parameter slots (llama_layer_param's order); a bias absent: -1 */
    int q, qb, k, kb, v, vb, o, ob, gate, gateb, up, upb, down, downb, ln1, ln2;
};

/* The backend's llama group, or a failure in ctx naming what is missing. */
const struct zero_llama_ops *llama_ops(struct zero_unit_ctx *ctx);

/* ---- rmsnorm.c: y (rows, C) = RMSNorm(x) with the weight at ctx->param[p] ---- */

/* y (rows, C) and rstd (rows) from x (rows, C), fp32 */
int llama_rmsnorm_forward(struct zero_unit_ctx *ctx, int p, const float *x, float *y, float *rstd,
                          int64_t C, float eps);
/* dx (rows, C) = the input gradient + dx_beta * dx; the weight's gradient by
 * ctx->grad_accumulate */
int llama_rmsnorm_backward(struct zero_unit_ctx *ctx, int p, const float *x, const float *dy,
                           const float *rstd, float *dx, float dx_beta, int64_t C);

/* model.norm on its own: y (rows, C) = RMSNorm(x), parameter weight (C) */
int llama_rmsnorm_unit(struct zero_unit **u, const char *name, int64_t C, float eps,
                       struct zero_error *err);
/* One decoder layer of c (zero/llama.h's table), built for T tokens a sequence. */
int llama_block_unit(struct zero_unit **u, const char *name, const struct zero_llama_config *c,
                     int64_t T, struct zero_error *err);

#endif

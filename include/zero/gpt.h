/* GPT-2 as libzero units (src/nn/), with hand-written forward and backward.
 *
 * The model is one unit per ZeRO-3 fetch group:
 *
 *   unit    kind                 parameters (shapes as stored)
 *   wte     token_embedding      weight (V, C)
 *   wpe     position_embedding   weight (T, C)
 *   h.N     gpt_block            ln_1.weight (C), ln_1.bias (C),
 *                                attn.c_attn.weight (C, 3C), attn.c_attn.bias (3C),
 *                                attn.c_proj.weight (C, C), attn.c_proj.bias (C),
 *                                ln_2.weight (C), ln_2.bias (C),
 *                                mlp.c_fc.weight (C, 4C), mlp.c_fc.bias (4C),
 *                                mlp.c_proj.weight (4C, C), mlp.c_proj.bias (C)
 *   ln_f    gpt_head             weight (C), bias (C); uses wte.weight (external)
 *
 * so every full name "<unit>.<param>" is the Hugging Face GPT2Model name
 * (wte.weight, h.0.attn.c_attn.weight, ln_f.bias, ...) and .safetensors files
 * interchange name for name. The projection weights are stored [in, out] as in
 * GPT-2's Conv1D (y = x W + b), so they copy without a transpose. The head is
 * named after the one parameter group it owns, the final LayerNorm; its output
 * projection is the token embedding (tied, an external parameter: under stage 3
 * the engine gathers wte for it) followed by softmax cross-entropy.
 *
 * A micro-batch of B sequences of T tokens has B*T rows; row r is token r % T
 * of sequence r / T. T is the block_size the units were built with: every
 * micro-batch (training, evaluation, prediction) has a multiple of T rows.
 *
 * Initialization as GPT-2: weights N(0, 0.02), the residual projections
 * (attn.c_proj, mlp.c_proj) N(0, 0.02 / sqrt(2 n_layer)), biases 0, LayerNorm
 * weight 1 and bias 0. LayerNorm eps 1e-5, GELU with the tanh approximation. */
#ifndef ZERO_GPT_H
#define ZERO_GPT_H

#include "zero/model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct zero_gpt_config {
    int n_layer;        /* transformer blocks */
    int n_head;         /* attention heads; divides n_embd */
    int64_t n_embd;     /* C: width of the residual stream */
    int64_t block_size; /* T: tokens per sequence (and position embeddings) */
    int64_t vocab_size; /* V: 256 for byte-level text, 50257 for GPT-2's tokens */
    int checkpoint;     /* activation checkpointing on every block */
};

/* y (rows, C) = weight[tokens] — reads the batch's tokens; in_width 0 (first unit). */
int zero_nn_token_embedding(struct zero_unit **u, const char *name, int64_t vocab, int64_t C,
                            struct zero_error *err);
/* y (rows, C) = x + weight[r % T] for row r */
int zero_nn_position_embedding(struct zero_unit **u, const char *name, int64_t T, int64_t C,
                               struct zero_error *err);
/* y (rows, C) = LayerNorm(x) with parameters weight, bias (C) */
int zero_nn_layernorm(struct zero_unit **u, const char *name, int64_t C, struct zero_error *err);
/* y (rows, C) = c_proj(causal multi-head attention(c_attn(x))) — GPT2Attention on its
 * own, parameters c_attn.weight (C, 3C), c_attn.bias, c_proj.weight (C, C), c_proj.bias */
int zero_nn_causal_self_attention(struct zero_unit **u, const char *name, int64_t C, int n_head,
                                  int64_t T, struct zero_error *err);
/* y = x2 + mlp(ln_2(x2)), x2 = x + attn(ln_1(x)): one GPT-2 block (n_layer scales
 * the initialization of the residual projections) */
int zero_nn_gpt_block(struct zero_unit **u, const char *name, int64_t C, int n_head, int64_t T,
                      int n_layer, struct zero_error *err);
/* Loss unit: per-row loss (rows, 1) = cross_entropy(ln_f(x) @ wte^T, label); predict()
 * gives the logits (rows, V). wte is parameter wte_param (V, C) of the earlier unit
 * wte_unit, used as an external parameter. */
int zero_nn_gpt_head(struct zero_unit **u, const char *name, int64_t C, int64_t vocab, int wte_unit,
                     int wte_param, struct zero_error *err);

/* The whole GPT-2: wte, wpe, h.0 .. h.{n_layer-1}, ln_f (see above). */
int zero_nn_build_gpt(struct zero_model **m, const struct zero_gpt_config *c,
                      struct zero_error *err);

#ifdef __cplusplus
}
#endif

#endif

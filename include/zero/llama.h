/* The Llama family (LlamaForCausalLM) as libzero units (src/nn/), with hand-written
 * forward and backward, built from the shape Hugging Face's config.json gives
 * (struct zero_llama_config, zero/llama_config.h).
 *
 * The model is one unit per ZeRO-3 fetch group, and every full parameter name
 * "<unit>.<param>" is the Hugging Face state_dict name, so a model directory's
 * safetensors interchange name for name and shape for shape (C = hidden_size,
 * I = intermediate_size, D = head_dim, H = num_attention_heads,
 * KV = num_key_value_heads, V = vocab_size):
 *
 *   unit                kind           parameters (shapes as stored = Hugging Face's)
 *   model.embed_tokens  token_embedding  weight (V, C)
 *   model.layers.N      llama_block    self_attn.q_proj.weight (H*D, C)   [.bias (H*D)]
 *                                      self_attn.k_proj.weight (KV*D, C)  [.bias (KV*D)]
 *                                      self_attn.v_proj.weight (KV*D, C)  [.bias (KV*D)]
 *                                      self_attn.o_proj.weight (C, H*D)   [.bias (C)]
 *                                      mlp.gate_proj.weight (I, C)        [.bias (I)]
 *                                      mlp.up_proj.weight (I, C)          [.bias (I)]
 *                                      mlp.down_proj.weight (C, I)        [.bias (C)]
 *                                      input_layernorm.weight (C)
 *                                      post_attention_layernorm.weight (C)
 *   model.norm          rmsnorm        weight (C)
 *   lm_head             lm_head        weight (V, C)
 * and when tied (tie_word_embeddings) the last two are one unit, as GPT-2's ln_f:
 *   model.norm          lm_head        weight (C); the logits from
 *                                      model.embed_tokens.weight (an external parameter:
 *                                      under stage 3 the engine gathers it for the head)
 * (so no unit is without parameters: the model states are exactly 16 bytes a parameter)
 *
 * The [biases] exist when attention_bias (q, k, v, o) or mlp_bias (gate, up, down)
 * is set, in the order shown (each weight followed by its bias). Linear weights are
 * stored [out, in] as torch.nn.Linear keeps them (y = x W^T + b): they copy without a
 * transpose.
 *
 * The math is LlamaModel's: per layer
 *   h = x + o_proj(attention(rope(q_proj(n1)), rope(k_proj(n1)), v_proj(n1))),
 *       n1 = input_layernorm(x)
 *   y = h + down_proj(silu(gate_proj(n2)) * up_proj(n2)),  n2 = post_attention_layernorm(h)
 * with RMSNorm x * rsqrt(mean(x^2) + rms_norm_eps) * weight in fp32, rotary embedding in
 * rotate_half's convention (dimension i pairs with i + D/2) at inverse frequencies
 * rope_theta^(-2i/D), rescaled by rope_scaling "llama3" where set, and causal
 * grouped-query attention (query head h reads kv head h / (H / KV)) at scale 1/sqrt(D).
 *
 * A micro-batch of B sequences of T tokens has B*T rows; row r is token r % T of
 * sequence r / T, at rope position r % T. T (block_size below) is fixed when the
 * model is built, at most max_position_embeddings.
 *
 * Initialization as LlamaPreTrainedModel: every Linear and the embedding
 * N(0, initializer_range^2) with initializer_range 0.02, biases 0, RMSNorm weights 1. */
#ifndef ZERO_LLAMA_H
#define ZERO_LLAMA_H

#include "zero/llama_config.h"
#include "zero/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* LlamaConfig's defaults (Llama-2-7B's shape, rope_scaling none, untied, no biases). */
void zero_llama_config_default(struct zero_llama_config *c);

/* Checks that c describes a model the units can build: every size >= 1,
 * num_key_value_heads dividing num_attention_heads, head_dim even, rms_norm_eps and
 * rope_theta > 0, llama3 scaling's factors > 0 with low_freq_factor < high_freq_factor.
 * The error names the config.json key at fault. */
int zero_llama_config_check(const struct zero_llama_config *c, struct zero_error *err);

/* How the units are built, beyond the config. */
struct zero_llama_build {
    int64_t block_size; /* T: tokens per sequence, 1..max_position_embeddings */
    int checkpoint;     /* activation checkpointing on every decoder layer */
};

/* The whole LlamaForCausalLM: model.embed_tokens, model.layers.0 .. L-1, model.norm,
 * lm_head (untied; see above). */
int zero_nn_build_llama(struct zero_model **m, const struct zero_llama_config *c,
                        const struct zero_llama_build *b, struct zero_error *err);

/* ---- the parameter tensors, as a Hugging Face state_dict lists them ---- */

/* One tensor of the model: its Hugging Face name and shape, and where it lives in a
 * model built by zero_nn_build_llama (model->units[unit]->params[param], read and
 * written whole by zero_engine_read_param / zero_engine_write_param). */
struct zero_llama_tensor {
    char name[ZERO_NAME_LEN]; /* "model.layers.3.self_attn.k_proj.weight" */
    int ndim;                 /* 1 or 2 */
    int64_t shape[2];         /* Hugging Face's: [out, in] for a Linear weight */
    int unit, param;
};

/* The number of tensors: 2 + 9 per layer (+ 4 with attention_bias, + 3 with mlp_bias)
 * + 1 for an untied lm_head. A tied lm_head.weight is absent (it is
 * model.embed_tokens.weight). c must pass zero_llama_config_check. */
int zero_llama_tensor_count(const struct zero_llama_config *c);

/* Tensor i (0 <= i < zero_llama_tensor_count), in the model's order: the embedding,
 * layer 0's parameters in the order of the table above, ..., model.norm.weight,
 * lm_head.weight. ZERO_EINVAL for i out of range. */
int zero_llama_tensor(const struct zero_llama_config *c, int i, struct zero_llama_tensor *t,
                      struct zero_error *err);

/* Ψ as transformers' model.num_parameters() counts it: every tensor above once (a tied
 * head is not counted twice). */
int64_t zero_llama_num_parameters(const struct zero_llama_config *c);

/* The parameters of one decoder layer (every layer has the same): what ZeRO-3 gathers
 * for it. Both counts are in closed form, whatever num_hidden_layers is. */
int64_t zero_llama_layer_num_parameters(const struct zero_llama_config *c);

#ifdef __cplusplus
}
#endif

#endif

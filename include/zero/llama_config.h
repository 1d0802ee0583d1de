/* The shape of a Llama-family model, as Hugging Face's LlamaConfig (config.json)
 * names it: the one description that the model builder (zero/llama.h), the
 * Hugging Face directory reader and writer (zero/hf_model.h) and the estimator
 * share. Field names are config.json's keys; defaults are LlamaConfig's. */
#ifndef ZERO_LLAMA_CONFIG_H
#define ZERO_LLAMA_CONFIG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum zero_rope_scaling {
    ZERO_ROPE_SCALING_NONE = 0,  /* rope_scaling absent or null */
    ZERO_ROPE_SCALING_LLAMA3 = 1 /* rope_scaling.rope_type (or .type) "llama3": Llama 3.1/3.2 */
};

struct zero_llama_config {
    int64_t vocab_size;              /* V (32000) */
    int64_t hidden_size;             /* C: width of the residual stream (4096) */
    int64_t intermediate_size;       /* the SwiGLU MLP's width (11008) */
    int num_hidden_layers;           /* decoder layers (32) */
    int num_attention_heads;         /* query heads (32) */
    int num_key_value_heads;         /* key/value heads, divides num_attention_heads (= heads) */
    int64_t head_dim;                /* per head (hidden_size / num_attention_heads) */
    int64_t max_position_embeddings; /* the longest sequence the rope tables cover (2048) */
    double rms_norm_eps;             /* RMSNorm's epsilon (1e-6) */
    double rope_theta;               /* the rope's base (10000) */
    struct {
        enum zero_rope_scaling type;
        double factor;                            /* llama3: 8 */
        double low_freq_factor;                   /* llama3: 1 */
        double high_freq_factor;                  /* llama3: 4 */
        int64_t original_max_position_embeddings; /* llama3: 8192 */
    } rope_scaling;
    int attention_bias;      /* biases on q, k, v and o projections (false) */
    int mlp_bias;            /* biases on gate, up and down projections (false) */
    int tie_word_embeddings; /* lm_head is embed_tokens' weight (false) */
};

#ifdef __cplusplus
}
#endif

#endif

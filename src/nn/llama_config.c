/* LlamaConfig's defaults and the checks a config must pass before the units are
 * built (zero/llama.h). */
#include <limits.h>

#include "llama_internal.h"
#include "zero/llama.h"

void zero_llama_config_default(struct zero_llama_config *c)
{
    *c = (struct zero_llama_config){
        .vocab_size = 32000,
        .hidden_size = 4096,
        .intermediate_size = 11008,
        .num_hidden_layers = 32,
        .num_attention_heads = 32,
        .num_key_value_heads = 32,
        .head_dim = 128,
        .max_position_embeddings = 2048,
        .rms_norm_eps = 1e-6,
        .rope_theta = 10000.0,
        .rope_scaling = {.type = ZERO_ROPE_SCALING_NONE},
    };
}

/* 1 when a size the model derives from c is not representable: the tensor count must be
 * an int, every tensor's element count and the model's total an int64 (the layout's
 * offsets). A config from a file can name any sizes (fuzz/fuzz_hf.c). */
static int sizes_overflow(const struct zero_llama_config *c)
{
    const int per_layer = llama_layer_nparams(c);
    int64_t q, layer = 0, embed, total;
    if (c->num_hidden_layers > (INT_MAX - 3) / per_layer ||
        __builtin_mul_overflow((int64_t)c->num_attention_heads, c->head_dim, &q))
        return 1;
    for (int i = 0; i < per_layer; i++) {
        const char *name;
        int ndim;
        int64_t shape[2], n;
        llama_layer_param(c, i, &name, &ndim, shape);
        if (__builtin_mul_overflow(shape[0], ndim == 2 ? shape[1] : 1, &n) ||
            __builtin_add_overflow(layer, n, &layer))
            return 1;
    }
    return __builtin_mul_overflow(c->vocab_size, c->hidden_size, &embed) ||
           __builtin_mul_overflow(embed, (int64_t)(c->tie_word_embeddings ? 1 : 2), &embed) ||
           __builtin_mul_overflow(layer, (int64_t)c->num_hidden_layers, &total) ||
           __builtin_add_overflow(total, embed, &total);
}

int zero_llama_config_check(const struct zero_llama_config *c, struct zero_error *err)
{
    const char *key = NULL;
    if (c->vocab_size < 1)
        key = "vocab_size";
    else if (c->hidden_size < 1)
        key = "hidden_size";
    else if (c->intermediate_size < 1)
        key = "intermediate_size";
    else if (c->num_hidden_layers < 1)
        key = "num_hidden_layers";
    else if (c->num_attention_heads < 1)
        key = "num_attention_heads";
    else if (c->num_key_value_heads < 1 || c->num_attention_heads % c->num_key_value_heads != 0)
        key = "num_key_value_heads"; /* each kv head serves a whole group of query heads */
    else if (c->head_dim < 2 || c->head_dim % 2 != 0)
        key = "head_dim"; /* rotate_half pairs dimension i with i + head_dim / 2 */
    else if (c->max_position_embeddings < 1)
        key = "max_position_embeddings";
    else if (!(c->rms_norm_eps > 0.0))
        key = "rms_norm_eps";
    else if (!(c->rope_theta > 1.0))
        key = "rope_theta";
    else if (sizes_overflow(c))
        key = "the sizes together (the parameter count overflows)";
    if (key != NULL)
        return zero_fail(err, ZERO_EINVAL,
                         "llama config: %s out of range (vocab_size %lld, hidden_size %lld, "
                         "intermediate_size %lld, num_hidden_layers %d, num_attention_heads %d, "
                         "num_key_value_heads %d, head_dim %lld, max_position_embeddings %lld, "
                         "rms_norm_eps %g, rope_theta %g)",
                         key, (long long)c->vocab_size, (long long)c->hidden_size,
                         (long long)c->intermediate_size, c->num_hidden_layers,
                         c->num_attention_heads, c->num_key_value_heads, (long long)c->head_dim,
                         (long long)c->max_position_embeddings, c->rms_norm_eps, c->rope_theta);
    if (c->num_hidden_layers > ZERO_MAX_UNITS - 3) /* the embedding, the norm, the head */
        return zero_fail(err, ZERO_EINVAL,
                         "llama config: num_hidden_layers %d: more than the %d a model's %d "
                         "units hold",
                         c->num_hidden_layers, ZERO_MAX_UNITS - 3, ZERO_MAX_UNITS);
    if (c->rope_scaling.type == ZERO_ROPE_SCALING_NONE)
        return ZERO_OK;
    if (c->rope_scaling.type != ZERO_ROPE_SCALING_LLAMA3)
        return zero_fail(err, ZERO_ENOTSUP, "llama config: rope_scaling.rope_type %d is not llama3",
                         (int)c->rope_scaling.type);
    if (!(c->rope_scaling.factor > 0.0))
        key = "rope_scaling.factor";
    else if (!(c->rope_scaling.low_freq_factor > 0.0))
        key = "rope_scaling.low_freq_factor";
    else if (!(c->rope_scaling.high_freq_factor > c->rope_scaling.low_freq_factor))
        key = "rope_scaling.high_freq_factor"; /* the smooth band divides by their difference */
    else if (c->rope_scaling.original_max_position_embeddings < 1)
        key = "rope_scaling.original_max_position_embeddings";
    if (key != NULL)
        return zero_fail(err, ZERO_EINVAL,
                         "llama config: %s out of range (factor %g, low_freq_factor %g, "
                         "high_freq_factor %g, original_max_position_embeddings %lld)",
                         key, c->rope_scaling.factor, c->rope_scaling.low_freq_factor,
                         c->rope_scaling.high_freq_factor,
                         (long long)c->rope_scaling.original_max_position_embeddings);
    return ZERO_OK;
}

/* The parameter tensors of a Llama model with their Hugging Face names and shapes, and
 * the unit and parameter slot each has in zero_nn_build_llama's model (zero/llama.h).
 * The decoder layer's slots come from llama_layer_param, which the block's constructor
 * declares its parameters by, so the two cannot disagree. */
#include <stdio.h>

#include "llama_internal.h"

int llama_layer_nparams(const struct zero_llama_config *c)
{
    return 9 + (c->attention_bias ? 4 : 0) + (c->mlp_bias ? 3 : 0);
}

int llama_layer_param(const struct zero_llama_config *c, int i, const char **name, int *ndim,
                      int64_t shape[2])
{
    const int64_t C = c->hidden_size, I = c->intermediate_size;
    const int64_t Q = c->num_attention_heads * c->head_dim;
    const int64_t KV = c->num_key_value_heads * c->head_dim;
    /* the projections in Hugging Face's module order: name, out, in, has a bias */
    const struct {
        const char *weight, *bias;
        int64_t out, in;
        int bias_on;
    } proj[7] = {
        {"self_attn.q_proj.weight", "self_attn.q_proj.bias", Q, C, c->attention_bias},
        {"self_attn.k_proj.weight", "self_attn.k_proj.bias", KV, C, c->attention_bias},
        {"self_attn.v_proj.weight", "self_attn.v_proj.bias", KV, C, c->attention_bias},
        {"self_attn.o_proj.weight", "self_attn.o_proj.bias", C, Q, c->attention_bias},
        {"mlp.gate_proj.weight", "mlp.gate_proj.bias", I, C, c->mlp_bias},
        {"mlp.up_proj.weight", "mlp.up_proj.bias", I, C, c->mlp_bias},
        {"mlp.down_proj.weight", "mlp.down_proj.bias", C, I, c->mlp_bias},
    };
    int k = 0;
    for (int p = 0; p < 7; p++) {
        if (i == k) {
            *name = proj[p].weight, *ndim = 2, shape[0] = proj[p].out, shape[1] = proj[p].in;
            return ZERO_OK;
        }
        k++;
        if (!proj[p].bias_on)
            continue;
        if (i == k) {
            *name = proj[p].bias, *ndim = 1, shape[0] = proj[p].out, shape[1] = 0;
            return ZERO_OK;
        }
        k++;
    }
    if (i == k || i == k + 1) {
        *name = i == k ? "input_layernorm.weight" : "post_attention_layernorm.weight";
        *ndim = 1, shape[0] = C, shape[1] = 0;
        return ZERO_OK;
    }
    return ZERO_EINVAL;
}

int zero_llama_tensor_count(const struct zero_llama_config *c)
{
    return 2 + c->num_hidden_layers * llama_layer_nparams(c) + (c->tie_word_embeddings ? 0 : 1);
}

int zero_llama_tensor(const struct zero_llama_config *c, int i, struct zero_llama_tensor *t,
                      struct zero_error *err)
{
    const int n = zero_llama_tensor_count(c), per = llama_layer_nparams(c);
    const int L = c->num_hidden_layers;
    if (i < 0 || i >= n)
        return zero_fail(err, ZERO_EINVAL, "llama: tensor %d out of range (the model has %d)", i,
                         n);
    *t = (struct zero_llama_tensor){.ndim = 2};
    if (i == 0) { /* model.embed_tokens.weight (V, C) */
        snprintf(t->name, sizeof(t->name), "model.embed_tokens.weight");
        t->shape[0] = c->vocab_size, t->shape[1] = c->hidden_size;
        t->unit = LLAMA_UNIT_EMBED, t->param = 0;
        return ZERO_OK;
    }
    if (i <= L * per) { /* model.layers.N.<param> */
        const int l = (i - 1) / per, p = (i - 1) % per;
        const char *name = NULL;
        llama_layer_param(c, p, &name, &t->ndim, t->shape);
        snprintf(t->name, sizeof(t->name), "model.layers.%d.%s", l, name);
        t->unit = LLAMA_UNIT_LAYER0 + l, t->param = p;
        return ZERO_OK;
    }
    if (i == L * per + 1) { /* model.norm.weight (C) */
        snprintf(t->name, sizeof(t->name), "model.norm.weight");
        t->ndim = 1, t->shape[0] = c->hidden_size;
        t->unit = LLAMA_UNIT_LAYER0 + L, t->param = 0;
        return ZERO_OK;
    }
    /* lm_head.weight (V, C), untied */
    snprintf(t->name, sizeof(t->name), "lm_head.weight");
    t->shape[0] = c->vocab_size, t->shape[1] = c->hidden_size;
    t->unit = LLAMA_UNIT_LAYER0 + L + 1, t->param = 0;
    return ZERO_OK;
}

int64_t zero_llama_layer_num_parameters(const struct zero_llama_config *c)
{
    int64_t layer = 0;
    const int per = llama_layer_nparams(c);
    for (int p = 0; p < per; p++) {
        const char *name;
        int ndim;
        int64_t shape[2];
        if (llama_layer_param(c, p, &name, &ndim, shape) != ZERO_OK)
            return -1;
        layer += ndim == 1 ? shape[0] : shape[0] * shape[1];
    }
    return layer;
}

/* One layer's count times the layers (a config may name 2^30 layers; walking every
 * tensor would take minutes), the embedding (twice when untied) and the final norm. */
int64_t zero_llama_num_parameters(const struct zero_llama_config *c)
{
    const int64_t layer = zero_llama_layer_num_parameters(c);
    if (layer < 0)
        return -1;
    const int64_t embed = c->vocab_size * c->hidden_size;
    return embed * (c->tie_word_embeddings ? 1 : 2) + layer * c->num_hidden_layers + c->hidden_size;
}

/* Pieces the Llama units share (not installed): the units' places in the model and the
 * decoder layer's parameter list, which both the block's constructor and the tensor
 * enumeration (llama_tensors.c) read. */
#ifndef ZERO_NN_LLAMA_INTERNAL_H
#define ZERO_NN_LLAMA_INTERNAL_H

#include "nn_internal.h"
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

#endif

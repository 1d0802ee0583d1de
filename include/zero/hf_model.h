/* Hugging Face model directories of the Llama family (LlamaForCausalLM): config.json
 * and the weights, as transformers' save_pretrained writes them and from_pretrained
 * reads them.
 *
 *   DIR/config.json                     the shape (struct zero_llama_config)
 *   DIR/model.safetensors               every tensor, by Hugging Face name, or
 *   DIR/model.safetensors.index.json    {"metadata": {"total_size": bytes},
 *                                        "weight_map": {name: shard file}} and
 *   DIR/model-00001-of-0000N.safetensors ... the shards it names
 *
 * config.json: the keys LlamaForCausalLM reads are taken (zero/llama_config.h); a key
 * it reads that would change the math in a way libzero does not compute (hidden_act
 * other than "silu", rope_scaling of another type than "llama3", attention_dropout,
 * pretraining_tp, partial_rotary_factor, sliding_window) is refused, naming the key;
 * every other key (token ids, torch_dtype, use_cache, ..., keys LlamaForCausalLM
 * ignores as well) is listed as ignored.
 *
 * Tensors are stored in fp32, bf16 or fp16 and widened exactly to fp32 on read. */
#ifndef ZERO_HF_MODEL_H
#define ZERO_HF_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "zero/dtype.h"
#include "zero/error.h"
#include "zero/llama_config.h"
#include "zero/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- config.json ---- */

/* Parses config.json's text (len bytes; where names it in messages) into c, starting
 * from LlamaConfig's defaults, and checks it (zero_llama_config_check). ignored
 * (may be NULL) receives the ignored keys, comma-separated, cut to ignored_len. */
int zero_hf_config_parse(struct zero_llama_config *c, const char *text, size_t len,
                         const char *where, char *ignored, size_t ignored_len,
                         struct zero_error *err);
/* The same, from a file. */
int zero_hf_config_read(struct zero_llama_config *c, const char *path, char *ignored,
                        size_t ignored_len, struct zero_error *err);
/* Writes c as a config.json LlamaForCausalLM.from_pretrained reads back unchanged
 * (architectures, model_type "llama", hidden_act "silu", torch_dtype of the weights). */
int zero_hf_config_write(const struct zero_llama_config *c, enum zero_dtype weights,
                         const char *path, struct zero_error *err);

/* ---- the weights of a model directory ---- */

struct zero_hf_weights;

/* Opens DIR's model.safetensors.index.json and every shard it names, or else
 * DIR/model.safetensors. The index must be an object with a "weight_map" of names to
 * shard file names inside DIR; every named tensor must be in its shard and every
 * tensor of a shard in the map. Errors name the file and the tensor. */
int zero_hf_weights_open(struct zero_hf_weights **out, const char *dir, struct zero_error *err);
void zero_hf_weights_close(struct zero_hf_weights *w);

int zero_hf_weights_count(const struct zero_hf_weights *w);
/* Index of the tensor called name, or -1. */
int zero_hf_weights_find(const struct zero_hf_weights *w, const char *name);
/* Tensor i's description (NULL out of range); *file (may be NULL) its file's path. */
const struct zero_st_tensor_desc *zero_hf_weights_tensor(const struct zero_hf_weights *w, int i,
                                                         const char **file);
/* Reads tensor i into dst (numel elements of want). */
int zero_hf_weights_read(struct zero_hf_weights *w, int i, void *dst, enum zero_dtype want,
                         size_t numel, struct zero_error *err);

/* Every tensor the Llama config c has (zero_llama_tensor) is there with its shape and
 * nothing else is (but rotary_emb.inv_freq buffers, and lm_head.weight of a tied
 * model, which transformers drops too); the error names the first missing, misshaped
 * or extra tensor and its file. */
int zero_hf_weights_check_llama(const struct zero_hf_weights *w, const struct zero_llama_config *c,
                                struct zero_error *err);

/* ---- writing a model directory ---- */

struct zero_hf_writer;

/* Plans DIR (created if missing) for the tensors of config c in zero_llama_tensor's
 * order, stored as dtype (F32, BF16 or F16): one model.safetensors when they fit in
 * max_shard_bytes (0: no limit), else shards of at most that size (a tensor larger than
 * it gets a shard of its own) and the index; and writes config.json. */
int zero_hf_writer_begin(struct zero_hf_writer **out, const char *dir,
                         const struct zero_llama_config *c, enum zero_dtype dtype,
                         int64_t max_shard_bytes, struct zero_error *err);
/* Tensor i (in order, each once): numel fp32 values. */
int zero_hf_writer_put(struct zero_hf_writer *w, int i, const float *src, size_t numel,
                       struct zero_error *err);
/* Writes the index when sharded; always frees w. */
int zero_hf_writer_finish(struct zero_hf_writer *w, struct zero_error *err);
void zero_hf_writer_abort(struct zero_hf_writer *w);
/* The number of shard files the writer planned (1: model.safetensors). */
int zero_hf_writer_shards(const struct zero_hf_writer *w);

#ifdef __cplusplus
}
#endif

#endif

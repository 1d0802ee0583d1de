/* A Llama engine's weights from and to a Hugging Face model directory (zero/hf_model.h),
 * for the example programs: rank 0 reads or writes the files, every rank takes part in
 * the engine's collective parameter reads and writes. Errors agree across ranks. */
#ifndef EXAMPLES_HF_IO_H
#define EXAMPLES_HF_IO_H

#include "zero/zero.h"

/* DIR's tensors, checked by name and shape against c (which config.json gave), into the
 * engine of a model zero_nn_build_llama built from c. */
int hf_load_llama(struct zero_engine *e, const struct zero_llama_config *c, const char *dir,
                  struct zero_comm *comm, struct zero_error *err);

/* The engine's weights as DIR/config.json + safetensors (dtype F32, BF16 or F16), sharded
 * above max_shard_bytes (0: one file). */
int hf_save_llama(struct zero_engine *e, const struct zero_llama_config *c, const char *dir,
                  enum zero_dtype dtype, int64_t max_shard_bytes, struct zero_comm *comm,
                  struct zero_error *err);

#endif

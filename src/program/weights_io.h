/* Whole model weights in .safetensors files, by PyTorch state_dict name
 * ("<unit>.<param>", e.g. layers.0.0.weight), so they interchange with
 * torch.nn modules of the same structure. Shared by the example trainers. */
#ifndef ZERO_PROGRAM_WEIGHTS_IO_H
#define ZERO_PROGRAM_WEIGHTS_IO_H

#include "zero/zero.h"

/* Sets every parameter of model m from path. Rank 0 reads and checks the file
 * (each parameter present with its exact shape, no other tensors; any floating
 * dtype) and broadcasts it tensor by tensor. Collective; all ranks return the
 * same status and message. */
int weights_load(struct zero_engine *e, const struct zero_model *m, const char *path,
                 struct zero_comm *comm, struct zero_error *err);

/* How another program's files name things: parameters may carry a prefix
 * ("transformer." in Hugging Face's GPT2LMHeadModel files), and tensors whose
 * names end in one of `ignore` are buffers or tied copies, not parameters
 * (".attn.bias", ".attn.masked_bias", "lm_head.weight"). NULL-terminated. */
struct weights_map {
    const char *prefix;
    const char *const *ignore;
};

/* weights_load, reading names through map (NULL: exact names only). */
int weights_load_mapped(struct zero_engine *e, const struct zero_model *m, const char *path,
                        const struct weights_map *map, struct zero_comm *comm,
                        struct zero_error *err);

/* Writes every parameter of model m, whole and fp32, to path. Every rank
 * gathers each parameter in turn (zero_engine_read_param is collective); rank 0
 * streams it into the file. Collective; same status and message on all ranks. */
int weights_save(struct zero_engine *e, const struct zero_model *m, const char *path,
                 struct zero_comm *comm, struct zero_error *err);
/* The same, stored as dtype (fp32, fp16 or bf16: the fp32 master values rounded
 * to nearest even). */
int weights_save_as(struct zero_engine *e, const struct zero_model *m, const char *path,
                    enum zero_dtype dtype, struct zero_comm *comm, struct zero_error *err);

#endif

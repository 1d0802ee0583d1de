/* The trajectory file (--trajectory FILE): a run's record, step by step, for comparing it
 * with another system's run of the same training (zero diff A B on two of them).
 *
 * JSON lines. The first is the header:
 *     {"trajectory": 1, "program": "train_mlp", "world": 2, "stage": 1,
 *      "compute_dtype": "fp32", "atom_order": "micro_step_major", "order_seed": 0,
 *      "global_batch": 8, "micro_batch": 2, "accumulation": 2,
 *      "hash": "fnv1a64-f32le", "tensors": [{"name": "layers.0.0.weight", "shape": [4, 4]}, ...]}
 * then one line for the weights the loop starts from (no loss yet), and one after every
 * optimizer step:
 *     {"step": 0, "hashes": {...}}
 *     {"step": 1, "loss": 2.3, "grad_norm": 0.41, "lr": 0.001, "loss_scale": 1,
 *      "skipped": false, "hashes": {"layers.0.0.weight": "9ae16a3b2f90e8ea", ...},
 *      "weights": "run.jsonl.step000001.safetensors"}
 * step: optimizer steps taken; loss: the global batch's mean loss of that step; grad_norm:
 * the global gradient norm before clipping; lr: the learning rate that step's update used;
 * loss_scale: the scale its gradients carried (1 but in fp16); skipped: fp16's overflow
 * skip. Numbers are written with 17 significant digits (they read back to the same
 * double); a non-finite one is null. hashes: per tensor, FNV-1a 64 (offset basis
 * 0xcbf29ce484222325, prime 0x100000001b3) over the fp32 master weights' bytes,
 * little-endian, row-major, as 16 hex digits; names are the model's parameter names, the
 * ones --save-weights writes (Hugging Face's for GPT-2 without its "transformer." prefix).
 * weights (every --trajectory-weights-every K steps, and at step 0): the whole fp32 master
 * weights as safetensors next to FILE, with "step" in its metadata; the name is relative
 * to FILE's directory.
 *
 * The file is written to a temporary next to FILE, flushed after every line, and renamed
 * onto FILE when the run ends (also when it stops on a non-finite loss). */
#ifndef ZERO_PROGRAM_TRAJECTORY_H
#define ZERO_PROGRAM_TRAJECTORY_H

#include <stdint.h>

#include "zero/zero.h"

struct trajectory;

struct trajectory_run {
    const char *prog;
    int world;
    int64_t micro, accum;
    uint64_t order_seed;
};

/* Opens FILE (rank 0), writes the header and the line of the weights as they are now
 * (step zero_engine_global_steps). weights_every: 0 = hashes only. Collective. */
int trajectory_open(struct trajectory **out, const char *path, int64_t weights_every,
                    const struct trajectory_run *run, struct zero_engine *e,
                    const struct zero_model *m, struct zero_comm *comm, struct zero_error *err);

/* The line of the step just taken. Collective (every parameter is gathered). */
int trajectory_step(struct trajectory *t, struct zero_engine *e, const struct zero_model *m,
                    struct zero_comm *comm, struct zero_error *err);

/* Renames the file into place; NULL is fine. Collective. */
int trajectory_close(struct trajectory *t, struct zero_comm *comm, struct zero_error *err);

#endif

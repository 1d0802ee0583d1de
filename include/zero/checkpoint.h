/* Sharded checkpoints: save, resume bit-exactly, load on any world size and
 * stage, inspect, export whole weights to .safetensors.
 *
 *     zero_checkpoint_save(e, "ck", 3, "{\"next_batch\": 300}", &err);  // every rank
 *     ...
 *     zero_checkpoint_load(e, "ck", &user_meta, &err);  // every rank, any N, any stage
 *
 * A save writes DIR/step_000300/ (meta.json and one rank-NNNNN.bin per rank,
 * each holding that rank's shard of the fp32 master and optimizer states in
 * CRC32C-checksummed chunks) under a temporary name, fsyncs files and
 * directories, renames it into place and then points DIR/latest at it. A
 * process killed at any moment leaves the previous checkpoint and `latest`
 * intact. No rank ever holds more than its own states plus one chunk buffer
 * (4 MiB). The compute-dtype parameters are not stored: a load casts them from
 * the master.
 *
 * A load reads meta.json, checks the model (unit and parameter names and
 * shapes), and reads on every rank exactly the flat ranges its own layout needs
 * (the whole unit for stage 0, its shard otherwise) from whichever old rank
 * files hold them, verifying every chunk it reads. All ranks validate
 * everything before any rank changes its engine: a bad checkpoint leaves the
 * engine as it was. Counters, the learning-rate schedule position and the fp16
 * loss scaler are restored, so training continues with the same bits as an
 * uninterrupted run (at the same world size, or at any world size in exact mode
 * with the same global batch and micro-batch).
 *
 * All ranks must see the same directory (a shared or local file system). */
#ifndef ZERO_CHECKPOINT_H
#define ZERO_CHECKPOINT_H

#include <stdint.h>
#include <stdio.h>

#include "zero/dtype.h"
#include "zero/engine.h"
#include "zero/error.h"
#include "zero/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective. Saves the engine's state as DIR/step_<global step, 6+ digits>,
 * creating DIR if needed, then keeps the newest keep_last step directories
 * (keep_last <= 0 keeps all). user_meta_json (NULL: none) is any JSON text the
 * caller wants back on load, e.g. its data position. Call it between steps
 * (at a gradient-accumulation boundary, outside a gathered-parameters scope).
 * On failure (disk full, ...) the previous checkpoint and `latest` are intact
 * and every rank returns the same error. */
int zero_checkpoint_save(struct zero_engine *e, const char *dir, int keep_last,
                         const char *user_meta_json, struct zero_error *err);

/* Collective. path is DIR (loads DIR/latest) or a step directory. On success
 * *user_meta_out (if user_meta_out != NULL) is the saved user metadata as JSON
 * text (malloc'd; NULL when none was saved); free() it. On failure the engine
 * is unchanged and the message names the file, section and tensor. */
int zero_checkpoint_load(struct zero_engine *e, const char *path, char **user_meta_out,
                         struct zero_error *err);

/* ---- offline access (one process, no engine, no communicator) ---- */

struct zero_checkpoint;

struct zero_checkpoint_info {
    const char *step_dir;        /* the step directory opened */
    const char *libzero_version; /* of the writer */
    int format_version;
    int world_size, stage;
    enum zero_dtype precision; /* the writer's compute dtype; the states are fp32 */
    const char *optimizer;     /* "adam", "adamw", "sgd" */
    int64_t global_steps, applied_steps, micro_steps;
    double loss_scale; /* fp16: the scaler's scale; else 1 */
    int nunits;
    int ntensors;          /* parameters */
    int64_t numel;         /* elements of all parameters (Ψ) */
    int nstates;           /* state kinds per unit: master first */
    const char *user_json; /* the user's metadata, or NULL */
};

/* One parameter: "<unit>.<param>" and its shape. */
struct zero_checkpoint_tensor {
    char name[2 * ZERO_NAME_LEN + 2];
    int ndim;
    int64_t shape[ZERO_MAX_DIMS];
    int64_t numel;
};

/* path: DIR (via DIR/latest) or a step directory. Reads and validates meta.json;
 * rank files are opened on demand. */
int zero_checkpoint_open(struct zero_checkpoint **out, const char *path, struct zero_error *err);
void zero_checkpoint_close(struct zero_checkpoint *c);
void zero_checkpoint_get_info(const struct zero_checkpoint *c, struct zero_checkpoint_info *info);
/* Name of state kind i (0 <= i < nstates): "master", "optim.exp_avg", ... */
const char *zero_checkpoint_state_name(const struct zero_checkpoint *c, int i);
/* Prints the metadata: counters, config, units and their tensors. */
void zero_checkpoint_print(const struct zero_checkpoint *c, FILE *out);
/* Verifies rank file `rank` completely: header, every section, every chunk's
 * checksum. */
int zero_checkpoint_verify_rank(struct zero_checkpoint *c, int rank, struct zero_error *err);
int zero_checkpoint_tensor(const struct zero_checkpoint *c, int i,
                           struct zero_checkpoint_tensor *t);
/* Reads tensor i of state `state` (NULL = "master") whole into host (numel
 * floats), verifying every chunk read. */
int zero_checkpoint_read_tensor(struct zero_checkpoint *c, int i, const char *state, float *host,
                                struct zero_error *err);
/* Writes every parameter's master, whole, to a .safetensors file under the
 * model's parameter names, converted to dtype (fp32, bf16 or fp16). Streams one
 * tensor at a time: memory is the largest tensor plus one chunk. */
int zero_checkpoint_export(struct zero_checkpoint *c, const char *out_path, enum zero_dtype dtype,
                           struct zero_error *err);

#ifdef __cplusplus
}
#endif

#endif

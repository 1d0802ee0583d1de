/* Checkpoints, shared by src/checkpoint_*.c: the on-disk format, the metadata
 * in memory, the range reader, and the file-system steps of an atomic save.
 *
 * A checkpoint is a directory DIR/step_000300/ holding
 *   meta.json          what the checkpoint is (checkpoint_meta.c): model, layout,
 *                      config, counters, scaler, seed, the user's metadata
 *   rank-00002.bin     rank 2's shard of every unit, one section per state
 * and DIR/latest names the newest step directory.
 *
 * Rank file (all integers little-endian):
 *
 *   file header, 64 bytes
 *     0  "ZEROCKPT"   8  u32 format version   12 u32 rank   16 u32 world size
 *     20 u32 sections 24 u64 checkpoint id    32 u64 chunk elements
 *     40 u64 global step                      60 u32 CRC32C of bytes 0..59
 *   then for every unit u (model order) and every state kind k (meta's order):
 *   section header, 64 bytes
 *     0  "ZSEC"       4  u32 unit  8 u32 kind  16 u64 begin (flat element of the
 *     unit where this shard starts: rank * shard)  24 u64 count (shard elements)
 *     32 u64 chunk elements                   60 u32 CRC32C of bytes 0..59
 *   then ceil(count / chunk) chunks: up to `chunk` fp32 values, then the u32
 *   CRC32C of those value bytes.
 *
 * Every section's position follows from meta.json (shard sizes, kinds, chunk),
 * so a reader seeks straight to the chunks it needs. Per-chunk CRCs let a rank
 * that needs part of an old shard (loading on another world size) verify
 * exactly what it reads: every byte a load uses has been checked, and `zero
 * ckpt inspect` checks every chunk of every file. */
#ifndef ZERO_CHECKPOINT_INTERNAL_H
#define ZERO_CHECKPOINT_INTERNAL_H

#include <stdint.h>

#include "zero/checkpoint.h"
#include "zero/config.h"
#include "zero/loss_scaler.h"
#include "zero/model.h"

#define CKPT_FORMAT "libzero-checkpoint"
/* Bumped when a reader of the old version would misread a new file. A key added
 * later is optional instead, and its absence means what writers did before it
 * existed (config.libzero.atom_order: micro_step_major). */
#define CKPT_FORMAT_VERSION 1
#define CKPT_FILE_MAGIC "ZEROCKPT"
#define CKPT_SECTION_MAGIC "ZSEC"
#define CKPT_HEADER_BYTES 64
#define CKPT_DEFAULT_CHUNK ((int64_t)1 << 20) /* elements: a 4 MiB host buffer */
#define CKPT_MAX_CHUNK ((int64_t)1 << 26)
#define CKPT_MAX_WORLD 65536
#define CKPT_META "meta.json"
#define CKPT_LATEST "latest"

/* The fp32 states a rank file holds per unit. SGD's momentum lives in the
 * engine's exp_avg buffer but is its own kind, so Adam cannot load it. */
enum ckpt_kind { CKPT_MASTER = 0, CKPT_EXP_AVG, CKPT_EXP_AVG_SQ, CKPT_MOMENTUM, CKPT_NKINDS };

/* "master", "optim.exp_avg", "optim.exp_avg_sq", "optim.momentum" */
const char *ckpt_kind_name(int kind);
int ckpt_kind_parse(const char *name); /* -1 if unknown */

struct ckpt_param {
    char name[ZERO_NAME_LEN];
    int ndim;
    int64_t shape[ZERO_MAX_DIMS];
    int64_t offset, numel; /* in the unit's flat buffer (independent of the world size) */
};

struct ckpt_unit {
    char name[ZERO_NAME_LEN];
    int nparams;
    struct ckpt_param params[ZERO_UNIT_MAX_PARAMS];
    int64_t used, padded, shard; /* padded = shard * world of the writer */
};

/* meta.json in memory. */
struct ckpt_meta {
    int format_version;
    char libzero_version[32];
    uint64_t id; /* random; every rank file carries it */
    int world, stage;
    enum zero_dtype precision;
    int nkinds;
    int kinds[CKPT_NKINDS]; /* section kinds in file order, master first */
    int64_t chunk;          /* elements per checksummed chunk */
    int64_t global_steps, applied_steps, micro_steps;
    double next_lr; /* the schedule's lr for the next update (informational) */
    int has_scaler; /* fp16: the loss scaler's state */
    struct zero_loss_scaler scaler;
    struct zero_config cfg; /* the fields listed in checkpoint_meta.c; others default */
    int nunits;
    struct ckpt_unit *units;
    char *user_json; /* the user's metadata as compact JSON, or NULL */
};

/* checkpoint_meta.c */
/* text (NULL: none) is valid JSON, any value. */
int ckpt_check_user_json(const char *text, struct zero_error *err);
/* meta.json text (malloc'd) from m. */
int ckpt_meta_write(const struct ckpt_meta *m, char **text, struct zero_error *err);
/* Parses and validates everything a reader relies on; errors name `path` and
 * the key. On failure m holds nothing to free. */
int ckpt_meta_parse(struct ckpt_meta *m, const char *text, size_t len, const char *path,
                    struct zero_error *err);
void ckpt_meta_free(struct ckpt_meta *m);
/* "micro_step_major" or "rank_major", as meta.json and the config spell it. */
const char *ckpt_atom_order_name(enum zero_atom_order order);
/* Bytes of one section (header, values, chunk CRCs) and of a whole rank file. */
int64_t ckpt_section_bytes(int64_t count, int64_t chunk);
int64_t ckpt_rank_file_bytes(const struct ckpt_meta *m);
/* "layers.3.0.weight" for the parameter(s) covering flat [begin, end) of unit
 * u ("padding" if none); for messages. */
void ckpt_describe_range(const struct ckpt_meta *m, int u, int64_t begin, int64_t end, char *out,
                         size_t len);

/* checkpoint_format.c: headers and chunks */
void ckpt_put_u32(unsigned char *p, uint32_t v);
void ckpt_put_u64(unsigned char *p, uint64_t v);
uint32_t ckpt_get_u32(const unsigned char *p);
uint64_t ckpt_get_u64(const unsigned char *p);
void ckpt_file_header(unsigned char out[CKPT_HEADER_BYTES], const struct ckpt_meta *m, int rank);
void ckpt_section_header(unsigned char out[CKPT_HEADER_BYTES], int unit, int kind, int64_t begin,
                         int64_t count, int64_t chunk);

/* checkpoint_read.c: reading old shards by flat range */
struct ckpt_reader;
/* rank >= 0 prefixes messages with "rank R: " (a collective load). */
int ckpt_reader_open(struct ckpt_reader **out, const struct ckpt_meta *m, const char *step_dir,
                     int rank, struct zero_error *err);
void ckpt_reader_close(struct ckpt_reader *r);
/* Receives verified values: elements [at, at + n) of the requested range. */
typedef int (*ckpt_sink_fn)(void *user, int64_t at, const float *values, int64_t n,
                            struct zero_error *err);
/* Reads elements [begin, end) of unit u's flat buffer (begin <= end <= used)
 * for state `kind` from whichever old rank files hold them, verifying every
 * chunk touched; sink may be NULL (verify only). */
int ckpt_read_range(struct ckpt_reader *r, int u, int kind, int64_t begin, int64_t end,
                    ckpt_sink_fn sink, void *user, struct zero_error *err);
/* Verifies the chunks of unit u that hold no parameter element (alignment and
 * shard padding), which no range read touches: chunk c of old rank j is
 * verified by the reader for which (j + c) % nreaders == reader, so a load on
 * any world size checks every chunk of the checkpoint once. */
int ckpt_verify_padding(struct ckpt_reader *r, int u, int reader, int nreaders,
                        struct zero_error *err);
/* Checks one rank file completely: header, every section header, every chunk. */
int ckpt_verify_rank_file(struct ckpt_reader *r, int rank, struct zero_error *err);
/* DIR or DIR/step_N -> the step directory (via DIR/latest). */
int ckpt_resolve(const char *path, char *step_dir, size_t len, struct zero_error *err);
/* Reads and parses step_dir/meta.json. */
int ckpt_meta_load(struct ckpt_meta *m, const char *step_dir, struct zero_error *err);

/* checkpoint_fs.c: the file-system steps of an atomic save */
/* Calls the fault hook at a named point (see zero_checkpoint_set_fault_hook);
 * returns the errno it asks for, or 0. */
int ckpt_fault(const char *point, int rank);
/* write(2) all of buf, through the fault hook "write". */
int ckpt_write_all(int fd, const void *buf, size_t n, int rank, const char *path,
                   struct zero_error *err);
/* fsync(2) through the fault hook "fsync". */
int ckpt_fsync_fd(int fd, int rank, const char *path, struct zero_error *err);
int ckpt_fsync_dir(const char *dir, int rank, struct zero_error *err);
/* Creates path with the given bytes, fsyncs it (not its directory). */
int ckpt_write_file(const char *path, const void *data, size_t n, int rank, struct zero_error *err);
/* Removes a directory and the plain files in it (checkpoint directories are flat). */
int ckpt_remove_dir(const char *dir);
/* Moves the finished temporary directory onto DIR/name: atomically replaces an
 * existing checkpoint of the same step (renameat2 RENAME_EXCHANGE), then fsyncs DIR. */
int ckpt_publish(const char *dir, const char *tmp_name, const char *name, int rank,
                 struct zero_error *err);
/* DIR/latest := name, by latest.tmp + fsync + rename + fsync DIR. */
int ckpt_set_latest(const char *dir, const char *name, int rank, struct zero_error *err);
/* Deletes all but the newest keep_last step directories older than `current`
 * (newer ones, left by an abandoned run, are kept), and stale temporaries. */
int ckpt_prune(const char *dir, const char *current, int keep_last, int rank,
               struct zero_error *err);
/* 8 random bytes (/dev/urandom, else time and pid). */
uint64_t ckpt_random64(void);

/* ---- test hooks (not part of the installed API) ---- */

/* Called at each named point of a save on every rank: "open", "write", "fsync",
 * "rank-file", "meta", "publish", "published", "latest", "prune". A nonzero
 * return is taken as the errno of a failure there (ENOSPC simulates a full
 * disk); a hook may also kill the process (tests/test_checkpoint_crash.sh). */
typedef int (*zero_checkpoint_fault_fn)(const char *point, int rank, void *user);
void zero_checkpoint_set_fault_hook(zero_checkpoint_fault_fn fn, void *user);
/* Elements per checksummed chunk for later saves (0 = default); tests use small
 * chunks so that ranges cross chunk and shard boundaries. */
void zero_checkpoint_set_chunk_elements(int64_t n);
int64_t ckpt_chunk_elements(void);

#endif

/* ZeRO-Infinity's NVMe tier (Rajbhandari et al., 2021): with
 * offload_optimizer.device = nvme this rank's fp32 master and optimizer state
 * live in a swap file under offload_optimizer.nvme_path, and with
 * offload_param.device = nvme the stage-3 parameter shards beyond
 * offload_param.max_in_cpu elements live in one under offload_param.nvme_path.
 * Host memory holds only small rings of aligned buffers the states stream
 * through (aio.c does the I/O). Not installed.
 *
 * Three ways in:
 * - the optimizer step (offload.c) walks every unit's shard in chunks of at
 *   most sub_group_size elements: nvme_stream_next hands out the next chunk
 *   once its read has landed and reads the following ones ahead into the
 *   ring (offload_optimizer.buffer_count buffers; pipeline_read), and
 *   nvme_stream_put writes it back behind (pipeline_write);
 * - stage-3 gathers (stage3.c) take a unit's parameter shard from
 *   nvme_param_shard, which reads the units that follow in the recorded fetch
 *   order ahead into its own ring (offload_param.buffer_count buffers of
 *   buffer_size elements);
 * - rare paths (initialization, checkpoints, the gathered-parameters scope)
 *   bracket their work on unit u with nvme_unit_load / nvme_unit_store, which
 *   make u's states ordinary host buffers in unit_states for a while.
 * Every call is a no-op returning 0 when the unit's states are not on NVMe. */
#ifndef ZERO_NVME_SWAP_H
#define ZERO_NVME_SWAP_H

#include <stddef.h>
#include <stdint.h>

#include "zero/ledger.h"

struct zero_engine;
struct zero_error;

/* NVMe offload's part of the engine (nvme_swap.c alone writes it) */
struct nvme_plan {
    int opt;                /* offload_optimizer.device = nvme: master and optimizer state
                               in a swap file */
    int param;              /* offload_param.device = nvme: shards past max_in_cpu too */
    struct nvme_swap *swap; /* NULL without NVMe offload */
};

/* Checks the NVMe keys against the stage and the offload devices; sets
 * e->nvme.opt and e->nvme.param. Before the states exist. */
int nvme_configure(struct zero_engine *e, struct zero_error *err);
/* Creates (or, after a crash, rebuilds) this rank's swap files once the
 * layouts are known, and prints the I/O engine chosen (rank 0). */
int nvme_open(struct zero_engine *e, struct zero_error *err);
/* Host memory nvme_open's buffers will take (the rings and the bounce buffer, each with
 * its alignment page): the memory plan's share of NVMe offload; 0 without it. Once the
 * layouts are known. */
int64_t nvme_buffer_bytes(const struct zero_engine *e);
/* Adds to peak (bytes per tag) the host buffers nvme_unit_load gives the largest unit
 * whose states are on NVMe (master, optimizer state, parameter shard): the rare paths
 * (initialization, checkpoints, the gathered scope) load one unit at a time. */
void nvme_unit_load_peak(const struct zero_engine *e, int64_t peak[ZERO_TAG_COUNT]);
/* Closes and removes the swap files. */
void nvme_close(struct zero_engine *e);

/* 1 if unit u's master and optimizer state / parameter shard are on NVMe; before
 * nvme_open, nvme_holds_params says where nvme_open will put the shard. */
int nvme_holds_optim(const struct zero_engine *e, int u);
int nvme_holds_params(const struct zero_engine *e, int u);

/* u's states as host buffers in e->us[u] (master, exp_avg, exp_avg_sq and,
 * when on NVMe, params): read from the file, or zero when read = 0. */
int nvme_unit_load(struct zero_engine *e, int u, int read, struct zero_error *err);
/* nvme_unit_load on every rank before a collective that needs u's states:
 * the ranks exchange the read's status (an int each, only with NVMe offload),
 * so one rank's failed read stops all of them, the others naming it, instead
 * of leaving them in the collective. */
int nvme_unit_load_agreed(struct zero_engine *e, int u, int read, struct zero_error *err);
/* Writes them back (write = 1) and frees them. */
int nvme_unit_store(struct zero_engine *e, int u, int write, struct zero_error *err);

/* One chunk of the step: elements [begin, begin + n) of unit u's shard. */
struct nvme_chunk {
    int unit;
    int64_t begin, n;
    float *master, *exp_avg, *exp_avg_sq; /* (n,) in the ring; exp_* NULL without the state */
    /* (4 bytes x n) in the ring: the gradient comes in here and the updated
     * compute-dtype parameters go out of it (to the device, or to the swap file) */
    void *stage;
    void *params; /* = stage when the parameter shard is on NVMe, else NULL */
    void *ev;     /* the copies in and out of stage (the caller records and waits) */
    int pinned;   /* stage is host_alloc memory (copy_async), else ordinary (to/from_host) */
    int slot;
};
/* The step's walk over every chunk in unit order: *got = 1 with *c filled,
 * 0 at the end. */
int nvme_stream_next(struct zero_engine *e, struct nvme_chunk *c, int *got, struct zero_error *err);
int nvme_stream_put(struct zero_engine *e, const struct nvme_chunk *c, struct zero_error *err);
/* Waits for the last writes; the next step's walk starts from the first chunk. */
int nvme_stream_end(struct zero_engine *e, struct zero_error *err);

/* Unit u's parameter shard (cdt, shard) in a host buffer, read ahead of use;
 * valid until the next call. *pinned: the buffer is host_alloc memory
 * (copy_async may read it), else ordinary memory (from_host). Fails only for
 * u's own read (a read ahead's failure waits for its unit's call): rank-local,
 * so the gather agrees on it across the ranks before its all-gather. */
int nvme_param_shard(struct zero_engine *e, int u, const void **shard, int *pinned,
                     struct zero_error *err);
/* The parameter ring holds copies of the shards: drop them (the step rewrites them). */
int nvme_param_invalidate(struct zero_engine *e, struct zero_error *err);
/* After a gather's copy out of the buffer nvme_param_shard gave: the event
 * that marks when the copy is done (recorded by the caller), or NULL. */
void *nvme_param_consumed_event(struct zero_engine *e, int u);
/* The path of rank's parameter swap file (every rank's config names the
 * same offload_param.nvme_path), for messages about another rank's file. */
void nvme_param_file(const struct zero_engine *e, int rank, char *path, size_t len);

#endif

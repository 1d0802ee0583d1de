/* The engine's state: the per-unit model states and the engine struct, whose
 * parts each module owns (a struct defined in the module's header and written
 * by that module only): the stage-3 lifecycle (stage3.h), the reduction plan
 * (grad_reduce.h), the gathered scope (gathered.h), offload (offload.h,
 * nvme_swap.h); plus engine_util.c's helpers every module uses. */
#ifndef ZERO_ENGINE_INTERNAL_H
#define ZERO_ENGINE_INTERNAL_H

#include "zero/engine.h"
#include "zero/layout.h"
#include "zero/loss_scaler.h"

#include "device_step.h"
#include "gathered.h"
#include "grad_counter.h"
#include "grad_reduce.h"
#include "hpz.h"
#include "mics.h"
#include "qwz.h"
#include "qgz.h"
#include "nvme_swap.h"
#include "offload.h"
#include "stage.h"
#include "stage3.h"

/* Model states and bookkeeping of one unit on this rank. Buffers marked
 * (cdt) hold the compute dtype (fp32, fp16 or bf16: e->cdt). The buffers are
 * allocated by engine_states.c; which of them a gradient goes through is
 * placement.c's decision; the sub-structs belong to their modules. */
struct unit_states {
    struct zero_unit_layout layout;
    /* this rank's shard index (rank; MiCS: rank % M) * shard, in flat elements */
    int64_t shard_begin;
    /* (cdt) stages 0-2: whole flat buffer (padded,); stage 3: this rank's shard (shard,) */
    void *params;
    /* fp32 master: stage 0 whole (padded,), stages 1-3 shard (shard,). In fp32
     * training it is not a buffer of its own: engine_master() points into params. */
    float *master;
    struct unit_gather stage3; /* stage3.c: the whole copy and its lifecycle */
    struct unit_hpz hpz;       /* hpz.c: the secondary shard (zero_hpz_partition_size > 1) */
    struct unit_qwz qwz;       /* qwz.c: the int8 slots of its gather in flight */
    int scope_pins;            /* gathered.c: held by a gathered-parameters scope */
    /* (cdt) stages 0-1: whole (padded,); stages 2-3: shard (shard,) */
    void *grads;
    /* (cdt) stages 2-3: this micro-step's local gradient, whole (padded,), during backward */
    void *local_grad;
    /* mixed precision: fp32 gradient the layers write during backward (padded,) */
    float *grad_work;
    /* mixed precision: fp32 copy of the whole parameters while computing (padded,) */
    float *param_work;
    struct unit_reduce reduce; /* grad_reduce.c: the reduction in flight */
    struct unit_mics mics;     /* mics.c: its replica all-gather still to run (overlap) */
    /* optimizer state: stage 0 whole (padded,), stages 1-3 shard (shard,) */
    float *exp_avg, *exp_avg_sq; /* SGD uses exp_avg as the momentum buffer */
    struct unit_offload offload; /* offload.c: the host staging shard */
    struct grad_counter counter; /* grad_counter.c (len set by its users) */
    /* activations of the current micro-step */
    float *out; /* (rows, out_width) */
    void *saved;
    int grad_written[ZERO_UNIT_MAX_PARAMS]; /* backward wrote it this micro-step, per param */
    /* mixed precision: the layer wrote it this micro-step straight in the compute dtype
     * (the direct route, placement.c), so grad_work holds nothing of it */
    int grad_direct[ZERO_UNIT_MAX_PARAMS];
};

struct zero_engine {
    struct zero_config cfg;
    struct zero_model *model;
    struct zero_device *dev;
    const struct zero_backend *be;
    void *bself;
    int rank, world;
    /* what the stage shards and does: stage.c */
    const struct zero_stage *stage_def;
    int64_t accum;       /* gradient_accumulation_steps */
    enum zero_dtype cdt; /* compute dtype: parameters, gradients, wire */
    size_t csize;        /* its bytes */
    int mixed;           /* cdt != fp32: separate master, converted compute copies */
    /* mixed precision, ZERO_CAP_ROUNDING_GEMM_STORE, not ZERO_DIRECT_LOWP_GRAD=0: the
     * layers may write final gradients in the compute dtype (placement.c) */
    int direct_lowp_grad;
    int64_t direct_grad_elements;   /* gradient elements written that way, over the run */
    struct offload_plan offload;    /* offload.c */
    struct nvme_plan nvme;          /* nvme_swap.c */
    enum zero_dtype matmul_type;    /* GEMM operands: fp32 or cdt (libzero.matmul) */
    struct zero_loss_scaler scaler; /* fp16 only */
    int64_t applied_steps;          /* optimizer updates applied (skipped steps excluded) */
    struct unit_states *us;
    int nunits;

    /* current micro-step */
    int64_t rows;
    float *input;             /* (rows, units[0].in_width) */
    int32_t *tokens, *labels; /* (rows) */
    int forward_done;
    double loss_sum; /* this rank's micro-batch losses since the last step (where the
                        device sums them: read into here by device_step_finish) */

    int64_t micro_steps, global_steps;
    struct zero_step_info last;
    struct zero_comm_stats comm_at_step_start;
    double step_t0;
    int step_started;

    struct stage3_lifecycle stage3; /* stage3.c */
    struct hpz_plan hpz;            /* hpz.c */
    struct mics_plan mics;          /* mics.c: the shard groups (M = N when off) */
    struct qgz_plan qgz;            /* qgz.c: quantized gradient exchange */
    struct reduce_plan reduce;      /* grad_reduce.c */

    /* observer (events.h) */
    zero_event_fn observer;
    void *observer_user;
    double t_created;

    struct gathered_scope scope; /* gathered.c */
    struct device_step dstep;    /* device_step.c: loss sum, deferred checks, graphs */
};

/* engine.c: a loaded checkpoint's counters (engine_checkpoint.c); the fp16 scaler's
 * running state from saved_scaler where there is one */
void engine_resume_counters(struct zero_engine *e, int64_t global_steps, int64_t applied_steps,
                            const struct zero_loss_scaler *saved_scaler);

/* engine_util.c */
int engine_alloc(struct zero_engine *e, size_t bytes, enum zero_tag tag, void **p, const char *what,
                 struct zero_error *err);
void engine_free(struct zero_engine *e, void *p);
/* Host memory (backend host_alloc: the host ledger), for offloaded states. */
int engine_host_alloc(struct zero_engine *e, size_t bytes, enum zero_tag tag, void **p,
                      const char *what, struct zero_error *err);
void engine_host_free(struct zero_engine *e, void *p);
int engine_backend_error(struct zero_engine *e, int rc, struct zero_error *err, const char *fmt,
                         ...) __attribute__((format(printf, 4, 5)));
double engine_now(void);
/* Collective: every rank learns whether any rank's rc (this phase's status) failed.
 * Returns rc on a rank that failed itself (its message stands), else code with
 * "rank R: rank F <what>: <F's message>", F the first rank that failed (the
 * messages travel only after a failure): a rank-local error (a plan
 * that does not fit, a full disk, a truncated swap file) stops every rank instead
 * of leaving the others waiting in the next collective. */
int engine_agree(struct zero_engine *e, int rc, int code, const char *what, struct zero_error *err);
/* engine_agree's exchange alone: *first = the first rank whose rc failed, -1 if
 * none. Returns the exchange's status (err keeps rc's message on a rank that
 * failed), for callers that name more than engine_agree's "rank F <what>". */
int engine_first_failed(struct zero_engine *e, int rc, int *first, struct zero_error *err);
/* mixed precision or offload_optimizer: the fp32 master is a buffer of its own
 * (offloaded, fp32 too: the parameters stay on the device) */
static inline int engine_separate_master(const struct zero_engine *e)
{
    return e->mixed || e->offload.opt;
}
/* base + elements of the compute dtype */
static inline void *engine_at(const struct zero_engine *e, const void *base, int64_t elements)
{
    return (char *)base + elements * (int64_t)e->csize;
}
/* This rank's part of unit u's fp32 master and optimizer state, the elements its
 * update writes: [engine_update_begin, + engine_update_count) of the flat buffer
 * (the whole buffer where the stage keeps the optimizer state whole), found
 * engine_update_offset elements into the compute-dtype parameter buffer. */
static inline int64_t engine_update_begin(const struct zero_engine *e, int u)
{
    return zero_stage_part_begin(e->stage_def->shards_optim, e->us[u].shard_begin);
}
static inline int64_t engine_update_count(const struct zero_engine *e, int u)
{
    return zero_stage_part(e->stage_def->shards_optim, e->us[u].layout.padded,
                           e->us[u].layout.shard);
}
static inline int64_t engine_update_offset(const struct zero_engine *e, int u)
{
    return zero_stage_offset_in(e->stage_def->shards_optim, e->stage_def->shards_params,
                                e->us[u].shard_begin);
}
/* Reports an event [t0, now] to the observer, if any. A "group_all_gather" is over
 * hpZ's group, or MiCS's shard group; any other collective over the world. */
void engine_event(struct zero_engine *e, enum zero_event_kind kind, int unit, int bucket,
                  const char *collective, int64_t elements, double t0);
/* The same for a collective over group whose elements are element_bytes each. */
void engine_group_event(struct zero_engine *e, enum zero_event_kind kind, int unit, int bucket,
                        const char *collective, int64_t elements, int element_bytes,
                        enum zero_event_group group, double t0);
/* Waits for req (NULL: completed at issue, nothing to do), then reports the wait
 * [now, return] as wait_kind and the collective's flight [t_issue, completion] as
 * ZERO_EV_INFLIGHT (the completion the backend saw: wait_timed). */
int engine_wait(struct zero_engine *e, struct zero_request *req, enum zero_event_kind wait_kind,
                int unit, int bucket, const char *collective, int64_t elements, double t_issue);

#endif

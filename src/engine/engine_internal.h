/* The engine's private state, shared by the src/engine_*.c files. */
#ifndef ZERO_ENGINE_INTERNAL_H
#define ZERO_ENGINE_INTERNAL_H

#include "zero/engine.h"
#include "zero/layout.h"
#include "zero/loss_scaler.h"

#define ZERO_MAX_LEVELS 40 /* gradient-accumulation counter levels: 2^40 micro-steps */

/* The binary counter of partial gradient sums (exactness contract): slot[k]
 * holds the sum of 2^k consecutive micro-step sums. See grad_counter.c. */
struct grad_counter {
    int64_t len;                  /* elements per slot */
    float *slot[ZERO_MAX_LEVELS]; /* occupied levels */
    float *pool[ZERO_MAX_LEVELS + 1];
    int npool;
    int64_t pushed;
    float *sum; /* the finished sum, until counter_release */
};

/* Model states and bookkeeping of one unit on this rank. Buffers marked
 * (cdt) hold the compute dtype (fp32, fp16 or bf16: e->cdt). */
struct unit_states {
    struct zero_unit_layout layout;
    int64_t shard_begin; /* rank * shard, in flat elements */
    /* (cdt) stages 0-2: whole flat buffer (padded,); stage 3: this rank's shard (shard,) */
    void *params;
    /* fp32 master: stage 0 whole (padded,), stages 1-3 shard (shard,). In fp32
     * training it is not a buffer of its own: master_of() points into params. */
    float *master;
    /* (cdt) stage 3: whole flat buffer (padded,) while INFLIGHT or AVAILABLE */
    void *gathered;
    enum zero_unit_state state;
    struct zero_request *gather_req;
    double gather_t_issue; /* engine_now() when gather_req was issued */
    int persistent;        /* stage 3: gathered once, never released */
    int scope_pins;        /* held by a gathered-parameters scope */
    int in_use;            /* fetched for the unit being computed */
    /* (cdt) stages 0-1: whole (padded,); stages 2-3: shard (shard,) */
    void *grads;
    /* (cdt) stages 2-3: this micro-step's local gradient, whole (padded,), during backward */
    void *local_grad;
    /* mixed precision: fp32 gradient the layers write during backward (padded,) */
    float *grad_work;
    /* mixed precision: fp32 copy of the whole parameters while computing (padded,) */
    float *param_work;
    struct zero_request *reduce_req;
    double reduce_t_issue;   /* engine_now() when reduce_req was issued */
    const char *reduce_coll; /* its collective's name */
    float *reduce_into;      /* accumulation: this micro-step's fp32 sum, pushed at its end */
    /* optimizer state: stage 0 whole (padded,), stages 1-3 shard (shard,) */
    float *exp_avg, *exp_avg_sq; /* SGD uses exp_avg as the momentum buffer */
    /* offload_optimizer (host memory, (shard,) cdt): the reduced gradient comes
     * in here and the updated parameters go out of it */
    void *host_stage;
    void *host_stage_ready; /* event: the gradient has landed in host_stage */
    struct grad_counter counter;
    /* activations of the current micro-step */
    float *out; /* (rows, out_width) */
    void *saved;
    int grad_written[ZERO_UNIT_MAX_PARAMS]; /* this micro-step, per own parameter */
};

struct zero_engine {
    struct zero_config cfg;
    struct zero_model *model;
    struct zero_device *dev;
    const struct zero_backend *be;
    void *bself;
    int rank, world, stage;
    int64_t accum;                  /* gradient_accumulation_steps */
    enum zero_dtype cdt;            /* compute dtype: parameters, gradients, wire */
    size_t csize;                   /* its bytes */
    int mixed;                      /* cdt != fp32: separate master, converted compute copies */
    int offload_opt;                /* master and optimizer state in host memory (offload.c) */
    int offload_param;              /* stage 3: the parameter shard in host memory */
    int offload_threads;            /* host threads of the offloaded optimizer */
    int nvme_opt;                   /* offload_optimizer.device = nvme: master and optimizer
                                       state in a swap file (nvme_swap.c) */
    int nvme_param;                 /* offload_param.device = nvme: shards past max_in_cpu too */
    struct nvme_swap *nvme;         /* NULL without NVMe offload */
    int separate_master;            /* mixed || offload_opt: the master is a buffer of its own */
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
    double loss_sum; /* this rank's micro-batch losses since the last step */

    int64_t micro_steps, global_steps;
    struct zero_step_info last;
    struct zero_comm_stats comm_at_step_start;
    double step_t0;
    int step_started;

    /* stage 3 fetch order, recorded on the first forward+backward */
    int *trace;
    int *trace_group; /* fetches made together (a unit and its externals) share a group */
    int fetch_group;
    int trace_len, trace_cap, trace_recorded, trace_pos;
    int untraced; /* eval/predict passes: not part of the recorded order */
    int64_t live_elements, peak_live_elements;

    /* reduction buckets in backward order */
    int *bucket_of_unit; /* bucket index of each unit */
    int *bucket_first;   /* first position (in backward order) of each bucket */
    int nbuckets;
    int pending_bucket; /* overlap_comm: issued, not yet waited; -1 if none */

    /* observer (events.h) */
    zero_event_fn observer;
    void *observer_user;
    double t_created;

    /* gathered-parameters scope */
    int scope_active, scope_modifier;
    int *scope_units;
    int scope_n;
};

/* unit_compute.c: one unit's compute */
int compute_fetch(struct zero_engine *e, int u, struct zero_error *err);
int compute_release(struct zero_engine *e, int u, struct zero_error *err);
int compute_fill_params(struct zero_engine *e, int u, struct zero_unit_ctx *ctx,
                        struct zero_error *err);
void compute_drop_param_copies(struct zero_engine *e, int u);
void compute_init_ctx(struct zero_engine *e, struct zero_unit_ctx *ctx, char *msg, size_t len);
int compute_failed(struct zero_engine *e, int u, int rc, const char *pass, const char *msg,
                   struct zero_error *err);

/* engine_forward.c */
void engine_free_batch(struct zero_engine *e);
void engine_discard_activations(struct zero_engine *e); /* after eval or a failure */
int engine_recompute_unit(struct zero_engine *e, int u, struct zero_unit_ctx *ctx, const float *x,
                          char *msg, struct zero_error *err);

/* engine_states.c: allocate and initialize model states in shards */
int engine_states_create(struct zero_engine *e, struct zero_error *err);
void engine_states_destroy(struct zero_engine *e);
void *engine_param_whole(struct zero_engine *e, int unit); /* (cdt) NULL if not whole now */

/* init_rng.c */
int engine_init_params(struct zero_engine *e, struct zero_error *err);

/* stage3.c: the gather / release / prefetch lifecycle */
int stage3_fetch(struct zero_engine *e, int unit, struct zero_error *err);
int stage3_release(struct zero_engine *e, int unit, struct zero_error *err);
int stage3_gather_persistent(struct zero_engine *e, struct zero_error *err);
int stage3_begin_pass(struct zero_engine *e, struct zero_error *err);
int stage3_gather_for_scope(struct zero_engine *e, int unit, struct zero_error *err);
/* Before the model states are allocated: their plan against what the process may
 * use (memory_plan.c); ZERO_ENOMEM with the per-tag breakdown when it cannot fit. */
int engine_check_memory_plan(struct zero_engine *e, struct zero_error *err);
int stage3_end_step(struct zero_engine *e, struct zero_error *err);
int stage3_check_live_limit(struct zero_engine *e, struct zero_error *err);
/* All-gathers unit u's shard into s->gathered (req: NULL blocks). With
 * offload_param the shard is first streamed in from host memory (or, on
 * NVMe, read from its swap file ahead of use). */
int stage3_all_gather(struct zero_engine *e, int u, struct zero_request **req,
                      struct zero_error *err);
/* Elements fetched between trace position pos and the next fetch of unit, or
 * -1 when the recorded order fetches it no more. */
int64_t stage3_reuse_distance(const struct zero_engine *e, int pos, int unit);

/* grad_reduce.c: per micro-step reduction, buckets, accumulation */
int reduce_unit_ready(struct zero_engine *e, int unit, struct zero_error *err);
int reduce_finish_micro_step(struct zero_engine *e, struct zero_error *err);
/* Native (fast) mode, accumulation, stages 0-2 (or exact mode with rank-major atoms,
 * stages 0-3): micro-steps are summed locally and reduced once per step. */
int reduce_accumulates_locally(const struct zero_engine *e);
/* atom_order.c: exact mode, rank-major atoms, A > 1: a rank sums its micro-steps
 * (its subtree of the canonical tree) and reduces once; stages 0-3 */
int atom_order_reduces_once(const struct zero_engine *e);
/* The rank's fp32 sum (padded,) of unit u, reduced into `mine` (its part, cdt);
 * stage 0 all-gathers it into the whole gradient. */
int atom_order_reduce(struct zero_engine *e, int u, float *sum, void *mine, struct zero_error *err);
int reduce_plan_buckets(struct zero_engine *e, struct zero_error *err);
/* The reduced gradient of this rank's shard of `unit` at the boundary: the
 * last micro-step's sum (cdt) or the accumulated sum (fp32). */
const void *reduce_shard_grads(struct zero_engine *e, int unit, enum zero_dtype *t);
int reduce_finish_accumulation(struct zero_engine *e, struct zero_error *err);
void reduce_release_accumulation(struct zero_engine *e);

/* grad_counter.c: slots are fp32 whatever the compute dtype */
int counter_push(struct zero_engine *e, struct grad_counter *c, const void *src, enum zero_dtype t,
                 struct zero_error *err);
/* A free slot buffer (len fp32) to reduce into, then pushed without a copy. */
int counter_take(struct zero_engine *e, struct grad_counter *c, float **out,
                 struct zero_error *err);
int counter_push_taken(struct zero_engine *e, struct grad_counter *c, float *buf,
                       struct zero_error *err);
/* Combines the slots; *sum (fp32, len) stays valid until counter_release. */
int counter_finish(struct zero_engine *e, struct grad_counter *c, float **sum,
                   struct zero_error *err);
void counter_release(struct grad_counter *c);
void counter_destroy(struct zero_engine *e, struct grad_counter *c);

/* optimizer.c: norm, clipping, update, parameter all-gather */
int optimizer_step(struct zero_engine *e, struct zero_error *err);
/* The update arguments of this step (optimizer.type picks which one applies). */
struct zero_adam_args optimizer_adam_args(const struct zero_engine *e, float lr, float grad_div);
struct zero_sgd_args optimizer_sgd_args(const struct zero_engine *e, float lr, float grad_div);
/* Where unit u's update writes the compute-dtype parameters (NULL: nowhere,
 * the master is the parameters) and the elements it updates. */
void *optimizer_param_copy(struct zero_engine *e, int u);
size_t optimizer_update_count(const struct zero_engine *e, int u);

/* offload.c: ZeRO-Offload */
/* Checks the offload keys against the stage and sets e->offload_*. */
int offload_configure(struct zero_engine *e, struct zero_error *err);
/* The update of every unit on the host: gradients copied out, the host
 * optimizer, parameters copied back; overlapped unit by unit. */
int offload_update(struct zero_engine *e, float lr, float grad_div, struct zero_error *err);

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
 * "rank R: rank F <what>", F the first rank that failed: a rank-local error (a plan
 * that does not fit, a full disk, a truncated swap file) stops every rank instead
 * of leaving the others waiting in the next collective. */
int engine_agree(struct zero_engine *e, int rc, int code, const char *what, struct zero_error *err);
/* base + elements of the compute dtype */
static inline void *engine_at(const struct zero_engine *e, const void *base, int64_t elements)
{
    return (char *)base + elements * (int64_t)e->csize;
}
/* The fp32 master of this rank's part: its shard (stages 1-3) or the whole (stage 0). */
float *engine_master(struct zero_engine *e, int unit);
/* ZERO_OK outside a gathered-parameters scope; inside one an error naming the
 * call (what) and the scope's units (gathered.c). */
int engine_outside_scope(struct zero_engine *e, const char *what, struct zero_error *err);
/* Reports an event [t0, now] to the observer, if any. */
void engine_event(struct zero_engine *e, enum zero_event_kind kind, int unit, int bucket,
                  const char *collective, int64_t elements, double t0);
/* Waits for req (NULL: completed at issue, nothing to do), then reports the wait
 * [now, return] as wait_kind and the collective's flight [t_issue, completion] as
 * ZERO_EV_INFLIGHT (the completion the backend saw: wait_timed, else the return). */
int engine_wait(struct zero_engine *e, struct zero_request *req, enum zero_event_kind wait_kind,
                int unit, int bucket, const char *collective, int64_t elements, double t_issue);

#endif

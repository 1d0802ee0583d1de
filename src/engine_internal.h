/* The engine's private state, shared by the src/engine_*.c files. */
#ifndef ZERO_ENGINE_INTERNAL_H
#define ZERO_ENGINE_INTERNAL_H

#include "zero/engine.h"
#include "zero/layout.h"

#define ZERO_MAX_LEVELS 40 /* gradient-accumulation counter levels: 2^40 micro-steps */

/* The binary counter of partial gradient sums (exactness contract): slot[k]
 * holds the sum of 2^k consecutive micro-step sums. See grad_counter.c. */
struct grad_counter {
    int64_t len;                  /* elements per slot */
    float *slot[ZERO_MAX_LEVELS]; /* occupied levels */
    float *pool[ZERO_MAX_LEVELS + 1];
    int npool;
    int64_t pushed;
};

/* Model states and bookkeeping of one unit on this rank. */
struct unit_states {
    struct zero_unit_layout layout;
    int64_t shard_begin;    /* rank * shard, in flat elements */
    /* stages 0-2: whole flat buffer (padded,); stage 3: this rank's shard (shard,) */
    float *params;
    /* stage 3: whole flat buffer (padded,) while INFLIGHT or AVAILABLE */
    float *gathered;
    enum zero_unit_state state;
    struct zero_request *gather_req;
    int persistent;         /* stage 3: gathered once, never released */
    int scope_pins;         /* held by a gathered-parameters scope */
    int in_use;             /* fetched for the unit being computed */
    /* stages 0-1: whole (padded,); stages 2-3: shard (shard,) */
    float *grads;
    /* stages 2-3: this micro-step's local gradient, whole (padded,), during backward */
    float *local_grad;
    struct zero_request *reduce_req;
    /* optimizer state: stage 0 whole (padded,), stages 1-3 shard (shard,) */
    float *exp_avg, *exp_avg_sq; /* SGD uses exp_avg as the momentum buffer */
    struct grad_counter counter;
    /* activations of the current micro-step */
    float *out;    /* (rows, out_width) */
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
    int64_t accum;       /* gradient_accumulation_steps */
    struct unit_states *us;
    int nunits;

    /* current micro-step */
    int64_t rows;
    float *input;        /* (rows, units[0].in_width) */
    int32_t *tokens, *labels; /* (rows) */
    int forward_done;
    double loss_sum;     /* this rank's micro-batch losses since the last step */

    int64_t micro_steps, global_steps;
    struct zero_step_info last;
    struct zero_comm_stats comm_at_step_start;
    double step_t0;
    int step_started;

    /* stage 3 fetch order, recorded on the first forward+backward */
    int *trace;
    int trace_len, trace_cap, trace_recorded, trace_pos;
    int untraced;        /* eval/predict passes: not part of the recorded order */
    int64_t live_elements, peak_live_elements;

    /* reduction buckets in backward order */
    int *bucket_of_unit; /* bucket index of each unit */
    int *bucket_first;   /* first position (in backward order) of each bucket */
    int nbuckets;
    int pending_bucket;  /* overlap_comm: issued, not yet waited; -1 if none */

    /* observer (events.h) */
    zero_event_fn observer;
    void *observer_user;
    double t_created;

    /* gathered-parameters scope */
    int scope_active, scope_modifier;
    int *scope_units;
    int scope_n;
};

/* engine_states.c: allocate and initialize model states in shards */
int engine_states_create(struct zero_engine *e, struct zero_error *err);
void engine_states_destroy(struct zero_engine *e);
float *engine_param_whole(struct zero_engine *e, int unit); /* NULL if not whole now */

/* init_rng.c */
int engine_init_params(struct zero_engine *e, struct zero_error *err);

/* stage3.c: the gather / release / prefetch lifecycle */
int stage3_fetch(struct zero_engine *e, int unit, struct zero_error *err);
int stage3_release(struct zero_engine *e, int unit, struct zero_error *err);
int stage3_gather_persistent(struct zero_engine *e, struct zero_error *err);
int stage3_begin_pass(struct zero_engine *e, struct zero_error *err);
int stage3_end_step(struct zero_engine *e, struct zero_error *err);
int stage3_check_live_limit(struct zero_engine *e, struct zero_error *err);

/* grad_reduce.c: per micro-step reduction, buckets, accumulation */
int reduce_unit_ready(struct zero_engine *e, int unit, struct zero_error *err);
int reduce_finish_micro_step(struct zero_engine *e, struct zero_error *err);
int reduce_plan_buckets(struct zero_engine *e, struct zero_error *err);
/* where the reduced gradient of this rank's shard of `unit` lives after the boundary */
float *reduce_shard_grads(struct zero_engine *e, int unit);
int reduce_finish_accumulation(struct zero_engine *e, struct zero_error *err);

/* grad_counter.c */
int counter_push(struct zero_engine *e, struct grad_counter *c, const float *src,
                 struct zero_error *err);
int counter_finish(struct zero_engine *e, struct grad_counter *c, float *dst,
                   struct zero_error *err);
void counter_destroy(struct zero_engine *e, struct grad_counter *c);

/* optimizer.c: norm, clipping, update, parameter all-gather */
int optimizer_step(struct zero_engine *e, struct zero_error *err);

/* engine_util.c */
int engine_alloc(struct zero_engine *e, size_t bytes, enum zero_tag tag, void **p,
                 const char *what, struct zero_error *err);
void engine_free(struct zero_engine *e, void *p);
int engine_backend_error(struct zero_engine *e, int rc, struct zero_error *err,
                         const char *fmt, ...) __attribute__((format(printf, 4, 5)));
double engine_now(void);
/* Reports an event [t0, now] to the observer, if any. */
void engine_event(struct zero_engine *e, enum zero_event_kind kind, int unit, int bucket,
                  const char *collective, int64_t elements, double t0);

#endif

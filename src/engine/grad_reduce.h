/* Per-micro-step gradient reduction, bucketed in backward order (grad_reduce.c).
 * grad_reduce.c alone writes struct reduce_plan. */
#ifndef ZERO_ENGINE_GRAD_REDUCE_H
#define ZERO_ENGINE_GRAD_REDUCE_H

struct zero_engine;
struct zero_request;
struct zero_error;

/* reduction buckets in backward order */
struct reduce_plan {
    int *bucket_of_unit; /* bucket index of each unit */
    int *bucket_first;   /* first position (in backward order) of each bucket */
    int nbuckets;
    int pending_bucket; /* overlap_comm: issued, not yet waited; -1 if none */
};

/* One unit's reduction in flight (grad_reduce.c alone writes it) */
struct unit_reduce {
    struct zero_request *req;
    double t_issue;   /* engine_now() when req was issued */
    const char *coll; /* its collective's name */
    float *into;      /* accumulation: this micro-step's fp32 sum, pushed at its end */
};

/* Waits for unit u's reduction in flight, if any. */
void reduce_unit_destroy(struct zero_engine *e, int u);
int reduce_unit_ready(struct zero_engine *e, int unit, struct zero_error *err);
int reduce_finish_micro_step(struct zero_engine *e, struct zero_error *err);
/* Native (fast) mode, accumulation, stages 0-2 (or exact mode with rank-major atoms,
 * stages 0-3): micro-steps are summed locally and reduced once per step. */
int reduce_accumulates_locally(const struct zero_engine *e);
int reduce_plan_buckets(struct zero_engine *e, struct zero_error *err);
int reduce_finish_accumulation(struct zero_engine *e, struct zero_error *err);
void reduce_release_accumulation(struct zero_engine *e);
void reduce_destroy(struct zero_engine *e);

#endif

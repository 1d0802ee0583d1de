/* Stage 3's parameter lifecycle (stage3.c): gather before use, release after,
 * prefetch and keep for reuse in the fetch order recorded on the first step.
 * stage3.c alone writes struct stage3_lifecycle; the other modules tell it
 * what happens through the functions below. */
#ifndef ZERO_ENGINE_STAGE3_H
#define ZERO_ENGINE_STAGE3_H

#include <stdint.h>

#include "zero/engine.h"

struct zero_engine;
struct zero_error;
struct zero_request;

struct stage3_lifecycle {
    /* fetch order, recorded on the first forward+backward */
    int *trace;
    int *trace_group; /* fetches made together (a unit and its externals) share a group */
    int fetch_group;
    int trace_len, trace_cap, trace_recorded, trace_pos;
    int untraced;      /* eval/predict passes: not part of the recorded order */
    int in_backward;   /* a backward pass is running (hpZ gathers it from the group) */
    int backward_from; /* trace position of the first backward fetch; -1 until recorded */
    int64_t live_elements, peak_live_elements;
};

/* One unit's part (stage3.c alone writes it) */
struct unit_gather {
    void *gathered; /* (cdt) the whole flat buffer (padded,) while INFLIGHT or AVAILABLE */
    enum zero_unit_state state;
    struct zero_request *req; /* the gather in flight */
    double t_issue;           /* engine_now() when req was issued */
    int persistent;           /* gathered once, never released */
    int in_use;               /* fetched for the unit being computed */
    int from_group;           /* the gather reads hpZ's secondary shards (hpz.h) */
};

/* Unit u's persistence and first state, once its layout is known. */
void stage3_plan_unit(struct zero_engine *e, int u);
/* Waits for unit u's gather in flight and frees its whole copy. */
void stage3_unit_destroy(struct zero_engine *e, int u);
int stage3_fetch(struct zero_engine *e, int unit, struct zero_error *err);
int stage3_release(struct zero_engine *e, int unit, struct zero_error *err);
int stage3_gather_persistent(struct zero_engine *e, struct zero_error *err);
int stage3_begin_pass(struct zero_engine *e, struct zero_error *err);
int stage3_gather_for_scope(struct zero_engine *e, int unit, struct zero_error *err);
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
/* The next fetches (a unit and the owners of its externals) are one group:
 * they are released together too. */
void stage3_open_fetch_group(struct zero_engine *e);
/* Eval and predict passes (untraced = 1) are not part of the recorded order. */
void stage3_set_untraced(struct zero_engine *e, int untraced);
/* A training forward+backward is over: its fetch order is the recorded one. */
void stage3_order_recorded(struct zero_engine *e);
/* A backward pass begins (1) or ends (0): hpZ gathers its units inside the group. */
void stage3_set_backward(struct zero_engine *e, int backward);
void stage3_destroy(struct zero_engine *e);

#endif

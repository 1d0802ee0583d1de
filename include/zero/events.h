/* What the engine does, as a stream of events: the raw material of the
 * collective schedule (zero schedule), the Chrome trace and any profiler.
 * An observer is a callback the engine calls synchronously at each event. */
#ifndef ZERO_EVENTS_H
#define ZERO_EVENTS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum zero_event_kind {
    ZERO_EV_FORWARD = 0,       /* a unit's forward compute */
    ZERO_EV_BACKWARD,          /* a unit's backward compute */
    ZERO_EV_RECOMPUTE,         /* activation checkpointing: forward again before backward */
    ZERO_EV_GATHER,            /* stage 3: all-gather of a unit issued on demand */
    ZERO_EV_PREFETCH,          /* stage 3: all-gather of a unit issued ahead of use */
    ZERO_EV_GATHER_WAIT,       /* stage 3: waiting for an issued all-gather */
    ZERO_EV_RELEASE,           /* stage 3: a gathered unit freed */
    ZERO_EV_REDUCE,            /* gradient reduction of a unit (collective names which) */
    ZERO_EV_PARAM_GATHER,      /* stages 1-2: all-gather of updated parameters of a unit */
    ZERO_EV_NORM,              /* gradient norm: block sums and their exchange */
    ZERO_EV_OPTIMIZER,         /* optimizer update of a unit's shard */
    ZERO_EV_REDUCE_WAIT,       /* waiting for an issued gradient reduction */
    ZERO_EV_INFLIGHT,          /* a non-blocking collective from its issue to its completion,
                                  reported when it is waited for; it repeats a collective the
                                  issue event (gather, prefetch, reduce) already named: count
                                  collectives at their issue events */
    ZERO_EV_PARAM_GATHER_WAIT, /* stages 1-2: waiting for a unit's parameter all-gather
                                  (appended: the kinds before keep their values) */
    ZERO_EV_KIND_COUNT
};

/* The ranks a collective spans (hierarchical layouts, docs/multi-node.md). */
enum zero_event_group {
    ZERO_EVG_WORLD = 0,    /* every rank (and events that are no collective) */
    ZERO_EVG_HPZ,          /* hpZ's group of g consecutive ranks */
    ZERO_EVG_MICS_SHARD,   /* MiCS's shard group of M consecutive ranks */
    ZERO_EVG_MICS_REPLICA, /* MiCS's replica group: the N/M ranks holding one shard */
    ZERO_EVG_QGZ,          /* qgZ's hop 1 where hpZ is off: the node's g consecutive ranks */
    ZERO_EVG_QGZ_ACROSS,   /* qgZ's hop 2: the N/g ranks q g + l, one of each group */
    ZERO_EVG_COUNT
};
/* "world", "hpz group", "mics shard group", "mics replica group", "qgz group",
 * "across groups" */
const char *zero_event_group_name(enum zero_event_group g);

struct zero_event {
    enum zero_event_kind kind;
    int unit;               /* -1 when the event is not about one unit */
    int bucket;             /* ZERO_EV_REDUCE: reduction bucket, else -1 */
    const char *collective; /* "all_gather", "reduce_scatter", "all_reduce", ... or NULL */
    int64_t elements;       /* collective: whole buffer; compute: rows; optimizer: shard */
    int element_bytes;      /* bytes per element: the compute dtype's, 4 for the optimizer */
    int64_t step;           /* optimizer steps taken before this event */
    int64_t micro_step;     /* micro-steps taken before this event */
    double t_begin, t_end;  /* seconds since the engine was created */
    /* collectives: the ranks they span; group_index says which group of its kind this
     * rank is in (hpZ, shard and qgZ groups: rank / size; replica groups: rank % M;
     * across groups: rank % g; 0 for the world), group_size how many ranks it has (N for
     * the world). The optimizer: the group whose ranks share out its shards (MiCS: the
     * shard group; else the world). */
    enum zero_event_group group;
    int group_index, group_size;
};

typedef void (*zero_event_fn)(void *user, const struct zero_event *ev);

/* "forward", "backward", "gather", ... */
const char *zero_event_name(enum zero_event_kind k);

#ifdef __cplusplus
}
#endif

#endif

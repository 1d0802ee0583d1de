/* Communication counters, kept by the backend that moves the bytes.
 * "sent" is what this rank put on the wire (or, on the shared-memory path,
 * what its peers read from it): for a ring-equivalent reduce-scatter or
 * all-gather of P bytes over N ranks that is P(N-1)/N. */
#ifndef ZERO_COMM_STATS_H
#define ZERO_COMM_STATS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum zero_coll_kind {
    ZERO_COLL_REDUCE_SCATTER = 0,
    ZERO_COLL_ALL_GATHER,
    ZERO_COLL_ALL_REDUCE,
    ZERO_COLL_BROADCAST,
    ZERO_COLL_CONTROL,    /* small host exchanges: norms, flags, config hashes, unit order */
    ZERO_COLL_ALL_TO_ALL, /* qgZ's exchange of quantized gradients (zero/backend_quant.h) */
    ZERO_COLL_KIND_COUNT
};

struct zero_coll_counter {
    int64_t calls;
    int64_t payload_bytes; /* whole logical buffer: count * N * size for RS/AG */
    int64_t sent_bytes;    /* bytes this rank sent */
    double seconds;        /* wall time from issue to completion */
};

struct zero_comm_stats {
    struct zero_coll_counter kind[ZERO_COLL_KIND_COUNT]; /* over all ranks */
    /* over a group (zero/backend_groups.h: hpZ's backward gathers): every byte of these
     * stays between the members of the group */
    struct zero_coll_counter group[ZERO_COLL_KIND_COUNT];
    /* the part of group[] whose group spans the layout's groups (MiCS's replica group:
     * its bytes cross between the shard groups), added by the engine, which knows what
     * each group is for; group[] less cross[] stays inside one group */
    struct zero_coll_counter cross[ZERO_COLL_KIND_COUNT];
};

const char *zero_coll_kind_name(enum zero_coll_kind k); /* "reduce_scatter", ... */
/* out = a - b, counter by counter (per-step deltas). */
void zero_comm_stats_diff(struct zero_comm_stats *out, const struct zero_comm_stats *a,
                          const struct zero_comm_stats *b);

#ifdef __cplusplus
}
#endif

#endif

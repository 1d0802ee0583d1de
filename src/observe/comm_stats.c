/* Communication counters: names and per-step deltas. */
#include "zero/comm_stats.h"

const char *zero_coll_kind_name(enum zero_coll_kind k)
{
    static const char *const names[ZERO_COLL_KIND_COUNT] = {
        [ZERO_COLL_REDUCE_SCATTER] = "reduce_scatter",
        [ZERO_COLL_ALL_GATHER] = "all_gather",
        [ZERO_COLL_ALL_REDUCE] = "all_reduce",
        [ZERO_COLL_BROADCAST] = "broadcast",
        [ZERO_COLL_CONTROL] = "control",
    };
    if ((int)k < 0 || k >= ZERO_COLL_KIND_COUNT)
        return "unknown";
    return names[k];
}

void zero_comm_stats_diff(struct zero_comm_stats *out, const struct zero_comm_stats *a,
                          const struct zero_comm_stats *b)
{
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++) {
        out->kind[k].calls = a->kind[k].calls - b->kind[k].calls;
        out->kind[k].payload_bytes = a->kind[k].payload_bytes - b->kind[k].payload_bytes;
        out->kind[k].sent_bytes = a->kind[k].sent_bytes - b->kind[k].sent_bytes;
        out->kind[k].seconds = a->kind[k].seconds - b->kind[k].seconds;
    }
}

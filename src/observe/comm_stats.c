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
        [ZERO_COLL_ALL_TO_ALL] = "all_to_all",
    };
    if ((int)k < 0 || k >= ZERO_COLL_KIND_COUNT)
        return "unknown";
    return names[k];
}

static void counter_diff(struct zero_coll_counter *out, const struct zero_coll_counter *a,
                         const struct zero_coll_counter *b)
{
    out->calls = a->calls - b->calls;
    out->payload_bytes = a->payload_bytes - b->payload_bytes;
    out->sent_bytes = a->sent_bytes - b->sent_bytes;
    out->seconds = a->seconds - b->seconds;
}

void zero_comm_stats_diff(struct zero_comm_stats *out, const struct zero_comm_stats *a,
                          const struct zero_comm_stats *b)
{
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++) {
        counter_diff(&out->kind[k], &a->kind[k], &b->kind[k]);
        counter_diff(&out->group[k], &a->group[k], &b->group[k]);
        counter_diff(&out->cross[k], &a->cross[k], &b->cross[k]);
    }
}

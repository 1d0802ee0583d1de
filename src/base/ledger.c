/* The memory ledger: current and peak bytes per tag on this rank. */
#include "zero/ledger.h"

#include <string.h>

const char *zero_tag_name(enum zero_tag tag)
{
    static const char *const names[ZERO_TAG_COUNT] = {
        [ZERO_TAG_PARAMS] = "params",
        [ZERO_TAG_GRADS] = "grads",
        [ZERO_TAG_MASTER] = "master",
        [ZERO_TAG_OPTIM] = "optim",
        [ZERO_TAG_GATHER] = "gather",
        [ZERO_TAG_BUCKETS] = "buckets",
        [ZERO_TAG_ACTIVATIONS] = "activations",
        [ZERO_TAG_WORKSPACE] = "workspace",
        [ZERO_TAG_COMM] = "comm",
        [ZERO_TAG_ACCUM] = "accum",
        [ZERO_TAG_HPZ] = "hpz_secondary",
    };
    if ((int)tag < 0 || tag >= ZERO_TAG_COUNT)
        return "unknown";
    return names[tag];
}

void zero_ledger_reset(struct zero_ledger *l)
{
    memset(l, 0, sizeof(*l));
}

void zero_ledger_add(struct zero_ledger *l, enum zero_tag tag, int64_t bytes)
{
    if ((int)tag < 0 || tag >= ZERO_TAG_COUNT || bytes == 0)
        return;
    l->current[tag] += bytes;
    l->current_total += bytes;
    l->allocations += bytes > 0 ? 1 : -1;
    if (l->current[tag] > l->peak[tag])
        l->peak[tag] = l->current[tag];
    if (l->current_total > l->peak_total)
        l->peak_total = l->current_total;
}

void zero_ledger_reset_peaks(struct zero_ledger *l)
{
    for (int t = 0; t < ZERO_TAG_COUNT; t++)
        l->peak[t] = l->current[t];
    l->peak_total = l->current_total;
}

int64_t zero_ledger_model_states(const struct zero_ledger *l)
{
    return l->current[ZERO_TAG_PARAMS] + l->current[ZERO_TAG_GRADS] + l->current[ZERO_TAG_MASTER] +
           l->current[ZERO_TAG_OPTIM];
}

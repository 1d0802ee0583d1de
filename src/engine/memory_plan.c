/* Memory predicted: before the engine allocates its model states it adds up
 * what it is about to hold in host memory, tag by tag (the ledger's theory,
 * src/engine/engine_theory.c, plus the stage-3 gathers it cannot avoid), and compares the sum
 * with what the process may still use (memory_limit.c). A plan that cannot fit
 * fails with the breakdown instead of the process being OOM-killed half-way.
 *
 * Host memory holds the offloaded states always, and every state when the
 * backend's device memory is host memory (cpu): there the gradient accumulation
 * counters too (grad_counter.c; whole units when the rank accumulates locally:
 * native fast mode, rank-major atoms). The plan is a lower bound:
 * activations, reduce buckets and workspace come on top, so a plan that fits
 * may still not fit; one that does not fit surely does not. */
#include <stdio.h>
#include <stdlib.h>

#include "engine_internal.h"
#include "memory_plan.h"
#include "memory_limit.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* Stage 3's gathers at their least: the persistent units and the largest unit
 * fetched with the owners of its external parameters (stage3_check_live_limit). */
static int64_t least_gathered(const struct zero_engine *e)
{
    if (!e->stage_def->shards_params)
        return 0;
    int64_t persistent = 0, largest = 0;
    for (int u = 0; u < e->nunits; u++) {
        const struct unit_states *s = &e->us[u];
        if (s->stage3.persistent)
            persistent += s->layout.padded;
        else if (s->layout.padded > largest)
            largest = s->layout.padded;
    }
    return (persistent + largest) * (int64_t)e->csize;
}

static int check_mine(struct zero_engine *e, struct zero_error *err)
{
    struct zero_theory t;
    zero_engine_theory(e, &t);
    int64_t plan[ZERO_TAG_COUNT] = {0}; /* bytes of host memory per tag */
    if (e->be->caps & ZERO_CAP_HOST_MEMORY) {
        plan[ZERO_TAG_PARAMS] += t.params_bytes;
        plan[ZERO_TAG_GRADS] += t.grads_bytes;
        plan[ZERO_TAG_MASTER] += t.master_bytes;
        plan[ZERO_TAG_OPTIM] += t.optim_bytes;
        plan[ZERO_TAG_GATHER] += least_gathered(e);
        plan[ZERO_TAG_ACCUM] += t.accum_bytes;       /* the accumulation counters (A > 1) */
        plan[ZERO_TAG_HPZ] += t.hpz_secondary_bytes; /* hpZ's secondary shards */
    }
    plan[ZERO_TAG_PARAMS] += t.host_params_bytes;
    plan[ZERO_TAG_GRADS] += t.host_grads_bytes;
    plan[ZERO_TAG_MASTER] += t.host_master_bytes;
    plan[ZERO_TAG_OPTIM] += t.host_optim_bytes;
    int64_t total = 0;
    for (int g = 0; g < ZERO_TAG_COUNT; g++)
        total += plan[g];
    struct memory_limit limit;
    memory_limit_query(&limit);
    if (limit.bytes < 0 || total <= limit.bytes)
        return ZERO_OK;
    char parts[400] = "";
    size_t used = 0;
    for (int g = 0; g < ZERO_TAG_COUNT; g++) {
        if (plan[g] == 0)
            continue;
        int n = snprintf(parts + used, sizeof parts - used, "%s%s %.2f GiB", used ? ", " : "",
                         zero_tag_name(g), (double)plan[g] / GIB);
        if (n > 0 && (size_t)n < sizeof parts - used)
            used += (size_t)n;
    }
    return zero_fail(err, ZERO_ENOMEM,
                     "rank %d: not enough memory: the planned peak of host memory is %.2f GiB "
                     "(%s; stage %d, Ψ = %lld padded elements, N = %d; activations and buffers "
                     "come on top) but this process may use %.2f GiB (%s); shard more (a higher "
                     "stage, more ranks, offload) or shrink the model",
                     e->rank, (double)total / GIB, parts, e->stage_def->number,
                     (long long)t.psi_padded, e->world, (double)limit.bytes / GIB, limit.source);
}

/* Collective: a rank whose plan cannot fit stops every rank (the others would
 * wait in the first collective of the states' initialization), and every rank's
 * message ends with the failing rank's own, breakdown included: the programs print
 * rank 0's only. */
int engine_check_memory_plan(struct zero_engine *e, int rc, struct zero_error *err)
{
    return engine_agree(e, rc ? rc : check_mine(e, err), ZERO_ENOMEM,
                        "cannot hold its planned model states in the memory it may use", err);
}

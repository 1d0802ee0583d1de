/* Memory predicted: before the engine allocates its model states it adds up
 * what it is about to hold in host memory, tag by tag: the ledger's theory of the
 * model states (src/engine/engine_theory.c) and upper bounds of the transient
 * tags, the stage-3 gathers, reduce buckets, activations, workspace and NVMe
 * offload's buffers (memory_peaks.c), and compares the sum with what the process
 * may still use (memory_limit.c). A plan that cannot fit fails with the breakdown
 * instead of the process being OOM-killed half-way.
 *
 * The limits that bind several processes bind their plans together: the ranks of one
 * memory cgroup against the cgroup's limit, the ranks of one machine against its
 * MemAvailable (ranks on one node each passing alone would exhaust it together);
 * RLIMIT_AS binds each process alone.
 *
 * Host memory holds the offloaded states and NVMe's buffers always, and every tag
 * when the backend's device memory is host memory (cpu): there the gradient
 * accumulation counters too (grad_counter.c; whole units when the rank accumulates
 * locally: native fast mode, rank-major atoms). Each tag's plan bounds the ledger's
 * peak of that tag from above (tests/test_memory_peaks.c checks it), for
 * micro-batches of train_micro_batch_size_per_gpu samples: a plan that does not fit
 * surely would not; one that fits leaves out only what no tag counts (the allocator's
 * overhead, the libraries, the program's own buffers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "memory_plan.h"
#include "memory_limit.h"
#include "memory_peaks.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* This rank's plan: bytes of host memory per tag, and their sum */
static int64_t plan_of(const struct zero_engine *e, struct zero_theory *t,
                       int64_t plan[ZERO_TAG_COUNT])
{
    zero_engine_theory(e, t);
    memset(plan, 0, sizeof(int64_t) * ZERO_TAG_COUNT);
    const int device_is_host = (e->be->caps & ZERO_CAP_HOST_MEMORY) != 0;
    if (device_is_host) {
        plan[ZERO_TAG_PARAMS] += t->params_bytes;
        plan[ZERO_TAG_GRADS] += t->grads_bytes;
        plan[ZERO_TAG_MASTER] += t->master_bytes;
        plan[ZERO_TAG_OPTIM] += t->optim_bytes;
        plan[ZERO_TAG_ACCUM] += t->accum_bytes;       /* the accumulation counters (A > 1) */
        plan[ZERO_TAG_HPZ] += t->hpz_secondary_bytes; /* hpZ's secondary shards */
    }
    plan[ZERO_TAG_PARAMS] += t->host_params_bytes;
    plan[ZERO_TAG_GRADS] += t->host_grads_bytes;
    plan[ZERO_TAG_MASTER] += t->host_master_bytes;
    plan[ZERO_TAG_OPTIM] += t->host_optim_bytes;
    /* gathers, buckets, activations, workspace, NVMe buffers: memory_peaks.c */
    memory_peaks_add(e, device_is_host, plan);
    int64_t total = 0;
    for (int g = 0; g < ZERO_TAG_COUNT; g++)
        total += plan[g];
    return total;
}

int64_t zero_engine_memory_plan(const struct zero_engine *e, int64_t bytes[ZERO_TAG_COUNT])
{
    struct zero_theory t;
    return plan_of(e, &t, bytes);
}

/* What every rank tells the others: its plan and who shares its limits */
struct share {
    int64_t total;
    uint64_t shared_by[MEMORY_SCOPES];
};

/* The ranks that share scope s's limit with this rank: their plans summed, how many,
 * and the first few of them listed in ranks */
static int64_t shared_total(const struct zero_engine *e, const struct share *all, int s, int *count,
                            char *ranks, size_t len)
{
    const struct share *me = &all[e->rank];
    int64_t sum = 0;
    size_t used = 0;
    *count = 0;
    ranks[0] = '\0';
    for (int r = 0; r < e->world; r++) {
        if (r != e->rank && (s == MEMORY_PROCESS || all[r].shared_by[s] != me->shared_by[s]))
            continue;
        sum += all[r].total;
        if (++*count <= 8) {
            int n = snprintf(ranks + used, len - used, "%s%d", used ? ", " : "", r);
            if (n > 0 && (size_t)n < len - used)
                used += (size_t)n;
        }
    }
    if (*count > 8 && used + 5 < len)
        snprintf(ranks + used, len - used, ", ...");
    return sum;
}

/* This rank's verdict once every plan is known: each limit against the plans of the
 * ranks it binds (its own alone for RLIMIT_AS, its cgroup's for the cgroup's, the
 * machine's for MemAvailable). */
static int check_mine(struct zero_engine *e, const struct zero_theory *t,
                      const int64_t plan[ZERO_TAG_COUNT], const struct share *all,
                      const struct memory_limits *lim, struct zero_error *err)
{
    static const char *const whose[MEMORY_SCOPES] = {"this process", "the cgroup's processes",
                                                     "this machine's processes"};
    for (int s = 0; s < MEMORY_SCOPES; s++) {
        int count;
        char ranks[96];
        const int64_t need = shared_total(e, all, s, &count, ranks, sizeof ranks);
        if (lim->bytes[s] < 0 || need <= lim->bytes[s])
            continue;
        char parts[400] = "", together[200] = "";
        size_t used = 0;
        for (int g = 0; g < ZERO_TAG_COUNT; g++) {
            if (plan[g] < GIB / 200) /* would print 0.00 GiB */
                continue;
            int n = snprintf(parts + used, sizeof parts - used, "%s%s %.2f GiB", used ? ", " : "",
                             zero_tag_name(g), (double)plan[g] / GIB);
            if (n > 0 && (size_t)n < sizeof parts - used)
                used += (size_t)n;
        }
        if (count > 1)
            snprintf(together, sizeof together, "; with the %d ranks sharing it (%s) %.2f GiB",
                     count, ranks, (double)need / GIB);
        return zero_fail(
            err, ZERO_ENOMEM,
            "rank %d: not enough memory: the planned peak of host memory is %.2f "
            "GiB (%s; stage %d, Ψ = %lld padded elements, N = %d; micro-batches of %lld "
            "rows)%s, but %s may use %.2f GiB (%s); shard more (a "
            "higher stage, more ranks, offload), shrink the buffers "
            "(reduce_bucket_size, stage3_max_live_parameters, the offload "
            "buffer counts) or the micro-batch, run fewer ranks per machine, or "
            "shrink the model",
            e->rank, (double)all[e->rank].total / GIB, parts, e->stage_def->number,
            (long long)t->psi_padded, e->world, (long long)memory_peaks_rows(e), together, whose[s],
            (double)lim->bytes[s] / GIB, lim->source[s]);
    }
    return ZERO_OK;
}

/* Collective: every rank's plan reaches every rank (a rank whose layout failed sends
 * 0), each checks the limits it shares, and a rank whose plan cannot fit stops every
 * rank (the others would wait in the first collective of the states' initialization);
 * every rank's message ends with the failing rank's own, breakdown included: the
 * programs print rank 0's only. */
int engine_check_memory_plan(struct zero_engine *e, int rc, struct zero_error *err)
{
    struct zero_theory t;
    int64_t plan[ZERO_TAG_COUNT] = {0};
    struct memory_limits lim;
    memory_limits_query(&lim);
    struct share mine = {.total = rc ? 0 : plan_of(e, &t, plan)};
    memcpy(mine.shared_by, lim.shared_by, sizeof mine.shared_by);
    struct share *all = malloc((size_t)e->world * sizeof *all);
    int grc = all ? e->be->host_all_gather(e->bself, &mine, all, sizeof mine) : ZERO_ENOMEM;
    if (!rc && grc)
        rc = all ? engine_backend_error(e, grc, err, "exchanging the memory plans")
                 : zero_fail(err, ZERO_ENOMEM, "rank %d: the memory plans", e->rank);
    if (!rc)
        rc = check_mine(e, &t, plan, all, &lim, err);
    free(all);
    return engine_agree(e, rc, ZERO_ENOMEM, "cannot hold its planned peak in the memory it may use",
                        err);
}

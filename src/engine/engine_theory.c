/* The ZeRO paper's numbers for this engine's model, next to which the ledger
 * and comm stats are printed and tested. With Adam:
 *   mixed precision (2 + 2 + 4 + 8 bytes per parameter):
 *     stage 0: 16Ψ   stage 1: 4Ψ + 12Ψ/N   stage 2: 2Ψ + 14Ψ/N   stage 3: 16Ψ/N
 *   fp32 (4 + 4 + 8; the fp32 parameter shard is the master, no separate copy):
 *     stage 0: 16Ψ   stage 1: 8Ψ + 8Ψ/N    stage 2: 4Ψ + 12Ψ/N   stage 3: 16Ψ/N
 * ZeRO-Offload moves the master (always separate then) and the optimizer
 * state, 12Ψ/N, to host memory, next to a gradient staging shard in the
 * compute dtype (2Ψ/N in mixed precision: ZeRO-Offload's fp16 gradients on
 * the CPU); offload_param moves stage 3's parameter shard (2Ψ/N) there too.
 * Mixed precision, stage 2: device 2Ψ + 2Ψ/N, host 14Ψ/N. ZeRO-Infinity
 * (device = nvme) moves the 12Ψ/N (and the parameter shards past max_in_cpu,
 * 2Ψ/N) from host memory to the swap files: the third tier.
 * Ψ counts padded elements (layout.h); Ψ(N-1)/N elements sent per rank for
 * each reduce-scatter or all-gather of all parameters (in the compute dtype).
 * Stage 3 gathers every unit for forward and again for backward (3Ψ with the
 * reduce-scatter), less persistent units (gathered once per step, Ψp) and
 * less the gathers saved by keeping units for reuse (Ψr).
 * With A micro-steps exact mode reduces each one: (A + 1)Ψ(N-1)/N in stages 0-2 (A
 * reduce-scatters into the counter, then one all-gather of the gradients or the
 * parameters), (A(3Ψ - 2Ψp - Ψr) + Ψp)(N-1)/N in stage 3; accumulating locally and
 * reducing once gives 2Ψ(N-1)/N in stages 0-2 and (A(2Ψ - 2Ψp - Ψr) + Ψp + Ψ)(N-1)/N in
 * stage 3 (its gathers stay per micro-step, its reduce-scatter is once): native mode
 * does it in stages 0-2, exact mode with rank-major atoms in stages 0-3 (docs/stages.md
 * says when that is exact). */
#include <stdlib.h>

#include "engine_internal.h"
#include "grad_counter.h"
#include "grad_reduce.h"
#include "stage3.h"
#include "nvme_swap.h"

/* Elements stage 3 gathers per step, by replaying the recorded fetch order
 * under the rules of stage3.c: a fetch of a unit that is not gathered gathers
 * it; when a group of fetches (a unit and the owners of its externals) is
 * released, a unit stays gathered if its next fetch comes within
 * stage3_max_reuse_distance elements. Persistent units are left out (they
 * are gathered once per step after the update). Exact when the live limit
 * forces no release. Before the first step (no order yet): 2 gathers per unit. */
static int64_t replayed_gathers(const struct zero_engine *e, int64_t nonpersistent,
                                int64_t *backward, int64_t *slots)
{
    *backward = nonpersistent; /* the backward's gathers: those at or past backward_from */
    /* qwZ's slot bytes of the world's gathers (with hpZ the backward's run in the group,
     * in the compute dtype) */
    int world_backward = e->hpz.size <= 1;
    *slots = 0;
    for (int u = 0; u < e->nunits; u++)
        if (!e->us[u].stage3.persistent)
            *slots += (1 + world_backward) * (int64_t)qwz_slot_bytes(e->us[u].layout.shard);
    if (!e->stage_def->shards_params || !e->stage3.trace_recorded)
        return 2 * nonpersistent;
    *backward = *slots = 0;
    char *gathered = calloc((size_t)e->nunits, 1);
    if (!gathered)
        return 2 * nonpersistent;
    int64_t total = 0, limit = e->cfg.zero_optimization.stage3_max_reuse_distance;
    for (int a = 0; a < e->stage3.trace_len;) {
        int b = a;
        while (b < e->stage3.trace_len && e->stage3.trace_group[b] == e->stage3.trace_group[a])
            b++;
        for (int pos = a; pos < b; pos++) {
            int u = e->stage3.trace[pos];
            if (!e->us[u].stage3.persistent && !gathered[u]) {
                int in_backward = e->stage3.backward_from >= 0 && pos >= e->stage3.backward_from;
                total += e->us[u].layout.padded;
                if (!in_backward || world_backward)
                    *slots += (int64_t)qwz_slot_bytes(e->us[u].layout.shard);
                if (in_backward)
                    *backward += e->us[u].layout.padded;
                gathered[u] = 1;
            }
        }
        for (int pos = a; pos < b; pos++) {
            int u = e->stage3.trace[pos];
            int64_t d = stage3_reuse_distance(e, b, u);
            gathered[u] = d >= 0 && d <= limit;
        }
        a = b;
    }
    free(gathered);
    return total;
}

/* MiCS: only the gradients' reduce-scatters cross the world (mics.c); the parameters'
 * gathers run in the shard group and each reduced shard is all-gathered in the
 * replica group. Needs t's psi_reused and accumulates_locally. */
static void mics_theory(const struct zero_engine *e, struct zero_theory *t, int64_t padded,
                        int64_t persistent)
{
    t->mics_shard_size = mics_on(&e->mics) ? e->mics.size : 0;
    t->mics_node_group = e->mics.node_group_size;
    t->mics_gather_hop = e->mics.hop;
    t->psi_gathered = t->mics_reductions = t->group_sent_bytes_per_step = 0;
    if (!t->mics_shard_size)
        return;
    int64_t n = e->world, m = e->mics.size, r = e->mics.replicas, a = e->accum;
    int64_t reductions = a > 1 && !t->accumulates_locally ? a : 1, reduce = padded / n * (n - 1);
    /* native mode: the reductions run in the groups (mics_reduces_in_groups), none over
     * the world */
    int in_groups = mics_reduces_in_groups(e) && e->cfg.zero_optimization.reduce_scatter;
    t->mics_reduces_in_groups = in_groups;
    int64_t world_share = reduce; /* what a broadcast of the shards sends */
    if (in_groups)
        reduce = 0;
    t->psi_gathered = !e->stage_def->shards_params
                          ? padded
                          : a * (2 * padded - 2 * persistent - t->psi_reused) + persistent;
    t->mics_reductions = reductions;
    t->sent_elements_per_step = reduce;
    t->sent_elements_every_micro_step = a * reduce;
    t->sent_elements_local_accumulation = reduce;
    t->sent_elements_accumulated = reductions * reduce;
    if (!e->cfg.zero_optimization.reduce_scatter) { /* all-reduce, keep the shard: no replica */
        t->sent_elements_per_step = 2 * reduce;
        t->sent_elements_every_micro_step = 2 * a * reduce;
        t->sent_elements_local_accumulation = 2 * reduce;
        t->sent_elements_accumulated = 2 * reductions * reduce;
        r = 1;
    }
    if (!e->stage_def->shards_params && !e->cfg.zero_optimization.allgather_partitions) {
        /* one world broadcast per shard instead of the group's gathers, counted as the
         * flat theory counts them */
        t->sent_elements_per_step += world_share;
        t->sent_elements_every_micro_step += world_share;
        t->sent_elements_local_accumulation += world_share;
        t->sent_elements_accumulated += world_share;
        t->psi_gathered = 0;
    }
    int64_t replica = reductions * (padded / n) * (r - 1), c = (int64_t)e->csize;
    int64_t wire = a > 1 && !t->accumulates_locally && r > 1 ? 4 : c; /* into fp32 slots */
    int64_t gathers = t->psi_gathered / m * (m - 1);
    t->mics_intra_reduce_bytes = 0; /* the shard group's reduce-scatters (native mode) */
    t->mics_replica_bytes = replica * wire;
    if (in_groups) {
        /* the locally accumulated fp32 sum goes into the compute dtype's shard; a
         * micro-step's gradient (compute dtype) into an fp32 slot */
        int64_t rs_wire = t->accumulates_locally ? 4 : c;
        int64_t ar_wire = a > 1 && !t->accumulates_locally ? 4 : c;
        replica *= 2; /* an all-reduce of the shard sends its reduce-scatter and its gather */
        t->mics_intra_reduce_bytes = reductions * (padded / m) * (m - 1) * rs_wire;
        t->mics_replica_bytes = replica * ar_wire;
        gathers += reductions * (padded / m) * (m - 1);
    }
    t->group_sent_elements_per_step = gathers + replica;
    t->mics_gather_bytes = t->psi_gathered / m * (m - 1) * c;
    t->group_sent_bytes_per_step =
        t->mics_gather_bytes + t->mics_intra_reduce_bytes + t->mics_replica_bytes;
}

void zero_engine_theory(const struct zero_engine *e, struct zero_theory *t)
{
    int64_t psi = 0, padded = 0, persistent = 0;
    for (int u = 0; u < e->nunits; u++) {
        psi += e->us[u].layout.used; /* includes inner alignment gaps only */
        padded += e->us[u].layout.padded;
        if (e->us[u].stage3.persistent)
            persistent += e->us[u].layout.padded;
    }
    psi = zero_model_numel(e->model);
    /* MiCS: the states are shards of the shard group's M (N when off) */
    int64_t n = e->world, shard = padded / e->mics.size;
    int optim =
        e->cfg.optimizer.type == ZERO_OPTIM_SGD ? (e->cfg.optimizer.momentum != 0.0 ? 1 : 0) : 2;
    t->psi = psi;
    t->psi_padded = padded;
    t->psi_persistent = persistent;
    int64_t c = (int64_t)e->csize;              /* compute dtype: 4 (fp32) or 2 (fp16, bf16) */
    const struct zero_stage *st = e->stage_def; /* what it shards: stage.c */
    int64_t params = c * zero_stage_part(st->shards_params, padded, shard);
    int64_t master =
        engine_separate_master(e) ? 4 * zero_stage_part(st->shards_optim, padded, shard) : 0;
    int64_t optim_state = 4 * optim * zero_stage_part(st->shards_optim, padded, shard);
    t->params_bytes = e->offload.param ? 0 : params;
    t->grads_bytes = c * zero_stage_part(st->shards_grads, padded, shard);
    t->master_bytes = e->offload.opt ? 0 : master;
    t->optim_bytes = e->offload.opt ? 0 : optim_state;
    t->model_state_bytes = t->params_bytes + t->grads_bytes + t->master_bytes + t->optim_bytes;
    int64_t on_nvme = 0; /* parameter shard elements past max_in_cpu */
    for (int u = 0; u < e->nunits; u++)
        on_nvme += nvme_holds_params(e, u) ? e->us[u].layout.shard : 0;
    t->host_params_bytes = e->offload.param ? params - c * on_nvme : 0;
    t->host_grads_bytes = e->offload.opt && !e->nvme.opt ? c * shard : 0; /* NVMe: the ring */
    t->host_master_bytes = e->offload.opt && !e->nvme.opt ? master : 0;
    t->host_optim_bytes = e->offload.opt && !e->nvme.opt ? optim_state : 0;
    t->nvme_params_bytes = c * on_nvme;
    t->nvme_master_bytes = e->nvme.opt ? master : 0;
    t->nvme_optim_bytes = e->nvme.opt ? optim_state : 0;
    t->nvme_state_bytes = t->nvme_params_bytes + t->nvme_master_bytes + t->nvme_optim_bytes;
    t->host_state_bytes =
        t->host_params_bytes + t->host_grads_bytes + t->host_master_bytes + t->host_optim_bytes;
    /* Ψr: the gathers reuse saves against two per unit (negative when external
     * parameters cost extra gathers) */
    int64_t backward = 0, slots = 0;
    t->psi_reused =
        2 * (padded - persistent) - replayed_gathers(e, padded - persistent, &backward, &slots);
    /* hpZ: the backward's gathers (Ψg) run inside the group, (g-1)/g of them sent */
    int64_t g = e->hpz.size;
    t->hpz_group_size = (int)g;
    t->hpz_node_group = e->hpz.node_group;
    t->psi_group = g > 1 ? backward : 0;
    /* ... once per micro-step, as the forward's */
    t->group_sent_elements_per_step = e->accum * (t->psi_group / g * (g - 1));
    t->hpz_secondary_bytes = 0;
    for (int u = 0; u < e->nunits && g > 1; u++)
        if (!e->us[u].stage3.persistent)
            t->hpz_secondary_bytes += c * (e->us[u].layout.padded / g);
    /* a stage that shards the parameters gathers them for forward and for backward */
    int64_t volumes =
        st->shards_params ? 3 * padded - persistent - t->psi_reused - t->psi_group : 2 * padded;
    t->sent_elements_per_step = volumes / n * (n - 1);
    int64_t a = e->accum;
    int64_t accumulated =
        st->shards_params
            ? a * (3 * padded - 2 * persistent - t->psi_reused - t->psi_group) + persistent
            : (a + 1) * padded;
    t->sent_elements_accumulated = a == 1 ? t->sent_elements_per_step : accumulated / n * (n - 1);
    t->sent_elements_every_micro_step = t->sent_elements_accumulated;
    int64_t local =
        st->shards_params
            ? a * (2 * padded - 2 * persistent - t->psi_reused - t->psi_group) + persistent + padded
            : 2 * padded;
    t->sent_elements_local_accumulation = local / n * (n - 1);
    t->accumulates_locally = reduce_accumulates_locally(e);
    if (t->accumulates_locally)
        t->sent_elements_accumulated = t->sent_elements_local_accumulation;
    t->accum_bytes = 0; /* grad_reduce.c: one counter per unit with parameters */
    for (int u = 0; u < e->nunits && a > 1; u++) {
        const struct unit_states *s = &e->us[u];
        int64_t len = t->accumulates_locally ? s->layout.padded : s->layout.shard;
        t->accum_bytes += s->layout.shard > 0 ? 4 * counter_peak_slots(a) * len : 0;
    }
    mics_theory(e, t, padded, persistent);
    t->qgz_bits = e->qgz.bits;
    t->qgz_group_size = e->qgz.size;
    t->qgz_node_group = e->qgz.node_group;
    t->qgz_reduce_elements = t->qgz_intra_bytes = t->qgz_inter_bytes = 0;
    for (int u = 0; u < e->nunits && qgz_on(e); u++) { /* a reduction per unit and micro-step */
        int64_t intra, inter, s = e->us[u].layout.shard;
        if (s == 0)
            continue;
        qgz_reduction_bytes(e, s, &intra, &inter);
        t->qgz_intra_bytes += a * intra;
        t->qgz_inter_bytes += a * inter;
    }
    if (qgz_on(e))
        t->qgz_reduce_elements = a * padded / n * (n - 1);
    t->qwz_gather_elements = t->qwz_gather_sent_bytes = 0;
    if (qwz_on(e)) { /* stage 3: the world's all-gathers (not hpZ's), per micro-step,
                      * persistent once */
        for (int u = 0; u < e->nunits; u++)
            if (e->us[u].stage3.persistent)
                t->qwz_gather_sent_bytes += (int64_t)qwz_slot_bytes(e->us[u].layout.shard);
        t->qwz_gather_sent_bytes = (a * slots + t->qwz_gather_sent_bytes) * (n - 1);
        t->qwz_gather_elements =
            (a * (2 * padded - 2 * persistent - t->psi_reused - t->psi_group) + persistent) / n *
            (n - 1);
    }
}

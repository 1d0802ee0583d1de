/* End-of-run tables: the memory ledger and one step's communication, each next
 * to what the ZeRO paper says they should be. See report.h. */
#include <inttypes.h>
#include <stdio.h>

#include "report.h"

#define MIB (1024.0 * 1024.0)
#define MB 1e6

/* Per-rank model-state bytes with Adam: fp32 training (4 + 4 + 8 bytes per
 * parameter, the fp32 parameter shard doubling as the master copy) and mixed
 * precision (2 + 2 + 4 + 8). */
static const char *const stage_formula_fp32[4] = {"16Ψ", "8Ψ + 8Ψ/N", "4Ψ + 12Ψ/N", "16Ψ/N"};
static const char *const stage_formula_mixed[4] = {"16Ψ", "4Ψ + 12Ψ/N", "2Ψ + 14Ψ/N", "16Ψ/N"};

static void memory_row(FILE *out, const char *name, int64_t current, int64_t peak, int64_t theory,
                       int has_peak, int has_theory)
{
    fprintf(out, "  %-14s %10.2f ", name, (double)current / MIB);
    if (has_peak)
        fprintf(out, "%10.2f", (double)peak / MIB);
    else
        fprintf(out, "%10s", "-");
    if (has_theory)
        fprintf(out, " %10.2f  %s\n", (double)theory / MIB, current == theory ? "ok" : "MISMATCH");
    else
        fprintf(out, "\n");
}

/* The theory for tag in device (host = 0) or host memory (host = 1), or -1
 * when the formula says nothing about it. */
static int64_t tag_theory(const struct zero_theory *t, int tag, int host)
{
    if (host)
        switch (tag) {
        case ZERO_TAG_PARAMS:
            return t->host_params_bytes;
        case ZERO_TAG_GRADS:
            return t->host_grads_bytes;
        case ZERO_TAG_MASTER:
            return t->host_master_bytes;
        case ZERO_TAG_OPTIM:
            return t->host_optim_bytes;
        default:
            return -1;
        }
    switch (tag) {
    case ZERO_TAG_PARAMS:
        return t->params_bytes;
    case ZERO_TAG_GRADS:
        return t->grads_bytes;
    case ZERO_TAG_MASTER:
        return t->master_bytes;
    case ZERO_TAG_OPTIM:
        return t->optim_bytes;
    case ZERO_TAG_HPZ:
        return t->hpz_group_size > 1 ? t->hpz_secondary_bytes : -1;
    default:
        return -1;
    }
}

static void print_formula(FILE *out, const struct zero_engine *e, const struct zero_theory *t,
                          int world)
{
    const struct zero_config *c = zero_engine_config(e);
    int stage = c->zero_optimization.stage;
    enum zero_dtype cdt = zero_engine_compute_dtype(e);
    int mixed = cdt != ZERO_F32;
    if (c->optimizer.type != ZERO_OPTIM_SGD && stage >= 0 && stage <= 3)
        fprintf(out, "theory: stage %d, %s (%s, Adam: %s bytes per parameter)", stage,
                (mixed ? stage_formula_mixed : stage_formula_fp32)[stage], zero_dtype_name(cdt),
                mixed ? "2 + 2 + 4 + 8" : "4 + 4 + 8");
    else
        fprintf(out, "theory: stage %d, params + grads + master + optimizer state (%s, SGD)", stage,
                zero_dtype_name(cdt));
    if (t->mics_shard_size > 0) /* the shards are the shard group's */
        fprintf(out, " (MiCS: N is the shard group's M = %d)", t->mics_shard_size);
    fprintf(out,
            " with Ψ = %" PRId64 " padded elements (%" PRId64 " parameters), N = %d:"
            " %" PRId64 " bytes\n",
            t->psi_padded, t->psi, world,
            /* the formula's states wherever they live; the staging shard is extra */
            t->model_state_bytes + t->host_state_bytes - t->host_grads_bytes);
    if (t->host_state_bytes > 0)
        fprintf(out,
                "offload: %" PRId64 " of them on the device; in host memory the master and "
                "optimizer state (12Ψ/N)%s, plus a gradient staging shard in the compute dtype\n",
                t->model_state_bytes, t->host_params_bytes ? " and the parameter shard" : "");
}

/* ZeRO-Offload's host memory: the model-state tags, next to the theory. */
static int host_rows(FILE *out, const struct zero_engine *e, const struct zero_theory *t)
{
    const struct zero_ledger *h = zero_engine_host_ledger(e);
    int mismatches = 0;
    if (h->current_total == 0 && t->host_state_bytes == 0)
        return 0;
    fprintf(out, "host memory of offloaded states (ZeRO-Offload, rank 0, MiB)\n");
    for (int tag = ZERO_TAG_PARAMS; tag <= ZERO_TAG_OPTIM; tag++) {
        int64_t theory = tag_theory(t, tag, 1);
        memory_row(out, zero_tag_name(tag), h->current[tag], h->peak[tag], theory, 1, 1);
        mismatches += theory != h->current[tag];
    }
    int64_t states = zero_ledger_model_states(h);
    memory_row(out, "host states", states, 0, t->host_state_bytes, 0, 1);
    return mismatches + (states != t->host_state_bytes);
}

int report_memory(FILE *out, const struct zero_engine *e, struct zero_comm *comm)
{
    int rank = zero_comm_rank(comm), world = zero_comm_size(comm);
    const struct zero_ledger *l = zero_engine_ledger(e);
    int64_t max_peak = l->peak_total;
    zero_comm_allreduce_int64(comm, &max_peak, 1, ZERO_COMM_MAX);
    if (rank != 0)
        return 0;

    struct zero_theory t;
    zero_engine_theory(e, &t);
    int mismatches = 0;
    fprintf(out, "\nmemory per rank (ledger of rank 0, MiB)\n");
    fprintf(out, "  %-14s %10s %10s %10s\n", "tag", "current", "peak", "theory");
    for (int tag = 0; tag < ZERO_TAG_COUNT; tag++) {
        if (tag == ZERO_TAG_HPZ && t.hpz_group_size <= 1)
            continue; /* hpZ off: no secondary shards */
        int64_t theory = tag_theory(&t, tag, 0);
        memory_row(out, zero_tag_name(tag), l->current[tag], l->peak[tag], theory, 1, theory >= 0);
        mismatches += theory >= 0 && theory != l->current[tag];
    }
    int64_t states = zero_ledger_model_states(l);
    /* the ledger keeps no peak of the sum; the model states rarely move anyway */
    memory_row(out, "model states", states, 0, t.model_state_bytes, 0, 1);
    mismatches += states != t.model_state_bytes;
    memory_row(out, "all tags", l->current_total, l->peak_total, 0, 1, 0);
    print_formula(out, e, &t, world);
    if (mismatches) {
        for (int tag = 0; tag < ZERO_TAG_COUNT; tag++)
            if (tag_theory(&t, tag, 0) >= 0 && tag_theory(&t, tag, 0) != l->current[tag])
                fprintf(out, "MISMATCH %s: measured %" PRId64 " bytes, theory %" PRId64 "\n",
                        zero_tag_name(tag), l->current[tag], tag_theory(&t, tag, 0));
    }
    mismatches += host_rows(out, e, &t);
    fprintf(out, "peak total, max over %d ranks: %.2f MiB\n", world, (double)max_peak / MIB);
    return mismatches;
}

int64_t report_sent_bytes(const struct zero_comm_stats *s)
{
    int64_t sent = 0;
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++)
        sent += s->kind[k].sent_bytes;
    return sent;
}

/* hpZ: the bytes by path. A world collective sends (N-1)/N of its buffer, to each
 * peer alike: (g-1)/(N-1) of it inside this rank's group, (N-g)/(N-1) to the other
 * groups; an in-group collective sends all of its bytes inside the group. */
/* The groups' collectives, a row each; returns the data bytes they sent (and the
 * world's in *world_sent). */
static int64_t group_rows(FILE *out, const struct zero_comm_stats *s, int64_t *world_sent)
{
    int64_t group_sent = 0;
    *world_sent = 0;
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++) {
        const struct zero_coll_counter *c = &s->group[k];
        char name[40];
        snprintf(name, sizeof name, "in-group %s",
                 k == ZERO_COLL_ALL_GATHER   ? "gather"
                 : k == ZERO_COLL_ALL_TO_ALL ? "a2a" /* qgZ's hop 1 */
                                             : zero_coll_kind_name(k));
        if (c->calls > 0)
            fprintf(out, "  %-15s %8" PRId64 " %12.3f %10.3f %10.4f\n", name, c->calls,
                    (double)c->payload_bytes / MB, (double)c->sent_bytes / MB, c->seconds);
        if (k != ZERO_COLL_CONTROL && k != ZERO_COLL_ALL_TO_ALL) { /* qgZ's: its own line */
            *world_sent += s->kind[k].sent_bytes;
            group_sent += c->sent_bytes;
        }
    }
    return group_sent;
}

/* How the groups sit on the nodes the backend found. */
static void node_text(char *buf, size_t len, int64_t group, int node_group)
{
    if (node_group == group)
        snprintf(buf, len, "the nodes");
    else if (node_group > 0)
        snprintf(buf, len, "nodes hold %d ranks each", node_group);
    else
        snprintf(buf, len, "the nodes differ in size or interleave");
}

/* MiCS: the shard group's gathers (and, in native mode, reduce-scatters) and the replica
 * group's all-gathers of the reduced shards (native mode: all-reduces) are the groups'
 * rows, split into what stays in the shard group and what crosses to the others; the
 * world carries the reduce-scatters alone (native mode: nothing). */
static void report_comm_mics(FILE *out, const struct zero_comm_stats *s,
                             const struct zero_theory *t, int world)
{
    int64_t world_sent, group_sent = group_rows(out, s, &world_sent);
    int64_t m = t->mics_shard_size;
    char nodes[64];
    node_text(nodes, sizeof nodes, m, t->mics_node_group);
    fprintf(out,
            "MiCS shard groups of %" PRId64 " ranks, %" PRId64 " replicas (%s): in-group sent "
            "bytes per rank: measured %" PRId64 ", theory %" PRId64 " = Ψ'(M-1)/M + %" PRId64
            " %s reduced shards (Ψ' = %" PRId64 ": the parameters' gathers)  %s\n",
            m, world / m, nodes, group_sent, t->group_sent_bytes_per_step, t->mics_reductions,
            t->mics_reduces_in_groups ? "(Ψ(M-1)/M + 2Ψ(R-1)/N)" : "Ψ(R-1)/N", t->psi_gathered,
            group_sent == t->group_sent_bytes_per_step ? "ok" : "MISMATCH");
    /* the replica group's bytes cross the shard groups (cross[]: the engine's count) */
    int64_t cross = 0;
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++)
        cross += k != ZERO_COLL_CONTROL ? s->cross[k].sent_bytes : 0;
    int64_t intra = group_sent - cross,
            intra_theory = t->mics_gather_bytes + t->mics_intra_reduce_bytes;
    int native = t->mics_reduces_in_groups;
    fprintf(out,
            "  inside the shard groups: measured %" PRId64 ", theory %" PRId64
            " = Ψ'(M-1)/M gathers%s  %s\n",
            intra, intra_theory, native ? " + Ψ(M-1)/M per reduction, its reduce-scatter" : "",
            intra == intra_theory ? "ok" : "MISMATCH");
    fprintf(out,
            "  across them, in the replica groups of %" PRId64 ": measured %" PRId64
            ", theory %" PRId64 " = %s per reduction  %s\n",
            world / m, cross, t->mics_replica_bytes,
            native ? "2Ψ(R-1)/N, its all-reduce" : "Ψ(R-1)/N, the reduced shard's all-gather",
            cross == t->mics_replica_bytes ? "ok" : "MISMATCH");
    if (t->mics_gather_hop > 0)
        fprintf(out,
                "MiCS hierarchical gathers: inside the node (%d ranks), then across the "
                "%" PRId64 " nodes of the shard group\n",
                t->mics_gather_hop, m / t->mics_gather_hop);
}

static void report_comm_groups(FILE *out, const struct zero_comm_stats *s,
                               const struct zero_theory *t, int world, int64_t csize, int64_t accum)
{
    int64_t g = t->hpz_group_size, n = world, world_sent = 0;
    int64_t group_sent = group_rows(out, s, &world_sent);
    int64_t inter = n > 1 ? world_sent / (n - 1) * (n - g) : 0;
    int64_t intra = group_sent + (n > 1 ? world_sent / (n - 1) * (g - 1) : 0);
    char nodes[64];
    node_text(nodes, sizeof nodes, g, t->hpz_node_group);
    fprintf(out,
            "hpZ groups of %" PRId64 " ranks (%s): sent inside the group %.3f MB, to other "
            "groups %.3f MB\n",
            g, nodes, (double)intra / MB, (double)inter / MB);
    int64_t measured = group_sent / csize;
    fprintf(out,
            "in-group sent elements per rank: measured %" PRId64 ", theory %" PRId64
            " = %sΨg(g-1)/g (Ψg = %" PRId64 ": the backward's gathers, none across groups)  %s\n",
            measured, t->group_sent_elements_per_step, accum > 1 ? "A" : "", t->psi_group,
            measured == t->group_sent_elements_per_step ? "ok" : "MISMATCH");
    if (t->accumulates_locally || n < 2)
        return; /* the reductions carry fp32 sums: the elements line above is the check */
    /* the world's elements this step (sent_elements_*: report_comm's theory, less qwZ's
     * gathers, whose int8 slots count apart), of which (N-g)/(N-1) go to the other groups */
    int64_t world_elements =
        accum > 1 ? t->sent_elements_every_micro_step : t->sent_elements_per_step;
    int64_t theory =
        world_elements / (n - 1) * (n - g) * csize + t->qwz_gather_sent_bytes / (n - 1) * (n - g);
    fprintf(out,
            "to other groups: measured %" PRId64 " bytes, theory %" PRId64
            " = the world's collectives' (N-g)/(N-1)%s, the backward's gathers none  %s\n",
            inter, theory, t->qwz_gather_sent_bytes > 0 ? " (the forward's gathers in int8)" : "",
            inter == theory ? "ok" : "MISMATCH");
}

/* qgZ: the all-to-alls inside the group (hop 1) and to the other groups (hop 2), each
 * next to its formula and to what the reduce-scatters would send in the compute dtype. */
static void report_comm_qgz(FILE *out, const struct zero_comm_stats *s, const struct zero_theory *t,
                            int world, int64_t csize)
{
    int64_t intra = s->group[ZERO_COLL_ALL_TO_ALL].sent_bytes;
    int64_t inter = s->kind[ZERO_COLL_ALL_TO_ALL].sent_bytes;
    int64_t g = t->qgz_group_size, p = world / g;
    char nodes[64];
    node_text(nodes, sizeof nodes, g, t->qgz_node_group);
    fprintf(out,
            "qgZ int%d all-to-all sent bytes per rank, groups of %" PRId64 " ranks (%s), %" PRId64
            " group%s: inside the group measured %" PRId64 ", theory %" PRId64
            " = (g-1) P slots; to other groups measured %" PRId64 ", theory %" PRId64
            " = (P-1) slots; per reduction of a shard s, a slot 4 ceil(s/%d) + %s rounded up "
            "to 4 (the reduce-scatter in the compute dtype: %" PRId64 ")  %s\n",
            t->qgz_bits, g, nodes, p, p == 1 ? "" : "s", intra, t->qgz_intra_bytes, inter,
            t->qgz_inter_bytes, ZERO_QWZ_BLOCK, t->qgz_bits == 4 ? "ceil(s/2)" : "s",
            t->qgz_reduce_elements * csize,
            intra == t->qgz_intra_bytes && inter == t->qgz_inter_bytes ? "ok" : "MISMATCH");
}

void report_comm(FILE *out, const struct zero_engine *e, int world)
{
    const struct zero_config *c = zero_engine_config(e);
    int64_t step = zero_engine_global_steps(e);
    if (step == 0) {
        fprintf(out, "\ncommunication: no optimizer step was taken\n");
        return;
    }
    const struct zero_comm_stats *s = &zero_engine_last_step(e)->comm;
    fprintf(out, "\ncommunication of step %" PRId64 " (rank 0, MB = 1e6 bytes)\n", step);
    fprintf(out, "  %-15s %8s %12s %10s %10s\n", "collective", "calls", "payload MB", "sent MB",
            "seconds");
    int64_t data_sent = 0;
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++) {
        const struct zero_coll_counter *n = &s->kind[k];
        if (k == ZERO_COLL_ALL_TO_ALL && n->calls == 0)
            continue; /* qgZ's alone */
        fprintf(out, "  %-15s %8" PRId64 " %12.3f %10.3f %10.4f\n", zero_coll_kind_name(k),
                n->calls, (double)n->payload_bytes / MB, (double)n->sent_bytes / MB, n->seconds);
        if (k != ZERO_COLL_CONTROL)
            data_sent += n->sent_bytes;
    }

    struct zero_theory t;
    zero_engine_theory(e, &t);
    /* gradients and parameters travel in the compute dtype (fp32, fp16 or bf16) */
    int64_t csize = (int64_t)zero_dtype_size(zero_engine_compute_dtype(e));
    int64_t measured = data_sent / csize;
    if (t.accumulates_locally) /* but the reductions carry the locally accumulated fp32 sums */
        measured =
            (s->kind[ZERO_COLL_REDUCE_SCATTER].sent_bytes +
             s->kind[ZERO_COLL_ALL_REDUCE].sent_bytes) /
                4 +
            (s->kind[ZERO_COLL_ALL_GATHER].sent_bytes + s->kind[ZERO_COLL_BROADCAST].sent_bytes) /
                csize;
    /* qwZ: the all-gathers carry int8 slots, their own line below; the elements line
     * holds the rest */
    int64_t ag_sent = s->kind[ZERO_COLL_ALL_GATHER].sent_bytes;
    int qwz = t.qwz_gather_sent_bytes > 0;
    if (qwz)
        measured -= ag_sent / csize;
    /* qgZ: the all-to-alls stand for the reduce-scatters, their own line below */
    int qgz = t.qgz_bits > 0;
    if (qgz) {
        measured -= s->kind[ZERO_COLL_ALL_TO_ALL].sent_bytes / csize;
        t.sent_elements_per_step -= t.qgz_reduce_elements;
        t.sent_elements_every_micro_step -= t.qgz_reduce_elements;
    }
    int stage3 = c->zero_optimization.stage == 3, hpz = t.hpz_group_size > 1;
    int mics = t.mics_shard_size > 0;
    int mics_native = mics && t.mics_reduces_in_groups;
    const char *formula = mics_native ? "0 (MiCS in native mode: the groups reduce, the world "
                                        "carries nothing)"
                          : mics      ? "Ψ(N-1)/N (MiCS: the gradients' reduce-scatter alone "
                                        "crosses the groups)"
                          : !stage3   ? "2Ψ(N-1)/N"
                          : hpz ? "(3Ψ - Ψp - Ψr - Ψg)(N-1)/N, Ψp = persistent units, Ψr = "
                                  "gathers saved by reuse, Ψg = the backward's gathers, in "
                                  "the hpZ group"
                                : "(3Ψ - Ψp - Ψr)(N-1)/N, Ψp = persistent units, Ψr = gathers "
                                  "saved by reuse less extra ones for shared parameters";
    int64_t accum = c->gradient_accumulation_steps;
    if (qwz) {
        t.sent_elements_per_step -= t.qwz_gather_elements;
        t.sent_elements_every_micro_step -= t.qwz_gather_elements;
        t.sent_elements_local_accumulation -= t.qwz_gather_elements;
    }
    if (accum <= 1) {
        fprintf(out,
                "sent elements per rank%s%s: measured %" PRId64 ", theory %" PRId64 " = %s"
                "%s%s (Ψ = %" PRId64 " padded",
                qwz ? " but the all-gathers" : "", qgz ? " but the reductions" : "", measured,
                t.sent_elements_per_step, formula,
                !qwz  ? ""
                : hpz ? " less the forward's gathers' (2Ψ - Ψp - Ψr - Ψg)(N-1)/N"
                      : " less the gathers' (2Ψ - Ψp - Ψr)(N-1)/N",
                qgz ? " less the reduce-scatters' Ψ(N-1)/N" : "", t.psi_padded);
        if (stage3)
            fprintf(out, ", Ψp = %" PRId64 ", Ψr = %" PRId64, t.psi_persistent, t.psi_reused);
        if (hpz)
            fprintf(out, ", Ψg = %" PRId64, t.psi_group);
        fprintf(out, ", N = %d)  %s\n", world,
                measured == t.sent_elements_per_step ? "ok" : "MISMATCH");
    } else {
        /* a reduction every micro-step (exact mode, micro-step-major atoms): (A + 1)Ψ(N-1)/N;
         * local accumulation (native mode, or exact mode with rank-major atoms): 2Ψ(N-1)/N */
        const char *every = mics_native ? "0 (MiCS in native mode)"
                            : mics      ? "AΨ(N-1)/N (MiCS)"
                            : !stage3   ? "(A + 1)Ψ(N-1)/N"
                            : hpz       ? "(A(3Ψ - 2Ψp - Ψr - Ψg) + Ψp)(N-1)/N"
                                        : "(A(3Ψ - 2Ψp - Ψr) + Ψp)(N-1)/N";
        const char *local = mics_native ? "0 (MiCS in native mode)"
                            : mics      ? "Ψ(N-1)/N (MiCS)"
                            : !stage3   ? "2Ψ(N-1)/N"
                            : hpz       ? "(A(2Ψ - 2Ψp - Ψr - Ψg) + Ψp + Ψ)(N-1)/N"
                                        : "(A(2Ψ - 2Ψp - Ψr) + Ψp + Ψ)(N-1)/N";
        int64_t ran = t.accumulates_locally ? t.sent_elements_local_accumulation
                                            : t.sent_elements_every_micro_step;
        fprintf(out,
                "sent elements per rank%s%s: measured %" PRId64 ", theory %" PRId64
                " = %s%s%s with A = %" PRId64 " micro-steps, %s  %s\n",
                qwz ? " but the all-gathers" : "", qgz ? " but the reductions" : "", measured, ran,
                t.accumulates_locally ? local : every,
                !qwz  ? ""
                : hpz ? " less the forward's gathers' (A(2Ψ - 2Ψp - Ψr - Ψg) + Ψp)(N-1)/N"
                      : " less the gathers' (A(2Ψ - 2Ψp - Ψr) + Ψp)(N-1)/N",
                qgz ? " less the reduce-scatters' AΨ(N-1)/N" : "", accum,
                !t.accumulates_locally ? "each reduced"
                : c->libzero.coll_mode == ZERO_COLL_EXACT
                    ? "accumulated locally, reduced once (exact mode, rank-major atoms)"
                    : "accumulated locally, reduced once (native mode)",
                measured == ran ? "ok" : "MISMATCH");
        if (t.accumulates_locally)
            fprintf(out, "  reducing every micro-step instead: %" PRId64 " = %s\n",
                    t.sent_elements_every_micro_step, every);
        else if (!qgz) /* qgZ does not take rank-major atoms */
            fprintf(out, "  accumulating locally, reducing once per step (%s): %" PRId64 " = %s\n",
                    stage3 ? "--atom-order rank_major"
                           : "--atom-order rank_major, or --mode native",
                    t.sent_elements_local_accumulation, local);
    }
    if (qwz)
        fprintf(out,
                "qwZ int8 all-gather sent bytes per rank: measured %" PRId64 ", theory %" PRId64
                " = (N-1) x the slots of the gathers, each 4 ceil(s/%d) + s rounded up to 4 "
                "(shard s; in the compute dtype: %" PRId64 ")  %s\n",
                ag_sent, t.qwz_gather_sent_bytes, ZERO_QWZ_BLOCK, t.qwz_gather_elements * csize,
                ag_sent == t.qwz_gather_sent_bytes ? "ok" : "MISMATCH");
    if (qgz)
        report_comm_qgz(out, s, &t, world, csize);
    if (hpz)
        report_comm_groups(out, s, &t, world, csize, accum);
    if (mics)
        report_comm_mics(out, s, &t, world);
}

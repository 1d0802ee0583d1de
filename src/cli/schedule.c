/* zero schedule: one real training step of the toy MLP as the ordered list of what a
 * rank does, read from the engine's event stream (an observer, events.h): compute per
 * unit, gathers / prefetches / releases, the gradient reduction of each bucket, the
 * optimizer on this rank's shard; then the elements each collective moved, next to
 * the step's measured comm stats and the ZeRO paper's 2Ψ(N-1)/N or 3Ψ(N-1)/N. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "commands.h"
#include "program/flags.h"
#include "engine/stage.h"

#define MAX_EVENTS 100000

struct recorder {
    struct zero_event ev[MAX_EVENTS];
    int n;
    int64_t step; /* record events of this 1-based step */
    int overflow;
    int group; /* hpZ's group size (1: off): what a group_all_gather spans */
};

static void record(void *user, const struct zero_event *ev)
{
    struct recorder *r = user;
    if (ev->step + 1 != r->step || ev->kind == ZERO_EV_INFLIGHT ||
        ev->kind == ZERO_EV_REDUCE_WAIT || ev->kind == ZERO_EV_PARAM_GATHER_WAIT)
        return; /* the schedule lists issues; flights and these waits are the trace's */
    if (r->n == MAX_EVENTS) {
        r->overflow = 1;
        return;
    }
    r->ev[r->n++] = *ev;
}

struct schedule_args {
    struct cli_model m;
    int steps, rank, times;
};

static void usage(FILE *out)
{
    fprintf(out,
            "NAME\n"
            "    zero schedule - print one training step as the ordered list of what a rank does\n"
            "\n"
            "SYNOPSIS\n"
            "    mpirun -np N zero schedule [--stage S] [--hidden H] [--layers L] [--steps K]\n"
            "                               [--rank R] [--times] [engine flags]\n"
            "\n"
            "DESCRIPTION\n"
            "    Trains the toy residual MLP of examples/train_mlp for K steps (default 2) on\n"
            "    synthetic data and prints the last step as rank R saw it (default 0), one line\n"
            "    per engine event: forward and backward of each unit; under stage 3 the gather,\n"
            "    prefetch, wait and release of each unit; the gradient reduction of each unit\n"
            "    with its bucket and collective (all_reduce in stage 0, reduce_scatter in 1-3);\n"
            "    the norm exchange; the optimizer update of this rank's shard (element range);\n"
            "    in stages 1-2 the all-gather of the updated parameters. Elements are those of\n"
            "    the unit's flat buffer, padding included; a collective of E elements makes\n"
            "    each rank send E(N-1)/N (twice that for an all-reduce). The totals per\n"
            "    collective are then set against the step's measured comm stats and against\n"
            "    the ZeRO paper: 2Ψ(N-1)/N sent per rank in stages 0-2, 3Ψ(N-1)/N in stage 3\n"
            "    (persistent units are gathered once per step, Ψp; a unit needed again within\n"
            "    stage3_max_reuse_distance elements stays gathered, Ψr: (3Ψ - Ψp - Ψr)(N-1)/N).\n"
            "    Stage 3 records the unit order in step 1; prefetch and reuse follow it from\n"
            "    step 2 on. --reuse-distance 0 keeps only what is used again at once (the\n"
            "    last unit of forward, the first of backward): the paper's 3Ψ less that unit;\n"
            "    --persistence 0 makes Ψp = 0.\n"
            "\n"
            "OPTIONS\n"
            "    --steps K            steps to run; the last is printed (default 2)\n"
            "    --rank R             whose view to print (default 0)\n"
            "    --times              add each event's start and duration (ms since the step\n"
            "                         began): they vary from run to run\n"
            "%s"
            "    --help               this text\n",
            cli_model_flags_help(1));
}

/* 0, -1 for --help, or 2 with the error recorded in su. */
static int parse(struct schedule_args *a, int argc, char **argv, struct program_startup *su)
{
    cli_model_defaults(&a->m);
    a->steps = 2;
    a->rank = 0;
    a->times = 0;
    const struct flag t[] = {
        FLAG_NUM_WANT("steps", "K", NULL, FLAG_INT, &a->steps, 1, 1000000, "an integer >= 1"),
        FLAG_NUM_WANT("rank", "R", NULL, FLAG_INT, &a->rank, 0, 1000000, "an integer >= 0"),
        FLAG_ANY("times", NULL, NULL, FLAG_SET, &a->times),
    };
    const int n = (int)(sizeof t / sizeof t[0]);
    char msg[256];
    for (int i = 1; i < argc; i++) {
        int took = cli_model_flag(&a->m, argc, argv, &i, msg, sizeof msg);
        if (took == 0 && flags_is_help(argv[i])) {
            program_field(su, "--help", "given");
            return -1;
        }
        const struct flag *f;
        if (took == 0)
            took = flags_take(t, n, argc, argv, &i, &f, msg, sizeof msg);
        if (took == 0)
            return program_fail(su, 2, "unknown argument '%s' (see --help)", argv[i]);
        if (took < 0)
            return program_fail(su, 2, "%s", msg);
    }
    cli_model_fields(&a->m, su);
    program_field(su, "--steps", "%d", a->steps);
    program_field(su, "--rank", "%d", a->rank);
    program_field(su, "--times", "%d", a->times);
    return 0;
}

/* ---- the table ---- */

/* qgZ's all-to-alls carry codes, not elements: their own line in the totals */
static int is_all_to_all(const struct zero_event *ev)
{
    return ev->collective != NULL && strcmp(ev->collective, "all_to_all") == 0;
}

static int is_collective(const struct zero_event *ev)
{
    return ev->collective != NULL && strcmp(ev->collective, "control") != 0 && !is_all_to_all(ev);
}

/* a collective over a group (hpZ's, MiCS's shard or replica groups) */
static int is_group(const struct zero_event *ev)
{
    return is_collective(ev) && ev->group != ZERO_EVG_WORLD;
}

/* What this rank sends of ev: (S-1)/S of its buffer over the S ranks it spans, twice
 * that for an all-reduce. world: the ranks a world collective spans. */
static int64_t sent_by_rank(const struct zero_event *ev, int world)
{
    if (is_group(ev))
        world = ev->group_size;
    if (!is_collective(ev) || world < 2)
        return 0;
    int64_t part = ev->elements / world * (world - 1);
    return strstr(ev->collective, "all_reduce") != NULL ? 2 * part : part;
}

/* The phase an event belongs to, from the order of the stream. */
enum phase { FORWARD, BACKWARD, UPDATE };
static const char *const phase_name[] = {"fwd", "bwd", "step"};

static void detail(char *buf, size_t len, const struct zero_event *ev, const int64_t *padded,
                   int rank, int world)
{
    char a[32], b[32], c[32];
    int64_t sent = sent_by_rank(ev, world);
    switch (ev->kind) {
    case ZERO_EV_FORWARD:
    case ZERO_EV_BACKWARD:
    case ZERO_EV_RECOMPUTE:
        snprintf(buf, len, "%lld rows", (long long)ev->elements);
        break;
    case ZERO_EV_GATHER:
    case ZERO_EV_PREFETCH:
    case ZERO_EV_PARAM_GATHER:
    case ZERO_EV_REDUCE:
        if (is_all_to_all(ev)) { /* qgZ: codes, counted in bytes in the totals */
            snprintf(buf, len, "all_to_all bucket %s, quantized, %s", cli_num(a, ev->bucket),
                     zero_event_group_name(ev->group));
            break;
        }
        snprintf(buf, len, "%s%s%s, sends %s", ev->collective, ev->bucket >= 0 ? " bucket " : "",
                 ev->bucket >= 0 ? cli_num(a, ev->bucket) : "", cli_num(b, sent));
        break;
    case ZERO_EV_GATHER_WAIT:
        snprintf(buf, len, "wait for its all_gather");
        break;
    case ZERO_EV_RELEASE:
        snprintf(buf, len, "frees the whole copy, keeps shard %d", rank);
        break;
    case ZERO_EV_NORM:
        snprintf(buf, len, "sums of squares exchanged (control)");
        break;
    case ZERO_EV_OPTIMIZER: {
        int64_t whole = ev->unit >= 0 ? padded[ev->unit] : 0;
        /* MiCS: shard rank % M of M */
        int shard =
            ev->elements > 0 && whole > ev->elements ? rank % (int)(whole / ev->elements) : rank;
        if (ev->elements == whole || world == 1)
            snprintf(buf, len, "Adam on the whole unit");
        else
            snprintf(buf, len, "Adam on shard %d: [%s, %s) of %s", shard,
                     cli_num(a, ev->elements * shard), cli_num(b, ev->elements * (shard + 1)),
                     cli_num(c, whole));
        break;
    }
    default:
        buf[0] = '\0';
    }
}

static const char *event_label(const struct zero_event *ev)
{
    return ev->kind == ZERO_EV_REDUCE ? "reduce" : zero_event_name(ev->kind);
}

static int is_compute(const struct zero_event *ev)
{
    return ev->kind == ZERO_EV_FORWARD || ev->kind == ZERO_EV_BACKWARD ||
           ev->kind == ZERO_EV_RECOMPUTE || ev->kind == ZERO_EV_OPTIMIZER;
}

/* The elements column: a collective's or the optimizer's elements; none for compute. */
static const char *elements_of(char *buf, const struct zero_event *ev)
{
    if ((is_compute(ev) && ev->kind != ZERO_EV_OPTIMIZER) || !ev->elements)
        return "";
    return cli_num(buf, ev->elements);
}

static const char *unit_of(const struct zero_event *ev, const struct zero_model *model)
{
    return ev->unit >= 0 && ev->unit < model->nunits ? model->units[ev->unit]->name : "-";
}

static int max_int(int a, int b)
{
    return a > b ? a : b;
}

/* The phase column: the forward and backward of each micro-step (fwd.K and bwd.K
 * with accumulation) by the compute that opens them; everything after the last
 * micro-step's backward is the step (the engine counts the micro-step when its
 * backward ends, so an event of micro-step `accum` is at the boundary: stage 0's
 * all-gather of the accumulated gradient, the norm, the update, the gathers). */
static enum phase phase_of(const struct zero_event *ev, enum phase ph, int64_t micro0, int accum)
{
    if (ev->micro_step - micro0 >= accum || ev->kind == ZERO_EV_NORM)
        return UPDATE;
    if (ev->kind == ZERO_EV_BACKWARD || ev->kind == ZERO_EV_RECOMPUTE)
        return BACKWARD;
    if (ev->kind == ZERO_EV_FORWARD)
        return FORWARD;
    return ph;
}

/* One row per event; each column is as wide as its widest entry, and the unit
 * (left) and its elements (right) share one, so that the table of a small model
 * fits 80 columns. */
static void print_events(const struct recorder *r, const struct zero_model *model,
                         const int64_t *padded, int rank, int world, int accum, int times)
{
    char el[32], what[160], phase[40];
    int iw = 1, kw = (int)strlen("event"), gw = (int)strlen("unit elements");
    for (int n = r->n; n >= 10; n /= 10)
        iw++;
    for (int i = 0; i < r->n; i++) {
        const struct zero_event *ev = &r->ev[i];
        kw = max_int(kw, (int)strlen(event_label(ev)));
        gw = max_int(gw, (int)(strlen(unit_of(ev, model)) + 1 + strlen(elements_of(el, ev))));
    }
    printf("%*s %-5s %-5s %-*s %-*s%s %s\n", iw, "#", "phase", "track", kw, "event",
           gw - (int)strlen("elements"), "unit", "elements", "detail");
    enum phase ph = FORWARD;
    double t0 = r->n ? r->ev[0].t_begin : 0.0;
    int64_t micro0 = r->n ? r->ev[0].micro_step : 0;
    for (int i = 0; i < r->n; i++) {
        const struct zero_event *ev = &r->ev[i];
        ph = phase_of(ev, ph, micro0, accum);
        detail(what, sizeof what, ev, padded, rank, world);
        if (accum > 1 && ph != UPDATE)
            snprintf(phase, sizeof phase, "%s.%lld", ph == FORWARD ? "fwd" : "bwd",
                     (long long)(ev->micro_step - micro0 + 1));
        else
            snprintf(phase, sizeof phase, "%s", phase_name[ph]);
        const char *unit = unit_of(ev, model);
        printf("%*d %-5s %-5s %-*s %s%*s %s", iw, i + 1, phase, is_compute(ev) ? "comp" : "comm",
               kw, event_label(ev), unit, gw - (int)strlen(unit), elements_of(el, ev), what);
        if (times)
            printf("  @%.3f +%.3f ms", (ev->t_begin - t0) * 1e3, (ev->t_end - ev->t_begin) * 1e3);
        printf("\n");
    }
}

static enum zero_coll_kind coll_kind(const char *name)
{
    if (strncmp(name, "group_", 6) == 0)
        name += 6; /* a group's collective: the kind it counts as */
    if (strcmp(name, "reduce_scatter") == 0)
        return ZERO_COLL_REDUCE_SCATTER;
    if (strcmp(name, "all_gather") == 0)
        return ZERO_COLL_ALL_GATHER;
    if (strcmp(name, "all_reduce") == 0)
        return ZERO_COLL_ALL_REDUCE;
    if (strcmp(name, "broadcast") == 0)
        return ZERO_COLL_BROADCAST;
    if (strcmp(name, "all_to_all") == 0)
        return ZERO_COLL_ALL_TO_ALL;
    return ZERO_COLL_CONTROL;
}

/* MiCS: the groups' collectives by the group they span, each next to the comm stats
 * (the replica group's are cross[], the shard group's the rest of group[]) and to its
 * formula, then the world's total against its own; returns 1 if everything agrees. */
static int print_mics_totals(const struct recorder *r, const struct zero_engine *e,
                             const struct zero_theory *t, int world, int64_t world_total)
{
    enum { SHARD, REPLICA };
    int64_t calls[2][ZERO_COLL_KIND_COUNT] = {{0}}, buffer[2][ZERO_COLL_KIND_COUNT] = {{0}},
            bytes[2][ZERO_COLL_KIND_COUNT] = {{0}};
    for (int i = 0; i < r->n; i++) {
        const struct zero_event *ev = &r->ev[i];
        if (!is_group(ev) || ev->kind == ZERO_EV_GATHER_WAIT)
            continue;
        int g = ev->group == ZERO_EVG_MICS_REPLICA ? REPLICA : SHARD;
        enum zero_coll_kind k = coll_kind(ev->collective);
        calls[g][k]++;
        buffer[g][k] += ev->elements;
        bytes[g][k] += sent_by_rank(ev, world) * ev->element_bytes;
    }
    const struct zero_comm_stats *m = &zero_engine_last_step(e)->comm;
    int64_t esize = (int64_t)zero_dtype_size(zero_engine_compute_dtype(e));
    int64_t msize = t->mics_shard_size, replicas = world / msize, sum[2] = {0, 0};
    int ok = 1;
    printf("  MiCS: shard groups of %lld ranks, replica groups of %lld (bytes / %lld)\n",
           (long long)msize, (long long)replicas, (long long)esize);
    for (int g = SHARD; g <= REPLICA; g++)
        for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++) {
            const struct zero_coll_counter *all = &m->group[k], *cross = &m->cross[k];
            int64_t mcalls = g == REPLICA ? cross->calls : all->calls - cross->calls;
            int64_t mbytes = g == REPLICA ? cross->sent_bytes : all->sent_bytes - cross->sent_bytes;
            if (k == ZERO_COLL_CONTROL || (calls[g][k] == 0 && mcalls == 0))
                continue;
            char name[40], a[32], b[32], c[32];
            snprintf(name, sizeof name, "%s %s", g == SHARD ? "shard" : "replica",
                     k == ZERO_COLL_ALL_GATHER ? "gather" : "reduce");
            int good = bytes[g][k] == mbytes && calls[g][k] == mcalls;
            printf("  %-15s %6lld %14s %14s %14s  %s\n", name, (long long)calls[g][k],
                   cli_num(a, buffer[g][k]), cli_num(b, bytes[g][k] / esize),
                   cli_num(c, mbytes / esize), good ? "ok" : "MISMATCH");
            ok &= good;
            sum[g] += bytes[g][k];
        }
    int native = t->mics_reduces_in_groups;
    int64_t intra = t->mics_gather_bytes + t->mics_intra_reduce_bytes;
    int accum = zero_engine_config(e)->gradient_accumulation_steps > 1;
    int world_ok = world_total == t->sent_elements_per_step || accum;
    char a[32], b[32], psi[32], psig[32];
    cli_num(psi, t->psi_padded);
    cli_num(psig, t->psi_gathered);
    printf("\ntheory, MiCS (M = %lld, R = N/M = %lld), elements per rank:\n", (long long)msize,
           (long long)replicas);
    printf("  world: %s = %s  %s\n",
           native ? "0 (native mode: the groups reduce)"
                  : "Ψ(N-1)/N, the gradients' reduce-scatter",
           cli_num(a, t->sent_elements_per_step), world_ok ? "ok" : "MISMATCH");
    printf("  inside the shard groups: Ψ'(M-1)/M gathers%s = %s  %s\n",
           native ? " + Ψ(M-1)/M reduce-scatter" : "", cli_num(b, intra / esize),
           sum[SHARD] == intra ? "ok" : "MISMATCH");
    printf("  across them, in the replica groups: %s = %s  %s\n",
           native ? "2Ψ(R-1)/N all-reduce" : "Ψ(R-1)/N all-gather of the reduced shard",
           cli_num(a, t->mics_replica_bytes / esize),
           sum[REPLICA] == t->mics_replica_bytes ? "ok" : "MISMATCH");
    printf("(Ψ = %s elements padded; Ψ' = %s, the parameters' gathers%s)\n", psi, psig,
           accum ? "; with accumulation per reduction" : "");
    return ok && world_ok && sum[SHARD] == intra && sum[REPLICA] == t->mics_replica_bytes;
}

/* qgZ: the reductions' all-to-all bytes inside and across the groups, next to the
 * theory's (g-1) P and (P-1) slots; hop 2 runs once per reduction where P > 1, hop 1
 * where g > 1. Returns 1 if they agree. */
static int print_qgz(const struct zero_comm_stats *m, const struct zero_engine *e, int world,
                     int64_t reductions)
{
    struct zero_theory t;
    zero_engine_theory(e, &t);
    int64_t g = t.qgz_group_size, p = world / g;
    const struct zero_coll_counter *in = &m->group[ZERO_COLL_ALL_TO_ALL],
                                   *out = &m->kind[ZERO_COLL_ALL_TO_ALL];
    int calls_ok = in->calls == (g > 1 ? reductions : 0) && out->calls == (p > 1 ? reductions : 0);
    int ok =
        calls_ok && in->sent_bytes == t.qgz_intra_bytes && out->sent_bytes == t.qgz_inter_bytes;
    char a[32], b[32], c[32], d[32];
    printf(
        "  qgZ int%d all-to-all (bytes): %lld reductions; inside groups of %lld: sent %s, measured "
        "%s (%s); to the other groups: sent %s, measured %s (%s)  %s\n",
        t.qgz_bits, (long long)reductions, (long long)g, cli_num(a, t.qgz_intra_bytes),
        cli_num(b, in->sent_bytes), "(g-1) P slots", cli_num(c, t.qgz_inter_bytes),
        cli_num(d, out->sent_bytes), "(P-1) slots", ok ? "ok" : "MISMATCH");
    return ok;
}

/* Totals per collective next to the comm stats; returns 1 if everything agrees. */
static int print_totals(const struct recorder *r, const struct zero_engine *e, int world)
{
    int64_t calls[ZERO_COLL_KIND_COUNT] = {0}, buffer[ZERO_COLL_KIND_COUNT] = {0},
            sent[ZERO_COLL_KIND_COUNT] = {0};
    int64_t group_calls = 0, group_buffer = 0, group_sent = 0; /* hpZ's in-group gathers */
    for (int i = 0; i < r->n; i++) {
        const struct zero_event *ev = &r->ev[i];
        if (is_group(ev) && ev->kind != ZERO_EV_GATHER_WAIT) {
            group_calls++;
            group_buffer += ev->elements;
            group_sent += sent_by_rank(ev, world);
            continue;
        }
        if (!is_collective(ev))
            continue;
        enum zero_coll_kind k = coll_kind(ev->collective);
        calls[k]++;
        buffer[k] += ev->elements;
        sent[k] += sent_by_rank(ev, world);
    }
    const struct zero_comm_stats *m = &zero_engine_last_step(e)->comm;
    /* the wire carries the compute dtype: 4 bytes an element in fp32, 2 in fp16/bf16 */
    int64_t esize = (int64_t)zero_dtype_size(zero_engine_compute_dtype(e));
    printf("\ntotals of the step (elements; each rank sends (N-1)/N of a collective's buffer,\n"
           "2(N-1)/N for an all-reduce; measured = this rank's comm stats, sent bytes / %lld)\n",
           (long long)esize);
    printf("  %-15s %6s %14s %14s %14s\n", "collective", "calls", "buffer", "sent", "measured");
    int ok = 1;
    int64_t total = 0, measured_total = 0;
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++) {
        if (k == ZERO_COLL_CONTROL || k == ZERO_COLL_ALL_TO_ALL) /* qgZ's: print_qgz */
            continue;
        int64_t measured = m->kind[k].sent_bytes / esize;
        if (calls[k] == 0 && m->kind[k].calls == 0)
            continue;
        char a[32], b[32], c[32];
        printf("  %-15s %6lld %14s %14s %14s  %s\n", zero_coll_kind_name(k), (long long)calls[k],
               cli_num(a, buffer[k]), cli_num(b, sent[k]), cli_num(c, measured),
               sent[k] == measured && calls[k] == m->kind[k].calls ? "ok" : "MISMATCH");
        ok &= sent[k] == measured && calls[k] == m->kind[k].calls;
        total += sent[k];
        measured_total += measured;
    }
    char a[32], b[32];
    printf("  %-15s %6s %14s %14s %14s  %s\n", "all", "", "", cli_num(a, total),
           cli_num(b, measured_total), total == measured_total ? "ok" : "MISMATCH");
    if (r->group > 1) { /* hpZ: the backward's gathers, inside the group of g ranks */
        const struct zero_coll_counter *g = &m->group[ZERO_COLL_ALL_GATHER];
        int64_t gm = g->sent_bytes / esize;
        char c[32];
        printf("  %-15s %6lld %14s %14s %14s  %s   (in the group of %d ranks: (g-1)/g)\n",
               "in-group gather", (long long)group_calls, cli_num(a, group_buffer),
               cli_num(b, group_sent), cli_num(c, gm),
               group_sent == gm && group_calls == g->calls ? "ok" : "MISMATCH", r->group);
        ok &= group_sent == gm && group_calls == g->calls;
    }
    int64_t qgz_calls = 0; /* reductions: a hop 2 across the groups follows a hop 1 */
    for (int i = 0; i < r->n; i++)
        qgz_calls += is_all_to_all(&r->ev[i]) && r->ev[i].group != ZERO_EVG_QGZ_ACROSS;
    if (qgz_calls > 0)
        ok &= print_qgz(m, e, world, qgz_calls);
    printf("  (control exchanges such as the norm: %lld calls, %lld bytes, not counted)\n",
           (long long)m->kind[ZERO_COLL_CONTROL].calls,
           (long long)m->kind[ZERO_COLL_CONTROL].sent_bytes);

    struct zero_theory t;
    zero_engine_theory(e, &t);
    if (qgz_calls > 0) /* the elements' theory without the reductions */
        t.sent_elements_per_step -= t.qgz_reduce_elements;
    if (t.mics_shard_size > 0)
        return print_mics_totals(r, e, &t, world, total) && ok;
    const struct zero_config *c = zero_engine_config(e);
    /* a stage that shards the parameters gathers them for forward and backward: 3Ψ */
    int stage3 = zero_stage_get(c->zero_optimization.stage)->shards_params;
    char psi[32], psip[32], psir[32], th[32];
    cli_num(psi, t.psi_padded);
    cli_num(psip, t.psi_persistent);
    cli_num(psir, t.psi_reused);
    cli_num(th, t.sent_elements_per_step);
    if (c->gradient_accumulation_steps > 1) {
        printf("\ntheory %s = %s elements holds without accumulation; with %lld micro-steps the\n"
               "gradient reduction%s repeats per micro-step\n",
               stage3 ? "(3Ψ - Ψp - Ψr)(N-1)/N" : "2Ψ(N-1)/N", th,
               (long long)c->gradient_accumulation_steps, stage3 ? " and the gathers" : "");
        return ok;
    }
    int v = stage3 ? (qgz_calls > 0 ? 2 : 3) : 2; /* volumes of Ψ: qgZ's reductions apart */
    if (stage3 && t.hpz_group_size > 1) {
        char psig[32];
        cli_num(psig, t.psi_group);
        printf("\ntheory: (%dΨ - Ψp - Ψr - Ψg)(N-1)/N = (%d x %s - %s - %s - %s) x %d/%d = %s "
               "elements  %s\n(Ψg: the backward's gathers, inside the hpZ group)\n",
               v, v, psi, psip, psir, psig, world - 1, world, th,
               total == t.sent_elements_per_step ? "ok" : "MISMATCH");
        /* a world collective sends each peer alike: (N-g)/(N-1) of it leaves the group */
        int64_t g = t.hpz_group_size, across = t.sent_elements_per_step / (world - 1) * (world - g);
        char ac[32];
        printf("across the groups: (%dΨ - Ψp - Ψr - Ψg)(N-g)/N = %s elements  %s   (the "
               "backward's gathers: none)\n",
               v, cli_num(ac, across),
               total / (world - 1) * (world - g) == across ? "ok" : "MISMATCH");
    } else if (stage3 && (t.psi_persistent > 0 || t.psi_reused > 0))
        printf("\ntheory: (%dΨ - Ψp - Ψr)(N-1)/N = (%d x %s - %s - %s) x %d/%d = %s elements  %s\n",
               v, v, psi, psip, psir, world - 1, world, th,
               total == t.sent_elements_per_step ? "ok" : "MISMATCH");
    else
        printf("\ntheory: %dΨ(N-1)/N = %d x %s x %d/%d = %s elements  %s\n", v, v, psi, world - 1,
               world, th, total == t.sent_elements_per_step ? "ok" : "MISMATCH");
    printf("(Ψ = %s elements in the units' flat buffers, padding included)\n", psi);
    return ok && total == t.sent_elements_per_step;
}

static void print_header(const struct schedule_args *a, const struct cli_run *run)
{
    struct zero_theory t;
    zero_engine_theory(run->engine, &t);
    const struct zero_config *c = zero_engine_config(run->engine);
    char p[32], q[32];
    printf("zero schedule: stage %d, %d rank%s, step %d as rank %d sees it\n",
           c->zero_optimization.stage, run->world, run->world > 1 ? "s" : "", a->steps, a->rank);
    char what[160];
    if (a->m.kind == CLI_MODEL_MLP)
        printf("model: %d residual MLP blocks of width %lld (inner %lld) + classifier (%lld "
               "classes)\n",
               a->m.layers, (long long)a->m.hidden, 4 * (long long)a->m.hidden,
               (long long)a->m.classes);
    else
        printf("model: %s\n", cli_model_describe(&a->m, what, sizeof what));
    printf("Ψ = %s parameters, %s elements padded in %d units", cli_num(p, t.psi),
           cli_num(q, t.psi_padded), run->model->nunits);
    if (zero_stage_get(c->zero_optimization.stage)->shards_params)
        printf(" (%s in persistent units)", cli_num(p, t.psi_persistent));
    printf("\nbatch: micro-batch %lld x accumulation %lld x world %d\n\n",
           (long long)c->train_micro_batch_size_per_gpu, (long long)c->gradient_accumulation_steps,
           run->world);
}

int zero_cmd_schedule(int argc, char **argv)
{
    static struct schedule_args a;
    struct program_startup su;
    program_startup_init(&su, "zero schedule");
    int help = parse(&a, argc, argv, &su) < 0, owned;
    int rc = cli_startup(&su, &owned);
    struct zero_comm *job = zero_comm_world();
    int me = zero_comm_rank(job), world = zero_comm_size(job), status = 0;
    if (rc || help) {
        if (!rc && me == 0)
            usage(stdout);
        if (owned)
            zero_job_finalize();
        return rc;
    }
    struct recorder *rec = a.rank < world ? calloc(1, sizeof *rec) : NULL;
    struct zero_error err = {0};
    rc = rec               ? ZERO_OK
         : a.rank >= world ? zero_fail(&err, ZERO_EINVAL, "--rank %d: only %d rank%s", a.rank,
                                       world, world > 1 ? "s" : "")
                           : zero_fail(&err, ZERO_ENOMEM, "event buffer");
    struct cli_run run;
    if ((rc = example_agree_naming_ranks(rc, &err, job)) == 0 &&
        (rc = cli_run_open(&run, &a.m, a.m.cfg.zero_optimization.stage, job, &err)) == 0) {
        rec->step = a.steps;
        rec->group = zero_engine_config(run.engine)->zero_optimization.zero_hpz_partition_size;
        zero_engine_set_observer(run.engine, record, rec);
        for (int s = 0; s < a.steps && !rc; s++)
            rc = cli_run_step(&run, s, &err);
        rc = example_agree_naming_ranks(rc, &err, job);
        if (!rc && run.rank == a.rank) {
            int64_t *padded = calloc((size_t)run.model->nunits, sizeof *padded);
            for (int i = 0; padded && i < rec->n; i++) /* a reduction covers the whole unit */
                if (rec->ev[i].kind == ZERO_EV_REDUCE && rec->ev[i].unit >= 0 &&
                    rec->ev[i].elements > padded[rec->ev[i].unit]) /* not MiCS's replica part */
                    padded[rec->ev[i].unit] = rec->ev[i].elements;
            print_header(&a, &run);
            print_events(rec, run.model, padded, run.rank, run.world,
                         (int)zero_engine_config(run.engine)->gradient_accumulation_steps, a.times);
            if (!print_totals(rec, run.engine, run.world))
                status = 1;
            if (rec->overflow)
                printf("(only the first %d events are shown)\n", MAX_EVENTS);
            free(padded);
            fflush(stdout);
        }
        cli_run_close(&run);
    }
    if (rc) {
        if (me == 0)
            fprintf(stderr, "zero schedule: %s\n", err.msg);
        status = rc == ZERO_EINVAL ? 2 : 1;
    }
    zero_comm_allreduce_int(job, &status, ZERO_COMM_MAX);
    free(rec);
    if (owned)
        zero_job_finalize();
    return status;
}

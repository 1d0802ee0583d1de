/* The engine's event stream as zero schedule and the Chrome trace read it, on a real
 * run at this world size: per step, the elements each collective event implies this
 * rank sends equal the step's measured comm stats and the ZeRO theory (2Ψ(N-1)/N,
 * (3Ψ - Ψp)(N-1)/N) in every stage; the trace file parses (jansson), has one pid per
 * rank with a compute and a communication thread, and only the chosen steps; every
 * collective names the group it spans (the world; under MiCS its shard or replica group). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_check.h"
#include "zero/trace.h"
#include "zero/zero.h"

struct run {
    struct zero_device *dev;
    struct zero_model *model;
    struct zero_engine *engine;
};

static int run_bf16; /* the next open_run trains in bf16 */
/* overlap_comm and reduce_bucket_size of the next open_run (the trace tests' knobs) */
static int run_overlap = 0;
static int64_t run_bucket = 0;
static int run_accum = 1; /* gradient_accumulation_steps */
static enum zero_coll_mode run_mode = ZERO_COLL_EXACT;
static int run_mics = 0; /* mics_shard_size (0: off) */
static int run_hpz = 0;  /* zero_hpz_partition_size (0: off), every unit gathered again */
static int run_qgz = 0;  /* zero_quantized_gradients */

static int open_run(struct run *r, int stage, int64_t persistence, struct zero_error *err)
{
    memset(r, 0, sizeof *r);
    struct zero_config cfg;
    zero_config_defaults(&cfg);
    cfg.bf16.enabled = run_bf16;
    cfg.zero_optimization.stage = stage;
    cfg.zero_optimization.overlap_comm = run_overlap;
    if (run_bucket > 0)
        cfg.zero_optimization.reduce_bucket_size = run_bucket;
    cfg.zero_optimization.stage3_param_persistence_threshold = persistence;
    cfg.optimizer.type = ZERO_OPTIM_ADAMW;
    cfg.train_micro_batch_size_per_gpu = 2;
    cfg.gradient_accumulation_steps = run_accum;
    cfg.libzero.align = 64;
    cfg.libzero.coll_mode = run_mode;
    if (run_mics > 0)
        cfg.zero_optimization.mics_shard_size = run_mics;
    cfg.zero_optimization.zero_quantized_gradients = run_qgz;
    if (run_hpz > 0) { /* the backward gathers every unit again, from the group */
        cfg.zero_optimization.zero_hpz_partition_size = run_hpz;
        cfg.zero_optimization.stage3_max_reuse_distance = 0;
    }
    MPI_Comm comm = MPI_COMM_WORLD;
    struct zero_backend_options opt = {.coll_mode = run_mode, .device = -1};
    int rc = zero_device_open(&r->dev, "cpu", &comm, &opt, err);
    if (!rc)
        rc = zero_nn_build_mlp(&r->model, 16, 2, 5, err);
    if (!rc)
        rc = zero_engine_create(&r->engine, &cfg, r->model, r->dev, err);
    return rc;
}

static int train_step(struct run *r, int64_t step, struct zero_error *err)
{
    float x[2 * 16];
    int32_t y[2];
    int rc = 0;
    for (int i = 0; i < run_accum && !rc; i++) {
        int64_t first = zero_atom_first_sample(step, i, r->dev->rank, r->dev->size, run_accum, 2);
        zero_synthetic_samples(3, 16, 5, first, 2, x, y);
        struct zero_batch b = {.rows = 2, .inputs = x, .labels = y};
        rc = zero_engine_forward(r->engine, &b, NULL, err);
        if (!rc)
            rc = zero_engine_backward(r->engine, err);
    }
    if (!rc)
        rc = zero_engine_step(r->engine, NULL, err);
    return rc;
}

static void close_run(struct run *r)
{
    zero_engine_destroy(r->engine);
    zero_model_destroy(r->model);
    zero_device_close(r->dev);
}

/* ---- schedule totals ---- */

struct totals {
    int64_t step; /* 1-based step to count */
    int world;
    int64_t calls[ZERO_COLL_KIND_COUNT], sent[ZERO_COLL_KIND_COUNT];
};

static void count(void *user, const struct zero_event *ev)
{
    struct totals *t = user;
    if (ev->step + 1 != t->step || !ev->collective || strcmp(ev->collective, "control") == 0 ||
        ev->kind == ZERO_EV_INFLIGHT) /* counted at its issue event */
        return;
    int k = strcmp(ev->collective, "reduce_scatter") == 0 ? ZERO_COLL_REDUCE_SCATTER
            : strcmp(ev->collective, "all_gather") == 0   ? ZERO_COLL_ALL_GATHER
            : strcmp(ev->collective, "all_reduce") == 0   ? ZERO_COLL_ALL_REDUCE
                                                          : ZERO_COLL_BROADCAST;
    int64_t part = ev->elements / t->world * (t->world - 1);
    t->calls[k]++;
    t->sent[k] += k == ZERO_COLL_ALL_REDUCE ? 2 * part : part;
}

static void check_stage_totals(int stage, int64_t persistence)
{
    struct run r;
    struct zero_error err = {0};
    int rc = open_run(&r, stage, persistence, &err);
    struct totals t = {.step = 2, .world = mpi_check_size()};
    if (!rc)
        zero_engine_set_observer(r.engine, count, &t);
    for (int s = 0; s < 2 && !rc; s++)
        rc = train_step(&r, s, &err);
    ck_assert_msg(mpi_check_all(rc == 0), "stage %d: %s", stage, err.msg);
    const struct zero_comm_stats *m = &zero_engine_last_step(r.engine)->comm;
    struct zero_theory th;
    zero_engine_theory(r.engine, &th);
    int ok = 1;
    int64_t total = 0;
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++) {
        if (k == ZERO_COLL_CONTROL)
            continue;
        ok &= t.sent[k] == m->kind[k].sent_bytes / 4 && t.calls[k] == m->kind[k].calls;
        total += t.sent[k];
    }
    ok &= total == th.sent_elements_per_step;
    int world = mpi_check_size();
    if (world > 1) /* something was sent at all */
        ok &= total > 0;
    close_run(&r);
    ck_assert_msg(mpi_check_all(ok),
                  "stage %d: event totals (%lld) differ from comm stats or "
                  "theory (%lld)",
                  stage, (long long)total, (long long)th.sent_elements_per_step);
}

START_TEST(test_event_totals_equal_comm_stats_and_theory_stage0)
{
    check_stage_totals(0, 0);
}
END_TEST

START_TEST(test_event_totals_equal_comm_stats_and_theory_stage1)
{
    check_stage_totals(1, 0);
}
END_TEST

START_TEST(test_event_totals_equal_comm_stats_and_theory_stage2)
{
    check_stage_totals(2, 0);
}
END_TEST

START_TEST(test_event_totals_equal_comm_stats_and_theory_stage3_3psi)
{
    check_stage_totals(3, 0);
}
END_TEST

START_TEST(test_event_totals_equal_comm_stats_and_theory_stage3_persistent_units)
{
    check_stage_totals(3, 1000000);
}
END_TEST

/* With accumulation exact mode reduces every micro-step: the step's comm stats equal
 * the accumulated formula, and local accumulation would send less in stages 0-2. */
static void check_accumulated_volume(int stage)
{
    struct run r;
    struct zero_error err = {0};
    run_accum = 3;
    int rc = open_run(&r, stage, 0, &err);
    for (int s = 0; s < 2 && !rc; s++)
        rc = train_step(&r, s, &err);
    run_accum = 1;
    ck_assert_msg(mpi_check_all(rc == 0), "stage %d: %s", stage, err.msg);
    const struct zero_comm_stats *m = &zero_engine_last_step(r.engine)->comm;
    struct zero_theory th;
    zero_engine_theory(r.engine, &th);
    int64_t sent = 0;
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++)
        if (k != ZERO_COLL_CONTROL)
            sent += m->kind[k].sent_bytes / 4;
    int n = mpi_check_size();
    int64_t psi = th.psi_padded;
    int ok = sent == th.sent_elements_accumulated;
    if (stage < 3) { /* the closed forms */
        ok &= th.sent_elements_accumulated == 4 * psi / n * (n - 1);
        ok &= th.sent_elements_local_accumulation == 2 * psi / n * (n - 1);
    }
    close_run(&r);
    ck_assert_msg(mpi_check_all(ok), "stage %d, A = 3: sent %lld, theory %lld (local %lld)", stage,
                  (long long)sent, (long long)th.sent_elements_accumulated,
                  (long long)th.sent_elements_local_accumulation);
}

START_TEST(test_accumulated_volume_is_a_plus_1_psi_stage0)
{
    check_accumulated_volume(0);
}
END_TEST

START_TEST(test_accumulated_volume_is_a_plus_1_psi_stage1)
{
    check_accumulated_volume(1);
}
END_TEST

START_TEST(test_accumulated_volume_is_a_plus_1_psi_stage2)
{
    check_accumulated_volume(2);
}
END_TEST

START_TEST(test_accumulated_volume_stage3)
{
    check_accumulated_volume(3);
}
END_TEST

/* Native (fast) mode accumulates locally and reduces once: 2Ψ(N-1)/N per step in
 * stages 0-2, and parameters within a tolerance of exact mode's. */
static int64_t accumulated_run(int stage, enum zero_coll_mode mode, float *w, int64_t n,
                               struct zero_theory *th)
{
    struct run r;
    struct zero_error err = {0};
    run_accum = 3;
    run_mode = mode;
    int rc = open_run(&r, stage, 0, &err);
    for (int s = 0; s < 2 && !rc; s++)
        rc = train_step(&r, s, &err);
    if (!rc) {
        ck_assert_int_le(zero_param_numel(&r.model->units[0]->params[0]), n);
        rc = zero_engine_read_param(r.engine, 0, 0, w, &err);
    }
    run_accum = 1;
    run_mode = ZERO_COLL_EXACT;
    ck_assert_msg(mpi_check_all(rc == 0), "stage %d: %s", stage, err.msg);
    int64_t sent = 0;
    const struct zero_comm_stats *m = &zero_engine_last_step(r.engine)->comm;
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++)
        if (k != ZERO_COLL_CONTROL)
            sent += m->kind[k].sent_bytes / 4;
    zero_engine_theory(r.engine, th);
    close_run(&r);
    return sent;
}

static void check_local_accumulation(int stage)
{
    enum { W = 64 * 16 }; /* layers.0's first weight: (4 * 16, 16) */
    static float exact[W], fast[W];
    struct zero_theory th;
    accumulated_run(stage, ZERO_COLL_EXACT, exact, W, &th);
    int64_t sent = accumulated_run(stage, ZERO_COLL_NATIVE, fast, W, &th);
    int n = mpi_check_size();
    ck_assert_msg(mpi_check_all(sent == th.sent_elements_local_accumulation &&
                                sent == 2 * th.psi_padded / n * (n - 1)),
                  "stage %d, native, A = 3: sent %lld, local-accumulation theory %lld", stage,
                  (long long)sent, (long long)th.sent_elements_local_accumulation);
    double worst = 0.0;
    for (int i = 0; i < W; i++) {
        double d = fabs((double)exact[i] - (double)fast[i]);
        if (d > worst)
            worst = d;
    }
    ck_assert_msg(mpi_check_all(worst < 1e-5), "stage %d: fast mode differs by %g", stage, worst);
}

START_TEST(test_native_accumulates_locally_2psi_stage0)
{
    check_local_accumulation(0);
}
END_TEST

START_TEST(test_native_accumulates_locally_2psi_stage1)
{
    check_local_accumulation(1);
}
END_TEST

START_TEST(test_native_accumulates_locally_2psi_stage2)
{
    check_local_accumulation(2);
}
END_TEST

/* ---- the trace file ---- */

static json_t *load_trace(int stage, const int64_t *steps, int nsteps, char *path, size_t len)
{
    struct run r;
    struct zero_error err = {0};
    struct zero_trace *t = NULL;
    int rc = open_run(&r, stage, 0, &err);
    if (!rc)
        rc = zero_trace_create(&t, r.model, r.dev->rank, r.dev->size, steps, nsteps, &err);
    if (!rc)
        zero_engine_set_observer(r.engine, zero_trace_observe, t);
    for (int s = 0; s < 3 && !rc; s++)
        rc = train_step(&r, s, &err);
    /* every rank writes to rank 0's file name */
    long pid = (long)getpid();
    MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    snprintf(path, len, "%s/test_trace.%ld.json", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             pid);
    if (!rc)
        rc = zero_trace_write(t, r.dev, path, &err);
    zero_trace_destroy(t);
    close_run(&r);
    ck_assert_msg(mpi_check_all(rc == 0), "%s", err.msg);
    json_t *root = NULL;
    if (mpi_check_rank() == 0) {
        json_error_t jerr;
        root = json_load_file(path, 0, &jerr);
        ck_assert_msg(root != NULL, "%s: line %d: %s", path, jerr.line, jerr.text);
        remove(path);
    }
    return root;
}

START_TEST(test_trace_json_parses_with_one_pid_per_rank_and_two_threads)
{
    char path[512];
    const int64_t steps[2] = {2, 3};
    json_t *root = load_trace(3, steps, 2, path, sizeof path);
    if (mpi_check_rank() != 0)
        return;
    int world = mpi_check_size();
    json_t *events = json_object_get(root, "traceEvents");
    ck_assert(json_is_array(events));
    int named[64] = {0}, tids[64][3] = {{0}};
    size_t i;
    json_t *ev;
    int64_t slices = 0, comm_with_bytes = 0;
    json_array_foreach(events, i, ev)
    {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        int pid = (int)json_integer_value(json_object_get(ev, "pid"));
        ck_assert(ph != NULL);
        ck_assert_int_ge(pid, 0);
        ck_assert_int_lt(pid, world);
        const char *name = json_string_value(json_object_get(ev, "name"));
        if (strcmp(ph, "M") == 0) {
            if (strcmp(name, "process_name") == 0)
                named[pid]++;
            continue;
        }
        if (strcmp(ph, "b") == 0 || strcmp(ph, "e") == 0) { /* a collective's flight */
            ck_assert_str_eq(json_string_value(json_object_get(ev, "cat")), "in_flight");
            ck_assert(json_is_integer(json_object_get(ev, "id")));
            continue;
        }
        ck_assert_str_eq(ph, "X");
        int tid = (int)json_integer_value(json_object_get(ev, "tid"));
        ck_assert(tid == ZERO_TRACE_TID_COMPUTE || tid == ZERO_TRACE_TID_COMM);
        tids[pid][tid]++;
        json_t *args = json_object_get(ev, "args");
        int64_t step = json_integer_value(json_object_get(args, "step"));
        ck_assert_msg(step == 2 || step == 3, "event of step %lld traced", (long long)step);
        ck_assert(json_is_number(json_object_get(ev, "ts")));
        ck_assert(json_number_value(json_object_get(ev, "dur")) >= 0.0);
        if (json_object_get(args, "collective") && json_object_get(args, "bytes"))
            comm_with_bytes++;
        const char *coll = json_string_value(json_object_get(args, "collective"));
        if (coll && strcmp(coll, "control") != 0) { /* flat: every collective the world's */
            ck_assert_str_eq(json_string_value(json_object_get(args, "group")), "world");
            ck_assert_int_eq(json_integer_value(json_object_get(args, "group_ranks")), world);
        }
        slices++;
    }
    for (int r = 0; r < world; r++) {
        ck_assert_int_eq(named[r], 1);
        ck_assert_int_gt(tids[r][ZERO_TRACE_TID_COMPUTE], 0);
        ck_assert_int_gt(tids[r][ZERO_TRACE_TID_COMM], 0);
    }
    ck_assert_int_gt(slices, 0);
    ck_assert_int_gt(comm_with_bytes, 0);
    json_decref(root);
}
END_TEST

/* ---- overlap: flights that span compute ---- */

struct flights {
    int64_t flights, reduce_flights; /* "b" events; those of reductions */
    int64_t overlapping;             /* flights some compute slice of their rank overlaps */
};

/* Pairs each flight's "b" with its "e" (same id) and looks for a compute slice of the same
 * rank that starts inside the flight. */
static struct flights read_flights(json_t *events)
{
    struct flights f = {0};
    size_t i, j;
    json_t *b, *x;
    json_array_foreach(events, i, b)
    {
        const char *ph = json_string_value(json_object_get(b, "ph"));
        if (!ph || strcmp(ph, "b") != 0)
            continue;
        json_int_t id = json_integer_value(json_object_get(b, "id"));
        int pid = (int)json_integer_value(json_object_get(b, "pid"));
        double t0 = json_number_value(json_object_get(b, "ts")), t1 = -1.0;
        json_array_foreach(events, j, x)
        {
            const char *xph = json_string_value(json_object_get(x, "ph"));
            if (xph && strcmp(xph, "e") == 0 && json_integer_value(json_object_get(x, "id")) == id)
                t1 = json_number_value(json_object_get(x, "ts"));
        }
        ck_assert_msg(t1 >= t0, "flight %lld has no end after its begin", (long long)id);
        f.flights++;
        json_t *args = json_object_get(b, "args");
        if (json_object_get(args, "bucket"))
            f.reduce_flights++;
        json_array_foreach(events, j, x)
        {
            const char *xph = json_string_value(json_object_get(x, "ph"));
            const char *cat = json_string_value(json_object_get(x, "cat"));
            if (!xph || strcmp(xph, "X") != 0 || !cat || strcmp(cat, "compute") != 0 ||
                json_integer_value(json_object_get(x, "pid")) != pid)
                continue;
            double s = json_number_value(json_object_get(x, "ts"));
            if (s > t0 && s < t1) {
                f.overlapping++;
                break;
            }
        }
    }
    return f;
}

static struct flights trace_flights(int stage, int overlap)
{
    char path[512];
    const int64_t steps[1] = {2};
    run_overlap = overlap;
    run_bucket = 1; /* one bucket per unit: reductions are issued while backward goes on */
    json_t *root = load_trace(stage, steps, 1, path, sizeof path);
    run_overlap = 0;
    run_bucket = 0;
    struct flights f = {0};
    if (root)
        f = read_flights(json_object_get(root, "traceEvents"));
    json_decref(root);
    return f;
}

/* With the communication thread (N > 1, MPI_THREAD_MULTIPLE: mpi_check.h) an issued
 * reduction runs while the next unit's backward computes: the trace shows it. */
START_TEST(test_overlap_1_shows_reductions_in_flight_over_compute_stage2)
{
    struct flights f = trace_flights(2, 1);
    if (mpi_check_rank() != 0 || mpi_check_size() == 1)
        return;
    ck_assert_int_gt(f.reduce_flights, 0);
    ck_assert_msg(f.overlapping > 0, "no flight of %lld overlaps a compute slice",
                  (long long)f.flights);
}
END_TEST

/* overlap_comm 0: reductions are blocking, so no reduction has a flight. */
START_TEST(test_overlap_0_has_no_reduction_flights_stage2)
{
    struct flights f = trace_flights(2, 0);
    if (mpi_check_rank() != 0)
        return;
    ck_assert_int_eq(f.reduce_flights, 0);
}
END_TEST

/* Stage 3's prefetched gathers run while the previous unit computes. */
START_TEST(test_stage3_prefetches_in_flight_over_compute)
{
    struct flights f = trace_flights(3, 1);
    if (mpi_check_rank() != 0 || mpi_check_size() == 1)
        return;
    ck_assert_int_gt(f.flights, f.reduce_flights);
    ck_assert_int_gt(f.overlapping, 0);
}
END_TEST

START_TEST(test_step_list_parses_ranges_and_rejects_nonsense)
{
    int64_t s[8];
    int n = 0;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_trace_parse_steps("2,4-6", s, 8, &n, &err), 0);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(s[0], 2);
    ck_assert_int_eq(s[3], 6);
    ck_assert_int_ne(zero_trace_parse_steps("0", s, 8, &n, &err), 0);
    ck_assert_int_ne(zero_trace_parse_steps("3-2", s, 8, &n, &err), 0);
    ck_assert_int_ne(zero_trace_parse_steps("2,", s, 8, &n, &err), 0);
    ck_assert_int_ne(zero_trace_parse_steps("1-9", s, 8, &n, &err), 0);
}
END_TEST

/* In bf16 the trace's bytes are 2 per element: the sent_bytes of a step's
 * slices add up to what the backend counted on the wire. */
START_TEST(test_trace_bytes_are_the_compute_dtype_s_in_bf16)
{
    struct run r;
    struct zero_error err = {0};
    run_bf16 = 1;
    int rc = open_run(&r, 2, 0, &err);
    run_bf16 = 0;
    struct zero_trace *t = NULL;
    const int64_t steps[1] = {2};
    if (!rc)
        rc = zero_trace_create(&t, r.model, r.dev->rank, r.dev->size, steps, 1, &err);
    if (!rc)
        zero_engine_set_observer(r.engine, zero_trace_observe, t);
    for (int s = 0; s < 2 && !rc; s++)
        rc = train_step(&r, s, &err);
    ck_assert_msg(mpi_check_all(rc == 0), "%s", err.msg);
    char *text = NULL;
    size_t len = 0;
    ck_assert(zero_trace_events_json(t, &text, &len, &err) == 0);
    char *doc = malloc(len + 3); /* the events are objects separated by commas */
    ck_assert_ptr_nonnull(doc);
    doc[0] = '[';
    memcpy(doc + 1, text, len);
    doc[len + 1] = ']';
    doc[len + 2] = '\0';
    json_t *events = json_loads(doc, 0, NULL);
    free(doc);
    ck_assert_ptr_nonnull(events);
    int64_t traced = 0, elements = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev)
    {
        json_t *args = json_object_get(ev, "args");
        traced += json_integer_value(json_object_get(args, "sent_bytes"));
        elements += json_integer_value(json_object_get(args, "sent_elements"));
        if (json_object_get(args, "collective") && json_object_get(args, "elements"))
            ck_assert_int_eq(json_integer_value(json_object_get(args, "bytes")),
                             2 * json_integer_value(json_object_get(args, "elements")));
    }
    const struct zero_comm_stats *m = &zero_engine_last_step(r.engine)->comm;
    int64_t wire = 0;
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++)
        if (k != ZERO_COLL_CONTROL)
            wire += m->kind[k].sent_bytes;
    ck_assert_int_eq(traced, wire);
    ck_assert_int_eq(traced, 2 * elements);
    json_decref(events);
    free(text);
    zero_trace_destroy(t);
    close_run(&r);
}
END_TEST

/* Trace events carry the group their collective spans: under MiCS (shard groups of M =
 * N/2 ranks where N is even, else 1) every collective slice names its group in its args
 * ("world", "mics shard group k" with k = rank / M, "mics replica group k" with
 * k = rank % M) and its size; the gathers are the shard group's, exact mode's gradient
 * reduce-scatter the world's and its all-gather the replica group's, native mode's
 * reduce-scatter the shard group's and its all-reduce the replica group's. */
static void check_trace_groups(enum zero_coll_mode mode)
{
    int world = mpi_check_size(), m = world % 2 == 0 ? world / 2 : 1;
    if (world < 2)
        return; /* one rank: MiCS's shard group is the world */
    char path[512];
    const int64_t steps[1] = {2};
    run_mics = m;
    run_mode = mode;
    json_t *root = load_trace(3, steps, 1, path, sizeof path);
    run_mics = 0;
    run_mode = ZERO_COLL_EXACT;
    if (mpi_check_rank() != 0)
        return;
    size_t i;
    json_t *ev;
    /* shard gathers, world reduce-scatters, replica gathers, replica sums, updates */
    int seen[5] = {0};
    json_array_foreach(json_object_get(root, "traceEvents"), i, ev)
    {
        json_t *args = json_object_get(ev, "args");
        const char *coll = json_string_value(json_object_get(args, "collective"));
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        int pid = (int)json_integer_value(json_object_get(ev, "pid"));
        const char *name = json_string_value(json_object_get(ev, "name"));
        json_t *first = json_object_get(args, "shard_first_element");
        if (strncmp(name, "optimizer", 9) == 0) { /* member j = pid % M holds piece j */
            ck_assert_msg(m == 1 ? first == NULL
                                 : json_integer_value(first) ==
                                       (pid % m) *
                                           json_integer_value(json_object_get(args, "elements")),
                          "%s on rank %d: shard_first_element %lld", name, pid,
                          (long long)json_integer_value(first));
            seen[4]++;
        }
        if (!coll || strcmp(coll, "control") == 0 || strcmp(ph, "X") != 0)
            continue;
        const char *group = json_string_value(json_object_get(args, "group"));
        int ranks = (int)json_integer_value(json_object_get(args, "group_ranks"));
        ck_assert_msg(group != NULL, "%s slice without a group",
                      json_string_value(json_object_get(ev, "name")));
        char shard[64], replica[64];
        snprintf(shard, sizeof shard, "mics shard group %d", pid / m);
        snprintf(replica, sizeof replica, "mics replica group %d", pid % m);
        if (strcmp(coll, "group_all_gather") == 0 && strcmp(group, shard) == 0) {
            ck_assert_int_eq(ranks, m);
            seen[0]++;
        } else if (strcmp(coll, "reduce_scatter") == 0 ||
                   strcmp(coll, "group_reduce_scatter") == 0) {
            ck_assert_str_eq(group, mode == ZERO_COLL_EXACT ? "world" : shard);
            ck_assert_int_eq(ranks, mode == ZERO_COLL_EXACT ? world : m);
            seen[1]++;
        } else {
            ck_assert_msg(strcmp(group, replica) == 0, "%s: group %s, expected %s", coll, group,
                          replica);
            ck_assert_str_eq(coll,
                             mode == ZERO_COLL_EXACT ? "group_all_gather" : "group_all_reduce");
            ck_assert_int_eq(ranks, world / m);
            seen[mode == ZERO_COLL_EXACT ? 2 : 3]++;
        }
    }
    ck_assert_int_gt(seen[0], 0);
    ck_assert_int_gt(seen[1], 0);
    ck_assert_int_gt(seen[mode == ZERO_COLL_EXACT ? 2 : 3], 0);
    ck_assert_int_gt(seen[4], 0);
    json_decref(root);
}

START_TEST(test_trace_events_name_their_mics_groups_exact)
{
    check_trace_groups(ZERO_COLL_EXACT);
}
END_TEST

START_TEST(test_trace_events_name_their_mics_groups_native)
{
    check_trace_groups(ZERO_COLL_NATIVE);
}
END_TEST

/* hpZ (groups of g = N ranks): the backward's gathers are the hpZ group's, named so with
 * their size; the forward's gathers and the reduce-scatters stay the world's. */
START_TEST(test_trace_events_name_their_hpz_group)
{
    int world = mpi_check_size();
    if (world < 2)
        return; /* hpZ needs a group of two ranks or more */
    char path[512];
    const int64_t steps[1] = {2};
    run_hpz = world;
    json_t *root = load_trace(3, steps, 1, path, sizeof path);
    run_hpz = 0;
    if (mpi_check_rank() != 0)
        return;
    size_t i;
    json_t *ev;
    int64_t in_group = 0, in_world = 0;
    json_array_foreach(json_object_get(root, "traceEvents"), i, ev)
    {
        json_t *args = json_object_get(ev, "args");
        const char *coll = json_string_value(json_object_get(args, "collective"));
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        if (!coll || strcmp(coll, "control") == 0 || strcmp(ph, "X") != 0)
            continue;
        const char *group = json_string_value(json_object_get(args, "group"));
        int ranks = (int)json_integer_value(json_object_get(args, "group_ranks"));
        ck_assert_int_eq(ranks, world);
        if (strcmp(coll, "group_all_gather") == 0) {
            ck_assert_str_eq(group, "hpz group 0");
            in_group++;
        } else {
            ck_assert_str_eq(group, "world");
            in_world++;
        }
    }
    ck_assert_int_gt(in_group, 0);
    ck_assert_int_gt(in_world, 0);
    json_decref(root);
}
END_TEST

/* qgZ (no hpZ: its hop 1 runs in the node, here all N ranks, one hop): every
 * all_to_all slice names its group ("qgz group k" of S ranks, "across groups k" for a
 * hop 2, or "world") and sends (S-1)/S of its elements as codes, with no sent_bytes (the
 * codes' bytes are the comm report's); over a step the hops of a reduction of E
 * elements send E(N-1)/N, the reduce-scatter's elements. */
START_TEST(test_trace_qgz_hops_carry_their_group_and_sent_elements)
{
    int world = mpi_check_size();
    char path[512];
    const int64_t steps[1] = {2};
    run_qgz = 1;
    json_t *root = load_trace(3, steps, 1, path, sizeof path);
    run_qgz = 0;
    if (mpi_check_rank() != 0)
        return;
    size_t i;
    json_t *ev;
    int64_t *reduced = calloc((size_t)world, sizeof *reduced), *sent = calloc((size_t)world, 8);
    ck_assert(reduced && sent);
    int hops = 0;
    json_array_foreach(json_object_get(root, "traceEvents"), i, ev)
    {
        json_t *args = json_object_get(ev, "args");
        const char *coll = json_string_value(json_object_get(args, "collective"));
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        if (!coll || strcmp(coll, "all_to_all") != 0 || strcmp(ph, "X") != 0)
            continue;
        int pid = (int)json_integer_value(json_object_get(ev, "pid"));
        const char *group = json_string_value(json_object_get(args, "group"));
        int ranks = (int)json_integer_value(json_object_get(args, "group_ranks"));
        int64_t elements = json_integer_value(json_object_get(args, "elements"));
        int64_t s = json_integer_value(json_object_get(args, "sent_elements"));
        ck_assert_ptr_nonnull(group);
        char own[64];
        snprintf(own, sizeof own, "qgz group %d", ranks > 0 ? pid / ranks : 0);
        int across = strncmp(group, "across groups", 13) == 0;
        ck_assert_msg(across || strcmp(group, own) == 0 || strcmp(group, "world") == 0,
                      "all_to_all on rank %d in group %s", pid, group);
        ck_assert_int_eq(s, elements / ranks * (ranks - 1));
        ck_assert_ptr_null(json_object_get(args, "sent_bytes"));
        if (!across) /* a reduction's first (or only) hop: the unit's whole gradient */
            reduced[pid] += elements;
        sent[pid] += s;
        hops++;
    }
    ck_assert_int_gt(hops, 0);
    for (int r = 0; r < world; r++)
        ck_assert_int_eq(sent[r] * world, reduced[r] * (world - 1));
    free(reduced);
    free(sent);
    json_decref(root);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("trace");
    TCase *t = tcase_create("events");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_event_totals_equal_comm_stats_and_theory_stage0);
    tcase_add_test(t, test_event_totals_equal_comm_stats_and_theory_stage1);
    tcase_add_test(t, test_event_totals_equal_comm_stats_and_theory_stage2);
    tcase_add_test(t, test_event_totals_equal_comm_stats_and_theory_stage3_3psi);
    tcase_add_test(t, test_event_totals_equal_comm_stats_and_theory_stage3_persistent_units);
    tcase_add_test(t, test_trace_json_parses_with_one_pid_per_rank_and_two_threads);
    tcase_add_test(t, test_step_list_parses_ranges_and_rejects_nonsense);
    tcase_add_test(t, test_trace_bytes_are_the_compute_dtype_s_in_bf16);
    tcase_add_test(t, test_overlap_1_shows_reductions_in_flight_over_compute_stage2);
    tcase_add_test(t, test_overlap_0_has_no_reduction_flights_stage2);
    tcase_add_test(t, test_stage3_prefetches_in_flight_over_compute);
    tcase_add_test(t, test_accumulated_volume_is_a_plus_1_psi_stage0);
    tcase_add_test(t, test_accumulated_volume_is_a_plus_1_psi_stage1);
    tcase_add_test(t, test_accumulated_volume_is_a_plus_1_psi_stage2);
    tcase_add_test(t, test_accumulated_volume_stage3);
    tcase_add_test(t, test_native_accumulates_locally_2psi_stage0);
    tcase_add_test(t, test_native_accumulates_locally_2psi_stage1);
    tcase_add_test(t, test_native_accumulates_locally_2psi_stage2);
    tcase_add_test(t, test_trace_events_name_their_mics_groups_exact);
    tcase_add_test(t, test_trace_events_name_their_mics_groups_native);
    tcase_add_test(t, test_trace_events_name_their_hpz_group);
    tcase_add_test(t, test_trace_qgz_hops_carry_their_group_and_sent_elements);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_check_main(&argc, &argv, suite);
}

/* The step's roofline: where one training step's time goes on this machine, each part
 * next to the least time the machine needs for it, measured in the same run.
 *
 *   mpirun -np 2 bench/roofline [--stage S] [--precision fp32|bf16|fp16] [--overlap 0|1]
 *                               [--hidden 1024] [--layers 12] [--batch 32] [--steps 10]
 *                               [--bucket N (reduce_bucket_size)] [--mode exact|native]
 *                               [--matmul auto|fp32|compute|bf16_dot|bf16_tile
 *                                (libzero.matmul)]
 *
 * The parts come from the engine's event stream (events.h), not from timers of their
 * own: GEMMs (a timing wrapper around the backend table's gemm entry, as bench/gpt.c
 * does), elementwise kernels (the units' forward/backward/recompute slices minus their
 * GEMMs), optimizer (optimizer slices), norm (the norm slice: the fixed-order sum of
 * squares of this rank's gradient and the exchange of its block sums), collectives
 * (reduce, gather, prefetch and param_gather slices: the time the caller's thread
 * spends issuing them), waiting (gather_wait, reduce_wait and param_gather_wait slices:
 * stages 1-2 wait for the updated parameters' all-gather after the step) and the rest of
 * the step (the engine's own work between slices: mixed precision's gradient casts).
 *
 * Bounds, from rates measured before training in this process:
 *   GEMM         2 m n k FLOP of every product at the backend's fp32 gemm rate on a
 *                1024^3 product (its best case: the step's products are skinnier)
 *   elementwise  the bytes the layer kernels must read and write (bias adds, GeLU, the
 *                residual adds and their backwards: 164 * rows * hidden per block and
 *                micro-step) at the memory bandwidth (memcpy of 256 MiB, read + write)
 *   optimizer    28 bytes per updated element (Adam reads parameter, gradient and two
 *                moments, writes three) at the memory bandwidth
 *   norm         the gradient bytes it reads (an element of the compute dtype per
 *                updated element of stages 1-3; stage 0 sums its shard only) at the
 *                memory bandwidth
 *   collectives  the bytes this rank sends (comm stats) at the memcpy rate
 *   waiting      0
 * The sum of the bounds is the step's roofline; the step time over it says how far this
 * stage is from the machine's limit. Every number is the median over steps 3-10 (or the
 * steps run) of the maximum over ranks; "row:" lines are for bench/table.sh. The "cpu"
 * line is not a part: the CPU seconds the busiest rank's process (all its threads) used
 * in the step, which others' jobs on a shared machine inflate much less than the wall
 * time, so it compares precisions and stages more steadily; "optimizer cpu" and "norm
 * sums cpu" are the CPU seconds of the calling thread in the backend's adam and
 * sumsq_blocks entries (the optimizer slice's work and the norm slice's sums), steady
 * in the same way. */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "rig.h"

enum part {
    GEMM,
    ELEMENTWISE,
    OPTIMIZER,
    NORM,
    COLLECTIVES,
    WAITING,
    OTHER,
    STEP,
    CPU,
    OPTIMIZER_CPU,
    NORM_CPU,
    NPARTS
};
static const char *const part_name[NPARTS] = {
    "gemm",  "elementwise", "optimizer", "norm",          "collectives",  "waiting",
    "other", "step",        "cpu",       "optimizer cpu", "norm sums cpu"};

/* libzero.matmul's values, in enum zero_matmul's order */
static const char *const matmul_names[] = {"auto",     "fp32",      "compute",
                                           "bf16_dot", "bf16_tile", NULL};
_Static_assert(ZERO_MATMUL_BF16_TILE == 4, "matmul_names follows enum zero_matmul");

struct opts {
    int64_t hidden, batch;
    int layers, steps, stage, overlap;
    enum zero_dtype precision;
    int64_t bucket; /* reduce_bucket_size; 0: DeepSpeed's 5e8 */
    enum zero_coll_mode mode;
    enum zero_matmul matmul; /* libzero.matmul; auto by default */
};

/* CPU seconds of this process, all its threads: on a shared machine the time others'
 * work steals from a step shows in its wall time, much less in this */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* GEMMs: the backend's gemm entry, timed (bench_wrap_gemm, rig.h) */

/* The optimizer's and the norm's kernels (the adam and sumsq_blocks entries) timed in
 * the CPU seconds of the calling thread: time others' jobs take from the step on a
 * shared machine shows in the slices' wall time, hardly in these */
static double adam_cpu_seconds, sumsq_cpu_seconds;

static double thread_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int timed_adam(void *self, float *param, const void *grad, enum zero_dtype grad_type,
                      float *exp_avg, float *exp_avg_sq, size_t n,
                      const struct zero_adam_args *args, void *param_copy,
                      enum zero_dtype copy_type)
{
    double t0 = thread_cpu_now();
    int rc = bench_real_be->adam(self, param, grad, grad_type, exp_avg, exp_avg_sq, n, args,
                                 param_copy, copy_type);
    adam_cpu_seconds += thread_cpu_now() - t0;
    return rc;
}

static int timed_sumsq(void *self, const void *x, enum zero_dtype t, size_t n, size_t block,
                       double *out)
{
    double t0 = thread_cpu_now();
    int rc = bench_real_be->sumsq_blocks(self, x, t, n, block, out);
    sumsq_cpu_seconds += thread_cpu_now() - t0;
    return rc;
}

/* ---- the event stream, summed per kind ---- */

static double event_seconds[ZERO_EV_KIND_COUNT];
static int64_t optimizer_elements;

static void observe(void *user, const struct zero_event *ev)
{
    (void)user;
    if (ev->kind == ZERO_EV_INFLIGHT)
        return; /* the communication thread's time, not the step's */
    event_seconds[ev->kind] += ev->t_end - ev->t_begin;
    if (ev->kind == ZERO_EV_OPTIMIZER)
        optimizer_elements += ev->elements;
}

/* ---- the machine's rates ---- */

struct rates {
    double gemm_flops; /* FLOP/s */
    double mem_bw;     /* bytes read + written per second */
    double memcpy_bw;  /* bytes copied per second */
};

static int measure_rates(struct zero_device *dev, struct rates *r)
{
    enum { N = 1024 };
    size_t bytes = (size_t)256 << 20;
    char *src = malloc(bytes), *dst = malloc(bytes);
    float *a = malloc((size_t)N * N * sizeof *a), *b = malloc((size_t)N * N * sizeof *b),
          *c = malloc((size_t)N * N * sizeof *c);
    if (!src || !dst || !a || !b || !c)
        return 1;
    memset(src, 1, bytes);
    memset(dst, 0, bytes);
    for (size_t i = 0; i < (size_t)N * N; i++)
        a[i] = b[i] = (float)(i % 7) * 0.25f;
    double best_copy = 1e30, best_gemm = 1e30;
    for (int pass = 0; pass < 3; pass++) {
        double t0 = MPI_Wtime();
        memcpy(dst, src, bytes);
        double t1 = MPI_Wtime();
        bench_real_be->gemm(dev->self, 0, 0, N, N, N, 1.0f, a, ZERO_F32, N, b, ZERO_F32, N, 0.0f, c,
                            ZERO_F32, N);
        double t2 = MPI_Wtime();
        if (t1 - t0 < best_copy)
            best_copy = t1 - t0;
        if (t2 - t1 < best_gemm)
            best_gemm = t2 - t1;
    }
    r->memcpy_bw = (double)bytes / best_copy;
    r->mem_bw = 2.0 * (double)bytes / best_copy;
    r->gemm_flops = 2.0 * N * N * (double)N / best_gemm;
    free(src);
    free(dst);
    free(a);
    free(b);
    free(c);
    return 0;
}

/* ---- training ---- */

/* measured[s][p], bound[s][p] for each timed step s (max over ranks) */
static int train(const struct opts *o, struct zero_device *dev, const struct rates *rt,
                 double (*measured)[NPARTS], double (*bound)[NPARTS], struct zero_error *err)
{
    struct zero_config cfg;
    bench_toy_config(&cfg, o->stage, o->batch, dev->size, o->mode);
    cfg.zero_optimization.overlap_comm = o->overlap;
    cfg.libzero.matmul = o->matmul;
    if (o->bucket > 0)
        cfg.zero_optimization.reduce_bucket_size = o->bucket;
    cfg.bf16.enabled = o->precision == ZERO_BF16;
    cfg.fp16.enabled = o->precision == ZERO_F16;
    struct bench_toy t;
    int rc = bench_toy_open(&t, &cfg, o->hidden, o->layers, dev, err);
    if (!rc)
        zero_engine_set_observer(t.e, observe, NULL);
    const int64_t rows = t.rows;
    for (int step = 0; step < o->steps && !rc; step++) {
        memset(event_seconds, 0, sizeof event_seconds);
        bench_gemm.seconds = bench_gemm.flop = 0.0;
        optimizer_elements = 0;
        adam_cpu_seconds = sumsq_cpu_seconds = 0.0;
        MPI_Barrier(MPI_COMM_WORLD); /* the ranks start the step together */
        double cpu0 = cpu_now();
        if ((rc = bench_toy_step(&t, step, dev, err)))
            break;
        double cpu_seconds = cpu_now() - cpu0;
        const double gemm_seconds = bench_gemm.seconds, gemm_flop = bench_gemm.flop;
        const struct zero_step_info *info = zero_engine_last_step(t.e);
        const double *ev = event_seconds;
        double mine[2 * NPARTS] = {0};
        double *me = mine, *bd = mine + NPARTS;
        me[GEMM] = gemm_seconds;
        me[ELEMENTWISE] =
            ev[ZERO_EV_FORWARD] + ev[ZERO_EV_BACKWARD] + ev[ZERO_EV_RECOMPUTE] - gemm_seconds;
        me[OPTIMIZER] = ev[ZERO_EV_OPTIMIZER];
        me[NORM] = ev[ZERO_EV_NORM];
        me[COLLECTIVES] = ev[ZERO_EV_REDUCE] + ev[ZERO_EV_GATHER] + ev[ZERO_EV_PREFETCH] +
                          ev[ZERO_EV_PARAM_GATHER];
        me[WAITING] =
            ev[ZERO_EV_GATHER_WAIT] + ev[ZERO_EV_REDUCE_WAIT] + ev[ZERO_EV_PARAM_GATHER_WAIT];
        me[STEP] = info->seconds;
        me[CPU] = cpu_seconds;
        me[OPTIMIZER_CPU] = adam_cpu_seconds;
        me[NORM_CPU] = sumsq_cpu_seconds;
        me[OTHER] = me[STEP];
        for (int p = 0; p < OTHER; p++)
            me[OTHER] -= me[p];
        bd[GEMM] = gemm_flop / rt->gemm_flops;
        bd[ELEMENTWISE] = 164.0 * (double)rows * (double)o->hidden * o->layers / rt->mem_bw;
        bd[OPTIMIZER] = 28.0 * (double)optimizer_elements / rt->mem_bw;
        /* stage 0 updates the whole buffer but sums the norm over its shard only */
        double norm_elements = (double)optimizer_elements / (o->stage == 0 ? dev->size : 1);
        bd[NORM] = norm_elements * (double)zero_dtype_size(o->precision) / rt->mem_bw;
        bd[COLLECTIVES] = bench_sent_bytes(&info->comm) / rt->memcpy_bw;
        for (int p = 0; p < OTHER; p++)
            bd[STEP] += bd[p];
        double worst[2 * NPARTS];
        bench_max_over_ranks_n(mine, worst, 2 * NPARTS);
        memcpy(measured[step], worst, sizeof measured[step]);
        memcpy(bound[step], worst + NPARTS, sizeof bound[step]);
    }
    bench_toy_close(&t);
    return rc;
}

/* median over steps first..n-1 of column p */
static double median(double (*v)[NPARTS], int first, int n, int p)
{
    double s[64];
    int k = 0;
    for (int i = first; i < n && k < 64; i++)
        s[k++] = v[i][p];
    qsort(s, (size_t)k, sizeof *s, bench_cmp_double);
    return k == 0 ? 0.0 : k % 2 ? s[k / 2] : 0.5 * (s[k / 2 - 1] + s[k / 2]);
}

static int parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.hidden = 1024,
                       .batch = 32,
                       .layers = 12,
                       .steps = 10,
                       .stage = 0,
                       .overlap = 1,
                       .precision = ZERO_F32};
    static const struct option longs[] = {{"stage", required_argument, NULL, 's'},
                                          {"precision", required_argument, NULL, 'p'},
                                          {"overlap", required_argument, NULL, 'o'},
                                          {"hidden", required_argument, NULL, 'H'},
                                          {"layers", required_argument, NULL, 'L'},
                                          {"batch", required_argument, NULL, 'B'},
                                          {"steps", required_argument, NULL, 'k'},
                                          {"bucket", required_argument, NULL, 'b'},
                                          {"mode", required_argument, NULL, 'm'},
                                          {"matmul", required_argument, NULL, 'x'},
                                          {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case 's':
            o->stage = atoi(optarg);
            break;
        case 'p':
            if (strcmp(optarg, "fp32") && strcmp(optarg, "bf16") && strcmp(optarg, "fp16"))
                return 1;
            o->precision = !strcmp(optarg, "bf16")   ? ZERO_BF16
                           : !strcmp(optarg, "fp16") ? ZERO_F16
                                                     : ZERO_F32;
            break;
        case 'o':
            o->overlap = atoi(optarg) != 0;
            break;
        case 'H':
            o->hidden = atoll(optarg);
            break;
        case 'L':
            o->layers = atoi(optarg);
            break;
        case 'B':
            o->batch = atoll(optarg);
            break;
        case 'k':
            o->steps = atoi(optarg);
            break;
        case 'b':
            o->bucket = (int64_t)atof(optarg);
            break;
        case 'm':
            if (strcmp(optarg, "exact") && strcmp(optarg, "native"))
                return 1;
            o->mode = strcmp(optarg, "native") == 0 ? ZERO_COLL_NATIVE : ZERO_COLL_EXACT;
            break;
        case 'x': {
            int i = 0;
            while (matmul_names[i] != NULL && strcmp(optarg, matmul_names[i]) != 0)
                i++;
            if (matmul_names[i] == NULL)
                return 1;
            o->matmul = (enum zero_matmul)i;
            break;
        }
        default:
            return 1;
        }
    }
    return o->stage < 0 || o->stage > 3 || o->steps < 1 || o->steps > 64 || o->hidden < 1 ||
           o->layers < 1 || o->batch < 1;
}

int main(int argc, char **argv)
{
    int rank, world; /* threaded: the cpu backend's communication thread (overlap) */
    bench_mpi_start(&argc, &argv, 1, &rank, &world);
    struct opts o;
    if (parse(argc, argv, &o) || o.batch % world)
        return bench_usage_exit(rank, "usage: mpirun -np N bench/roofline [--stage S] [--precision "
                                      "fp32|bf16|fp16] [--overlap 0|1] [--hidden H] [--layers L] "
                                      "[--batch B (a multiple of N)] [--steps K (1-64)] "
                                      "[--bucket N] [--mode exact|native] "
                                      "[--matmul auto|fp32|compute|bf16_dot|bf16_tile]\n");
    struct zero_error err = {0};
    struct zero_device *dev = NULL;
    int rc = bench_open(&dev, "cpu", o.mode, &err);
    struct rates rt = {0};
    double measured[64][NPARTS] = {{0}}, bound[64][NPARTS] = {{0}};
    if (!rc) {
        struct zero_backend *timed = bench_wrap_gemm(dev);
        timed->adam = timed_adam;
        timed->sumsq_blocks = timed_sumsq;
        rc = measure_rates(dev, &rt);
        if (rc)
            snprintf(err.msg, sizeof err.msg, "out of memory measuring the rates");
    }
    if (!rc)
        rc = train(&o, dev, &rt, measured, bound, &err);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double rss = (double)ru.ru_maxrss / 1024.0, rss_max = 0.0; /* MiB */
    MPI_Allreduce(&rss, &rss_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int first = o.steps > 2 ? 2 : 0; /* steps 3.. (1-based) */
    if (!rc && rank == 0) {
        const char *pname = zero_dtype_name(o.precision);
        printf("roofline: stage %d, %s, N = %d, overlap %d, hidden %lld, %d blocks, batch %lld "
               "(median of steps %d-%d, max over ranks)\n",
               o.stage, pname, world, o.overlap, (long long)o.hidden, o.layers, (long long)o.batch,
               first + 1, o.steps);
        printf("  reduce_bucket_size %.3g, %s collectives, libzero.matmul %s\n",
               o.bucket > 0 ? (double)o.bucket : 5e8,
               o.mode == ZERO_COLL_NATIVE ? "native" : "exact", matmul_names[o.matmul]);
        printf("  rates: gemm %.1f GFLOP/s (fp32 1024^3), memory %.1f GB/s (read+write), "
               "memcpy %.1f GB/s\n",
               rt.gemm_flops * 1e-9, rt.mem_bw * 1e-9, rt.memcpy_bw * 1e-9);
        printf("  %-14s %12s %10s %7s\n", "part", "measured ms", "bound ms", "ratio");
        for (int p = 0; p < NPARTS; p++) {
            double me = median(measured, first, o.steps, p), bd = median(bound, first, o.steps, p);
            if (p == OTHER || p >= CPU)
                printf("  %-14s %12.1f %10s %7s\n", part_name[p], me * 1e3, p == OTHER ? "0" : "-",
                       "-");
            else if (bd > 0)
                printf("  %-14s %12.1f %10.1f %7.2f\n", part_name[p], me * 1e3, bd * 1e3, me / bd);
            else
                printf("  %-14s %12.1f %10.1f %7s\n", part_name[p], me * 1e3, bd * 1e3, "-");
        }
        double compute =
            median(measured, first, o.steps, GEMM) + median(measured, first, o.steps, ELEMENTWISE);
        double step = median(measured, first, o.steps, STEP);
        double roof = median(bound, first, o.steps, STEP);
        printf("  step / roofline: %.2fx; compute per sample %.2f ms\n", step / roof,
               compute * 1e3 / (double)(o.batch / world));
        printf("row: stage=%d precision=%s overlap=%d step_s=%.3f roofline_s=%.3f "
               "compute_per_sample_ms=%.3f rss_mib=%.0f cpu_s=%.3f optimizer_cpu_ms=%.1f "
               "norm_cpu_ms=%.1f\n",
               o.stage, pname, o.overlap, step, roof, compute * 1e3 / (double)(o.batch / world),
               rss_max, median(measured, first, o.steps, CPU),
               1e3 * median(measured, first, o.steps, OPTIMIZER_CPU),
               1e3 * median(measured, first, o.steps, NORM_CPU));
    }
    if (rc)
        fprintf(stderr, "rank %d: roofline: %s\n", rank, err.msg);
    bench_unwrap(dev);
    zero_device_close(dev);
    MPI_Finalize();
    return rc ? 1 : 0;
}

/* Step time per ZeRO stage on the toy model, measured side by side in one run
 * (the machine is shared and noisy: only ratios taken together mean much).
 *
 *   mpirun -np 2 bench/stages [--hidden 1024] [--layers 12] [--batch 32]
 *                             [--steps 5] [--mode exact|native] [--rounds 2]
 *                             [--reuse-distance N] [--offload]
 *
 * --offload adds stages 1-3 with ZeRO-Offload (optimizer state in host memory;
 * stage 3 also its parameter shards): on the cpu backend host and device memory
 * are the same, so those rows show the cost of the offload pipeline itself
 * (the copies out and back), not of a PCIe link.
 *
 * --reuse-distance 0 makes stage 3 gather every unit again for its backward
 * (the paper's 3Ψ); DeepSpeed's default 1e9 keeps this model's units gathered
 * from forward to backward.
 *
 * For each round, stages 0, 1, 2, 3 each train `steps` steps on fresh engines;
 * the first step of each (allocation, stage-3 trace) is not timed. Prints the
 * median step time per stage, its ratio to stage 0, and where the time went:
 * collectives (issue to completion, from the comm stats) and the rest
 * (compute, kernels, copies). */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rig.h"

struct opts {
    int64_t hidden, batch;
    int layers, steps, rounds;
    enum zero_coll_mode mode;
    int64_t reuse_distance; /* stage3_max_reuse_distance (DeepSpeed's 1e9 by default) */
    int offload;            /* also time stages 1-3 with ZeRO-Offload */
};

/* What one row of the table runs. */
struct variant {
    int stage, offload;
};

struct sample {
    double step, comm; /* seconds, max over ranks */
};

static int run_variant(const struct opts *o, struct variant v, struct zero_device *dev,
                       struct sample *out, struct zero_error *err)
{
    struct zero_config cfg;
    bench_toy_config(&cfg, v.stage, o->batch, dev->size, o->mode);
    if (v.offload) {
        cfg.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
        if (v.stage == 3)
            cfg.zero_optimization.offload_param.device = ZERO_OFFLOAD_CPU;
    }
    cfg.zero_optimization.stage3_max_reuse_distance = o->reuse_distance;
    struct bench_toy t;
    int rc = bench_toy_open(&t, &cfg, o->hidden, o->layers, dev, err);
    for (int step = 0; step <= o->steps && !rc; step++) {
        if ((rc = bench_toy_step(&t, step, dev, err)))
            break;
        if (step == 0)
            continue; /* warm-up: first-touch allocation, stage-3 order recording */
        const struct zero_step_info *info = zero_engine_last_step(t.e);
        double mine[2] = {info->seconds, bench_comm_seconds(&info->comm)}, worst[2];
        bench_max_over_ranks_n(mine, worst, 2);
        out[step - 1].step = worst[0];
        out[step - 1].comm = worst[1];
    }
    bench_toy_close(&t);
    return rc;
}

static const char usage[] =
    "usage: mpirun -np N stages [--hidden H] [--layers L] [--batch B] [--steps K]\n"
    "                       [--rounds R] [--mode exact|native] [--reuse-distance N]\n"
    "                       [--offload]\n";

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        {"hidden", required_argument, 0, 'h'},
        {"layers", required_argument, 0, 'l'},
        {"batch", required_argument, 0, 'b'},
        {"steps", required_argument, 0, 's'},
        {"rounds", required_argument, 0, 'r'},
        {"mode", required_argument, 0, 'm'},
        {"reuse-distance", required_argument, 0, 'd'},
        {"offload", no_argument, 0, 'o'},
        {"help", no_argument, 0, '?'},
        {0, 0, 0, 0},
    };
    *o = (struct opts){.hidden = 1024,
                       .layers = 12,
                       .batch = 32,
                       .steps = 5,
                       .rounds = 2,
                       .reuse_distance = 1000000000};
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            o->hidden = atoll(optarg);
            break;
        case 'l':
            o->layers = atoi(optarg);
            break;
        case 'b':
            o->batch = atoll(optarg);
            break;
        case 's':
            o->steps = atoi(optarg);
            break;
        case 'r':
            o->rounds = atoi(optarg);
            break;
        case 'd':
            o->reuse_distance = atoll(optarg);
            break;
        case 'o':
            o->offload = 1;
            break;
        case 'm':
            if (strcmp(optarg, "exact") && strcmp(optarg, "native"))
                return 2;
            o->mode = strcmp(optarg, "exact") ? ZERO_COLL_NATIVE : ZERO_COLL_EXACT;
            break;
        default:
            return 2;
        }
    }
    if (o->hidden < 1 || o->layers < 1 || o->batch < 1 || o->steps < 1 || o->rounds < 1 ||
        o->reuse_distance < 0)
        return 2;
    return 0;
}

int main(int argc, char **argv)
{
    int rank, world; /* threaded: the cpu backend's communication thread (overlap) */
    bench_mpi_start(&argc, &argv, 1, &rank, &world);
    struct opts o;
    if (parse(argc, argv, &o) || o.batch % world)
        return bench_usage_exit(rank, usage);
    struct zero_error err = {0};
    struct zero_device *dev = NULL;
    struct variant rows[7] = {{0, 0}, {1, 0}, {2, 0}, {3, 0}, {1, 1}, {2, 1}, {3, 1}};
    int nrows = o.offload ? 7 : 4;
    int n = o.steps * o.rounds, rc = bench_open(&dev, "cpu", o.mode, &err);
    struct sample *s = calloc((size_t)(nrows * n), sizeof *s);
    for (int round = 0; round < o.rounds && !rc; round++)
        for (int r = 0; r < nrows && !rc; r++)
            rc = run_variant(&o, rows[r], dev, s + r * n + round * o.steps, &err);
    if (rc) {
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
    } else if (rank == 0) {
        printf("toy model: hidden %lld, %d blocks, global batch %lld, N = %d, %s collectives, "
               "%d timed steps per stage, stage3_max_reuse_distance %lld\n",
               (long long)o.hidden, o.layers, (long long)o.batch, world,
               o.mode == ZERO_COLL_EXACT ? "exact" : "native", n, (long long)o.reuse_distance);
        printf("%-6s %12s %10s %12s %12s\n", "stage", "step (ms)", "vs stage 0", "comm (ms)",
               "other (ms)");
        double base = 0.0;
        for (int r = 0; r < nrows; r++) {
            int stage = rows[r].stage;
            double step[n], comm[n];
            for (int i = 0; i < n; i++) {
                step[i] = s[r * n + i].step;
                comm[i] = s[r * n + i].comm;
            }
            qsort(step, (size_t)n, sizeof(double), bench_cmp_double);
            qsort(comm, (size_t)n, sizeof(double), bench_cmp_double);
            double med = step[n / 2], cmed = comm[n / 2];
            if (r == 0)
                base = med;
            char name[16];
            snprintf(name, sizeof name, "%d%s", stage, rows[r].offload ? " off" : "");
            printf("%-6s %12.1f %10.3f %12.1f %12.1f\n", name, 1e3 * med, med / base, 1e3 * cmed,
                   1e3 * (med - cmed));
        }
    }
    free(s);
    zero_device_close(dev);
    MPI_Finalize();
    return rc ? 1 : 0;
}

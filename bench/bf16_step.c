/* GPT-2's training step in fp32 and in bf16, side by side in one run, exact mode on the
 * cpu backend: median seconds per step of fp32 training, bf16 training with bf16 GEMM
 * operands on the fp32 chain (libzero.matmul "compute") and bf16 training under the
 * bf16-product contract ("bf16_dot": VDPBF16PS where the processor has avx512_bf16)
 * and under the bf16-tile contract ("bf16_tile": AMX's TDPBF16PS where it has amx_bf16),
 * each stage asked for, and the ratios to fp32.
 *
 *   mpirun -np 2 bench/bf16_step [--block-size 64] [--batch 4] [--stage 0,3] [--steps 3]
 *                                [--warmup 1] [--n-layer 12] [--n-embd 768] [--n-head 12]
 *                                [--vocab-size 50304] [--variants fp32,bf16_tile]
 *
 * --variants: only those (fp32, compute, bf16_dot, bf16_tile; a profiler's run), the
 * others printed as "-".
 *
 * Threads: ZERO_CPU_THREADS (the GEMM's threads per rank) as the caller sets it. Each
 * variant builds its engine on the same random weights and pseudo-random tokens; a step
 * is timed between barriers (MPI_Wtime, the slowest rank), the median of --steps after
 * --warmup kept. Exit status 0; 1 when a variant failed; 2 for bad arguments. */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rig.h"

struct opts {
    struct zero_gpt_config model;
    int64_t batch;
    int steps, warmup;
    int stages[4];
    int skip[4]; /* per variant: 1 = not run (--variants) */
};

struct variant {
    const char *name;
    int bf16;
    enum zero_matmul matmul;
};

static const struct variant variants[] = {
    {"fp32", 0, ZERO_MATMUL_FP32},
    {"bf16 compute", 1, ZERO_MATMUL_COMPUTE},
    {"bf16 bf16_dot", 1, ZERO_MATMUL_BF16_DOT},
    {"bf16 bf16_tile", 1, ZERO_MATMUL_BF16_TILE},
};
/* --variants' names, in variants[]'s order */
static const char *const variant_keys[] = {"fp32", "compute", "bf16_dot", "bf16_tile"};
#define NV (int)(sizeof variants / sizeof *variants)

static int32_t token_at(int64_t g, int64_t V)
{
    uint64_t z = (uint64_t)(g + 1) * 0x9e3779b97f4a7c15ULL;
    return (int32_t)((z ^ (z >> 31)) % (uint64_t)V);
}

static void configure(struct zero_config *c, const struct opts *o, int stage,
                      const struct variant *v)
{
    zero_config_defaults(c);
    c->libzero.coll_mode = ZERO_COLL_EXACT;
    c->zero_optimization.stage = stage;
    c->optimizer.type = ZERO_OPTIM_ADAMW;
    c->optimizer.lr = 1e-4;
    c->optimizer.weight_decay = 0.1;
    c->gradient_clipping = 1.0;
    c->train_micro_batch_size_per_gpu = o->batch;
    c->gradient_accumulation_steps = 1;
    c->bf16.enabled = v->bf16;
    c->libzero.matmul = v->matmul;
}

/* median seconds per step of variant v at stage; < 0 on failure (why filled) */
static double run(const struct opts *o, int stage, const struct variant *v, struct zero_device *dev,
                  char *why, size_t why_len)
{
    struct zero_error err = {0};
    struct zero_config cfg;
    configure(&cfg, o, stage, v);
    struct zero_model *m = NULL;
    struct zero_engine *e = NULL;
    const int64_t T = o->model.block_size, rows = o->batch * T;
    int32_t *tokens = malloc((size_t)rows * sizeof *tokens);
    int32_t *labels = malloc((size_t)rows * sizeof *labels);
    double *t = calloc((size_t)o->steps, sizeof *t);
    int rc = !tokens || !labels || !t ? zero_fail(&err, ZERO_ENOMEM, "batch")
                                      : zero_nn_build_gpt(&m, &o->model, &err);
    if (!rc)
        rc = zero_engine_create(&e, &cfg, m, dev, &err);
    for (int step = 0; step < o->warmup + o->steps && !rc; step++) {
        const int64_t first = zero_atom_first_sample(step, 0, dev->rank, dev->size, 1, o->batch);
        for (int64_t i = 0; i < rows; i++) {
            tokens[i] = token_at(first * T + i, o->model.vocab_size);
            labels[i] = token_at(first * T + i + 1, o->model.vocab_size);
        }
        struct zero_batch b = {.rows = rows, .tokens = tokens, .labels = labels};
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        rc = zero_engine_forward(e, &b, NULL, &err);
        if (!rc)
            rc = zero_engine_backward(e, &err);
        if (!rc)
            rc = zero_engine_step(e, NULL, &err);
        MPI_Barrier(MPI_COMM_WORLD);
        if (step >= o->warmup)
            t[step - o->warmup] = bench_max_over_ranks(MPI_Wtime() - t0);
    }
    double median = -1.0;
    if (!rc) {
        qsort(t, (size_t)o->steps, sizeof *t, bench_cmp_double);
        median = t[o->steps / 2];
    } else
        snprintf(why, why_len, "%s", err.msg);
    zero_engine_destroy(e);
    zero_model_destroy(m);
    free(tokens);
    free(labels);
    free(t);
    return median;
}

static int parse(struct opts *o, int argc, char **argv)
{
    *o = (struct opts){.model = {.n_layer = 12,
                                 .n_head = 12,
                                 .n_embd = 768,
                                 .block_size = 64,
                                 .vocab_size = 50304},
                       .batch = 4,
                       .steps = 3,
                       .warmup = 1,
                       .stages = {1, 0, 0, 1}};
    static const struct option longs[] = {{"batch", required_argument, NULL, 'b'},
                                          {"stage", required_argument, NULL, 's'},
                                          {"steps", required_argument, NULL, 'k'},
                                          {"warmup", required_argument, NULL, 'w'},
                                          {"variants", required_argument, NULL, 'v'},
                                          BENCH_GPT_MODEL_OPTIONS,
                                          {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        const long v = optarg != NULL ? strtol(optarg, NULL, 10) : 0;
        if (c == 'b' && v > 0)
            o->batch = v;
        else if (c == 'k' && v > 0)
            o->steps = (int)v;
        else if (c == 'w' && v >= 0)
            o->warmup = (int)v;
        else if (c == 'v') {
            for (int i = 0; i < NV; i++) {
                const char *hit = strstr(optarg, variant_keys[i]);
                const size_t n = strlen(variant_keys[i]);
                /* a whole name of the list, not a part of another */
                o->skip[i] = !(hit && (hit == optarg || hit[-1] == ',') &&
                               (hit[n] == '\0' || hit[n] == ','));
            }
        } else if (c == 's') {
            memset(o->stages, 0, sizeof o->stages);
            for (const char *p = optarg; *p; p++)
                if (*p >= '0' && *p <= '3')
                    o->stages[*p - '0'] = 1;
                else if (*p != ',')
                    return -1;
        } else if (bench_gpt_model_option(&o->model, c, v) != 0)
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rank, world;
    bench_mpi_start(&argc, &argv, 0, &rank, &world);
    struct opts o;
    if (parse(&o, argc, argv))
        return bench_usage_exit(rank, "usage: mpirun -np N bench/bf16_step [--block-size T] "
                                      "[--batch B] [--stage S[,S]] [--steps K] [--warmup W] "
                                      "[--n-layer L] [--n-embd C] [--n-head H] [--vocab-size V] "
                                      "[--variants fp32,compute,bf16_dot,bf16_tile]\n");
    struct zero_error err = {0};
    struct zero_device *dev = NULL;
    if (bench_open(&dev, "cpu", ZERO_COLL_EXACT, &err)) {
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
        MPI_Finalize();
        return 1;
    }
    const char *threads = getenv("ZERO_CPU_THREADS");
    if (rank == 0)
        printf("GPT L=%d C=%lld H=%d T=%lld V=%lld, batch %lld per rank, %d ranks, "
               "ZERO_CPU_THREADS=%s, exact mode; median s/step of %d after %d warm-up\n",
               o.model.n_layer, (long long)o.model.n_embd, o.model.n_head,
               (long long)o.model.block_size, (long long)o.model.vocab_size, (long long)o.batch,
               world, threads ? threads : "(unset)", o.steps, o.warmup);
    if (rank == 0)
        printf("%-6s %10s %14s %15s %16s %12s %13s %14s\n", "stage", "fp32", "bf16 compute",
               "bf16 bf16_dot", "bf16 bf16_tile", "compute/fp32", "bf16_dot/fp32",
               "bf16_tile/fp32");
    int failed = 0;
    for (int stage = 0; stage < 4; stage++) {
        if (!o.stages[stage])
            continue;
        double s[NV];
        char why[NV][ZERO_ERRMSG_LEN];
        for (int v = 0; v < NV; v++) {
            why[v][0] = '\0';
            s[v] = o.skip[v] ? 0.0 : run(&o, stage, &variants[v], dev, why[v], sizeof why[v]);
            failed |= s[v] < 0;
        }
        if (rank == 0) {
            static const int width[] = {10, 14, 15, 16, 12, 13, 14};
            printf("%-6d", stage);
            for (int v = 0; v < NV; v++)
                o.skip[v] ? printf(" %*s", width[v], "-") : printf(" %*.3f", width[v], s[v]);
            for (int v = 1; v < NV; v++)
                o.skip[v] || o.skip[0] ? printf(" %*s", width[NV + v - 1], "-")
                                       : printf(" %*.2f", width[NV + v - 1], s[v] / s[0]);
            printf("\n");
            for (int v = 0; v < NV; v++)
                if (s[v] < 0)
                    printf("  %s failed: %s\n", variants[v].name, why[v]);
        }
        fflush(stdout);
    }
    zero_device_close(dev);
    MPI_Finalize();
    return failed;
}

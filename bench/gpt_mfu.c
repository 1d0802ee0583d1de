/* Tokens/s and MFU (model FLOPs utilization) of a GPT per ZeRO stage on one backend:
 * the GPU benchmark. tests/gpu/run.sh runs GPT-2 124M in bf16 on one H200, stages 0-3,
 * then stages 2 and 3 with CPU offload.
 *
 *   mpirun -np N bench/gpt_mfu [--backend cuda|cpu] [--dtype bf16|fp16|fp32]
 *          [--n-layer 12] [--n-embd 768] [--n-head 12] [--block-size 1024]
 *          [--vocab-size 50304] [--batch 16] [--stage all|S[,S...]] [--steps 10]
 *          [--warmup 3] [--offload none|cpu] [--peak-tflops P]
 *
 * Exit status: 0; 77 when the backend finds no device here; 1 when a variant failed
 * (other than one the engine does not support); 2 for bad arguments.
 *
 * The defaults are GPT-2 124M's shapes with the vocabulary padded from 50257 to 50304
 * (a multiple of 64, as nanoGPT and llm.c do, for the GEMMs' sake). --batch is
 * sequences per rank and step (one micro-step); tokens are pseudo-random, the speed
 * does not depend on them.
 *
 * FLOPs per token: 6 N + 12 L C T, the formula of PaLM (appendix B), nanoGPT's
 * estimate_mfu and llm.c. N counts the parameters that multiply: all but the position
 * embedding (the tied token embedding counts once, as the LM head; the padded rows are
 * counted as work, as in llm.c); 6 N is the forward (2 N) and backward (4 N) of every
 * weight product; 12 L C T the attention products QK^T and AV over L layers of width
 * C at sequence length T. MFU = tokens/s x FLOPs per token / (ranks x peak), one device
 * per rank; recomputation counts nothing (MFU, not HFU). The peak is the device's dense
 * rate for the dtype in TFLOP/s (H100/H200: 989 bf16 and fp16, 67 fp32; A100: 312 and
 * 19.5), given with --peak-tflops: C has no backend-neutral way to name the device, so
 * run.sh reads it from nvidia-smi. Without it, MFU is left out; tokens/s is printed.
 *
 * --offload cpu sets zero_optimization.offload_optimizer.device = cpu (and at stage 3
 * offload_param.device = cpu too, DeepSpeed's ZeRO-Infinity layout); without --stage it
 * runs stages 1-3, stage 0 having no shard to offload. Where the engine refuses a
 * variant it says why; the row shows the message and the run goes on.
 *
 * Timing: --warmup steps first (allocations, the stage-3 trace), then --steps steps
 * between two device synchronizes and barriers, MPI_Wtime, the slowest rank's time.
 * Peak device memory is the ledger's (bytes the engine allocated through the backend,
 * not the allocator's cache), rank 0's, from the engine's creation on. Collectives
 * run in native mode (the communication library's sums), the production setting. */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zero/gpt.h"
#include "zero/zero.h"

struct opts {
    char backend[16];
    enum zero_dtype dtype;
    struct zero_gpt_config model;
    int64_t batch;      /* sequences per rank and step */
    int stages[4];      /* 1: run this stage */
    int steps, warmup;  /* timed, untimed */
    int offload;        /* 1: offload to cpu */
    double peak_tflops; /* per device; 0: unknown (no MFU) */
};

struct result {
    int rc; /* 0, or the status that stopped this variant */
    char why[ZERO_ERRMSG_LEN];
    double step_s;      /* mean time of a timed step, slowest rank */
    double loss;        /* the last step's */
    int64_t peak_bytes; /* ledger peak, this rank */
    int64_t host_bytes; /* host ledger: offloaded states, this rank */
};

/* token g of a fixed pseudo-random stream over the vocabulary */
static int32_t token_at(int64_t g, int64_t V)
{
    uint64_t z = (uint64_t)(g + 1) * 0x9e3779b97f4a7c15ULL;
    return (int32_t)((z ^ (z >> 31)) % (uint64_t)V);
}

/* tokens and labels (rows) of the sequences from first_seq on: labels are the next tokens */
static void fill_tokens(int64_t first_seq, int64_t rows, int64_t T, int64_t V, int32_t *tokens,
                        int32_t *labels)
{
    for (int64_t i = 0; i < rows; i++) {
        tokens[i] = token_at(first_seq * T + i, V);
        labels[i] = token_at(first_seq * T + i + 1, V);
    }
}

static void configure(struct zero_config *c, const struct opts *o, int stage)
{
    zero_config_defaults(c);
    snprintf(c->libzero.backend, sizeof c->libzero.backend, "%s", o->backend);
    c->libzero.coll_mode = ZERO_COLL_NATIVE;
    c->zero_optimization.stage = stage;
    c->optimizer.type = ZERO_OPTIM_ADAMW;
    c->optimizer.lr = 1e-4;
    c->optimizer.weight_decay = 0.1;
    c->gradient_clipping = 1.0;
    c->train_micro_batch_size_per_gpu = o->batch;
    c->gradient_accumulation_steps = 1;
    c->bf16.enabled = o->dtype == ZERO_BF16;
    if (o->dtype == ZERO_F16) {
        c->fp16.enabled = 1;
        c->fp16.initial_scale_power = 16; /* fewer skipped (overflowed) first steps */
        c->fp16.hysteresis = 2;
    }
    if (o->offload) {
        c->zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
        c->zero_optimization.offload_optimizer.pin_memory = 1;
        if (stage == 3) {
            c->zero_optimization.offload_param.device = ZERO_OFFLOAD_CPU;
            c->zero_optimization.offload_param.pin_memory = 1;
        }
    }
}

static double max_over_ranks(double v)
{
    double m = 0.0;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

/* One optimizer step on this rank's batch of global step `step`. */
static int train_step(struct zero_engine *e, const struct opts *o, struct zero_device *dev,
                      int step, int32_t *tokens, int32_t *labels, struct zero_error *err)
{
    const int64_t T = o->model.block_size, rows = o->batch * T;
    fill_tokens(zero_atom_first_sample(step, 0, dev->rank, dev->size, 1, o->batch), rows, T,
                o->model.vocab_size, tokens, labels);
    struct zero_batch b = {.rows = rows, .tokens = tokens, .labels = labels};
    int rc = zero_engine_forward(e, &b, NULL, err);
    if (!rc)
        rc = zero_engine_backward(e, err);
    if (!rc)
        rc = zero_engine_step(e, NULL, err);
    return rc;
}

/* both streams idle, then every rank here */
static int settle(struct zero_device *dev, struct zero_error *err)
{
    int rc = dev->be->synchronize(dev->self);
    if (rc)
        return zero_fail(err, rc, "rank %d: synchronize: %s", dev->rank,
                         dev->be->last_error(dev->self));
    MPI_Barrier(MPI_COMM_WORLD);
    return ZERO_OK;
}

static void run_stage(const struct opts *o, int stage, struct zero_device *dev, struct result *r)
{
    memset(r, 0, sizeof *r);
    struct zero_error err = {0};
    struct zero_config cfg;
    configure(&cfg, o, stage);
    struct zero_model *m = NULL;
    struct zero_engine *e = NULL;
    const int64_t rows = o->batch * o->model.block_size;
    int32_t *tokens = malloc((size_t)rows * sizeof *tokens);
    int32_t *labels = malloc((size_t)rows * sizeof *labels);
    zero_ledger_reset_peaks(&dev->ledger);
    int rc = (!tokens || !labels)
                 ? zero_fail(&err, ZERO_ENOMEM, "batch of %lld tokens", (long long)rows)
                 : zero_nn_build_gpt(&m, &o->model, &err);
    if (!rc)
        rc = zero_engine_create(&e, &cfg, m, dev, &err);
    for (int step = 0; step < o->warmup && !rc; step++)
        rc = train_step(e, o, dev, step, tokens, labels, &err);
    double t0 = 0.0;
    if (!rc && !(rc = settle(dev, &err)))
        t0 = MPI_Wtime();
    for (int step = o->warmup; step < o->warmup + o->steps && !rc; step++)
        rc = train_step(e, o, dev, step, tokens, labels, &err);
    if (!rc && !(rc = settle(dev, &err))) {
        r->step_s = max_over_ranks(MPI_Wtime() - t0) / o->steps;
        r->loss = zero_engine_last_step(e)->loss;
        r->peak_bytes = zero_engine_ledger(e)->peak_total;
        r->host_bytes = zero_engine_host_ledger(e)->peak_total;
    }
    r->rc = rc;
    if (rc)
        snprintf(r->why, sizeof r->why, "%s", err.msg);
    free(tokens);
    free(labels);
    zero_engine_destroy(e);
    zero_model_destroy(m);
}

/* 6 N + 12 L C T (see the file comment); N excludes the position embedding (T, C) */
static double flops_per_token(const struct opts *o, int64_t numel)
{
    const struct zero_gpt_config *g = &o->model;
    double n = (double)(numel - g->block_size * g->n_embd);
    return 6.0 * n + 12.0 * g->n_layer * (double)g->n_embd * (double)g->block_size;
}

static void print_row(const struct opts *o, int stage, const struct result *r, double flops,
                      int ranks)
{
    const char *offload = !o->offload ? "none" : stage == 3 ? "opt+param" : "optimizer";
    if (r->rc) {
        printf("%5d | %-9s | %s\n", stage, offload, r->why);
        return;
    }
    double tokens_s = (double)(ranks * o->batch * o->model.block_size) / r->step_s;
    char mfu[32] = "-";
    if (o->peak_tflops > 0)
        snprintf(mfu, sizeof mfu, "%.1f",
                 100.0 * tokens_s * flops / (ranks * o->peak_tflops * 1e12));
    printf("%5d | %-9s | %9.1f | %10.0f | %5s | %9.0f | %9.0f | %.4f\n", stage, offload,
           r->step_s * 1e3, tokens_s, mfu, (double)r->peak_bytes / (1 << 20),
           (double)r->host_bytes / (1 << 20), r->loss);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench/gpt_mfu [--backend cuda|cpu] [--dtype bf16|fp16|fp32] [--n-layer L] "
            "[--n-embd C] [--n-head H] [--block-size T] [--vocab-size V] [--batch B] "
            "[--stage all|S[,S...]] [--steps K] [--warmup W] [--offload none|cpu] "
            "[--peak-tflops P]\n");
}

/* "all" or a comma list of stages 0-3 */
static int parse_stages(int *stages, const char *s)
{
    memset(stages, 0, 4 * sizeof *stages);
    if (strcmp(s, "all") == 0) {
        for (int i = 0; i < 4; i++)
            stages[i] = 1;
        return 0;
    }
    for (const char *p = s; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 3 || (*end && *end != ','))
            return -1;
        stages[v] = 1;
        p = *end ? end + 1 : end;
    }
    return 0;
}

static int parse(struct opts *o, int argc, char **argv)
{
    *o = (struct opts){.backend = "cuda",
                       .dtype = ZERO_BF16,
                       .model = {.n_layer = 12,
                                 .n_head = 12,
                                 .n_embd = 768,
                                 .block_size = 1024,
                                 .vocab_size = 50304},
                       .batch = 16,
                       .stages = {-1},
                       .steps = 10,
                       .warmup = 3};
    static const struct option longs[] = {
        {"backend", required_argument, NULL, 'B'},     {"dtype", required_argument, NULL, 'd'},
        {"n-layer", required_argument, NULL, 'l'},     {"n-embd", required_argument, NULL, 'c'},
        {"n-head", required_argument, NULL, 'h'},      {"block-size", required_argument, NULL, 't'},
        {"vocab-size", required_argument, NULL, 'v'},  {"batch", required_argument, NULL, 'b'},
        {"stage", required_argument, NULL, 'S'},       {"steps", required_argument, NULL, 's'},
        {"warmup", required_argument, NULL, 'w'},      {"offload", required_argument, NULL, 'o'},
        {"peak-tflops", required_argument, NULL, 'p'}, {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        long v = optarg ? strtol(optarg, NULL, 10) : 0;
        switch (c) {
        case 'B':
            snprintf(o->backend, sizeof o->backend, "%s", optarg);
            break;
        case 'd': {
            int t = zero_dtype_parse(optarg);
            if (t != ZERO_F32 && t != ZERO_F16 && t != ZERO_BF16)
                return -1;
            o->dtype = (enum zero_dtype)t;
            break;
        }
        case 'l':
            o->model.n_layer = (int)v;
            break;
        case 'c':
            o->model.n_embd = v;
            break;
        case 'h':
            o->model.n_head = (int)v;
            break;
        case 't':
            o->model.block_size = v;
            break;
        case 'v':
            o->model.vocab_size = v;
            break;
        case 'b':
            o->batch = v;
            break;
        case 'S':
            if (parse_stages(o->stages, optarg))
                return -1;
            break;
        case 's':
            o->steps = (int)v;
            break;
        case 'w':
            o->warmup = (int)v;
            break;
        case 'o':
            if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "none") != 0)
                return -1;
            o->offload = strcmp(optarg, "cpu") == 0;
            break;
        case 'p':
            o->peak_tflops = strtod(optarg, NULL);
            break;
        default:
            return -1;
        }
    }
    if (o->stages[0] < 0) /* not given: all, or 1-3 with offload (stage 0 has no shard) */
        for (int i = 0; i < 4; i++)
            o->stages[i] = !o->offload || i > 0;
    return optind == argc && o->steps >= 1 && o->warmup >= 0 && o->batch >= 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    struct opts o;
    if (parse(&o, argc, argv)) {
        if (rank == 0)
            usage();
        MPI_Finalize();
        return 2;
    }
    /* no device for this backend here: a skip (77), as the tests do */
    const struct zero_backend *be = zero_backend_find(o.backend);
    char why[ZERO_ERRMSG_LEN] = "";
    int usable = be == NULL || be->probe(why, sizeof why) == ZERO_OK, all = 0;
    MPI_Allreduce(&usable, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (rank == 0)
            printf("SKIP: bench/gpt_mfu: backend '%s' cannot run here: %s\n", o.backend, why);
        MPI_Finalize();
        return 77;
    }
    struct zero_device *dev = NULL;
    struct zero_error err = {0};
    MPI_Comm comm = MPI_COMM_WORLD;
    struct zero_backend_options bopt = {.coll_mode = ZERO_COLL_NATIVE, .device = -1};
    if (zero_device_open(&dev, o.backend, &comm, &bopt, &err)) {
        if (rank == 0)
            fprintf(stderr, "bench/gpt_mfu: %s\n", err.msg);
        MPI_Finalize();
        return 1;
    }
    struct zero_model *m = NULL;
    if (zero_nn_build_gpt(&m, &o.model, &err)) {
        if (rank == 0)
            fprintf(stderr, "bench/gpt_mfu: %s\n", err.msg);
        zero_device_close(dev);
        MPI_Finalize();
        return 1;
    }
    const int64_t numel = zero_model_numel(m);
    zero_model_destroy(m);
    const double flops = flops_per_token(&o, numel);
    if (rank == 0) {
        char peak[64] = "no peak given: no MFU";
        if (o.peak_tflops > 0)
            snprintf(peak, sizeof peak, "peak %g TFLOP/s per device", o.peak_tflops);
        printf("bench/gpt_mfu: GPT-2 %d layers, n_embd %lld, %d heads, block %lld, vocab %lld: "
               "%.1fM parameters, %.3g FLOPs/token (6N + 12LCT) | %s on %s, %d rank%s | "
               "batch %lld x %lld tokens per rank | %d warm-up + %d timed steps | %s\n",
               o.model.n_layer, (long long)o.model.n_embd, o.model.n_head,
               (long long)o.model.block_size, (long long)o.model.vocab_size, (double)numel / 1e6,
               flops, zero_dtype_name(o.dtype), o.backend, dev->size, dev->size > 1 ? "s" : "",
               (long long)o.batch, (long long)o.model.block_size, o.warmup, o.steps, peak);
        printf("stage | offload   |   step ms |   tokens/s | MFU %% |  peak MiB |  host MiB | "
               "loss\n");
        fflush(stdout);
    }
    int failed = 0;
    for (int stage = 0; stage < 4; stage++) {
        if (!o.stages[stage])
            continue;
        struct result r;
        run_stage(&o, stage, dev, &r);
        if (rank == 0) {
            print_row(&o, stage, &r, flops, dev->size);
            fflush(stdout);
        }
        /* a variant the engine does not support is a row, not a failure */
        failed |= r.rc != ZERO_OK && r.rc != ZERO_ENOTSUP;
    }
    zero_device_close(dev);
    MPI_Finalize();
    return failed;
}

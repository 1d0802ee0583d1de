/* Tokens/s and MFU (model FLOPs utilization) of a GPT per ZeRO stage on one backend:
 * the GPU benchmark. tests/gpu/run.sh runs GPT-2 124M in bf16 on one H200, stages 0-3,
 * then stages 2 and 3 with CPU offload.
 *
 *   mpirun -np N bench/gpt_mfu [--backend cuda|cpu] [--dtype bf16|fp16|fp32]
 *          [--n-layer 12] [--n-embd 768] [--n-head 12] [--block-size 1024]
 *          [--vocab-size 50304] [--batch 16] [--stage all|S[,S...]] [--steps 10]
 *          [--warmup 3] [--offload none|cpu] [--activations fp32|compute] [--peak-tflops P]
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
 * --activations compute stores the blocks' saved activations in the compute dtype
 * (libzero.activations; docs/gpu.md, "Precision"): the peak memory column shows what
 * it saves, the tokens/s what the extra casts cost.
 *
 * --offload cpu sets zero_optimization.offload_optimizer.device = cpu (and at stage 3
 * offload_param.device = cpu too, DeepSpeed's ZeRO-Infinity layout); without --stage it
 * runs stages 1-3, stage 0 having no shard to offload. Where the engine refuses a
 * variant it says why; the row shows the message and the run goes on.
 *
 * Timing: --warmup steps first (allocations, the stage-3 trace), then --steps steps
 * between two device synchronizes and barriers, MPI_Wtime, the slowest rank's time.
 * Peak device memory is the ledger's (bytes the engine allocated through the backend,
 * not the allocator's cache), rank 0's, from the engine's creation on; the blocks size
 * the attention's state by the backend (attention_state_floats: native mode's flash
 * attention keeps (B, NH, T), no T x T), so the column shows it. Collectives
 * run in native mode (the communication library's sums), the production setting.
 *
 * Where the time goes (cuda backend): the run first measures two ceilings on the
 * device, the bf16 GEMM rate (8192^3, cuBLAS through the backend's gemm, on
 * pseudo-random data) and the device-to-device copy bandwidth (1 GiB, bytes read plus
 * bytes written); then, after each variant's timed steps, one more step runs with the
 * backend's per-kernel-class profile on (backends/cuda/zero_cuda_profile.h: CUDA
 * events around every entry, FLOPs and bytes counted from the shapes). Each class gets
 * a `kernel' line: calls and device ms per step, its share of the timed step, its
 * TFLOP/s against the GEMM ceiling and its GB/s against the copy ceiling, so the first
 * device run says which kernels are far from the hardware. The profiled step is not
 * the timed one (the events cost a little). --no-kernel-times leaves it out. A `kernel
 * stage N graph blockers' line gives what the timed steps did that a CUDA Graph of the
 * step could not hold: cudaMalloc and cudaMallocHost calls and host waits for the
 * compute stream, per step (zero_cuda_graph_blockers). --cuda-graphs runs each
 * training pass as a CUDA Graph (libzero.cuda_graphs, docs/gpu.md; no kernel times, as
 * the profile's events cannot be read inside a capture); the line then also gives
 * what came inside a capture (0 is the steady state's promise) and the graphs launched. */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rig.h"
#ifdef ZERO_HAVE_CUDA
#include "backends/cuda/zero_cuda_profile.h"
#endif

struct opts {
    char backend[16];
    enum zero_dtype dtype;
    struct zero_gpt_config model;
    int64_t batch;      /* sequences per rank and step */
    int stages[4];      /* 1: run this stage */
    int steps, warmup;  /* timed, untimed */
    int offload;        /* 1: offload to cpu */
    int act_compute;    /* 1: libzero.activations = compute */
    double peak_tflops; /* per device; 0: unknown (no MFU) */
    int kernel_times;   /* 1: profile one more step per variant (cuda) */
    int cuda_graphs;    /* libzero.cuda_graphs (implies no kernel times) */
};

/* The device's measured ceilings (0: not measured) */
struct ceilings {
    double gemm_tflops, copy_gbs;
};

struct result {
    int rc; /* 0, or the status that stopped this variant */
    char why[ZERO_ERRMSG_LEN];
    double step_s;      /* mean time of a timed step, slowest rank */
    double loss;        /* the last step's */
    int64_t peak_bytes; /* ledger peak, this rank */
    int64_t host_bytes; /* host ledger: offloaded states, this rank */
#ifdef ZERO_HAVE_CUDA
    int profiled; /* 1: kernel[] holds one step's per-class times */
    struct zero_cuda_ktime kernel[ZERO_CUDA_K_COUNT];
    int counted; /* > 0: blockers sums over this many timed steps */
    struct zero_cuda_blockers blockers;
#endif
};

static int is_cuda(const struct zero_device *dev)
{
    return strcmp(dev->be->name, "cuda") == 0;
}

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
    c->libzero.cuda_graphs = o->cuda_graphs;
    c->bf16.enabled = o->dtype == ZERO_BF16;
    c->libzero.activations = o->act_compute ? ZERO_ACTIVATIONS_COMPUTE : ZERO_ACTIVATIONS_FP32;
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
#ifdef ZERO_HAVE_CUDA
    struct zero_cuda_blockers b0 = {0};
    r->counted = is_cuda(dev) && zero_cuda_graph_blockers(dev->self, &b0) == ZERO_OK ? o->steps : 0;
#endif
    for (int step = o->warmup; step < o->warmup + o->steps && !rc; step++)
        rc = train_step(e, o, dev, step, tokens, labels, &err);
#ifdef ZERO_HAVE_CUDA
    if (r->counted && zero_cuda_graph_blockers(dev->self, &r->blockers) == ZERO_OK) {
        r->blockers.device_mallocs -= b0.device_mallocs;
        r->blockers.pinned_mallocs -= b0.pinned_mallocs;
        r->blockers.stream_syncs -= b0.stream_syncs;
        r->blockers.in_capture -= b0.in_capture;
        r->blockers.graph_launches -= b0.graph_launches;
    } else {
        r->counted = 0;
    }
#endif
    if (!rc && !(rc = settle(dev, &err))) {
        r->step_s = bench_max_over_ranks(MPI_Wtime() - t0) / o->steps;
        r->loss = zero_engine_last_step(e)->loss;
        r->peak_bytes = zero_engine_ledger(e)->peak_total;
        r->host_bytes = zero_engine_host_ledger(e)->peak_total;
    }
#ifdef ZERO_HAVE_CUDA
    /* one more step with the per-kernel-class profile on */
    if (!rc && o->kernel_times && is_cuda(dev) &&
        zero_cuda_profile_enable(dev->self, 1) == ZERO_OK) {
        rc = train_step(e, o, dev, o->warmup + o->steps, tokens, labels, &err);
        if (!rc && !(rc = settle(dev, &err)))
            r->profiled = zero_cuda_profile_read(dev->self, r->kernel) == ZERO_OK;
        zero_cuda_profile_enable(dev->self, 0);
    }
#endif
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

/* One `kernel' line per class that ran: the profiled step's calls, device ms, share of
 * the timed step, rate against the ceilings. */
static void print_kernels(const struct result *r, int stage, const struct ceilings *c)
{
#ifdef ZERO_HAVE_CUDA
    if (r->counted > 0) /* what a CUDA Graph of the step could not hold, per timed step */
        printf("kernel stage %d graph blockers per step: %.1f cudaMalloc, %.1f cudaMallocHost, "
               "%.1f host waits for the compute stream; %.1f inside captures, %.1f graphs "
               "launched\n",
               stage, (double)r->blockers.device_mallocs / r->counted,
               (double)r->blockers.pinned_mallocs / r->counted,
               (double)r->blockers.stream_syncs / r->counted,
               (double)r->blockers.in_capture / r->counted,
               (double)r->blockers.graph_launches / r->counted);
    if (!r->profiled)
        return;
    printf("kernel stage %d class    | calls |  dev ms | %% step |  GFLOP | TFLOP/s | %% gemm "
           "ceil |     GB |   GB/s | %% copy ceil\n",
           stage);
    double total = 0.0;
    for (int k = 0; k < ZERO_CUDA_K_COUNT; k++) {
        const struct zero_cuda_ktime *t = &r->kernel[k];
        total += t->seconds;
        if (t->calls == 0)
            continue;
        double tflops = t->seconds > 0 ? t->flops / t->seconds / 1e12 : 0.0;
        double gbs = t->seconds > 0 ? t->bytes / t->seconds / 1e9 : 0.0;
        char fl[3][16] = {"-", "-", "-"}, by[2][16] = {"-", "-"};
        if (t->flops > 0) {
            snprintf(fl[0], sizeof fl[0], "%.1f", t->flops / 1e9);
            snprintf(fl[1], sizeof fl[1], "%.1f", tflops);
            if (c->gemm_tflops > 0)
                snprintf(fl[2], sizeof fl[2], "%.1f", 100.0 * tflops / c->gemm_tflops);
        }
        snprintf(by[0], sizeof by[0], "%.2f", t->bytes / 1e9);
        if (c->copy_gbs > 0)
            snprintf(by[1], sizeof by[1], "%.1f", 100.0 * gbs / c->copy_gbs);
        printf("kernel stage %d %-13s | %5lld | %7.2f | %6.1f | %6s | %7s | %11s | %6s | %6.0f | "
               "%s\n",
               stage, zero_cuda_kclass_name(k), (long long)t->calls, t->seconds * 1e3,
               100.0 * t->seconds / r->step_s, fl[0], fl[1], fl[2], by[0], gbs, by[1]);
    }
    printf("kernel stage %d all kernels   | %.2f device ms of a %.2f ms step (the rest: "
           "collectives, copies on the comm stream, host work and gaps)\n",
           stage, total * 1e3, r->step_s * 1e3);
#else
    (void)r;
    (void)stage;
    (void)c;
#endif
}

/* The bf16 GEMM rate (n^3, reps timed after two warm-ups) and the copy bandwidth of
 * the device, through the backend's own gemm and copy. */
static int measure_ceilings(struct zero_device *dev, struct ceilings *c, struct zero_error *err)
{
    const int64_t n = 8192, reps = 10;
    const size_t copy_bytes = (size_t)1 << 30;
    const struct zero_backend *be = dev->be;
    void *a = NULL, *cc = NULL, *x = NULL, *y = NULL;
    uint16_t *h = malloc((size_t)(n * n) * sizeof *h);
    int rc = h ? ZERO_OK : zero_fail(err, ZERO_ENOMEM, "ceilings: host buffer");
    for (int64_t i = 0; !rc && i < n * n; i++) { /* bf16 in [-1, 1): sign, exponent 126, mantissa */
        uint64_t z = (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ULL;
        z ^= z >> 29;
        h[i] = (uint16_t)((z >> 40 & 0x8000) | 0x3f00 | (z & 0x7f));
    }
    if (!rc && !(rc = be->alloc(dev->self, (size_t)(n * n) * 2, ZERO_TAG_WORKSPACE, &a)) &&
        !(rc = be->alloc(dev->self, (size_t)(n * n) * 2, ZERO_TAG_WORKSPACE, &cc)))
        rc = be->from_host(dev->self, a, h, (size_t)(n * n) * 2);
    free(h);
    double t0 = 0.0;
    for (int64_t i = 0; !rc && i < reps + 2; i++) {
        if (i == 2 && !(rc = be->synchronize(dev->self)))
            t0 = MPI_Wtime();
        if (!rc)
            rc = be->gemm(dev->self, 0, 1, n, n, n, 1.0f, a, ZERO_BF16, n, a, ZERO_BF16, n, 0.0f,
                          cc, ZERO_BF16, n);
    }
    if (!rc && !(rc = be->synchronize(dev->self)))
        c->gemm_tflops = 2.0 * (double)n * n * n * reps / (MPI_Wtime() - t0) / 1e12;
    be->free(dev->self, a);
    be->free(dev->self, cc);
    if (!rc && !(rc = be->alloc(dev->self, copy_bytes, ZERO_TAG_WORKSPACE, &x)) &&
        !(rc = be->alloc(dev->self, copy_bytes, ZERO_TAG_WORKSPACE, &y)))
        rc = be->fill(dev->self, x, ZERO_F32, 1.0, copy_bytes / 4);
    for (int64_t i = 0; !rc && i < reps + 2; i++) {
        if (i == 2 && !(rc = be->synchronize(dev->self)))
            t0 = MPI_Wtime();
        if (!rc)
            rc = be->copy(dev->self, i % 2 ? x : y, i % 2 ? y : x, copy_bytes);
    }
    if (!rc && !(rc = be->synchronize(dev->self)))
        c->copy_gbs = 2.0 * (double)copy_bytes * reps / (MPI_Wtime() - t0) / 1e9;
    be->free(dev->self, x);
    be->free(dev->self, y);
    if (rc && !err->msg[0])
        zero_fail(err, rc, "ceilings: %s", be->last_error(dev->self));
    return rc;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench/gpt_mfu [--backend cuda|cpu] [--dtype bf16|fp16|fp32] [--n-layer L] "
            "[--n-embd C] [--n-head H] [--block-size T] [--vocab-size V] [--batch B] "
            "[--stage all|S[,S...]] [--steps K] [--warmup W] [--offload none|cpu] "
            "[--activations fp32|compute] [--peak-tflops P] [--no-kernel-times] [--cuda-graphs]\n");
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
                       .warmup = 3,
                       .kernel_times = 1};
    static const struct option longs[] = {{"backend", required_argument, NULL, 'B'},
                                          {"dtype", required_argument, NULL, 'd'},
                                          BENCH_GPT_MODEL_OPTIONS,
                                          {"batch", required_argument, NULL, 'b'},
                                          {"stage", required_argument, NULL, 'S'},
                                          {"steps", required_argument, NULL, 's'},
                                          {"warmup", required_argument, NULL, 'w'},
                                          {"offload", required_argument, NULL, 'o'},
                                          {"activations", required_argument, NULL, 'a'},
                                          {"peak-tflops", required_argument, NULL, 'p'},
                                          {"no-kernel-times", no_argument, NULL, 'K'},
                                          {"cuda-graphs", no_argument, NULL, 'G'},
                                          {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        long v = optarg ? strtol(optarg, NULL, 10) : 0;
        if (bench_gpt_model_option(&o->model, c, v) == 0)
            continue;
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
        case 'a':
            if (strcmp(optarg, "compute") != 0 && strcmp(optarg, "fp32") != 0)
                return -1;
            o->act_compute = strcmp(optarg, "compute") == 0;
            break;
        case 'p':
            o->peak_tflops = strtod(optarg, NULL);
            break;
        case 'K':
            o->kernel_times = 0;
            break;
        case 'G': /* the kernel profile's events cannot be read inside a capture */
            o->cuda_graphs = 1;
            o->kernel_times = 0;
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
    int rank, world;
    bench_mpi_start(&argc, &argv, 0, &rank, &world);
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
    if (bench_open(&dev, o.backend, ZERO_COLL_NATIVE, &err)) {
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
               "%.1fM parameters, %.3g FLOPs/token (6N + 12LCT) | %s%s on %s, %d rank%s | "
               "batch %lld x %lld tokens per rank | %d warm-up + %d timed steps | %s\n",
               o.model.n_layer, (long long)o.model.n_embd, o.model.n_head,
               (long long)o.model.block_size, (long long)o.model.vocab_size, (double)numel / 1e6,
               flops, zero_dtype_name(o.dtype), o.act_compute ? " (activations compute)" : "",
               o.backend, dev->size, dev->size > 1 ? "s" : "", (long long)o.batch,
               (long long)o.model.block_size, o.warmup, o.steps, peak);
    }
    struct ceilings measured = {0};
    if (o.kernel_times && is_cuda(dev)) {
        int rc = measure_ceilings(dev, &measured, &err);
        if (rank == 0 && rc)
            printf("ceiling: not measured: %s\n", err.msg);
        else if (rank == 0)
            printf("ceiling: bf16 GEMM 8192^3 %.0f TFLOP/s (cuBLAS, pseudo-random data); "
                   "device copy %.0f GB/s (1 GiB, read + write)\n",
                   measured.gemm_tflops, measured.copy_gbs);
    }
    if (rank == 0) {
        printf("stage | offload   |   step ms |   tokens/s | MFU %% |  peak MiB |  host MiB | "
               "loss\n");
        fflush(stdout);
    }
    int failed = 0;
    struct result *results = calloc(4, sizeof *results);
    for (int stage = 0; stage < 4 && results; stage++) {
        if (!o.stages[stage])
            continue;
        struct result *rp = &results[stage], r;
        run_stage(&o, stage, dev, rp);
        r = *rp;
        if (rank == 0) {
            print_row(&o, stage, &r, flops, dev->size);
            fflush(stdout);
        }
        /* a variant the engine does not support is a row, not a failure */
        failed |= r.rc != ZERO_OK && r.rc != ZERO_ENOTSUP;
    }
    /* the kernel tables after the stage table, so that the table stays in one piece */
    for (int stage = 0; stage < 4 && results && rank == 0; stage++)
        if (o.stages[stage] && results[stage].rc == ZERO_OK)
            print_kernels(&results[stage], stage, &measured);
    failed |= results == NULL;
    free(results);
    zero_device_close(dev);
    MPI_Finalize();
    return failed;
}

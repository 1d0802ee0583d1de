/* GPT-2 vs a Llama of about the same size, step for step (issue 26's speed target):
 * GPT-2 124M and a SmolLM2-135M-shaped Llama (30 layers, hidden 576, 9 heads, 3 kv
 * heads, intermediate 1536, vocab 49152, tied) at T = 256, in fp32 and bf16, at stages
 * 0 and 3, on this world size (run it at N = 1 and 2):
 *
 *   mpirun -np N bench/llama_vs_gpt [--batch B] [--steps K] [--block-size T]
 *          [--layers-scale S] [--backend cpu|cuda]
 *
 * Per row: tokens/s (global), step seconds, and the fraction of the fp32 GEMM peak this
 * run measured first (a 1024^3 fp32 GEMM through the backend's gemm, the best of 3)
 * that the model's FLOPs per token reach: 6 N + 12 L Q T (N: the parameters that
 * multiply, the tied embedding once as the head; Q = heads x head_dim). The last lines
 * give the ratios the issue asks for: the Llama step over the GPT-2 step per token and
 * per token and parameter. --layers-scale S divides both models' layer counts by S (a
 * quick look on a slow machine; the ratios then say less). Timing: one warm-up step,
 * then the fastest of --steps, the slowest rank's. Collectives in exact mode. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rig.h"
#include "zero/llama.h"

struct row {
    double step, tokens_per_s, fraction;
    int64_t psi;
};

static void fill(int64_t rows, int64_t T, int64_t V, int rank, int32_t *tok, int32_t *lab)
{
    for (int64_t i = 0; i < rows; i++) {
        const int64_t s = rank * 1000 + i / T, t = i % T;
        tok[i] = (int32_t)((s * 7919 + t * 104729) % V);
        lab[i] = (int32_t)((s * 7919 + (t + 1) * 104729) % V);
    }
}

/* fp32 GEMM peak of this backend, FLOP/s: 1024^3, the best of 3 after one warm-up */
static double gemm_peak(struct zero_device *dev)
{
    const int64_t n = 1024;
    void *a = NULL, *b = NULL, *c = NULL;
    const size_t bytes = (size_t)(n * n) * sizeof(float);
    dev->be->alloc(dev->self, bytes, ZERO_TAG_WORKSPACE, &a);
    dev->be->alloc(dev->self, bytes, ZERO_TAG_WORKSPACE, &b);
    dev->be->alloc(dev->self, bytes, ZERO_TAG_WORKSPACE, &c);
    dev->be->fill(dev->self, a, ZERO_F32, 0.5, (size_t)(n * n));
    dev->be->fill(dev->self, b, ZERO_F32, 0.25, (size_t)(n * n));
    double best = 1e30;
    for (int i = 0; i < 4; i++) {
        dev->be->synchronize(dev->self);
        double t0 = MPI_Wtime();
        dev->be->gemm(dev->self, 0, 0, n, n, n, 1.0f, a, ZERO_F32, n, b, ZERO_F32, n, 0.0f, c,
                      ZERO_F32, n);
        dev->be->synchronize(dev->self);
        double t = MPI_Wtime() - t0;
        if (i > 0 && t < best)
            best = t;
    }
    dev->be->free(dev->self, a), dev->be->free(dev->self, b), dev->be->free(dev->self, c);
    return 2.0 * (double)n * (double)n * (double)n / bench_max_over_ranks(best);
}

static int run(struct zero_device *dev, int llama, int bf16, int stage, int64_t B, int64_t T,
               int steps, int scale, double peak, struct row *r, struct zero_error *err)
{
    struct zero_model *m = NULL;
    int64_t V, L, Q;
    int rc;
    if (llama) {
        struct zero_llama_config c;
        zero_llama_config_default(&c);
        c.vocab_size = 49152, c.hidden_size = 576, c.intermediate_size = 1536;
        c.num_hidden_layers = 30 / scale, c.num_attention_heads = 9, c.num_key_value_heads = 3;
        c.head_dim = 64, c.max_position_embeddings = T, c.rms_norm_eps = 1e-5;
        c.tie_word_embeddings = 1;
        V = c.vocab_size, L = c.num_hidden_layers, Q = 576;
        rc = zero_nn_build_llama(&m, &c, &(struct zero_llama_build){.block_size = T}, err);
    } else {
        const struct zero_gpt_config g = {.n_layer = 12 / scale,
                                          .n_head = 12,
                                          .n_embd = 768,
                                          .block_size = T,
                                          .vocab_size = 50257};
        V = g.vocab_size, L = g.n_layer, Q = 768;
        rc = zero_nn_build_gpt(&m, &g, err);
    }
    struct zero_config cfg;
    zero_config_defaults(&cfg);
    cfg.zero_optimization.stage = stage;
    cfg.optimizer.type = ZERO_OPTIM_ADAMW;
    cfg.optimizer.lr = 1e-4;
    cfg.train_micro_batch_size_per_gpu = B;
    cfg.bf16.enabled = bf16;
    struct zero_engine *e = NULL;
    if (!rc)
        rc = zero_engine_create(&e, &cfg, m, dev, err);
    int32_t *tok = malloc((size_t)(B * T) * sizeof *tok), *lab = malloc((size_t)(B * T) * 4);
    fill(B * T, T, V, dev->rank, tok, lab);
    double best = 1e30;
    for (int s = 0; s <= steps && !rc; s++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        struct zero_batch b = {.rows = B * T, .tokens = tok, .labels = lab};
        if (!(rc = zero_engine_forward(e, &b, NULL, err)) && !(rc = zero_engine_backward(e, err)))
            rc = zero_engine_step(e, NULL, err);
        dev->be->synchronize(dev->self);
        double t = bench_max_over_ranks(MPI_Wtime() - t0);
        if (s > 0 && t < best)
            best = t;
    }
    if (!rc) {
        /* the parameters that multiply: all but the norms (and GPT-2's positions) */
        int64_t n = 0;
        for (int u = 0; u < m->nunits; u++)
            for (int p = 0; p < m->units[u]->nparams; p++)
                if (m->units[u]->params[p].ndim == 2 && strcmp(m->units[u]->name, "wpe") != 0)
                    n += zero_param_numel(&m->units[u]->params[p]);
        const double flop_per_token = 6.0 * (double)n + 12.0 * (double)(L * Q * T);
        const double tokens = (double)(B * T) * dev->size;
        r->step = best;
        r->tokens_per_s = tokens / best;
        r->fraction = r->tokens_per_s * flop_per_token / (peak * dev->size);
        r->psi = zero_model_numel(m);
    }
    free(tok), free(lab);
    zero_engine_destroy(e);
    zero_model_destroy(m);
    return rc;
}

int main(int argc, char **argv)
{
    int rank, world;
    bench_mpi_start(&argc, &argv, 0, &rank, &world);
    int64_t B = 1, T = 256;
    int steps = 2, scale = 1;
    const char *backend = "cpu";
    static const struct option longs[] = {{"batch", required_argument, NULL, 'b'},
                                          {"steps", required_argument, NULL, 's'},
                                          {"block-size", required_argument, NULL, 't'},
                                          {"layers-scale", required_argument, NULL, 'l'},
                                          {"backend", required_argument, NULL, 'k'},
                                          {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        if (c == 'b')
            B = atol(optarg);
        else if (c == 's')
            steps = atoi(optarg);
        else if (c == 't')
            T = atol(optarg);
        else if (c == 'l')
            scale = atoi(optarg);
        else if (c == 'k')
            backend = optarg;
        else
            return bench_usage_exit(rank, "usage: mpirun -np N bench/llama_vs_gpt [--batch B] "
                                          "[--steps K] [--block-size T] [--layers-scale S] "
                                          "[--backend cpu|cuda]\n");
    }
    if (B < 1 || T < 1 || steps < 1 || scale < 1 || scale > 12)
        return bench_usage_exit(rank, "bench/llama_vs_gpt: --batch, --steps, --block-size >= 1, "
                                      "--layers-scale 1..12\n");
    struct zero_device *dev = NULL;
    struct zero_error err = {0};
    if (bench_open(&dev, backend, ZERO_COLL_EXACT, &err)) {
        if (rank == 0)
            fprintf(stderr, "bench/llama_vs_gpt: %s\n", err.msg);
        MPI_Finalize();
        return 77;
    }
    const double peak = gemm_peak(dev);
    if (rank == 0)
        printf("llama_vs_gpt: N = %d, B = %lld per rank, T = %lld, fp32 GEMM peak %.1f GFLOP/s "
               "per rank%s\n%-6s %-5s %-5s %12s %10s %10s %9s\n",
               world, (long long)B, (long long)T, peak * 1e-9,
               scale > 1 ? " (layers divided by --layers-scale)" : "", "model", "dtype", "stage",
               "params", "step s", "tok/s", "of peak");
    int status = 0;
    for (int bf16 = 0; bf16 < 2; bf16++)
        for (int stage = 0; stage < 4; stage += 3) {
            struct row r[2];
            for (int llama = 0; llama < 2; llama++) {
                if (run(dev, llama, bf16, stage, B, T, steps, scale, peak, &r[llama], &err)) {
                    if (rank == 0)
                        fprintf(stderr, "bench/llama_vs_gpt: %s\n", err.msg);
                    status = 1;
                    goto out;
                }
                if (rank == 0)
                    printf("%-6s %-5s %-5d %12lld %10.3f %10.1f %8.1f%%\n",
                           llama ? "llama" : "gpt2", bf16 ? "bf16" : "fp32", stage,
                           (long long)r[llama].psi, r[llama].step, r[llama].tokens_per_s,
                           100.0 * r[llama].fraction);
            }
            if (rank == 0)
                printf("ratio  %-5s %-5d llama/gpt2 step per token %.3f, per token and "
                       "parameter %.3f\n",
                       bf16 ? "bf16" : "fp32", stage, r[1].step / r[0].step,
                       r[1].step / r[0].step * (double)r[0].psi / (double)r[1].psi);
        }
out:
    zero_device_close(dev);
    MPI_Finalize();
    return status;
}

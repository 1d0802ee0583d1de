/* The exact GEMM (backends/cpu/cpu_gemm.h) against OpenBLAS sgemm, one thread,
 * side by side in one run: for each shape, each forced variant and OpenBLAS
 * alternate, and the best of several timed rounds is kept (the machine is
 * shared). Shapes: bench/roofline's training step (the toy MLP, hidden 1024 ->
 * 4096 -> 1024, 16 rows per rank: forward y = x w^T, backward dx = dy w and
 * dW = dy^T x with k = 16, both layers), the toy MLP at more rows, and GPT-2
 * 124M's (T = 1024 rows; 768 -> 2304, 768 -> 768, 768 -> 3072, 3072 -> 768).
 *
 *   bench/gemm [rounds [shape]]  (default 3; shape: only the shapes whose name
 *                                 contains it; OPENBLAS_CORETYPE picks BLAS's kernel)
 *
 * Prints GFLOP/s of each, the ratio exact / OpenBLAS, and the exact GEMM (widest
 * variant) on bf16 operands (widened while packing) with an fp32 C and with a
 * bf16 C (rounded as it is stored), each next to its fp32 speed. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cpu_gemm.h"
#include "base/dtype_convert.h"

void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);

struct shape {
    const char *what;
    int m, n, k, ta, tb;
};

static const struct shape shapes[] = {
    {"step y = x w^T  1024->4096", 16, 4096, 1024, 0, 1},
    {"step y = x w^T  4096->1024", 16, 1024, 4096, 0, 1},
    {"step dx = dy w  4096->1024", 16, 1024, 4096, 0, 0},
    {"step dx = dy w  1024->4096", 16, 4096, 1024, 0, 0},
    {"step dW = dy^T x (4096,1024)", 4096, 1024, 16, 1, 0},
    {"step dW = dy^T x (1024,4096)", 1024, 4096, 16, 1, 0},
    {"mlp y = x w^T   M=16", 16, 4096, 1024, 0, 1},
    {"mlp y = x w^T   M=64", 64, 4096, 1024, 0, 1},
    {"mlp y = x w^T   M=256", 256, 4096, 1024, 0, 1},
    {"mlp y = x w^T   M=1024", 1024, 4096, 1024, 0, 1},
    {"mlp dW = dy^T x M=256", 4096, 1024, 256, 1, 0},
    {"mlp dW = dy^T x M=1024", 4096, 1024, 1024, 1, 0},
    {"mlp dx = dy w   M=256", 256, 1024, 4096, 0, 0},
    {"mlp dx = dy w   M=1024", 1024, 1024, 4096, 0, 0},
    {"gpt2 qkv  768->2304", 1024, 2304, 768, 0, 1},
    {"gpt2 proj 768->768", 1024, 768, 768, 0, 1},
    {"gpt2 fc   768->3072", 1024, 3072, 768, 0, 1},
    {"gpt2 fcp  3072->768", 1024, 768, 3072, 0, 1},
    {"gpt2 dW fc (3072,768,T)", 3072, 768, 1024, 1, 0},
    {"gpt2 dx fc (T,768,3072)", 1024, 768, 3072, 0, 0},
};

static float *random_floats(size_t n)
{
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return x;
}

/* seconds of one call, the best of `reps` */
static double time_exact(enum cpu_isa isa, const struct cpu_gemm_args *g, void *ws, int reps)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        cpu_gemm_exact(isa, 1, g, ws);
        double t = bench_now() - t0;
        best = t < best ? t : best;
    }
    return best;
}

static uint16_t *to_bf16(const float *x, size_t n)
{
    uint16_t *h = malloc(n * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++)
        h[i] = dtype_f32_to_bf16(x[i]);
    return h;
}

static double time_blas(const struct shape *s, const float *a, const float *b, float *c, int reps)
{
    const int lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans,
                    s->tb ? CblasTrans : CblasNoTrans, s->m, s->n, s->k, 1.0f, a, lda, b, ldb, 0.0f,
                    c, s->n);
        double t = bench_now() - t0;
        best = t < best ? t : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    const char *only = argc > 2 ? argv[2] : NULL;
    if (rounds < 1)
        rounds = 1;
    openblas_set_num_threads(1);
    printf("one thread; OpenBLAS core: %s; best of %d rounds, each variant and OpenBLAS "
           "alternating\n",
           openblas_get_corename(), rounds);
    printf("%-28s %5s %5s %5s | %7s %7s %8s | %6s %7s | %7s %6s | %7s %6s\n", "shape", "m", "n",
           "k", "avx512", "avx2", "openblas", "512/bl", "avx2/bl", "bf16", "/fp32", "bf16>bf",
           "/fp32");
    double sum_ratio[2] = {0, 0};
    int count = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const struct shape *s = &shapes[i];
        if (only != NULL && strstr(s->what, only) == NULL)
            continue;
        float *a = random_floats((size_t)s->m * s->k), *b = random_floats((size_t)s->k * s->n);
        float *c = random_floats((size_t)s->m * s->n);
        uint16_t *c16 = to_bf16(c, (size_t)s->m * s->n);
        struct cpu_gemm_args g = {.m = s->m,
                                  .n = s->n,
                                  .k = s->k,
                                  .alpha = 1.0f,
                                  .beta = 0.0f,
                                  .a = {a, ZERO_F32, s->ta ? s->m : s->k, s->ta, ZERO_F32},
                                  .b = {b, ZERO_F32, s->tb ? s->k : s->n, s->tb, ZERO_F32},
                                  .c = c,
                                  .c_type = ZERO_F32,
                                  .ldc = s->n};
        const double flop = 2.0 * s->m * s->n * s->k;
        const int reps = flop > 4e9 ? 1 : 2;
        uint16_t *a16 = to_bf16(a, (size_t)s->m * s->k), *b16 = to_bf16(b, (size_t)s->k * s->n);
        struct cpu_gemm_args g16 = g;
        g16.a.p = a16;
        g16.a.type = ZERO_BF16;
        g16.b.p = b16;
        g16.b.type = ZERO_BF16;
        struct cpu_gemm_args g16c = g16; /* bf16 operands, bf16 C */
        g16c.c = c16;
        g16c.c_type = ZERO_BF16;
        /* the most any of them needs (a bf16 C over several K-blocks: the fp32 plane) */
        size_t bytes = 64;
        for (int v = CPU_ISA_AVX2; v <= CPU_ISA_AVX512; v++) {
            size_t b32 = cpu_gemm_workspace_bytes((enum cpu_isa)v, 1, &g),
                   b16 = cpu_gemm_workspace_bytes((enum cpu_isa)v, 1, &g16c);
            bytes = b32 > bytes ? b32 : bytes;
            bytes = b16 > bytes ? b16 : bytes;
        }
        void *ws = NULL;
        if (posix_memalign(&ws, 64, bytes) != 0)
            return 1;
        enum cpu_isa widest = cpu_isa_supported(CPU_ISA_AVX512) ? CPU_ISA_AVX512 : CPU_ISA_AVX2;
        double best[5] = {1e30, 1e30, 1e30, 1e30, 1e30};
        for (int r = 0; r < rounds; r++) {
            for (int v = 0; v < 2; v++) {
                enum cpu_isa isa = v == 0 ? CPU_ISA_AVX512 : CPU_ISA_AVX2;
                if (!cpu_isa_supported(isa))
                    continue;
                double t = time_exact(isa, &g, ws, reps);
                best[v] = t < best[v] ? t : best[v];
            }
            double t = time_blas(s, a, b, c, reps);
            best[2] = t < best[2] ? t : best[2];
            t = time_exact(widest, &g16, ws, reps);
            best[3] = t < best[3] ? t : best[3];
            t = time_exact(widest, &g16c, ws, reps);
            best[4] = t < best[4] ? t : best[4];
        }
        double gf[5];
        for (int v = 0; v < 5; v++)
            gf[v] = best[v] < 1e29 ? flop / best[v] * 1e-9 : 0.0;
        const double fp32 = gf[widest == CPU_ISA_AVX512 ? 0 : 1];
        printf("%-28s %5d %5d %5d | %7.1f %7.1f %8.1f | %6.2f %7.2f | %7.1f %6.2f | %7.1f %6.2f\n",
               s->what, s->m, s->n, s->k, gf[0], gf[1], gf[2], gf[0] / gf[2], gf[1] / gf[2], gf[3],
               gf[3] / fp32, gf[4], gf[4] / fp32);
        sum_ratio[0] += gf[0] / gf[2];
        sum_ratio[1] += gf[1] / gf[2];
        count++;
        fflush(stdout);
        free(ws);
        free(c16);
        free(a16);
        free(b16);
        free(a);
        free(b);
        free(c);
    }
    printf("mean ratio exact/OpenBLAS: avx512 %.2f, avx2 %.2f (GFLOP/s; one thread)\n",
           sum_ratio[0] / count, sum_ratio[1] / count);
    return 0;
}

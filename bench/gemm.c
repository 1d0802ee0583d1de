/* The exact GEMM (backends/cpu/cpu_gemm.h) against OpenBLAS sgemm, one thread,
 * side by side in one run: for each shape, each forced variant and OpenBLAS
 * alternate, and the best of several timed rounds is kept (the machine is
 * shared). Shapes: bench/roofline's training step (the toy MLP, hidden 1024 ->
 * 4096 -> 1024, 16 rows per rank: forward y = x w^T, backward dx = dy w and
 * dW = dy^T x with k = 16, both layers), the toy MLP at more rows, and GPT-2
 * 124M's (T = 1024 rows; 768 -> 2304, 768 -> 768, 768 -> 3072, 3072 -> 768).
 *
 *   bench/gemm [rounds [shape [cold]]]  (default 3; shape: only the shapes whose
 *                                 name contains it, "" all; OPENBLAS_CORETYPE picks
 *                                 BLAS's kernel)
 *
 * cold: the product's big operand (B, or C where C is bigger: dW) cycles through
 * copies that together exceed the last-level cache (COLD_BYTES), each call the next
 * one, so it comes from memory as the training step's weights and gradients do (the
 * toy MLP's 100.7M parameters are 400 MB per rank); without it the same operands are
 * reused and stay cached.
 *
 * Prints GFLOP/s of each, the ratio exact / OpenBLAS, and the exact GEMM (widest
 * variant) on bf16 operands (widened while packing) with an fp32 C and with a
 * bf16 C (rounded as it is stored), each next to its fp32 speed; then the
 * bf16-product contract (bf16_dot: src/base/bf16_dot.h, fp32 C) with avx512bf16's
 * VDPBF16PS on bf16 pairs ("dot") and avx512's exact emulation ("dot-emu"), and the
 * bf16-tile contract (bf16_tile: src/base/bf16_tile.h) with amx's TDPBF16PS ("tile")
 * and avx512's emulation ("tile-emu"), each next to the fp32 speed of the widest fp32
 * variant. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_gemm.h"
#include "base/dtype_convert.h"

void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);

struct shape {
    const char *what;
    int m, n, k, ta, tb;
};

/* Seconds of this thread's CPU time: every timed call runs on the calling thread (the
 * exact GEMM and OpenBLAS at one thread), and on a machine shared with other jobs the
 * time it waits for a core is not the product's. */
static double thread_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* cold: the copies of the big operand together span this many bytes */
#define COLD_BYTES ((size_t)384 << 20)

/* The big operand's copies (cold) and which one the next call takes; the other
 * operands stay put. One copy: the warm case. */
struct rotation {
    int copies, next;
    int big_c;  /* C is the big operand (else B) */
    char *base; /* copies * stride bytes */
    size_t stride;
};

/* Points g's big operand at the next copy. */
static void rotate(struct rotation *r, struct cpu_gemm_args *g)
{
    void *p = r->base + (size_t)r->next * r->stride;
    r->next = (r->next + 1) % r->copies;
    if (r->big_c)
        g->c = p;
    else
        g->b.p = p;
}

/* copies of src (bytes, the first) enough to span COLD_BYTES when cold, else one */
static struct rotation make_rotation(const void *src, size_t bytes, int big_c, int cold)
{
    struct rotation r = {.copies = 1, .big_c = big_c};
    if (cold)
        r.copies = (int)((COLD_BYTES + bytes - 1) / bytes);
    r.stride = (bytes + 63) / 64 * 64;
    if (posix_memalign((void **)&r.base, 64, r.stride * (size_t)r.copies) != 0)
        exit(1);
    for (int i = 0; i < r.copies; i++)
        memcpy(r.base + (size_t)i * r.stride, src, bytes);
    return r;
}

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
static double time_exact(enum cpu_isa isa, struct cpu_gemm_args *g, struct rotation *rot, void *ws,
                         int reps)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        rotate(rot, g);
        double t0 = thread_seconds();
        cpu_gemm_exact(isa, 1, g, ws);
        double t = thread_seconds() - t0;
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

static double time_blas(const struct shape *s, struct cpu_gemm_args *g, struct rotation *rot,
                        int reps)
{
    const int lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        rotate(rot, g);
        const float *a = g->a.p, *b = g->b.p;
        float *c = g->c;
        double t0 = thread_seconds();
        cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans,
                    s->tb ? CblasTrans : CblasNoTrans, s->m, s->n, s->k, 1.0f, a, lda, b, ldb, 0.0f,
                    c, s->n);
        double t = thread_seconds() - t0;
        best = t < best ? t : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    const char *only = argc > 2 && argv[2][0] != '\0' ? argv[2] : NULL;
    const int cold = argc > 3 && strcmp(argv[3], "cold") == 0;
    if (rounds < 1)
        rounds = 1;
    openblas_set_num_threads(1);
    printf("one thread; OpenBLAS core: %s; best of %d rounds (thread CPU time), each variant "
           "and OpenBLAS alternating; %s\n",
           openblas_get_corename(), rounds,
           cold ? "cold: the big operand from memory (copies over 384 MiB)"
                : "warm: operands reused (cached)");
    printf("%-28s %5s %5s %5s | %7s %7s %8s | %6s %7s | %7s %6s | %7s %6s | %7s %6s | %7s "
           "%6s | %7s %6s | %8s %6s\n",
           "shape", "m", "n", "k", "avx512", "avx2", "openblas", "512/bl", "avx2/bl", "bf16",
           "/fp32", "bf16>bf", "/fp32", "dot", "/fp32", "dot-emu", "/fp32", "tile", "/fp32",
           "tile-emu", "/fp32");
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
        const int reps = flop > 4e9 ? 1 : cold ? 8 : 2;
        /* the big operand (B, or C for dW) of each kind: fp32, bf16, and C as bf16 */
        const size_t b_elems = (size_t)s->k * s->n, c_elems = (size_t)s->m * s->n;
        const int big_c = c_elems > b_elems;
        uint16_t *a16 = to_bf16(a, (size_t)s->m * s->k), *b16 = to_bf16(b, (size_t)s->k * s->n);
        struct cpu_gemm_args g16 = g;
        g16.a.p = a16;
        g16.a.type = ZERO_BF16;
        g16.b.p = b16;
        g16.b.type = ZERO_BF16;
        struct cpu_gemm_args g16c = g16; /* bf16 operands, bf16 C */
        g16c.c = c16;
        g16c.c_type = ZERO_BF16;
        struct cpu_gemm_args gdot = g16; /* bf16 operands, the bf16-product contract */
        gdot.product = CPU_PRODUCT_BF16_DOT;
        struct cpu_gemm_args gtile = g16; /* bf16 operands, the bf16-tile contract */
        gtile.product = CPU_PRODUCT_BF16_TILE;
        struct rotation rot32 =
            big_c ? make_rotation(c, c_elems * 4, 1, cold) : make_rotation(b, b_elems * 4, 0, cold);
        struct rotation rot16 = big_c ? make_rotation(c, c_elems * 4, 1, cold)
                                      : make_rotation(b16, b_elems * 2, 0, cold);
        struct rotation rot16c = big_c ? make_rotation(c16, c_elems * 2, 1, cold)
                                       : make_rotation(b16, b_elems * 2, 0, cold);
        /* the most any of them needs (a bf16 C over several K-blocks: the fp32 plane) */
        size_t bytes = 64;
        for (int v = 0; v < CPU_ISA_COUNT; v++) {
            if (!cpu_isa_supported((enum cpu_isa)v))
                continue;
            size_t b32 = cpu_gemm_workspace_bytes((enum cpu_isa)v, 1, &g),
                   b16 = cpu_gemm_workspace_bytes((enum cpu_isa)v, 1, &g16c),
                   bd = cpu_gemm_workspace_bytes((enum cpu_isa)v, 1, &gdot),
                   bt = cpu_gemm_workspace_bytes((enum cpu_isa)v, 1, &gtile);
            bytes = bt > bytes ? bt : bytes;
            bytes = b32 > bytes ? b32 : bytes;
            bytes = b16 > bytes ? b16 : bytes;
            bytes = bd > bytes ? bd : bytes;
        }
        void *ws = NULL;
        if (posix_memalign(&ws, 64, bytes) != 0)
            return 1;
        enum cpu_isa widest = cpu_isa_supported(CPU_ISA_AVX512) ? CPU_ISA_AVX512 : CPU_ISA_AVX2;
        double best[9] = {1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 1e30};
        for (int r = 0; r < rounds; r++) {
            for (int v = 0; v < 2; v++) {
                enum cpu_isa isa = v == 0 ? CPU_ISA_AVX512 : CPU_ISA_AVX2;
                if (!cpu_isa_supported(isa))
                    continue;
                double t = time_exact(isa, &g, &rot32, ws, reps);
                best[v] = t < best[v] ? t : best[v];
            }
            double t = time_blas(s, &g, &rot32, reps);
            best[2] = t < best[2] ? t : best[2];
            t = time_exact(widest, &g16, &rot16, ws, reps);
            best[3] = t < best[3] ? t : best[3];
            t = time_exact(widest, &g16c, &rot16c, ws, reps);
            best[4] = t < best[4] ? t : best[4];
            if (cpu_isa_supported(CPU_ISA_AVX512BF16)) {
                t = time_exact(CPU_ISA_AVX512BF16, &gdot, &rot16, ws, reps);
                best[5] = t < best[5] ? t : best[5];
            }
            if (cpu_isa_supported(CPU_ISA_AVX512)) {
                t = time_exact(CPU_ISA_AVX512, &gdot, &rot16, ws, reps);
                best[6] = t < best[6] ? t : best[6];
                t = time_exact(CPU_ISA_AVX512, &gtile, &rot16, ws, reps);
                best[8] = t < best[8] ? t : best[8];
            }
            if (cpu_isa_supported(CPU_ISA_AMX)) {
                t = time_exact(CPU_ISA_AMX, &gtile, &rot16, ws, reps);
                best[7] = t < best[7] ? t : best[7];
            }
        }
        double gf[9];
        for (int v = 0; v < 9; v++)
            gf[v] = best[v] < 1e29 ? flop / best[v] * 1e-9 : 0.0;
        const double fp32 = gf[widest == CPU_ISA_AVX512 ? 0 : 1];
        printf("%-28s %5d %5d %5d | %7.1f %7.1f %8.1f | %6.2f %7.2f | %7.1f %6.2f | %7.1f %6.2f | "
               "%7.1f %6.2f | %7.1f %6.2f | %7.1f %6.2f | %8.1f %6.2f\n",
               s->what, s->m, s->n, s->k, gf[0], gf[1], gf[2], gf[0] / gf[2], gf[1] / gf[2], gf[3],
               gf[3] / fp32, gf[4], gf[4] / fp32, gf[5], gf[5] / fp32, gf[6], gf[6] / fp32, gf[7],
               gf[7] / fp32, gf[8], gf[8] / fp32);
        sum_ratio[0] += gf[0] / gf[2];
        sum_ratio[1] += gf[1] / gf[2];
        count++;
        fflush(stdout);
        free(ws);
        free(rot32.base);
        free(rot16.base);
        free(rot16c.base);
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

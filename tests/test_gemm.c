/* The exact GEMM (backends/cpu/cpu_gemm.h): the scalar variant equals a naive
 * triple loop that spells the contract (one fmaf chain per element in k order,
 * alpha and beta applied as documented), and every other variant, at 1, 2 and
 * 3 threads, equals the scalar one bit for bit, over odd shapes, several
 * K-blocks, transposes, padded leading dimensions, every dtype combination, and
 * beta 0 / 1 / other with alpha 1 / other. A variant this processor lacks is
 * skipped. Single process, no MPI. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_gemm.h"
#include "base/bf16_dot.h"
#include "base/bf16_tile.h"
#include "base/dtype_convert.h"

/* ---- operands ---- */

static uint32_t rng_state = 12345;

static uint32_t rng(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

/* 1: values near the bottom of fp32 (products and sums around 2^-126, bf16 and fp32
 * subnormals), where the bf16-product contract's DAZ and FTZ act */
static int tiny_values;

/* full-mantissa values over a few binades, signs mixed, some exact zeros */
static float random_value(void)
{
    if (rng() % 29 == 0)
        return 0.0f;
    if (tiny_values) {
        float u = (float)(rng() & 0xffffff) / (float)0x1000000;
        return (rng() & 1 ? -1.0f : 1.0f) * ldexpf(0.5f + u, -56 - (int)(rng() % 80));
    }
    float u = (float)(rng() & 0xffffff) / (float)0x1000000;
    return (rng() & 1 ? -1.0f : 1.0f) * ldexpf(0.5f + u, (int)(rng() % 9) - 4);
}

static size_t esize(enum zero_dtype t)
{
    return t == ZERO_F32 ? 4 : 2;
}

static void put(void *x, enum zero_dtype t, int64_t i, float v)
{
    if (t == ZERO_F32)
        ((float *)x)[i] = v;
    else if (t == ZERO_BF16)
        ((uint16_t *)x)[i] = dtype_f32_to_bf16(v);
    else
        ((uint16_t *)x)[i] = dtype_f32_to_f16(v);
}

static float get(const void *x, enum zero_dtype t, int64_t i)
{
    if (t == ZERO_F32)
        return ((const float *)x)[i];
    if (t == ZERO_BF16)
        return dtype_bf16_to_f32(((const uint16_t *)x)[i]);
    return dtype_f16_to_f32(((const uint16_t *)x)[i]);
}

/* rows * ld elements of t, random; the padding past cols random too */
static void *random_matrix(enum zero_dtype t, int64_t rows, int64_t ld)
{
    int64_t n = rows * ld > 0 ? rows * ld : 1;
    void *x = malloc((size_t)n * esize(t));
    for (int64_t i = 0; i < n; i++)
        put(x, t, i, random_value());
    return x;
}

static float rounded(float v, enum zero_dtype r)
{
    if (r == ZERO_BF16)
        return dtype_bf16_to_f32(dtype_f32_to_bf16(v));
    if (r == ZERO_F16)
        return dtype_f16_to_f32(dtype_f32_to_f16(v));
    return v;
}

/* op(X)[x][k] of an operand (A: x = row; B: x = column) */
static float op_at(const struct cpu_gemm_operand *o, int is_b, int64_t x, int64_t k)
{
    int k_contig = is_b ? o->trans : !o->trans;
    int64_t i = k_contig ? x * o->ld + k : k * o->ld + x;
    float v = get(o->p, o->type, i);
    return o->type == ZERO_F32 ? rounded(v, o->round) : v;
}

/* ---- the contract, spelled naively ---- */

/* op(X)'s row x (A) or column x (B) as bf16, k (K) */
static void bf16_run(uint16_t *out, const struct cpu_gemm_operand *o, int is_b, int64_t x,
                     int64_t K)
{
    for (int64_t k = 0; k < K; k++)
        out[k] = dtype_f32_to_bf16(op_at(o, is_b, x, k));
}

static void naive_gemm(const struct cpu_gemm_args *g)
{
    uint16_t *xr = malloc(sizeof(uint16_t) * (size_t)(g->k + 1)),
             *yr = malloc(sizeof(uint16_t) * (size_t)(g->k + 1));
    const int plain = g->alpha == 1.0f && (g->beta == 0.0f || g->beta == 1.0f);
    for (int64_t i = 0; i < g->m; i++)
        for (int64_t j = 0; j < g->n; j++) {
            const int64_t ci = i * g->ldc + j;
            float acc = g->alpha == 1.0f && g->beta == 1.0f ? get(g->c, g->c_type, ci) : 0.0f;
            if (g->product != CPU_PRODUCT_FP32) { /* src/base/bf16_dot.h's or bf16_tile.h's */
                bf16_run(xr, &g->a, 0, i, g->k);
                bf16_run(yr, &g->b, 1, j, g->k);
                acc = g->product == CPU_PRODUCT_BF16_DOT ? bf16_dot_chain(acc, xr, yr, g->k)
                                                         : bf16_tile_chain(acc, xr, yr, g->k);
            } else
                for (int64_t k = 0; k < g->k; k++)
                    acc = fmaf(op_at(&g->a, 0, i, k), op_at(&g->b, 1, j, k), acc);
            if (!plain) {
                float t = g->alpha * acc;
                acc = g->beta == 0.0f ? t : fmaf(g->beta, get(g->c, g->c_type, ci), t);
            }
            put(g->c, g->c_type, ci, acc);
        }
    free(xr);
    free(yr);
}

/* ---- one case: naive vs every variant and thread count ---- */

struct gemm_case {
    int64_t m, n, k;
    int ta, tb;
    int pad; /* extra columns in every leading dimension */
    enum zero_dtype at, bt, ct, round;
    float alpha, beta;
};

/* 1: every case under the bf16-product contract */
static enum cpu_product product_cases;

static void run_variant(enum cpu_isa isa, int threads, struct cpu_gemm_args *g)
{
    size_t bytes = cpu_gemm_workspace_bytes(isa, threads, g);
    void *ws = NULL;
    ck_assert_int_eq(posix_memalign(&ws, 64, bytes > 0 ? bytes : 64), 0);
    cpu_gemm_exact(isa, threads, g, ws);
    free(ws);
}

static void check_case(const struct gemm_case *c)
{
    const int64_t a_rows = c->ta ? c->k : c->m, a_cols = c->ta ? c->m : c->k;
    const int64_t b_rows = c->tb ? c->n : c->k, b_cols = c->tb ? c->k : c->n;
    const int64_t lda = a_cols + c->pad, ldb = b_cols + c->pad, ldc = c->n + c->pad;
    struct cpu_gemm_args g = {.m = c->m,
                              .n = c->n,
                              .k = c->k,
                              .alpha = c->alpha,
                              .beta = c->beta,
                              .a = {NULL, c->at, lda > 0 ? lda : 1, c->ta, c->round},
                              .b = {NULL, c->bt, ldb > 0 ? ldb : 1, c->tb, c->round},
                              .c_type = c->ct,
                              .ldc = ldc > 0 ? ldc : 1,
                              .product = product_cases};
    void *a = random_matrix(c->at, a_rows, g.a.ld), *b = random_matrix(c->bt, b_rows, g.b.ld);
    void *c0 = random_matrix(c->ct, c->m, g.ldc);
    const size_t c_bytes = (size_t)(c->m * g.ldc) * esize(c->ct);
    if (c->beta == 0.0f) /* beta 0 must ignore the old C, NaN included */
        for (int64_t i = 0; i < c->m * g.ldc; i += 3)
            put(c0, c->ct, i, NAN);
    g.a.p = a;
    g.b.p = b;
    void *want = malloc(c_bytes + 1), *got = malloc(c_bytes + 1);
    memcpy(want, c0, c_bytes);
    g.c = want;
    naive_gemm(&g);
    for (int isa = 0; isa < CPU_ISA_COUNT; isa++) {
        if (!cpu_isa_supported((enum cpu_isa)isa))
            continue;
        for (int threads = 1; threads <= 3; threads++) {
            /* below 2^22 multiply-adds per thread the GEMM runs on one thread anyway;
             * the scalar variant is slow, the others cover the threads */
            if (threads > 1 &&
                (c->m * c->n * c->k < ((int64_t)1 << 22) * threads || isa == CPU_ISA_SCALAR))
                continue;
            memcpy(got, c0, c_bytes);
            g.c = got;
            run_variant((enum cpu_isa)isa, threads, &g);
            ck_assert_msg(memcmp(got, want, c_bytes) == 0,
                          "%s, %d threads: m=%lld n=%lld k=%lld ta=%d tb=%d pad=%d %s*%s->%s "
                          "round %s alpha=%g beta=%g product=%d differs from the naive chain",
                          cpu_isa_name((enum cpu_isa)isa), threads, (long long)c->m,
                          (long long)c->n, (long long)c->k, c->ta, c->tb, c->pad,
                          zero_dtype_name(c->at), zero_dtype_name(c->bt), zero_dtype_name(c->ct),
                          zero_dtype_name(c->round), (double)c->alpha, (double)c->beta,
                          (int)product_cases);
        }
    }
    free(a);
    free(b);
    free(c0);
    free(want);
    free(got);
}

static const float alphas[] = {1.0f, 1.0f, 0.125f, -0.3f, 1.0f};
static const float betas[] = {0.0f, 1.0f, 0.0f, 1.0f, 0.7f};
#define N_SCALES 5

/* ---- the tests ---- */

/* odd sizes, tile and block edges (MR 4 and 8, NR 4, 24 and 48, KC 256, MC 192,
 * NC 2016 or 2048), K = 0 */
static const int64_t shapes[][3] = {
    {1, 1, 1},     {1, 1, 0},    {5, 7, 3},    {8, 48, 8},    {9, 49, 257},
    {25, 65, 300}, {3, 100, 1},  {200, 9, 40}, {37, 17, 513}, {7, 2, 600},
    {193, 70, 31}, {4, 2100, 5}, {16, 24, 70},
};

START_TEST(test_every_variant_equals_the_naive_chain_fp32)
{
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (int sc = 0; sc < N_SCALES; sc++) {
                struct gemm_case c = {shapes[s][0], shapes[s][1], shapes[s][2], t & 1,
                                      t >> 1,       (int)(s % 3), ZERO_F32,     ZERO_F32,
                                      ZERO_F32,     ZERO_F32,     alphas[sc],   betas[sc]};
                check_case(&c);
            }
}
END_TEST

START_TEST(test_every_dtype_combination_equals_the_naive_chain)
{
    static const enum zero_dtype types[] = {ZERO_F32, ZERO_F16, ZERO_BF16};
    for (int at = 0; at < 3; at++)
        for (int bt = 0; bt < 3; bt++)
            for (int ct = 0; ct < 3; ct++)
                for (int t = 0; t < 4; t++)
                    for (int sc = 0; sc < N_SCALES; sc++) {
                        /* K over two K-blocks: partial sums of a 16-bit C stay fp32 */
                        struct gemm_case c = {9,         26,       260,        t & 1,
                                              t >> 1,    1 + t,    types[at],  types[bt],
                                              types[ct], ZERO_F32, alphas[sc], betas[sc]};
                        check_case(&c);
                    }
}
END_TEST

/* the attention kernels' fp32 operands rounded to fp16/bf16 while packing */
START_TEST(test_rounding_while_packing_equals_rounding_first)
{
    static const enum zero_dtype rounds[] = {ZERO_F16, ZERO_BF16};
    for (int r = 0; r < 2; r++)
        for (int t = 0; t < 4; t++) {
            struct gemm_case c = {31,       40,       65,       t & 1,     t >> 1, 3,
                                  ZERO_F32, ZERO_F32, ZERO_F32, rounds[r], 0.125f, 0.0f};
            check_case(&c);
        }
}
END_TEST

/* big enough that 2 and 3 threads really split it, over M and over N */
START_TEST(test_threads_do_not_change_a_bit)
{
    struct gemm_case by_n = {40,       1000,     330,      0,        1,    0,
                             ZERO_F32, ZERO_F32, ZERO_F32, ZERO_F32, 1.0f, 1.0f};
    struct gemm_case by_m = {700,       60,        300,      1,        0,    2,
                             ZERO_BF16, ZERO_BF16, ZERO_F32, ZERO_F32, 1.0f, 0.0f};
    check_case(&by_n);
    check_case(&by_m);
}
END_TEST

/* the training step's few-row and short-K products (bench/roofline: m = 16 rows,
 * dW with k = 16): every row count 1..17 against every K 1..17, each transpose,
 * and the blockings those shapes pick (A packed over all of K or per K-block, B
 * micro-panel by micro-panel, B blocks narrowed for row-read B, C walked row strip
 * by strip), fp32 and 16-bit C */
/* The bf16 contracts: every variant (avx512bf16's VDPBF16PS on bf16 pairs, amx's
 * TDPBF16PS on tiles, the others emulating them) gives the reference chain's bits, on
 * the odd shapes, both transposes, bf16 operands or fp32 ones rounded while packing,
 * every C type and scaling, ordinary values and values whose products and sums lie
 * around 2^-126 */
static void check_bf16_contract(enum cpu_product product)
{
    static const enum zero_dtype cts[] = {ZERO_F32, ZERO_BF16, ZERO_F16};
    product_cases = product;
    for (int tiny = 0; tiny < 2; tiny++) {
        tiny_values = tiny;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int t = 0; t < 4; t++)
                for (int sc = 0; sc < N_SCALES; sc++) {
                    const int rounded_a = (int)((s + (size_t)sc) % 3 == 0);
                    struct gemm_case c = {shapes[s][0],
                                          shapes[s][1],
                                          shapes[s][2],
                                          t & 1,
                                          t >> 1,
                                          (int)(s % 2),
                                          rounded_a ? ZERO_F32 : ZERO_BF16,
                                          ZERO_BF16,
                                          cts[(s + (size_t)t) % 3],
                                          rounded_a ? ZERO_BF16 : ZERO_F32,
                                          alphas[sc],
                                          betas[sc]};
                    check_case(&c);
                }
    }
    tiny_values = 0;
    /* few rows over many K-blocks (B by rows or k contiguous), short K over many rows; at
     * most 16 rows against B in place (amx: 64 columns a call, K's short last block) */
    static const int64_t more[][5] = {
        {16, 100, 1031, 0, 1}, {16, 100, 1030, 0, 0}, {13, 600, 261, 0, 0},
        {192, 8, 1400, 0, 1},  {300, 200, 17, 1, 0},  {250, 70, 9, 0, 1},
        {5, 130, 45, 1, 1},    {16, 64, 32, 0, 1},    {1, 200, 300, 0, 1},
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        struct gemm_case c = {more[i][0],      more[i][1], more[i][2], (int)more[i][3],
                              (int)more[i][4], 1,          ZERO_BF16,  ZERO_BF16,
                              cts[i % 3],      ZERO_F32,   1.0f,       i % 2 ? 1.0f : 0.0f};
        check_case(&c);
    }
    product_cases = CPU_PRODUCT_FP32;
}

START_TEST(test_every_variant_equals_the_bf16_dot_reference)
{
    check_bf16_contract(CPU_PRODUCT_BF16_DOT);
}
END_TEST

START_TEST(test_every_variant_equals_the_bf16_tile_reference)
{
    check_bf16_contract(CPU_PRODUCT_BF16_TILE);
}
END_TEST

START_TEST(test_skinny_and_short_k_shapes_equal_the_naive_chain)
{
    static const enum zero_dtype cts[] = {ZERO_F32, ZERO_BF16, ZERO_F16};
    for (int64_t m = 1; m <= 17; m++)
        for (int64_t k = 1; k <= 17; k++) {
            const int t = (int)((m + k) % 4), sc = (int)((m * 3 + k) % N_SCALES);
            struct gemm_case c = {m,          50,           k,          t & 1,
                                  t >> 1,     (int)(k % 2), ZERO_F32,   ZERO_F32,
                                  cts[k % 3], ZERO_F32,     alphas[sc], betas[sc]};
            check_case(&c);
        }
    /* m, n, k, ta, tb: many K-blocks at few rows (A over all of K, or too big for
     * that), B read by rows over several column blocks, short K over many rows */
    static const int64_t more[][5] = {
        {16, 100, 1030, 0, 1}, {16, 100, 1030, 0, 0}, {13, 600, 260, 0, 0}, {13, 600, 260, 1, 0},
        {192, 8, 1400, 0, 1},  {200, 100, 16, 1, 0},  {300, 200, 17, 1, 0}, {250, 70, 9, 0, 1},
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
        for (int ct = 0; ct < 3; ct++) {
            struct gemm_case c = {more[i][0],      more[i][1], more[i][2], (int)more[i][3],
                                  (int)more[i][4], 1,          ZERO_BF16,  ZERO_F32,
                                  cts[ct],         ZERO_F32,   1.0f,       ct == 1 ? 1.0f : 0.0f};
            check_case(&c);
        }
}
END_TEST

/* at most 16 rows. Against B with k contiguous (y = x W^T) avx512 reads W in place, 24
 * columns of C at a time, one chain over all of K per call; around its limits: 16 and
 * 17 rows, 23, 24 and 47 columns (the last columns take the packed way), K up to what
 * the packed way's workspace holds (16 rows: A packed whole, 1 MiB, K 16384; 8 rows:
 * K 1500 but not 2000) and past it. Against B read by rows (dx =
 * dy W) with K past one K-block, B's blocks are whole rows, as many as the bytes of
 * KC rows hold (odd K-blocks: 600 columns take 196 rows). 1 to 3 threads whose column
 * shares end inside a group or a micro-panel; fp32, 16-bit and rounded operands; every
 * C type and both scalings */
START_TEST(test_few_rows_against_w_in_place_equal_the_naive_chain)
{
    static const enum zero_dtype cts[] = {ZERO_F32, ZERO_BF16, ZERO_F16};
    /* m, n, k, ta, tb */
    static const int64_t cases[][5] = {
        {16, 24, 300, 0, 1},   {16, 23, 40, 0, 1},     {16, 47, 33, 1, 1},
        {17, 48, 70, 0, 1},    {1, 72, 513, 1, 1},     {16, 48, 16384, 0, 1},
        {16, 24, 16641, 0, 1}, {16, 1000, 1030, 0, 1}, {11, 1000, 1030, 1, 1},
        {8, 48, 1500, 1, 1},   {8, 48, 2000, 0, 1},    {16, 600, 260, 0, 0},
        {5, 49, 1500, 1, 0},   {16, 1000, 1030, 0, 0}, {16, 2100, 257, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int v = 0; v < 5; v++) {
            /* fp32 operands (W read as stored) into each C type; then 16-bit operands and
             * rounded fp32 ones (widened as they are read) */
            const int sc = (int)(i + v) % N_SCALES;
            const enum zero_dtype op = v == 3 ? cts[1 + i % 2] : ZERO_F32;
            const enum zero_dtype ct = v < 3 ? cts[v] : ZERO_F32;
            const enum zero_dtype round = v == 4 ? ZERO_BF16 : ZERO_F32;
            struct gemm_case c = {cases[i][0],
                                  cases[i][1],
                                  cases[i][2],
                                  (int)cases[i][3],
                                  (int)cases[i][4],
                                  (int)(i % 2),
                                  op,
                                  op,
                                  ct,
                                  round,
                                  alphas[sc],
                                  betas[sc]};
            check_case(&c);
        }
}
END_TEST

/* a 16-bit C is narrowed a row at a time by the variant's vectorized loop: the
 * bits of dtype_f32_to_bf16 / dtype_f32_to_f16 on a spread of all 2^32 patterns
 * (NaNs, infinities, subnormals, ties among them), at every length mod 16 */
START_TEST(test_every_variant_narrows_like_the_scalar_conversion)
{
    enum { N = 4099 };
    static float src[N];
    static uint16_t got[N];
    for (int isa = 0; isa < CPU_ISA_COUNT; isa++) {
        if (!cpu_isa_supported((enum cpu_isa)isa))
            continue;
        const struct cpu_gemm_kernel *kr = cpu_gemm_kernel((enum cpu_isa)isa, CPU_PRODUCT_FP32);
        for (uint64_t base = 0; base < ((uint64_t)1 << 32); base += (uint64_t)N * 1021) {
            for (int i = 0; i < N; i++) {
                uint32_t bits = (uint32_t)(base + (uint64_t)i * 1021);
                if (i % 7 == 0) /* exact ties and their neighbours: low bits 0x8000 / 0x1000 */
                    bits = (bits & ~0xffffu) | (i % 2 ? 0x8000u : 0x1000u) | (uint32_t)(i % 3);
                src[i] = dtype_f32_from_bits(bits);
            }
            for (int to = 0; to < 2; to++) {
                const enum zero_dtype t = to ? ZERO_F16 : ZERO_BF16;
                const int n = N - (int)(base % 16);
                kr->narrow(got, src, n, t);
                for (int i = 0; i < n; i++) {
                    const uint16_t want =
                        t == ZERO_BF16 ? dtype_f32_to_bf16(src[i]) : dtype_f32_to_f16(src[i]);
                    if (got[i] != want) /* (an assertion per element would log each one) */
                        ck_abort_msg("%s narrows 0x%08x to %s as 0x%04x, not 0x%04x",
                                     cpu_isa_name((enum cpu_isa)isa), dtype_f32_bits(src[i]),
                                     zero_dtype_name(t), got[i], want);
                }
            }
        }
    }
}
END_TEST

START_TEST(test_zero_cpu_isa_forces_a_variant_or_says_why)
{
    enum cpu_isa isa;
    char why[200] = "";
    setenv("ZERO_CPU_ISA", "scalar", 1);
    ck_assert_int_eq(cpu_isa_choose(&isa, why, sizeof why), 0);
    ck_assert_int_eq(isa, CPU_ISA_SCALAR);
    setenv("ZERO_CPU_ISA", "sse9", 1);
    ck_assert_int_ne(cpu_isa_choose(&isa, why, sizeof why), 0);
    ck_assert_msg(strstr(why, "sse9") && strstr(why, "avx512"), "message: %s", why);
    for (int i = 0; i < CPU_ISA_COUNT; i++) {
        setenv("ZERO_CPU_ISA", cpu_isa_name((enum cpu_isa)i), 1);
        int rc = cpu_isa_choose(&isa, why, sizeof why);
        ck_assert_int_eq(rc == 0, cpu_isa_supported((enum cpu_isa)i));
        if (rc == 0)
            ck_assert_int_eq(isa, i);
        else
            ck_assert_ptr_nonnull(strstr(why, "lacks"));
    }
    unsetenv("ZERO_CPU_ISA");
    ck_assert_int_eq(cpu_isa_choose(&isa, why, sizeof why), 0);
    ck_assert(cpu_isa_supported(isa));
}
END_TEST

static Suite *gemm_suite(void)
{
    Suite *s = suite_create("gemm");
    TCase *tc = tcase_create("exact");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_every_variant_equals_the_naive_chain_fp32);
    tcase_add_test(tc, test_every_dtype_combination_equals_the_naive_chain);
    tcase_add_test(tc, test_rounding_while_packing_equals_rounding_first);
    tcase_add_test(tc, test_threads_do_not_change_a_bit);
    tcase_add_test(tc, test_skinny_and_short_k_shapes_equal_the_naive_chain);
    tcase_add_test(tc, test_few_rows_against_w_in_place_equal_the_naive_chain);
    tcase_add_test(tc, test_every_variant_narrows_like_the_scalar_conversion);
    tcase_add_test(tc, test_every_variant_equals_the_bf16_dot_reference);
    tcase_add_test(tc, test_every_variant_equals_the_bf16_tile_reference);
    tcase_add_test(tc, test_zero_cpu_isa_forces_a_variant_or_says_why);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    for (int i = 0; i < CPU_ISA_COUNT; i++)
        if (!cpu_isa_supported((enum cpu_isa)i))
            fprintf(stderr, "test_gemm: skipping the %s variant: this processor lacks it\n",
                    cpu_isa_name((enum cpu_isa)i));
    SRunner *sr = srunner_create(gemm_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* The cpu backend's compute kernels against straightforward references: gemm,
 * casts, elementwise ops, Adam/AdamW/SGD, norms, non-finite checks, bias, GELU,
 * softmax cross-entropy, attention's low-precision products. One rank (open() dups a communicator,
 * so MPI is up). */
#include <check.h>
#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zero/backend.h"
#include "zero/backend_bf16_dot.h"
#include "zero/backend_classifier.h"
#include "zero/error.h"

static struct zero_device *dev;
static const struct zero_backend *be;
static void *self;

/* Deterministic values in [-1, 1) that differ from element to element. */
static float val(uint32_t i, uint32_t seed)
{
    uint32_t x = i * 2654435761u + seed * 40503u + 12345u;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    return (float)(x & 0xffffff) / (float)0x800000 - 1.0f;
}

static void fill_vals(float *x, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        x[i] = val((uint32_t)i, seed);
}

static int same_bits(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof(float)) == 0;
}

/* ---------------------------------------------------------------- gemm */

/* C (m, n) = alpha op(A) op(B) + beta C, in double, on row-major strided storage */
static void gemm_ref(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                     const float *b, int ldb, float beta, double *c, const float *c0, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double sum = 0.0;
            for (int p = 0; p < k; p++) {
                double av = ta ? a[p * lda + i] : a[i * lda + p];
                double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
                sum += av * bv;
            }
            c[i * n + j] = alpha * sum + beta * (double)c0[i * ldc + j];
        }
}

START_TEST(test_gemm_matches_naive_loop_for_all_transposes_with_padded_ld)
{
    const int m = 5, n = 7, k = 9, pad = 3;
    const float alpha = 1.5f, beta = 0.5f;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            int a_rows = ta ? k : m, a_cols = ta ? m : k;
            int b_rows = tb ? n : k, b_cols = tb ? k : n;
            int lda = a_cols + pad, ldb = b_cols + pad + 1, ldc = n + pad + 2;
            float *a = malloc(sizeof(float) * a_rows * lda);
            float *b = malloc(sizeof(float) * b_rows * ldb);
            float *c = malloc(sizeof(float) * m * ldc);
            float *c0 = malloc(sizeof(float) * m * ldc);
            double *want = malloc(sizeof(double) * m * n);
            fill_vals(a, (size_t)a_rows * lda, 1);
            fill_vals(b, (size_t)b_rows * ldb, 2);
            fill_vals(c0, (size_t)m * ldc, 3);
            memcpy(c, c0, sizeof(float) * m * ldc);
            gemm_ref(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, want, c0, ldc);
            ck_assert_int_eq(be->gemm(self, ta, tb, m, n, k, alpha, a, ZERO_F32, lda, b, ZERO_F32,
                                      ldb, beta, c, ZERO_F32, ldc),
                             ZERO_OK);
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++)
                    ck_assert_msg(fabs(c[i * ldc + j] - want[i * n + j]) < 1e-5,
                                  "ta=%d tb=%d C[%d][%d] = %g, want %g", ta, tb, i, j,
                                  (double)c[i * ldc + j], want[i * n + j]);
                for (int j = n; j < ldc; j++) /* padding between rows is not touched */
                    ck_assert(same_bits(&c[i * ldc + j], &c0[i * ldc + j], 1));
            }
            free(a);
            free(b);
            free(c);
            free(c0);
            free(want);
        }
}
END_TEST

/* The bf16_dot group's switch: a bf16 x bf16 gemm follows the product it names (the
 * contracts in exact and native mode alike), then the fp32 chain again; a value outside
 * the enum is refused. x = (1, 2^24, 1, -2^24), y = 1: the chain gives ((1 + 2^24 ->
 * 2^24, tie to even) + 1 -> 2^24) - 2^24 = 0; the pairs, odd element first, (2^24 + 1 ->
 * 2^24), then (-2^24 -> 0) + 1 = 1; the tile's chains E = 1 + 1, O = 2^24 - 2^24, 2. */
START_TEST(test_bf16_dot_switch_selects_the_contract_for_bf16_gemms)
{
    ck_assert_ptr_nonnull(be->bf16_dot);
    ck_assert_int_eq(be->bf16_dot->version, ZERO_BF16_DOT_OPS_VERSION);
    const uint16_t x[4] = {0x3f80, 0x4b80, 0x3f80, 0xcb80}, y[4] = {0x3f80, 0x3f80, 0x3f80, 0x3f80};
    static const enum zero_coll_mode modes[2] = {ZERO_COLL_EXACT, ZERO_COLL_NATIVE};
    static const enum zero_bf16_product products[3] = {
        ZERO_BF16_PRODUCT_DOT, ZERO_BF16_PRODUCT_TILE, ZERO_BF16_PRODUCT_FP32};
    static const float wants[3] = {1.0f, 2.0f, 0.0f};
    for (int md = 0; md < 2; md++) {
        ck_assert_int_eq(be->set_coll_mode(self, modes[md]), ZERO_OK);
        for (int p = 0; p < 3; p++) {
            float c = -7.0f;
            ck_assert_int_eq(be->bf16_dot->set_bf16_product(self, products[p]), ZERO_OK);
            ck_assert_int_eq(be->gemm(self, 0, 1, 1, 1, 4, 1.0f, x, ZERO_BF16, 4, y, ZERO_BF16, 4,
                                      0.0f, &c, ZERO_F32, 1),
                             ZERO_OK);
            ck_assert_msg(c == wants[p] || (products[p] == ZERO_BF16_PRODUCT_FP32 && md == 1),
                          /* native's chain: OpenBLAS's order */ "mode %d, product %d: %a, want %a",
                          md, (int)products[p], (double)c, (double)wants[p]);
        }
    }
    ck_assert_int_ne(be->bf16_dot->set_bf16_product(self, (enum zero_bf16_product)7), ZERO_OK);
    ck_assert_int_eq(be->set_coll_mode(self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

START_TEST(test_gemm_beta_zero_ignores_nan_in_c)
{
    float a[2 * 3], b[3 * 2], c[2 * 2];
    fill_vals(a, 6, 4);
    fill_vals(b, 6, 5);
    for (int i = 0; i < 4; i++)
        c[i] = NAN;
    ck_assert_int_eq(
        be->gemm(self, 0, 0, 2, 2, 3, 1.0f, a, ZERO_F32, 3, b, ZERO_F32, 2, 0.0f, c, ZERO_F32, 2),
        ZERO_OK);
    for (int i = 0; i < 4; i++)
        ck_assert(isfinite(c[i]));
}
END_TEST

/* k = 0: the product is empty, C = beta C, for fp32 and converted outputs alike */
START_TEST(test_gemm_with_empty_inner_dimension_scales_c_by_beta)
{
    float a[1] = {0}, b[1] = {0}, c[4] = {1, 2, 3, 4};
    uint16_t c16[4] = {0x3c00, 0x4000, 0x4200, 0x4400}; /* 1, 2, 3, 4 */
    ck_assert_int_eq(
        be->gemm(self, 0, 0, 2, 2, 0, 1.0f, a, ZERO_F32, 1, b, ZERO_F32, 2, 0.5f, c, ZERO_F32, 2),
        ZERO_OK);
    ck_assert_int_eq(
        be->gemm(self, 0, 0, 2, 2, 0, 1.0f, a, ZERO_F16, 1, b, ZERO_F16, 2, 0.5f, c16, ZERO_F16, 2),
        ZERO_OK);
    for (int i = 0; i < 4; i++) {
        ck_assert(c[i] == 0.5f * (float)(i + 1));
        ck_assert(zero_f16_to_f32(c16[i]) == 0.5f * (float)(i + 1));
    }
}
END_TEST

/* fp16 A, bf16 B, fp16 C: the backend converts to fp32, multiplies, rounds C once.
 * The fp32 product of the converted operands, rounded to fp16, must match bit for bit;
 * the conversion copies go through the ledger as workspace and are given back. */
START_TEST(test_gemm_half_operands_equal_fp32_gemm_of_converted_values)
{
    enum { M = 4, N = 6, K = 8 };
    uint16_t a16[M * K], b16[N * K], c16[M * N];
    float a[M * K], b[N * K], c[M * N];
    for (int i = 0; i < M * K; i++) {
        a16[i] = zero_f32_to_f16(val(i, 6));
        a[i] = zero_f16_to_f32(a16[i]);
    }
    for (int i = 0; i < N * K; i++) {
        b16[i] = zero_f32_to_bf16(val(i, 7));
        b[i] = zero_bf16_to_f32(b16[i]);
    }
    for (int i = 0; i < M * N; i++) {
        c16[i] = zero_f32_to_f16(val(i, 8));
        c[i] = zero_f16_to_f32(c16[i]);
    }
    zero_ledger_reset_peaks(&dev->ledger);
    int64_t ws_before = dev->ledger.current[ZERO_TAG_WORKSPACE];
    ck_assert_int_eq(be->gemm(self, 0, 1, M, N, K, 0.75f, a16, ZERO_F16, K, b16, ZERO_BF16, K,
                              0.25f, c16, ZERO_F16, N),
                     ZERO_OK);
    ck_assert_int_eq(
        be->gemm(self, 0, 1, M, N, K, 0.75f, a, ZERO_F32, K, b, ZERO_F32, K, 0.25f, c, ZERO_F32, N),
        ZERO_OK);
    for (int i = 0; i < M * N; i++)
        ck_assert_msg(c16[i] == zero_f32_to_f16(c[i]), "C[%d] = 0x%04x, want 0x%04x", i, c16[i],
                      zero_f32_to_f16(c[i]));
    ck_assert_int_eq(dev->ledger.current[ZERO_TAG_WORKSPACE], ws_before);
    ck_assert_int_ge(dev->ledger.peak[ZERO_TAG_WORKSPACE],
                     ws_before + (int64_t)sizeof(float) * (M * K + N * K + M * N));
}
END_TEST

/* ZERO_CAP_ROUNDING_GEMM_STORE (the engine's direct route of mixed-precision gradients):
 * a 16-bit C with beta 0 holds the fp32 result rounded once, the bits of the same gemm
 * into an fp32 C cast afterwards, in both modes, with one K-block and several (the
 * exact GEMM's partial sums then live in its fp32 plane). */
START_TEST(test_gemm_16bit_c_with_beta_zero_is_the_fp32_result_rounded_once)
{
    ck_assert(be->caps & ZERO_CAP_ROUNDING_GEMM_STORE);
    static const int dims[2][3] = {{5, 7, 3}, {33, 40, 600}}; /* m, n, k */
    static const enum zero_coll_mode modes[2] = {ZERO_COLL_EXACT, ZERO_COLL_NATIVE};
    static const enum zero_dtype types[2] = {ZERO_F16, ZERO_BF16};
    for (int d = 0; d < 2; d++) {
        const int m = dims[d][0], n = dims[d][1], k = dims[d][2];
        float *a = malloc(sizeof(float) * (size_t)(m * k)),
              *b = malloc(sizeof(float) * (size_t)(k * n));
        float *c32 = malloc(sizeof(float) * (size_t)(m * n));
        uint16_t *c16 = malloc(sizeof(uint16_t) * (size_t)(m * n));
        uint16_t *want = malloc(sizeof(uint16_t) * (size_t)(m * n));
        fill_vals(a, (size_t)(m * k), 11);
        fill_vals(b, (size_t)(k * n), 12);
        for (int md = 0; md < 2; md++)
            for (int t = 0; t < 2; t++)
                for (int ta = 0; ta < 2; ta++) { /* dw = dy^T x is the transposed case */
                    ck_assert_int_eq(be->set_coll_mode(self, modes[md]), ZERO_OK);
                    memset(c16, 0xff, sizeof(uint16_t) * (size_t)(m * n)); /* NaN: ignored */
                    ck_assert_int_eq(be->gemm(self, ta, 0, m, n, k, 1.0f, a, ZERO_F32, ta ? m : k,
                                              b, ZERO_F32, n, 0.0f, c16, types[t], n),
                                     ZERO_OK);
                    ck_assert_int_eq(be->gemm(self, ta, 0, m, n, k, 1.0f, a, ZERO_F32, ta ? m : k,
                                              b, ZERO_F32, n, 0.0f, c32, ZERO_F32, n),
                                     ZERO_OK);
                    ck_assert_int_eq(be->cast(self, want, types[t], c32, ZERO_F32, (size_t)(m * n)),
                                     ZERO_OK);
                    for (int i = 0; i < m * n; i++)
                        ck_assert_msg(c16[i] == want[i],
                                      "mode %d %s (%d, %d, %d) ta %d: C[%d] = 0x%04x, want 0x%04x",
                                      (int)modes[md], zero_dtype_name(types[t]), m, n, k, ta, i,
                                      c16[i], want[i]);
                }
        ck_assert_int_eq(be->set_coll_mode(self, ZERO_COLL_EXACT), ZERO_OK);
        free(a);
        free(b);
        free(c32);
        free(c16);
        free(want);
    }
}
END_TEST

START_TEST(test_gemm_rejects_short_leading_dimension_naming_it)
{
    float a[16] = {0}, b[16] = {0}, c[16] = {0};
    ck_assert_int_eq(
        be->gemm(self, 0, 0, 2, 2, 4, 1.0f, a, ZERO_F32, 3, b, ZERO_F32, 2, 0.0f, c, ZERO_F32, 2),
        ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(be->last_error(self), "lda = 3"));
    ck_assert_int_eq(
        be->gemm(self, 0, 0, 2, 2, 2, 1.0f, a, ZERO_I32, 2, b, ZERO_F32, 2, 0.0f, c, ZERO_F32, 2),
        ZERO_ENOTSUP);
}
END_TEST

/* ---------------------------------------------------------------- cast, axpy, scale, add */

START_TEST(test_cast_between_float_types_matches_scalar_conversions)
{
    enum { N = 37 };
    float x[N], back[N];
    uint16_t h[N], bf[N], h_from_bf[N];
    double d[N];
    fill_vals(x, N, 9);
    x[0] = 70000.0f; /* overflows fp16 */
    x[1] = NAN;
    ck_assert_int_eq(be->cast(self, h, ZERO_F16, x, ZERO_F32, N), ZERO_OK);
    ck_assert_int_eq(be->cast(self, bf, ZERO_BF16, x, ZERO_F32, N), ZERO_OK);
    ck_assert_int_eq(be->cast(self, h_from_bf, ZERO_F16, bf, ZERO_BF16, N), ZERO_OK);
    ck_assert_int_eq(be->cast(self, d, ZERO_F64, h, ZERO_F16, N), ZERO_OK);
    for (int i = 0; i < N; i++) {
        ck_assert_uint_eq(h[i], zero_f32_to_f16(x[i]));
        ck_assert_uint_eq(bf[i], zero_f32_to_bf16(x[i]));
        ck_assert_uint_eq(h_from_bf[i], zero_f32_to_f16(zero_bf16_to_f32(bf[i])));
        ck_assert(d[i] == (double)zero_f16_to_f32(h[i]) || (isnan(d[i]) && i == 1));
    }
    ck_assert_int_eq(be->cast(self, back, ZERO_F32, d, ZERO_F64, N), ZERO_OK);
    ck_assert_int_eq(be->cast(self, d, ZERO_F64, x, ZERO_F32, N), ZERO_OK);
    ck_assert_int_eq(be->cast(self, back, ZERO_F32, d, ZERO_F64, N), ZERO_OK);
    ck_assert(same_bits(back, x, N));
    ck_assert_int_eq(be->cast(self, h, ZERO_F16, d, ZERO_F64, N), ZERO_ENOTSUP);
    ck_assert_int_eq(be->cast(self, h, ZERO_I32, x, ZERO_F32, N), ZERO_ENOTSUP);
}
END_TEST

START_TEST(test_axpy_scale_add_compute_elementwise)
{
    enum { N = 103 };
    float x[N], y[N], y0[N], out[N];
    fill_vals(x, N, 10);
    fill_vals(y0, N, 11);
    memcpy(y, y0, sizeof(y));
    ck_assert_int_eq(be->axpy(self, 0.5f, x, y, N), ZERO_OK);
    for (int i = 0; i < N; i++)
        ck_assert(y[i] == y0[i] + 0.5f * x[i]);
    ck_assert_int_eq(be->add(self, out, x, y0, N), ZERO_OK);
    for (int i = 0; i < N; i++)
        ck_assert(out[i] == x[i] + y0[i]);
    ck_assert_int_eq(be->add(self, y0, y0, x, N), ZERO_OK); /* in place */
    for (int i = 0; i < N; i++)
        ck_assert(y0[i] == out[i]);
    memcpy(y, x, sizeof(y));
    ck_assert_int_eq(be->scale(self, -3.0f, y, N), ZERO_OK);
    for (int i = 0; i < N; i++)
        ck_assert(y[i] == -3.0f * x[i]);
}
END_TEST

/* ---------------------------------------------------------------- optimizers */

/* The formula written out in cpu_kernels.c, one scalar at a time. */
static void adam_ref(float *p, const float *g, float *m, float *v, size_t n,
                     const struct zero_adam_args *a)
{
    float bc1 = 1.0f, bc2 = 1.0f;
    if (a->bias_correction) {
        bc1 = (float)(1.0 - pow(a->beta1, (double)a->step));
        bc2 = (float)(1.0 - pow(a->beta2, (double)a->step));
    }
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] / a->grad_div;
        if (a->weight_decay != 0.0f && !a->adamw)
            gi = gi + a->weight_decay * p[i];
        if (a->weight_decay != 0.0f && a->adamw)
            p[i] = p[i] - (a->lr * a->weight_decay) * p[i];
        m[i] = a->beta1 * m[i] + (1.0f - a->beta1) * gi;
        v[i] = a->beta2 * v[i] + (1.0f - a->beta2) * gi * gi;
        float m_hat = m[i] / bc1, v_hat = v[i] / bc2;
        p[i] = p[i] - a->lr * (m_hat / (sqrtf(v_hat) + a->eps));
    }
}

static void check_adam_bit_exact(int adamw, int bias_correction, float wd)
{
    enum { N = 301, STEPS = 5 };
    float p[N], m[N], v[N], rp[N], rm[N], rv[N], g[N];
    fill_vals(p, N, 20);
    memcpy(rp, p, sizeof(p));
    memset(m, 0, sizeof(m));
    memset(v, 0, sizeof(v));
    memset(rm, 0, sizeof(rm));
    memset(rv, 0, sizeof(rv));
    struct zero_adam_args a = {.lr = 1e-3f,
                               .beta1 = 0.9f,
                               .beta2 = 0.999f,
                               .eps = 1e-8f,
                               .weight_decay = wd,
                               .adamw = adamw,
                               .bias_correction = bias_correction,
                               .grad_div = 3.0f};
    for (int t = 1; t <= STEPS; t++) {
        fill_vals(g, N, 100 + t);
        a.step = t;
        ck_assert_int_eq(be->adam(self, p, g, ZERO_F32, m, v, N, &a, NULL, ZERO_F32), ZERO_OK);
        adam_ref(rp, g, rm, rv, N, &a);
        ck_assert_msg(same_bits(p, rp, N) && same_bits(m, rm, N) && same_bits(v, rv, N),
                      "adamw=%d bias_correction=%d wd=%g: step %d differs from the reference",
                      adamw, bias_correction, (double)wd, t);
    }
}

START_TEST(test_adamw_matches_scalar_reference_bit_exact_over_five_steps)
{
    check_adam_bit_exact(1, 1, 0.01f);
    check_adam_bit_exact(1, 0, 0.01f);
}
END_TEST

START_TEST(test_adam_l2_matches_scalar_reference_bit_exact_over_five_steps)
{
    check_adam_bit_exact(0, 1, 0.01f);
    check_adam_bit_exact(0, 1, 0.0f);
}
END_TEST

/* With bias correction, Adam's first step moves every parameter by about lr against
 * the sign of its gradient, whatever the gradient's size. */
START_TEST(test_adam_first_step_moves_each_param_by_lr)
{
    float p[4] = {1, 1, 1, 1}, g[4] = {1e-3f, -2.0f, 50.0f, -7e-2f}, m[4] = {0}, v[4] = {0};
    struct zero_adam_args a = {.lr = 0.01f,
                               .beta1 = 0.9f,
                               .beta2 = 0.999f,
                               .eps = 1e-8f,
                               .step = 1,
                               .bias_correction = 1,
                               .grad_div = 1.0f};
    ck_assert_int_eq(be->adam(self, p, g, ZERO_F32, m, v, 4, &a, NULL, ZERO_F32), ZERO_OK);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(fabsf(p[i] - (1.0f - 0.01f * copysignf(1.0f, g[i]))) < 1e-5f, "p[%d] = %.8f",
                      i, (double)p[i]);
    /* AdamW decay with a zero gradient: p shrinks by lr * wd * p exactly */
    float q = 2.0f, zero = 0.0f, mq = 0.0f, vq = 0.0f;
    a.adamw = 1;
    a.weight_decay = 0.5f;
    ck_assert_int_eq(be->adam(self, &q, &zero, ZERO_F32, &mq, &vq, 1, &a, NULL, ZERO_F32), ZERO_OK);
    ck_assert(q == 2.0f - 0.005f * 2.0f);
}
END_TEST

/* fp16 gradients and a bf16 parameter copy take the same arithmetic as fp32
 * gradients holding the same values. */
START_TEST(test_adam_half_gradients_and_param_copy)
{
    enum { N = 64 };
    float p[N], p2[N], m[N] = {0}, v[N] = {0}, m2[N] = {0}, v2[N] = {0}, g[N];
    uint16_t g16[N], copy[N];
    fill_vals(p, N, 30);
    memcpy(p2, p, sizeof(p));
    for (int i = 0; i < N; i++) {
        g16[i] = zero_f32_to_f16(val(i, 31) * 1000.0f);
        g[i] = zero_f16_to_f32(g16[i]);
    }
    struct zero_adam_args a = {.lr = 1e-2f,
                               .beta1 = 0.9f,
                               .beta2 = 0.95f,
                               .eps = 1e-6f,
                               .weight_decay = 0.1f,
                               .adamw = 1,
                               .step = 3,
                               .bias_correction = 1,
                               .grad_div = 1024.0f};
    ck_assert_int_eq(be->adam(self, p, g16, ZERO_F16, m, v, N, &a, copy, ZERO_BF16), ZERO_OK);
    ck_assert_int_eq(be->adam(self, p2, g, ZERO_F32, m2, v2, N, &a, NULL, ZERO_F32), ZERO_OK);
    ck_assert(same_bits(p, p2, N) && same_bits(m, m2, N) && same_bits(v, v2, N));
    for (int i = 0; i < N; i++)
        ck_assert_uint_eq(copy[i], zero_f32_to_bf16(p[i]));
    a.step = 0;
    ck_assert_int_eq(be->adam(self, p, g16, ZERO_F16, m, v, N, &a, copy, ZERO_BF16), ZERO_EINVAL);
}
END_TEST

/* torch.optim.SGD, written out as in its documentation. */
static void sgd_ref(float *p, const float *g, float *buf, size_t n, const struct zero_sgd_args *a)
{
    for (size_t i = 0; i < n; i++) {
        float d = g[i] / a->grad_div;
        if (a->weight_decay != 0.0f)
            d = d + a->weight_decay * p[i];
        if (a->momentum != 0.0f) {
            if (a->step == 1)
                buf[i] = d;
            else
                buf[i] = a->momentum * buf[i] + (1.0f - a->dampening) * d;
            d = a->nesterov ? d + a->momentum * buf[i] : buf[i];
        }
        p[i] = p[i] - a->lr * d;
    }
}

START_TEST(test_sgd_matches_torch_semantics_over_four_steps)
{
    enum { N = 50, STEPS = 4 };
    const struct zero_sgd_args cases[] = {
        {.lr = 0.1f, .grad_div = 1.0f},
        {.lr = 0.1f, .momentum = 0.9f, .grad_div = 2.0f},
        {.lr = 0.05f, .momentum = 0.9f, .dampening = 0.3f, .weight_decay = 0.01f, .grad_div = 1.0f},
        {.lr = 0.05f, .momentum = 0.8f, .nesterov = 1, .weight_decay = 0.02f, .grad_div = 4.0f},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        float p[N], rp[N], buf[N], rbuf[N], g[N];
        fill_vals(p, N, 40);
        memcpy(rp, p, sizeof(p));
        for (int i = 0; i < N; i++)
            buf[i] = rbuf[i] = NAN; /* the first step must not read the buffer */
        struct zero_sgd_args a = cases[c];
        for (int t = 1; t <= STEPS; t++) {
            fill_vals(g, N, 200 + t);
            a.step = t;
            ck_assert_int_eq(
                be->sgd(self, p, g, ZERO_F32, a.momentum != 0 ? buf : NULL, N, &a, NULL, ZERO_F32),
                ZERO_OK);
            sgd_ref(rp, g, rbuf, N, &a);
            ck_assert_msg(same_bits(p, rp, N), "case %zu step %d", c, t);
            ck_assert(isfinite(p[0]));
        }
    }
}
END_TEST

START_TEST(test_sgd_momentum_accumulates_gradients)
{
    float p = 0.0f, buf = 0.0f, g1 = 1.0f, g2 = 2.0f;
    struct zero_sgd_args a = {.lr = 1.0f, .momentum = 0.5f, .step = 1, .grad_div = 1.0f};
    ck_assert_int_eq(be->sgd(self, &p, &g1, ZERO_F32, &buf, 1, &a, NULL, ZERO_F32), ZERO_OK);
    ck_assert(buf == 1.0f && p == -1.0f);
    a.step = 2;
    ck_assert_int_eq(be->sgd(self, &p, &g2, ZERO_F32, &buf, 1, &a, NULL, ZERO_F32), ZERO_OK);
    ck_assert(buf == 2.5f && p == -3.5f);
    a.nesterov = 1;
    a.dampening = 0.5f;
    ck_assert_int_eq(be->sgd(self, &p, &g2, ZERO_F32, &buf, 1, &a, NULL, ZERO_F32), ZERO_EINVAL);
}
END_TEST

/* ---------------------------------------------------------------- norms, non-finite */

START_TEST(test_sumsq_blocks_sums_each_block_sequentially_in_double)
{
    float x[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    double out[3] = {0};
    ck_assert_int_eq(be->sumsq_blocks(self, x, ZERO_F32, 10, 4, out), ZERO_OK);
    ck_assert(out[0] == 30.0 && out[1] == 174.0 && out[2] == 181.0);

    enum { N = 1000, B = 128 };
    float y[N];
    uint16_t h[N];
    double got[(N + B - 1) / B], got16[(N + B - 1) / B];
    fill_vals(y, N, 50);
    for (int i = 0; i < N; i++)
        h[i] = zero_f32_to_f16(y[i]);
    ck_assert_int_eq(be->sumsq_blocks(self, y, ZERO_F32, N, B, got), ZERO_OK);
    ck_assert_int_eq(be->sumsq_blocks(self, h, ZERO_F16, N, B, got16), ZERO_OK);
    for (int b = 0; b < (N + B - 1) / B; b++) {
        double want = 0.0, want16 = 0.0;
        for (int i = b * B; i < N && i < (b + 1) * B; i++) {
            want += (double)y[i] * (double)y[i];
            double hv = zero_f16_to_f32(h[i]);
            want16 += hv * hv;
        }
        ck_assert(got[b] == want && got16[b] == want16);
    }
    ck_assert_int_eq(be->sumsq_blocks(self, y, ZERO_F32, N, 0, got), ZERO_EINVAL);
}
END_TEST

/* Enough blocks for the kernels' groups of blocks summed side by side (two of the
 * AVX-512 kernel's groups of 16, then the portable loop's group of 8, a partial group
 * and a partial block after them), with blocks shorter and longer than the runs
 * 16-bit elements are widened in (256 elements, and a ragged last run) and a block
 * that is not a whole number of the AVX-512 kernel's steps of 8, under every host
 * instruction set, with infinities, NaNs (signalling ones too), subnormals and
 * values whose squares overflow among the elements: each block still equals its
 * sequential sum, bit for bit (NaN sums: both NaN). */
static int same_sum(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

START_TEST(test_sumsq_blocks_groups_of_blocks_keep_each_sequential_sum)
{
    enum { NMAX = 43 * 600 + 5 };
    static float y[NMAX];
    static uint16_t h[NMAX], bh[NMAX];
    static double got[NMAX];
    static const uint32_t specials[] = {0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001,
                                        0x00000001, 0x807fffff, 0x7f7fffff, 0x80000000};
    fill_vals(y, NMAX, 61);
    for (int i = 0; i < NMAX; i++) {
        h[i] = zero_f32_to_f16(y[i]);
        bh[i] = zero_f32_to_bf16(y[i]);
    }
    /* a special value in a few blocks only, so that most sums stay finite */
    for (int i = 0; i < NMAX; i += 997) {
        uint32_t bits = specials[(i / 997) % 8];
        memcpy(&y[i], &bits, sizeof bits);
        h[i] = (uint16_t)(0x7c00 | ((i / 997) % 3 == 0 ? 0x0001 : 0x0000)); /* sNaN, inf */
        bh[i] = (uint16_t)(bits >> 16 | (bits & 0xffff ? 1 : 0));
    }
    const void *in[3] = {y, h, bh};
    const enum zero_dtype types[3] = {ZERO_F32, ZERO_F16, ZERO_BF16};
    const char *isas[3] = {"base", "avx2", "avx512"};
    const int blocks[3] = {64, 600, 100};
    for (int isa = 0; isa < 3; isa++) {
        ck_assert_int_eq(setenv("ZERO_HOST_ISA", isas[isa], 1), 0);
        for (int s = 0; s < 3; s++) {
            const int B = blocks[s], N = 43 * B + 5, NB = (N + B - 1) / B;
            for (int k = 0; k < 3; k++) {
                ck_assert_int_eq(be->sumsq_blocks(self, in[k], types[k], (size_t)N, (size_t)B, got),
                                 ZERO_OK);
                for (int b = 0; b < NB; b++) {
                    double want = 0.0;
                    for (int i = b * B; i < N && i < (b + 1) * B; i++) {
                        double v = k == 0   ? (double)y[i]
                                   : k == 1 ? zero_f16_to_f32(h[i])
                                            : zero_bf16_to_f32(bh[i]);
                        want += v * v;
                    }
                    ck_assert_msg(same_sum(got[b], want),
                                  "%s, ZERO_HOST_ISA=%s, block %d of %d: %.17g, sequential %.17g",
                                  zero_dtype_name(types[k]), isas[isa], b, B, got[b], want);
                }
            }
        }
    }
    unsetenv("ZERO_HOST_ISA");
}
END_TEST

START_TEST(test_nonfinite_flags_inf_and_nan_in_every_float_type)
{
    float x[100];
    int flag = -1;
    fill_vals(x, 100, 60);
    x[7] = FLT_MAX;
    ck_assert_int_eq(be->nonfinite(self, x, ZERO_F32, 100, &flag), ZERO_OK);
    ck_assert_int_eq(flag, 0);
    x[63] = INFINITY;
    ck_assert_int_eq(be->nonfinite(self, x, ZERO_F32, 100, &flag), ZERO_OK);
    ck_assert_int_eq(flag, 1);
    x[63] = -NAN;
    ck_assert_int_eq(be->nonfinite(self, x, ZERO_F32, 100, &flag), ZERO_OK);
    ck_assert_int_eq(flag, 1);

    uint16_t h[3] = {0x7bff, 0xfbff, 0x0001};
    ck_assert_int_eq(be->nonfinite(self, h, ZERO_F16, 3, &flag), ZERO_OK);
    ck_assert_int_eq(flag, 0);
    h[2] = 0xfc00;
    ck_assert_int_eq(be->nonfinite(self, h, ZERO_F16, 3, &flag), ZERO_OK);
    ck_assert_int_eq(flag, 1);
    uint16_t b[2] = {0x7f7f, 0x7fc0};
    ck_assert_int_eq(be->nonfinite(self, b, ZERO_BF16, 1, &flag), ZERO_OK);
    ck_assert_int_eq(flag, 0);
    ck_assert_int_eq(be->nonfinite(self, b, ZERO_BF16, 2, &flag), ZERO_OK);
    ck_assert_int_eq(flag, 1);
    double d[2] = {DBL_MAX, NAN};
    ck_assert_int_eq(be->nonfinite(self, d, ZERO_F64, 1, &flag), ZERO_OK);
    ck_assert_int_eq(flag, 0);
    ck_assert_int_eq(be->nonfinite(self, d, ZERO_F64, 2, &flag), ZERO_OK);
    ck_assert_int_eq(flag, 1);
}
END_TEST

/* ---------------------------------------------------------------- layers */

START_TEST(test_bias_add_and_bias_grad_sum_rows_in_order)
{
    enum { R = 9, C = 300 }; /* more columns than one chunk of partial sums */
    static float y[R * C], y0[R * C], dy[R * C];
    float b[C], db[C], db0[C];
    fill_vals(y0, R * C, 70);
    fill_vals(b, C, 71);
    fill_vals(dy, R * C, 72);
    fill_vals(db0, C, 73);
    memcpy(y, y0, sizeof(y));
    ck_assert_int_eq(be->bias_add(self, y, b, R, C), ZERO_OK);
    for (int i = 0; i < R * C; i++)
        ck_assert(y[i] == y0[i] + b[i % C]);

    memcpy(db, db0, sizeof(db));
    ck_assert_int_eq(be->bias_grad(self, db, dy, R, C, 0.5f), ZERO_OK);
    for (int c = 0; c < C; c++) {
        float sum = 0.0f;
        for (int r = 0; r < R; r++)
            sum += dy[r * C + c];
        ck_assert_msg(db[c] == 0.5f * db0[c] + sum, "db[%d]", c);
    }
    for (int c = 0; c < C; c++)
        db[c] = NAN;
    ck_assert_int_eq(be->bias_grad(self, db, dy, R, C, 0.0f), ZERO_OK);
    for (int c = 0; c < C; c++) {
        float sum = 0.0f;
        for (int r = 0; r < R; r++)
            sum += dy[r * C + c];
        ck_assert(db[c] == sum);
    }
}
END_TEST

static double gelu_ref(double x, enum zero_gelu kind)
{
    if (kind == ZERO_GELU_ERF)
        return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

START_TEST(test_gelu_forward_matches_formula_and_backward_matches_central_difference)
{
    enum { N = 41 };
    float x[N], y[N], dy[N], dx[N];
    for (int i = 0; i < N; i++) {
        x[i] = -5.0f + 0.25f * (float)i;
        dy[i] = 1.0f + 0.01f * (float)i;
    }
    for (int kind = ZERO_GELU_ERF; kind <= ZERO_GELU_TANH; kind++) {
        ck_assert_int_eq(be->gelu_forward(self, y, x, N, kind), ZERO_OK);
        ck_assert_int_eq(be->gelu_backward(self, dx, x, dy, N, kind), ZERO_OK);
        for (int i = 0; i < N; i++) {
            ck_assert_msg(fabs(y[i] - gelu_ref(x[i], kind)) < 1e-6, "kind %d gelu(%g) = %g", kind,
                          (double)x[i], (double)y[i]);
            double h = 1e-4;
            double slope = (gelu_ref(x[i] + h, kind) - gelu_ref(x[i] - h, kind)) / (2 * h);
            ck_assert_msg(fabs(dx[i] - dy[i] * slope) < 1e-5,
                          "kind %d gelu'(%g) = %g, central difference %g", kind, (double)x[i],
                          (double)(dx[i] / dy[i]), slope);
        }
    }
    ck_assert(fabsf(y[N / 2 + 4] - 0.841192f) < 1e-5f); /* tanh gelu(1) */
    ck_assert_int_eq(be->gelu_forward(self, y, x, N, (enum zero_gelu)7), ZERO_EINVAL);
}
END_TEST

START_TEST(test_xent_matches_double_reference_and_is_stable_for_large_logits)
{
    enum { R = 4, C = 11 };
    float logits[R * C], probs[R * C], losses[R], dlogits[R * C];
    int32_t labels[R] = {0, 10, 3, 7};
    fill_vals(logits, R * C, 80);
    for (int c = 0; c < C; c++)
        logits[3 * C + c] = 1000.0f + (float)c; /* exp would overflow without the max shift */
    ck_assert_int_eq(be->xent_forward(self, losses, probs, logits, labels, R, C), ZERO_OK);
    for (int r = 0; r < R; r++) {
        double max = -INFINITY, sum = 0.0, total = 0.0;
        for (int c = 0; c < C; c++)
            max = fmax(max, logits[r * C + c]);
        for (int c = 0; c < C; c++)
            sum += exp((double)logits[r * C + c] - max);
        double loss = log(sum) + max - logits[r * C + labels[r]];
        ck_assert_msg(fabs(losses[r] - loss) < 1e-5 * fmax(1.0, loss), "row %d loss %g want %g", r,
                      (double)losses[r], loss);
        for (int c = 0; c < C; c++) {
            double p = exp((double)logits[r * C + c] - max) / sum;
            ck_assert(fabs(probs[r * C + c] - p) < 1e-6);
            total += probs[r * C + c];
        }
        ck_assert(fabs(total - 1.0) < 1e-5);
    }
    ck_assert_int_eq(be->xent_backward(self, dlogits, probs, labels, R, C, 0.25f), ZERO_OK);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            float want = (probs[r * C + c] - (c == labels[r] ? 1.0f : 0.0f)) * 0.25f;
            ck_assert(dlogits[r * C + c] == want);
        }
}
END_TEST

START_TEST(test_xent_rejects_out_of_range_label_naming_row_and_label)
{
    float logits[3 * 5] = {0}, probs[3 * 5], losses[3] = {-1, -1, -1}, d[3 * 5];
    int32_t labels[3] = {0, 4, 7};
    ck_assert_int_eq(be->xent_forward(self, losses, probs, logits, labels, 3, 5), ZERO_EINVAL);
    const char *msg = be->last_error(self);
    ck_assert_msg(strstr(msg, "row 2") && strstr(msg, "label 7"), "message: %s", msg);
    ck_assert(losses[0] == -1.0f); /* nothing written */
    labels[2] = 0;
    labels[1] = -1;
    ck_assert_int_eq(be->xent_backward(self, d, probs, labels, 3, 5, 1.0f), ZERO_EINVAL);
    msg = be->last_error(self);
    ck_assert_msg(strstr(msg, "row 1") && strstr(msg, "label -1"), "message: %s", msg);
}
END_TEST

/* The cpu's fused classifier is the reference cuda's exact mode matches: fp32, in place
 * and into its own buffer, the bits of xent_forward then xent_backward; bf16, the bits of
 * the logits widened (cast), the two entries, and dlogits rounded once (cast). Rows of a
 * large vocabulary (the 50k sums in double), a label at each end, large logits, and
 * -inf/+big entries; the bf16 case checks the rounding was not skipped (its dlogits are
 * not all bf16 values of the fp32 result truncated). */
START_TEST(test_xent_fused_gives_the_bits_of_forward_then_backward_in_fp32_and_bf16)
{
    enum { R = 5, C = 50257 };
    const size_t n = (size_t)R * C;
    float *z = malloc(n * 4), *p = malloc(n * 4), *want = malloc(n * 4), *d = malloc(n * 4);
    float *wide = malloc(n * 4);
    uint16_t *zb = malloc(n * 2), *db = malloc(n * 2), *wantb = malloc(n * 2);
    ck_assert(z && p && want && d && wide && zb && db && wantb);
    int32_t labels[R] = {0, C - 1, 777, 31337, 5};
    fill_vals(z, n, 90);
    for (size_t i = 0; i < n; i++)
        z[i] *= 12.0f;
    for (int c = 0; c < C; c += 97)
        z[3 * C + c] = 1000.0f + (float)(c % 7); /* exp would overflow without the max */
    z[4 * C + 9] = -INFINITY;                    /* probability exactly 0 */
    const float dloss = 0.0625f;
    float want_loss[R], loss[R];
    ck_assert_int_eq(be->xent_forward(self, want_loss, p, z, labels, R, C), ZERO_OK);
    ck_assert_int_eq(be->xent_backward(self, want, p, labels, R, C, dloss), ZERO_OK);
    for (int in_place = 0; in_place < 2; in_place++) {
        memcpy(d, z, n * 4);
        if (!in_place)
            for (size_t i = 0; i < n; i++)
                d[i] = NAN; /* garbage: a skipped element fails */
        float *zin = in_place ? d : z;
        ck_assert_int_eq(
            be->classifier->xent_fused(self, loss, d, zin, ZERO_F32, labels, R, C, dloss), ZERO_OK);
        ck_assert_msg(same_bits(d, want, n), "fp32 dlogits (in place %d)", in_place);
        ck_assert_msg(same_bits(loss, want_loss, R), "fp32 loss (in place %d)", in_place);
    }
    /* bf16: the definition written out with the plain entries */
    ck_assert_int_eq(be->cast(self, zb, ZERO_BF16, z, ZERO_F32, n), ZERO_OK);
    ck_assert_int_eq(be->cast(self, wide, ZERO_F32, zb, ZERO_BF16, n), ZERO_OK);
    ck_assert_int_eq(be->xent_forward(self, want_loss, p, wide, labels, R, C), ZERO_OK);
    ck_assert_int_eq(be->xent_backward(self, want, p, labels, R, C, dloss), ZERO_OK);
    ck_assert_int_eq(be->cast(self, wantb, ZERO_BF16, want, ZERO_F32, n), ZERO_OK);
    int rounded_up = 0;
    for (size_t i = 0; i < n; i++) { /* the rounding acts: some dlogit rounds away from 0 */
        uint32_t bits;
        memcpy(&bits, &want[i], 4);
        rounded_up += wantb[i] != (uint16_t)(bits >> 16);
    }
    ck_assert(rounded_up > 0);
    for (int in_place = 0; in_place < 2; in_place++) {
        memcpy(db, zb, n * 2);
        if (!in_place)
            memset(db, 0xff, n * 2);
        const void *zin = in_place ? (const void *)db : (const void *)zb;
        ck_assert_int_eq(
            be->classifier->xent_fused(self, loss, db, zin, ZERO_BF16, labels, R, C, dloss),
            ZERO_OK);
        ck_assert_msg(memcmp(db, wantb, n * 2) == 0, "bf16 dlogits (in place %d)", in_place);
        ck_assert_msg(same_bits(loss, want_loss, R), "bf16 loss (in place %d)", in_place);
    }
    free(z), free(p), free(want), free(d), free(wide), free(zb), free(db), free(wantb);
}
END_TEST

START_TEST(test_xent_fused_checks_labels_dtype_and_overlap_before_writing)
{
    float z[3 * 5] = {0}, losses[3] = {-1, -1, -1};
    int32_t labels[3] = {0, 4, 7};
    ck_assert_int_eq(be->classifier->xent_fused(self, losses, z, z, ZERO_F32, labels, 3, 5, 1.0f),
                     ZERO_EINVAL);
    const char *msg = be->last_error(self);
    ck_assert_msg(strstr(msg, "xent_fused") && strstr(msg, "row 2") && strstr(msg, "label 7"),
                  "message: %s", msg);
    ck_assert(losses[0] == -1.0f && z[0] == 0.0f); /* nothing written */
    labels[2] = 1;
    ck_assert_int_eq(be->classifier->xent_fused(self, losses, z, z, ZERO_F16, labels, 3, 5, 1.0f),
                     ZERO_ENOTSUP);
    ck_assert_int_eq(
        be->classifier->xent_fused(self, losses, z + 1, z, ZERO_F32, labels, 3, 4, 1.0f),
        ZERO_EINVAL);
    ck_assert_msg(strstr(be->last_error(self), "overlaps"), "%s", be->last_error(self));
}
END_TEST

/* ---------------------------------------------------------------- attention */

/* dst (n) = src rounded to t (fp16 or bf16), as fp32 values; dst may be src */
static void round_vals(float *dst, const float *src, size_t n, enum zero_dtype t)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = t == ZERO_BF16 ? zero_bf16_to_f32(zero_f32_to_bf16(src[i]))
                                : zero_f16_to_f32(zero_f32_to_f16(src[i]));
}

/* ds (T, T) in place of datt: att * (datt - rowsum(att * datt)), zeros above the
 * diagonal; the backend's float operations in its order (the build compiles with
 * -ffp-contract=off, so both give the same bits) */
static void softmax_backward_ref(float *d, const float *a, int T)
{
    for (int i = 0; i < T; i++) {
        float dot = 0.0f;
        for (int j = 0; j <= i; j++)
            dot += a[i * T + j] * d[i * T + j];
        for (int j = 0; j < T; j++)
            d[i * T + j] = j <= i ? a[i * T + j] * (d[i * T + j] - dot) : 0.0f;
    }
}

/* fp16/bf16 attention = the fp32 arithmetic on operands rounded first: the fp32 entry on
 * rounded q, k gives the same att; y, dv, dq and dk equal fp32 gemm calls (the same
 * sgemm, so bit for bit) on rounded att, v, dy, ds, k, q, with ds formed from the fp32
 * datt and att. The operand copies are workspace and given back. */
START_TEST(test_attention_in_bf16_and_fp16_equals_fp32_products_of_rounded_operands)
{
    enum { B = 2, T = 9, C = 24, NH = 3, HS = C / NH, C3 = 3 * C, NQ = B * T * C3 };
    enum { NY = B * T * C, NA = B * NH * T * T };
    float qkv[NQ], qkv_r[NQ], dy[NY], dy_r[NY], y[NY], y_ref[NY], y32[NY];
    float att[NA], att_ref[NA], scratch[NA], dqkv[NQ], dqkv_ref[NQ], a_r[T * T], ds[T * T];
    const float scale = 1.0f / sqrtf((float)HS);
    const enum zero_dtype types[2] = {ZERO_BF16, ZERO_F16};
    fill_vals(qkv, NQ, 90);
    fill_vals(dy, NY, 91);
    ck_assert_int_eq(be->attention_forward(self, y32, att_ref, qkv, B, T, C, NH, ZERO_F32),
                     ZERO_OK);
    for (int ti = 0; ti < 2; ti++) {
        const enum zero_dtype t = types[ti];
        const char *tn = zero_dtype_name(t);
        round_vals(qkv_r, qkv, NQ, t);
        round_vals(dy_r, dy, NY, t);
        const int64_t ws_before = dev->ledger.current[ZERO_TAG_WORKSPACE];

        ck_assert_int_eq(be->attention_forward(self, y, att, qkv, B, T, C, NH, t), ZERO_OK);
        ck_assert_int_eq(be->attention_forward(self, y_ref, att_ref, qkv_r, B, T, C, NH, ZERO_F32),
                         ZERO_OK);
        ck_assert_msg(same_bits(att, att_ref, NA), "%s: att differs from fp32 on rounded q, k", tn);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                round_vals(a_r, att + (b * NH + h) * T * T, T * T, t);
                /* y_h (T, hs) = att_r (T, T) v_r (T, hs) */
                ck_assert_int_eq(be->gemm(self, 0, 0, T, HS, T, 1.0f, a_r, ZERO_F32, T,
                                          qkv_r + b * T * C3 + 2 * C + h * HS, ZERO_F32, C3, 0.0f,
                                          y_ref + b * T * C + h * HS, ZERO_F32, C),
                                 ZERO_OK);
            }
        ck_assert_msg(same_bits(y, y_ref, NY), "%s: y", tn);
        ck_assert_msg(!same_bits(y, y32, NY), "%s: y equals the fp32 attention's", tn);

        ck_assert_int_eq(be->attention_backward(self, dqkv, scratch, dy, qkv, att, B, T, C, NH, t),
                         ZERO_OK);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                const float *q = qkv_r + b * T * C3 + h * HS, *k = q + C, *v = q + 2 * C;
                const float *dyh = dy_r + b * T * C + h * HS, *a = att + (b * NH + h) * T * T;
                float *dq = dqkv_ref + b * T * C3 + h * HS, *dk = dq + C, *dv = dq + 2 * C;
                round_vals(a_r, a, T * T, t);
                /* datt = dy_h v^T; dv = att^T dy_h; ds; dq = ds k * scale; dk = ds^T q * scale */
                ck_assert_int_eq(be->gemm(self, 0, 1, T, T, HS, 1.0f, dyh, ZERO_F32, C, v, ZERO_F32,
                                          C3, 0.0f, ds, ZERO_F32, T),
                                 ZERO_OK);
                ck_assert_int_eq(be->gemm(self, 1, 0, T, HS, T, 1.0f, a_r, ZERO_F32, T, dyh,
                                          ZERO_F32, C, 0.0f, dv, ZERO_F32, C3),
                                 ZERO_OK);
                softmax_backward_ref(ds, a, T);
                round_vals(ds, ds, T * T, t);
                ck_assert_int_eq(be->gemm(self, 0, 0, T, HS, T, scale, ds, ZERO_F32, T, k, ZERO_F32,
                                          C3, 0.0f, dq, ZERO_F32, C3),
                                 ZERO_OK);
                ck_assert_int_eq(be->gemm(self, 1, 0, T, HS, T, scale, ds, ZERO_F32, T, q, ZERO_F32,
                                          C3, 0.0f, dk, ZERO_F32, C3),
                                 ZERO_OK);
            }
        for (int i = 0; i < NQ; i++)
            ck_assert_msg(same_bits(&dqkv[i], &dqkv_ref[i], 1), "%s: dqkv[%d] = %.9g, want %.9g",
                          tn, i, (double)dqkv[i], (double)dqkv_ref[i]);
        ck_assert_int_eq(dev->ledger.current[ZERO_TAG_WORKSPACE], ws_before);
    }
}
END_TEST

START_TEST(test_attention_rejects_an_unsupported_matmul_type_naming_the_entry)
{
    enum { B = 1, T = 2, C = 4, NH = 2 };
    float qkv[B * T * 3 * C] = {0}, y[B * T * C], att[B * NH * T * T], dy[B * T * C] = {0};
    float dqkv[B * T * 3 * C], scratch[B * NH * T * T];
    ck_assert_int_eq(be->attention_forward(self, y, att, qkv, B, T, C, NH, ZERO_I32), ZERO_ENOTSUP);
    const char *msg = be->last_error(self);
    ck_assert_msg(strstr(msg, "attention_forward") && strstr(msg, "int32"), "message: %s", msg);
    ck_assert_int_eq(
        be->attention_backward(self, dqkv, scratch, dy, qkv, att, B, T, C, NH, ZERO_F64),
        ZERO_ENOTSUP);
    msg = be->last_error(self);
    ck_assert_msg(strstr(msg, "attention_backward") && strstr(msg, "fp64"), "message: %s", msg);
}
END_TEST

static Suite *kernels_suite(void)
{
    Suite *s = suite_create("cpu kernels");
    TCase *blas = tcase_create("gemm");
    tcase_add_test(blas, test_gemm_matches_naive_loop_for_all_transposes_with_padded_ld);
    tcase_add_test(blas, test_gemm_beta_zero_ignores_nan_in_c);
    tcase_add_test(blas, test_bf16_dot_switch_selects_the_contract_for_bf16_gemms);
    tcase_add_test(blas, test_gemm_with_empty_inner_dimension_scales_c_by_beta);
    tcase_add_test(blas, test_gemm_half_operands_equal_fp32_gemm_of_converted_values);
    tcase_add_test(blas, test_gemm_16bit_c_with_beta_zero_is_the_fp32_result_rounded_once);
    tcase_add_test(blas, test_gemm_rejects_short_leading_dimension_naming_it);
    suite_add_tcase(s, blas);

    TCase *elem = tcase_create("elementwise");
    tcase_add_test(elem, test_cast_between_float_types_matches_scalar_conversions);
    tcase_add_test(elem, test_axpy_scale_add_compute_elementwise);
    tcase_add_test(elem, test_sumsq_blocks_sums_each_block_sequentially_in_double);
    tcase_add_test(elem, test_sumsq_blocks_groups_of_blocks_keep_each_sequential_sum);
    tcase_add_test(elem, test_nonfinite_flags_inf_and_nan_in_every_float_type);
    suite_add_tcase(s, elem);

    TCase *opt = tcase_create("optimizers");
    tcase_add_test(opt, test_adamw_matches_scalar_reference_bit_exact_over_five_steps);
    tcase_add_test(opt, test_adam_l2_matches_scalar_reference_bit_exact_over_five_steps);
    tcase_add_test(opt, test_adam_first_step_moves_each_param_by_lr);
    tcase_add_test(opt, test_adam_half_gradients_and_param_copy);
    tcase_add_test(opt, test_sgd_matches_torch_semantics_over_four_steps);
    tcase_add_test(opt, test_sgd_momentum_accumulates_gradients);
    suite_add_tcase(s, opt);

    TCase *layers = tcase_create("layers");
    tcase_add_test(layers, test_bias_add_and_bias_grad_sum_rows_in_order);
    tcase_add_test(layers,
                   test_gelu_forward_matches_formula_and_backward_matches_central_difference);
    tcase_add_test(layers, test_xent_matches_double_reference_and_is_stable_for_large_logits);
    tcase_add_test(layers, test_xent_rejects_out_of_range_label_naming_row_and_label);
    tcase_add_test(layers,
                   test_xent_fused_gives_the_bits_of_forward_then_backward_in_fp32_and_bf16);
    tcase_add_test(layers, test_xent_fused_checks_labels_dtype_and_overlap_before_writing);
    tcase_add_test(layers,
                   test_attention_in_bf16_and_fp16_equals_fp32_products_of_rounded_operands);
    tcase_add_test(layers, test_attention_rejects_an_unsupported_matmul_type_naming_the_entry);
    suite_add_tcase(s, layers);
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct zero_error err = {0};
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    MPI_Comm world = MPI_COMM_WORLD;
    if (zero_device_open(&dev, "cpu", &world, &opt, &err) != ZERO_OK) {
        fprintf(stderr, "test_kernels: %s\n", err.msg);
        MPI_Finalize();
        return EXIT_FAILURE;
    }
    be = dev->be;
    self = dev->self;

    SRunner *sr = srunner_create(kernels_suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);

    zero_device_close(dev);
    MPI_Finalize();
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

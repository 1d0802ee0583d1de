/* backends/cpu/cpu_exact_vec.h: every variant (AVX2, AVX-512; forced one at a time) gives
 * src/base/exact_math.h's scalar bits for erff, expf and tanhf on a dense sample of all
 * 2^32 floats and on every float near each branch point of the scalar functions (their
 * piece boundaries, overflow and underflow limits, zero and the subnormals, infinity,
 * NaN payloads): the floats, and the doubles before their rounding, which show a slip
 * in a double's last bit that the float almost always hides. And the cpu backend's
 * GELU kernels and softmax cross-entropy, under each ZERO_HOST_ISA, give the bits of the
 * one-element loops they replaced, on odd lengths. bench/exact_vec_bits compares all 2^32 floats
 * (minutes). */
#include <check.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_exact_vec.h"
#include "base/exact_math.h"
#include "zero/backend.h"
#include "zero/error.h"

static struct zero_device *dev;

/* ck_assert_msg for loops over millions of elements: Check marks every passing
 * assertion's place, which costs more than the comparison */
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg(__VA_ARGS__);                                                             \
    } while (0)

/* The doubles the scalar functions round to float (exact_math.h's branches, without the
 * last cast): what the variants' wide entries must give bit for bit. */
static double expf_wide(float x)
{
    if (x != x)
        return (double)x;
    if (x > 89.0f)
        return exact_from_bits(EXACT_INF_BITS);
    if (x < -104.0f)
        return 0.0;
    return exact_exp_for_float((double)x);
}

static double erff_wide(float x)
{
    double xd = (double)x, ax = xd < 0.0 ? -xd : xd;
    if (x != x)
        return xd;
    if (ax < 0.5)
        return xd * exact_erf_small(xd * xd);
    double r = exact_erf_piece(ax);
    return xd < 0.0 ? -r : r;
}

static double tanhf_wide(float x)
{
    double xd = (double)x, ax = xd < 0.0 ? -xd : xd;
    if (x != x)
        return xd;
    if (ax <= 0.5625)
        return xd * exact_tanh_small(xd * xd);
    double r = ax < 10.0 ? 1.0 - 2.0 / (exact_exp_for_float(2.0 * ax) + 1.0) : 1.0;
    return xd < 0.0 ? -r : r;
}

struct fn {
    const char *name;
    float (*scalar)(float);
    void (*array)(enum zero_host_isa, float *, const float *, size_t);
    double (*scalar_wide)(float);
    void (*array_wide)(enum zero_host_isa, double *, const float *, size_t);
    float boundaries[16]; /* where the scalar function branches (0-terminated after the first) */
};

static const struct fn fns[] = {
    {"expf",
     exact_expf,
     cpu_exact_expf_n,
     expf_wide,
     cpu_exact_expf_wide_n,
     {0.0f, 89.0f, -104.0f, 0x1.62e42ep6f, -0x1.9fe368p6f}},
    {"erff",
     exact_erff,
     cpu_exact_erff_n,
     erff_wide,
     cpu_exact_erff_wide_n,
     {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 3.92f}},
    {"tanhf",
     exact_tanhf,
     cpu_exact_tanhf_n,
     tanhf_wide,
     cpu_exact_tanhf_wide_n,
     {0.0f, 0.5625f, 10.0f, 9.01f}},
};
#define NFNS (sizeof fns / sizeof fns[0])

/* Inputs, as bit patterns: every SAMPLE_STRIDE-th float (a dense sample of the whole
 * line, NaNs included), and WINDOW floats on each side of each boundary and of each
 * sign's 0, FLT_MIN, FLT_MAX, infinity and first NaNs. */
#define SAMPLE_STRIDE 509u
#define WINDOW 4096u

static size_t add_window(uint32_t *bits, size_t n, uint32_t center)
{
    for (uint32_t d = 0; d <= 2 * WINDOW; d++)
        bits[n++] = center - WINDOW + d;
    return n;
}

static uint32_t *inputs(const struct fn *f, size_t *count)
{
    const size_t max = ((size_t)1 << 32) / SAMPLE_STRIDE + 2 + 64 * (2 * WINDOW + 1);
    uint32_t *bits = malloc(max * sizeof *bits);
    ck_assert_ptr_nonnull(bits);
    size_t n = 0;
    for (uint64_t b = 0; b < ((uint64_t)1 << 32); b += SAMPLE_STRIDE)
        bits[n++] = (uint32_t)b;
    const uint32_t edges[] = {WINDOW, 0x00800000u, 0x7f7fffffu, 0x7f800000u, 0x7f800000u + WINDOW};
    for (uint32_t sign = 0; sign < 2; sign++) {
        for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
            n = add_window(bits, n, edges[i] | sign << 31);
        for (size_t i = 0; i < 16 && (i == 0 || f->boundaries[i] != 0.0f); i++)
            n = add_window(bits, n, exact_f32_bits(f->boundaries[i]) ^ sign << 31);
    }
    ck_assert_uint_le(n, max);
    *count = n;
    return bits;
}

/* cut into blocks of odd lengths, so that every variant's tail runs too */
#define BLOCK 4093

START_TEST(test_every_variant_gives_the_scalar_bits_near_every_branch_and_on_a_dense_sample)
{
    int variants = 0;
    for (size_t k = 0; k < NFNS; k++) {
        const struct fn *f = &fns[k];
        size_t n;
        uint32_t *bits = inputs(f, &n);
        float *x = malloc(n * sizeof *x), *want = malloc(n * sizeof *want),
              *got = malloc(n * sizeof *got);
        ck_assert(x && want && got);
        memcpy(x, bits, n * sizeof *x);
        for (size_t i = 0; i < n; i++)
            want[i] = f->scalar(x[i]);
        double *want_wide = malloc(n * sizeof *want_wide), *got_wide = malloc(n * sizeof *got_wide);
        ck_assert(want_wide && got_wide);
        for (size_t i = 0; i < n; i++)
            want_wide[i] = f->scalar_wide(x[i]);
        for (int isa = ZERO_ISA_BASE; isa < ZERO_ISA_COUNT; isa++) {
            if (!zero_host_isa_supported((enum zero_host_isa)isa))
                continue;
            variants += isa != ZERO_ISA_BASE;
            /* the doubles before the rounding: a last-bit slip shows here */
            const size_t lanes = cpu_exact_wide_lanes((enum zero_host_isa)isa);
            const size_t whole = lanes > 0 ? n / lanes * lanes : 0;
            f->array_wide((enum zero_host_isa)isa, got_wide, x, whole);
            for (size_t i = 0; i < whole; i++)
                EXPECT(exact_bits(got_wide[i]) == exact_bits(want_wide[i]),
                       "%s, %s: x = %a (0x%08x): the double %a (0x%016llx), the scalar "
                       "function's %a (0x%016llx)",
                       f->name, zero_host_isa_name((enum zero_host_isa)isa), (double)x[i], bits[i],
                       got_wide[i], (unsigned long long)exact_bits(got_wide[i]), want_wide[i],
                       (unsigned long long)exact_bits(want_wide[i]));
            /* the floats, in blocks with tails */
            memset(got, 0xa5, n * sizeof *got);
            for (size_t i = 0; i < n; i += BLOCK)
                f->array((enum zero_host_isa)isa, got + i, x + i, n - i < BLOCK ? n - i : BLOCK);
            for (size_t i = 0; i < n; i++)
                EXPECT(exact_f32_bits(got[i]) == exact_f32_bits(want[i]),
                       "%s, %s: x = %a (0x%08x): 0x%08x, the scalar function 0x%08x", f->name,
                       zero_host_isa_name((enum zero_host_isa)isa), (double)x[i], bits[i],
                       exact_f32_bits(got[i]), exact_f32_bits(want[i]));
        }
        free(want_wide);
        free(got_wide);
        free(bits);
        free(x);
        free(want);
        free(got);
    }
    if (variants == 0)
        printf("test_exact_vec: no vector variant on this processor or build; base only\n");
}
END_TEST

START_TEST(test_a_variant_may_write_over_its_input_and_short_arrays_are_whole)
{
    for (int isa = ZERO_ISA_BASE; isa < ZERO_ISA_COUNT; isa++) {
        if (!zero_host_isa_supported((enum zero_host_isa)isa))
            continue;
        for (size_t k = 0; k < NFNS; k++)
            for (size_t n = 0; n <= 19; n++) {
                float x[19], y[19 + 1];
                for (size_t i = 0; i < n; i++)
                    x[i] = (float)i * 0.37f - 3.1f;
                y[n] = 42.0f;
                memcpy(y, x, n * sizeof *x);
                fns[k].array((enum zero_host_isa)isa, y, y, n);
                for (size_t i = 0; i < n; i++)
                    EXPECT(exact_f32_bits(y[i]) == exact_f32_bits(fns[k].scalar(x[i])),
                           "%s, %s, n = %zu: element %zu", fns[k].name,
                           zero_host_isa_name((enum zero_host_isa)isa), n, i);
                ck_assert_msg(y[n] == 42.0f, "%s wrote past n = %zu", fns[k].name, n);
            }
    }
}
END_TEST

/* ---------------------------------------------------------------- GELU kernels */

/* The kernels before vectorization, one element at a time: the reference. */
#define INV_SQRT2 0.70710678118654752440f
#define INV_SQRT_2PI 0.39894228040143267794f
#define TANH_SCALE 0.79788456080286535588f
#define TANH_CUBIC 0.044715f

static float gelu_one(float v, enum zero_gelu kind)
{
    if (kind == ZERO_GELU_ERF)
        return 0.5f * v * (1.0f + exact_erff(v * INV_SQRT2));
    float u = TANH_SCALE * (v + TANH_CUBIC * v * v * v);
    return 0.5f * v * (1.0f + exact_tanhf(u));
}

static float dgelu_one(float v, float dy, enum zero_gelu kind)
{
    if (kind == ZERO_GELU_ERF) {
        float cdf = 0.5f * (1.0f + exact_erff(v * INV_SQRT2));
        float pdf = exact_expf(-0.5f * v * v) * INV_SQRT_2PI;
        return dy * (cdf + v * pdf);
    }
    float u = TANH_SCALE * (v + TANH_CUBIC * v * v * v);
    float t = exact_tanhf(u);
    float du = TANH_SCALE * (1.0f + 3.0f * TANH_CUBIC * v * v);
    return dy * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
}

/* deterministic values: roughly normal with spread `scale`, and a special value at
 * every 97th element (NaN, infinities, zeros, a subnormal, the branch points) */
static float value(uint32_t i, uint32_t seed, float scale)
{
    static const uint32_t specials[] = {0x7fc00000u, 0xffc12345u, 0x7f800000u, 0xff800000u,
                                        0x00000000u, 0x80000000u, 0x00000001u, 0x80400000u,
                                        0x40800000u, 0xc07fffffu, 0x41200000u, 0x42b20000u};
    uint32_t h = i * 2654435761u ^ seed * 2246822519u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    if (i % 97 == 13)
        return exact_f32_from_bits(specials[h % (sizeof specials / sizeof specials[0])]);
    float u = 0.0f; /* Irwin-Hall: a sum of four uniforms */
    for (int k = 0; k < 4; k++, h = h * 1664525u + 1013904223u)
        u += (float)(h >> 8) / 16777216.0f;
    return (u - 2.0f) * scale;
}

static const char *const isa_env[] = {"base", "avx2", "avx512"};

/* The same bits, or both NaN: where two different NaNs meet in a product (dy NaN times
 * a NaN gelu'), which payload the result keeps is the instruction's operand order, and
 * the compiler may swap a product's operands (the sanitizer build does) */
static int same_or_both_nan(float a, float b)
{
    return exact_f32_bits(a) == exact_f32_bits(b) || (a != a && b != b);
}

START_TEST(test_gelu_kernels_give_the_one_element_loops_bits_under_every_variant)
{
    const struct zero_backend *be = dev->be;
    static const size_t lengths[] = {1, 7, 9, 511, 512, 513, 1031, 65536 + 13};
    const size_t nmax = 65536 + 13;
    float *x = malloc(nmax * sizeof *x), *dy = malloc(nmax * sizeof *dy),
          *y = malloc(nmax * sizeof *y), *dx = malloc(nmax * sizeof *dx);
    ck_assert(x && dy && y && dx);
    for (int isa = 0; isa < ZERO_ISA_COUNT; isa++) {
        if (!zero_host_isa_supported((enum zero_host_isa)isa))
            continue;
        ck_assert_int_eq(setenv("ZERO_HOST_ISA", isa_env[isa], 1), 0);
        ck_assert_int_eq(zero_host_isa_best(), isa);
        for (int kind = ZERO_GELU_ERF; kind <= ZERO_GELU_TANH; kind++)
            for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
                const size_t n = lengths[l];
                for (size_t i = 0; i < n; i++) {
                    x[i] = value((uint32_t)i, (uint32_t)(l + 1), 2.5f);
                    dy[i] = value((uint32_t)i, (uint32_t)(l + 100), 0.1f);
                }
                ck_assert_int_eq(be->gelu_forward(dev->self, y, x, n, (enum zero_gelu)kind),
                                 ZERO_OK);
                ck_assert_int_eq(be->gelu_backward(dev->self, dx, x, dy, n, (enum zero_gelu)kind),
                                 ZERO_OK);
                for (size_t i = 0; i < n; i++) {
                    float g = gelu_one(x[i], (enum zero_gelu)kind);
                    float d = dgelu_one(x[i], dy[i], (enum zero_gelu)kind);
                    EXPECT(exact_f32_bits(y[i]) == exact_f32_bits(g),
                           "%s, gelu kind %d, n %zu: gelu(%a) = %a, the loop %a", isa_env[isa],
                           kind, n, (double)x[i], (double)y[i], (double)g);
                    EXPECT(same_or_both_nan(dx[i], d),
                           "%s, gelu kind %d, n %zu: gelu'(%a) dy %a = %a, the loop %a",
                           isa_env[isa], kind, n, (double)x[i], (double)dy[i], (double)dx[i],
                           (double)d);
                }
                /* in place, as mlp_block calls it: dx = dy */
                memcpy(dx, dy, n * sizeof *dx);
                ck_assert_int_eq(be->gelu_backward(dev->self, dx, x, dx, n, (enum zero_gelu)kind),
                                 ZERO_OK);
                for (size_t i = 0; i < n; i++)
                    EXPECT(same_or_both_nan(dx[i], dgelu_one(x[i], dy[i], (enum zero_gelu)kind)),
                           "%s, gelu kind %d, n %zu, in place: element %zu", isa_env[isa], kind, n,
                           i);
            }
    }
    unsetenv("ZERO_HOST_ISA");
    free(x);
    free(dy);
    free(y);
    free(dx);
}
END_TEST

/* softmax cross-entropy forward: the exps vectorized, the double sum still in class order */
START_TEST(test_xent_forward_gives_the_one_element_loops_bits_under_every_variant)
{
    const struct zero_backend *be = dev->be;
    enum { ROWS = 3, CLASSES = 50257 }; /* GPT-2's vocabulary: an odd row length */
    float *logits = malloc(ROWS * CLASSES * sizeof *logits),
          *probs = malloc(ROWS * CLASSES * sizeof *probs), *want = malloc(CLASSES * sizeof *want);
    ck_assert(logits && probs && want);
    int32_t labels[ROWS] = {0, 17, CLASSES - 1};
    float losses[ROWS];
    for (size_t i = 0; i < (size_t)ROWS * CLASSES; i++)
        logits[i] = value((uint32_t)i, 7u, 4.0f);
    for (size_t i = 0; i < (size_t)ROWS * CLASSES; i++)
        if (logits[i] != logits[i] || logits[i] - logits[i] != 0.0f)
            logits[i] = 1.5f; /* finite logits: a softmax of inf or NaN is NaN throughout */
    for (int isa = 0; isa < ZERO_ISA_COUNT; isa++) {
        if (!zero_host_isa_supported((enum zero_host_isa)isa))
            continue;
        ck_assert_int_eq(setenv("ZERO_HOST_ISA", isa_env[isa], 1), 0);
        ck_assert_int_eq(be->xent_forward(dev->self, losses, probs, logits, labels, ROWS, CLASSES),
                         ZERO_OK);
        for (int r = 0; r < ROWS; r++) {
            const float *z = logits + (size_t)r * CLASSES;
            float max = z[0];
            for (int c = 1; c < CLASSES; c++)
                max = z[c] > max ? z[c] : max;
            double sum = 0.0;
            for (int c = 0; c < CLASSES; c++) {
                want[c] = exact_expf(z[c] - max);
                sum += want[c];
            }
            float inv_sum = (float)(1.0 / sum);
            for (int c = 0; c < CLASSES; c++)
                EXPECT(exact_f32_bits(probs[(size_t)r * CLASSES + c]) ==
                           exact_f32_bits(want[c] * inv_sum),
                       "%s: row %d, class %d: prob %a, the loop %a", isa_env[isa], r, c,
                       (double)probs[(size_t)r * CLASSES + c], (double)(want[c] * inv_sum));
            float loss = (float)(exact_log(sum) - (double)(z[labels[r]] - max));
            ck_assert_msg(exact_f32_bits(losses[r]) == exact_f32_bits(loss),
                          "%s: row %d: loss %a, the loop %a", isa_env[isa], r, (double)losses[r],
                          (double)loss);
        }
    }
    unsetenv("ZERO_HOST_ISA");
    free(logits);
    free(probs);
    free(want);
}
END_TEST

static Suite *exact_vec_suite(void)
{
    Suite *s = suite_create("exact_vec");
    TCase *tc = tcase_create("variants");
    tcase_set_timeout(tc, 300);
    tcase_add_test(
        tc, test_every_variant_gives_the_scalar_bits_near_every_branch_and_on_a_dense_sample);
    tcase_add_test(tc, test_a_variant_may_write_over_its_input_and_short_arrays_are_whole);
    tcase_add_test(tc, test_gelu_kernels_give_the_one_element_loops_bits_under_every_variant);
    tcase_add_test(tc, test_xent_forward_gives_the_one_element_loops_bits_under_every_variant);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct zero_error err = {0};
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    MPI_Comm world = MPI_COMM_WORLD;
    if (zero_device_open(&dev, "cpu", &world, &opt, &err) != ZERO_OK) {
        fprintf(stderr, "test_exact_vec: %s\n", err.msg);
        MPI_Finalize();
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(exact_vec_suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    zero_device_close(dev);
    MPI_Finalize();
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* src/base/exact_math.h: the accuracy it states against libm's long double functions, the
 * IEEE special cases, and pinned hashes of its outputs, so that a change of the
 * algorithm that changes a result shows here before it changes a training run's bits. The hashes
 * are values of exact_math.h alone, the same on every machine (tests/aarch64/run.sh compares them
 * across architectures); they do not depend on BLAS or the CPU's vector width. */
#include <check.h>
#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "exact_math_ref.h"

/* The bounds docs/exactness.md states, with the exhaustive sweep's measurement
 * (bench/math_ulp) below them: float functions within 0.5001 ulp of the exact value
 * (correctly rounded but for rare cases near a midpoint), double ones within 1 ulp. */
#define F32_BOUND_ULP 0.5001
#define F64_BOUND_ULP 1.0
#define POWI_BOUND_ULP 0.5001 /* results above 2^-960 */
#define F64_SAMPLES 200000

static double sample_max_error(const struct exact_ref_f32 *f, uint32_t *where)
{
    double worst = 0.0;
    for (uint32_t i = 0; i < EXACT_SAMPLE_COUNT; i++) {
        float x = exact_ref_f32_of(exact_sample_bits(i));
        double err = exact_ulp_error_f32(f->fn(x), f->ref((long double)x));
        if (err > worst) {
            worst = err;
            *where = exact_sample_bits(i);
        }
    }
    return worst;
}

START_TEST(test_float_functions_are_within_their_bound_on_the_dense_sample)
{
    for (size_t k = 0; k < EXACT_REF_F32_COUNT; k++) {
        uint32_t where = 0;
        double err = sample_max_error(&exact_ref_f32_fns[k], &where);
        ck_assert_msg(err <= F32_BOUND_ULP, "%s: %.6f ulp at %a (0x%08x), bound %.4f",
                      exact_ref_f32_fns[k].name, err, (double)exact_ref_f32_of(where), where,
                      F32_BOUND_ULP);
    }
}
END_TEST

START_TEST(test_double_functions_are_within_one_ulp_on_their_callers_ranges)
{
    for (int f = 0; f < EXACT_F64_COUNT; f++) {
        double where;
        double worst = exact_f64_max_error((enum exact_f64_fn)f, F64_SAMPLES, &where);
        double bound = f == EXACT_POWI ? POWI_BOUND_ULP : F64_BOUND_ULP;
        ck_assert_msg(worst < bound, "%s: %.4f ulp at %a, bound %.4f", exact_f64_names[f], worst,
                      where, bound);
    }
}
END_TEST

static int is_bits(float y, uint32_t bits)
{
    return exact_f32_bits(y) == bits;
}

START_TEST(test_float_special_values)
{
    const float inf = exact_f32_from_bits(0x7f800000u);
    const float snan = exact_f32_from_bits(0x7f800001u), nneg = exact_f32_from_bits(0xffc12345u);
    float (*fns[])(float) = {exact_expf, exact_logf, exact_erff, exact_tanhf};
    for (size_t k = 0; k < 4; k++) {
        /* NaN in, NaN out: quieted, sign and payload kept, on every machine */
        ck_assert(is_bits(fns[k](snan), 0x7fc00001u));
        ck_assert(is_bits(fns[k](nneg), 0xffc12345u));
    }
    ck_assert(is_bits(exact_expf(inf), 0x7f800000u));
    ck_assert(is_bits(exact_expf(-inf), 0));
    ck_assert(exact_expf(0.0f) == 1.0f && exact_expf(-0.0f) == 1.0f);
    ck_assert(isfinite(exact_expf(0x1.62e42ep6f)));             /* just below ln(FLT_MAX) */
    ck_assert(is_bits(exact_expf(0x1.62e430p6f), 0x7f800000u)); /* overflows */
    ck_assert(exact_expf(-103.0f) > 0.0f && exact_expf(-103.0f) < FLT_MIN); /* subnormal */
    ck_assert(is_bits(exact_expf(-104.0f), 0));                             /* underflows */

    ck_assert(is_bits(exact_logf(0.0f), 0xff800000u) && is_bits(exact_logf(-0.0f), 0xff800000u));
    ck_assert(is_bits(exact_logf(1.0f), 0));
    ck_assert(is_bits(exact_logf(inf), 0x7f800000u));
    ck_assert(is_bits(exact_logf(-1.0f), 0x7fc00000u) && is_bits(exact_logf(-inf), 0x7fc00000u));
    ck_assert(exact_logf(0x1p-149f) == (float)logl(0x1p-149L)); /* the smallest subnormal */

    ck_assert(is_bits(exact_erff(0.0f), 0) && is_bits(exact_erff(-0.0f), 0x80000000u));
    ck_assert(exact_erff(inf) == 1.0f && exact_erff(-inf) == -1.0f);
    ck_assert(exact_erff(4.0f) == 1.0f && exact_erff(-3.95f) == -1.0f);
    ck_assert(exact_erff(0x1p-149f) == 0x1p-149f); /* 2/sqrt(pi) x rounds back to x */

    ck_assert(is_bits(exact_tanhf(0.0f), 0) && is_bits(exact_tanhf(-0.0f), 0x80000000u));
    ck_assert(exact_tanhf(inf) == 1.0f && exact_tanhf(-inf) == -1.0f);
    ck_assert(exact_tanhf(10.0f) == 1.0f && exact_tanhf(-9.5f) == -1.0f);
    ck_assert(exact_tanhf(0x1p-149f) == 0x1p-149f);
}
END_TEST

START_TEST(test_double_special_values)
{
    const double inf = exact_from_bits(EXACT_INF_BITS);
    ck_assert(exact_exp(inf) == inf && exact_bits(exact_exp(-inf)) == 0);
    ck_assert(exact_exp(0.0) == 1.0 && exact_exp(-0.0) == 1.0);
    ck_assert(exact_exp(709.78) < inf && exact_exp(709.79) == inf);
    ck_assert(exact_exp(-745.1) == 0x1p-1074 && exact_exp(-746.0) == 0.0); /* subnormal */
    ck_assert(exact_bits(exact_exp(exact_from_bits(0x7ff0000000000001ULL))) ==
              0x7ff8000000000001ULL);
    ck_assert(exact_log(0.0) == -inf && exact_log(-0.0) == -inf && exact_log(inf) == inf);
    ck_assert(exact_bits(exact_log(1.0)) == 0 && exact_log(2.0) == 0x1.62e42fefa39efp-1);
    ck_assert(exact_bits(exact_log(-1.0)) == EXACT_NAN_BITS);
    ck_assert(exact_log(0x1p-1074) == (double)logl(0x1p-1074L));
    ck_assert(exact_cos(0.0) == 1.0 && exact_cos(-0.0) == 1.0);
    ck_assert(exact_bits(exact_cos(inf)) == EXACT_NAN_BITS);
    ck_assert(exact_bits(exact_cos(2e6)) == EXACT_NAN_BITS); /* beyond 2^20 pi/2: no Payne-Hanek */
    ck_assert(exact_cos(0x1.921fb54442d18p+1) == -1.0);      /* cos(fl(pi)) rounds to -1 */
    ck_assert(exact_powi(0.9, 0) == 1.0 && exact_powi(0.5, 3) == 0.125);
    ck_assert(exact_powi(-2.0, 3) == -8.0 && exact_powi(0.0, 5) == 0.0);
}
END_TEST

/* exact_math.h's outputs over the samples. A change of any output on them (a coefficient,
 * an operation's order, a contraction the compiler slipped in) changes these, and then the
 * training hashes in docs/ change too (initialization, GELU, the softmax). */
static const struct {
    const char *name;
    uint64_t hash;
} pinned_f32[EXACT_REF_F32_COUNT] = {
    {"expf", 0x8145b51ac3b6c201ULL},
    {"logf", 0xa3a8fa78d9d447bdULL},
    {"erff", 0xd11af74e61c5c859ULL},
    {"tanhf", 0x2b64758c11ef6da6ULL},
};
/* exp, log, cos, powi over F64_SAMPLES arguments each */
static const uint64_t pinned_f64[EXACT_F64_COUNT] = {0xe7b809ccce09d2a6ULL, 0xc784a61835e3d157ULL,
                                                     0xbc4000e4fcc1d5c4ULL, 0x771eda38deb89a3fULL};

START_TEST(test_outputs_over_the_samples_have_their_pinned_hashes)
{
    int bad = 0;
    for (size_t k = 0; k < EXACT_REF_F32_COUNT; k++) {
        uint64_t h = exact_sample_hash_f32(exact_ref_f32_fns[k].fn);
        if (h != pinned_f32[k].hash) {
            printf("%s: sample hash 0x%016" PRIx64 ", pinned 0x%016" PRIx64 "\n",
                   exact_ref_f32_fns[k].name, h, pinned_f32[k].hash);
            bad++;
        }
    }
    for (int f = 0; f < EXACT_F64_COUNT; f++) {
        uint64_t h = exact_sample_hash_f64((enum exact_f64_fn)f, F64_SAMPLES);
        if (h != pinned_f64[f]) {
            printf("double function %d: sample hash 0x%016" PRIx64 ", pinned 0x%016" PRIx64 "\n", f,
                   h, pinned_f64[f]);
            bad++;
        }
    }
    ck_assert_msg(bad == 0, "%d sample hashes differ from the pinned ones", bad);
}
END_TEST

static Suite *exact_math_suite(void)
{
    Suite *s = suite_create("exact_math");
    TCase *tc = tcase_create("exact_math");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_float_functions_are_within_their_bound_on_the_dense_sample);
    tcase_add_test(tc, test_double_functions_are_within_one_ulp_on_their_callers_ranges);
    tcase_add_test(tc, test_float_special_values);
    tcase_add_test(tc, test_double_special_values);
    tcase_add_test(tc, test_outputs_over_the_samples_have_their_pinned_hashes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(exact_math_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

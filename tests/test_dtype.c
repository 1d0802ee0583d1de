/* Element types and the fp16/bf16 conversions: round to nearest even, subnormals
 * both ways, overflow to inf, NaNs stay quiet NaNs. Single process, no MPI. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zero/dtype.h"

static float from_bits(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    return x;
}

static int f16_is_nan(uint16_t h)
{
    return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
}

static int bf16_is_nan(uint16_t b)
{
    return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
}

#define CK_F16(f, want) ck_assert_uint_eq(zero_f32_to_f16(f), (want))
#define CK_BF16(bits, want) ck_assert_uint_eq(zero_f32_to_bf16(from_bits(bits)), (want))

START_TEST(test_dtype_sizes_names_and_parse)
{
    ck_assert_uint_eq(zero_dtype_size(ZERO_F32), 4);
    ck_assert_uint_eq(zero_dtype_size(ZERO_F16), 2);
    ck_assert_uint_eq(zero_dtype_size(ZERO_BF16), 2);
    ck_assert_uint_eq(zero_dtype_size(ZERO_F64), 8);
    ck_assert_uint_eq(zero_dtype_size(ZERO_I32), 4);
    ck_assert_uint_eq(zero_dtype_size(ZERO_I64), 8);
    ck_assert_str_eq(zero_dtype_name(ZERO_BF16), "bf16");
    ck_assert_int_eq(zero_dtype_parse("fp32"), ZERO_F32);
    ck_assert_int_eq(zero_dtype_parse("float16"), ZERO_F16);
    ck_assert_int_eq(zero_dtype_parse("half"), ZERO_F16);
    ck_assert_int_eq(zero_dtype_parse("bfloat16"), ZERO_BF16);
    ck_assert_int_eq(zero_dtype_parse("fp8"), -1);
    ck_assert_int_eq(zero_dtype_parse(NULL), -1);
    for (int t = 0; t < ZERO_DTYPE_COUNT; t++)
        ck_assert_int_eq(zero_dtype_parse(zero_dtype_name(t)), t);
}
END_TEST

START_TEST(test_every_f16_value_round_trips_through_f32)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = zero_f16_to_f32((uint16_t)h);
        uint16_t back = zero_f32_to_f16(f);
        if (f16_is_nan((uint16_t)h)) {
            ck_assert_msg(isnan(f), "fp16 0x%04x should widen to NaN", h);
            ck_assert_msg(f16_is_nan(back) && (back & 0x8000) == (h & 0x8000),
                          "fp16 NaN 0x%04x came back as 0x%04x", h, back);
            if (h & 0x200) /* a quiet NaN keeps its payload exactly */
                ck_assert_uint_eq(back, h);
        } else {
            ck_assert_msg(back == h, "fp16 0x%04x -> %a -> 0x%04x", h, (double)f, back);
        }
    }
}
END_TEST

START_TEST(test_f16_widens_to_exact_values)
{
    ck_assert(zero_f16_to_f32(0x0001) == ldexpf(1.0f, -24));           /* smallest subnormal */
    ck_assert(zero_f16_to_f32(0x03ff) == 1023.0f * ldexpf(1.0f, -24)); /* largest subnormal */
    ck_assert(zero_f16_to_f32(0x0400) == ldexpf(1.0f, -14));           /* smallest normal */
    ck_assert(zero_f16_to_f32(0x3c00) == 1.0f);
    ck_assert(zero_f16_to_f32(0x7bff) == 65504.0f);
    ck_assert(zero_f16_to_f32(0x8001) == -ldexpf(1.0f, -24));
    ck_assert(isinf(zero_f16_to_f32(0xfc00)) && zero_f16_to_f32(0xfc00) < 0);
    ck_assert_uint_eq(bits_of(zero_f16_to_f32(0x8000)), 0x80000000u);
    ck_assert(isnan(zero_f16_to_f32(0x7c01))); /* signalling NaN stays NaN (made quiet) */
    ck_assert_uint_eq(bits_of(zero_f16_to_f32(0x7c01)) & 0x400000u, 0x400000u);
}
END_TEST

START_TEST(test_f32_to_f16_ties_go_to_even)
{
    CK_F16(1.0f + ldexpf(1.0f, -11), 0x3c00);                   /* halfway 0x3c00..0x3c01 -> even */
    CK_F16(1.0f + 3.0f * ldexpf(1.0f, -11), 0x3c02);            /* halfway 0x3c01..0x3c02 -> even */
    CK_F16(nextafterf(1.0f + ldexpf(1.0f, -11), 2.0f), 0x3c01); /* just above: up */
    CK_F16(-(1.0f + ldexpf(1.0f, -11)), 0xbc00);
    CK_F16(4095.0f * ldexpf(1.0f, -11), 0x4000); /* halfway above odd 0x3fff: carry to 2.0 */
}
END_TEST

START_TEST(test_f32_to_f16_subnormals_round_to_nearest_even)
{
    float tiny = ldexpf(1.0f, -24);
    CK_F16(tiny, 0x0001);
    CK_F16(1023.0f * tiny, 0x03ff);    /* largest subnormal */
    CK_F16(ldexpf(1.0f, -14), 0x0400); /* smallest normal */
    CK_F16(1023.5f * tiny, 0x0400);    /* halfway: to the even, which is the normal */
    CK_F16(ldexpf(1.0f, -25), 0x0000); /* halfway between 0 and tiny: to zero */
    CK_F16(nextafterf(ldexpf(1.0f, -25), 1.0f), 0x0001);
    CK_F16(1.5f * tiny, 0x0002);
    CK_F16(2.5f * tiny, 0x0002);
    CK_F16(-1.5f * tiny, 0x8002);
    CK_F16(from_bits(0x00000001), 0x0000); /* fp32 subnormal: far below fp16's range */
    CK_F16(-from_bits(0x00000001), 0x8000);
}
END_TEST

START_TEST(test_f32_to_f16_overflows_to_inf_at_65520)
{
    CK_F16(65504.0f, 0x7bff);
    CK_F16(65519.99f, 0x7bff);
    CK_F16(nextafterf(65520.0f, 0.0f), 0x7bff);
    CK_F16(65520.0f, 0x7c00);
    CK_F16(-65520.0f, 0xfc00);
    CK_F16(FLT_MAX, 0x7c00);
    CK_F16(INFINITY, 0x7c00);
    CK_F16(-INFINITY, 0xfc00);
}
END_TEST

START_TEST(test_f32_to_f16_keeps_sign_of_zero_and_nan)
{
    CK_F16(0.0f, 0x0000);
    CK_F16(-0.0f, 0x8000);
    CK_F16(from_bits(0x7fc12345), 0x7e09); /* quiet, top 10 payload bits kept */
    CK_F16(from_bits(0xffc12345), 0xfe09);
    CK_F16(from_bits(0x7f800001), 0x7e00); /* payload only in dropped bits: still NaN */
    CK_F16(from_bits(0xff800001), 0xfe00);
}
END_TEST

/* Every midpoint between adjacent positive finite fp16 values is exact in fp32:
 * it must go to the even neighbour, and one fp32 ulp either side to the nearer. */
START_TEST(test_f32_to_f16_all_midpoints_round_correctly)
{
    for (uint16_t h = 0; h < 0x7bff; h++) {
        float lo = zero_f16_to_f32(h), hi = zero_f16_to_f32((uint16_t)(h + 1));
        float mid = lo + (hi - lo) / 2;
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : h;
        ck_assert_msg(zero_f32_to_f16(mid) == even, "midpoint above 0x%04x", h);
        ck_assert_uint_eq(zero_f32_to_f16(nextafterf(mid, 0.0f)), h);
        ck_assert_uint_eq(zero_f32_to_f16(nextafterf(mid, INFINITY)), h + 1);
    }
}
END_TEST

START_TEST(test_f32_to_bf16_rounds_to_nearest_even)
{
    CK_BF16(0x3f800000, 0x3f80);
    CK_BF16(0x3f808000, 0x3f80); /* halfway 0x3f80..0x3f81 -> even */
    CK_BF16(0x3f818000, 0x3f82); /* halfway 0x3f81..0x3f82 -> even */
    CK_BF16(0x3f808001, 0x3f81);
    CK_BF16(0x3f807fff, 0x3f80);
    CK_BF16(0xbf818000, 0xbf82);
    CK_BF16(0x3fff8000, 0x4000); /* carry into the exponent */
}
END_TEST

START_TEST(test_f32_to_bf16_subnormals_overflow_zero)
{
    CK_BF16(0x00008000, 0x0000); /* halfway between 0 and the smallest subnormal */
    CK_BF16(0x00018000, 0x0002);
    CK_BF16(0x00010000, 0x0001);
    CK_BF16(0x007fffff, 0x0080); /* largest fp32 subnormal rounds up to the smallest normal */
    CK_BF16(0x7f7f7fff, 0x7f7f); /* just below halfway to overflow: largest finite bf16 */
    CK_BF16(0x7f7f8000, 0x7f80); /* halfway above the largest finite (odd) -> inf */
    CK_BF16(0x7f7fffff, 0x7f80); /* FLT_MAX rounds to inf in bf16 */
    CK_BF16(0x7f800000, 0x7f80);
    CK_BF16(0xff800000, 0xff80);
    CK_BF16(0x80000000, 0x8000);
}
END_TEST

START_TEST(test_f32_to_bf16_nan_never_becomes_inf)
{
    CK_BF16(0x7f800001, 0x7fc0); /* naive rounding would give 0x7f80 = inf */
    CK_BF16(0xff800001, 0xffc0);
    CK_BF16(0x7fffffff, 0x7fff);
    CK_BF16(0x7fc00000, 0x7fc0);
    for (uint32_t low = 0; low < 0x10000; low += 0x111) {
        uint16_t b = zero_f32_to_bf16(from_bits(0x7f800000u | 0x10000u | low));
        ck_assert(bf16_is_nan(b));
    }
}
END_TEST

/* The rounding written by cases, as a reader checks it by hand: the library's
 * branch-free form (one carry) must give these bits */
static uint16_t bf16_by_cases(uint32_t x)
{
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40); /* NaN: quiet, truncated */
    uint32_t kept = x >> 16, rest = x & 0xffff;
    if (rest > 0x8000 || (rest == 0x8000 && (kept & 1)))
        kept++;
    return (uint16_t)kept;
}

START_TEST(test_f32_to_bf16_matches_rounding_by_cases_at_every_high_half)
{
    /* every top half, with the low halves where the decisions change (0, the
     * neighbours of halfway, all ones) and a few others */
    const uint32_t lows[] = {0x0000, 0x0001, 0x3fff, 0x7fff, 0x8000, 0x8001,
                             0xc000, 0xfffe, 0xffff, 0x1234, 0x9abc};
    for (uint32_t hi = 0; hi < 0x10000; hi++)
        for (size_t l = 0; l < sizeof lows / sizeof lows[0]; l++) {
            uint32_t x = hi << 16 | lows[l];
            ck_assert_msg(zero_f32_to_bf16(from_bits(x)) == bf16_by_cases(x),
                          "0x%08x: 0x%04x, by cases 0x%04x", x, zero_f32_to_bf16(from_bits(x)),
                          bf16_by_cases(x));
        }
}
END_TEST

START_TEST(test_every_bf16_value_round_trips_through_f32)
{
    for (uint32_t b = 0; b < 65536; b++) {
        float f = zero_bf16_to_f32((uint16_t)b);
        uint16_t back = zero_f32_to_bf16(f);
        if (bf16_is_nan((uint16_t)b)) {
            ck_assert(isnan(f));
            ck_assert(bf16_is_nan(back) && (back & 0x8000) == (b & 0x8000));
        } else {
            ck_assert_uint_eq(bits_of(f), b << 16);
            ck_assert_uint_eq(back, b);
        }
    }
}
END_TEST

static Suite *dtype_suite(void)
{
    Suite *s = suite_create("dtype");
    TCase *tc = tcase_create("conversions");
    tcase_add_test(tc, test_dtype_sizes_names_and_parse);
    tcase_add_test(tc, test_every_f16_value_round_trips_through_f32);
    tcase_add_test(tc, test_f16_widens_to_exact_values);
    tcase_add_test(tc, test_f32_to_f16_ties_go_to_even);
    tcase_add_test(tc, test_f32_to_f16_subnormals_round_to_nearest_even);
    tcase_add_test(tc, test_f32_to_f16_overflows_to_inf_at_65520);
    tcase_add_test(tc, test_f32_to_f16_keeps_sign_of_zero_and_nan);
    tcase_add_test(tc, test_f32_to_f16_all_midpoints_round_correctly);
    tcase_add_test(tc, test_f32_to_bf16_rounds_to_nearest_even);
    tcase_add_test(tc, test_f32_to_bf16_subnormals_overflow_zero);
    tcase_add_test(tc, test_f32_to_bf16_nan_never_becomes_inf);
    tcase_add_test(tc, test_f32_to_bf16_matches_rounding_by_cases_at_every_high_half);
    tcase_add_test(tc, test_every_bf16_value_round_trips_through_f32);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(dtype_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* The reference side of src/base/exact_math.h's accuracy checks (tests/test_exact_math.c,
 * bench/math_ulp.c): each function next to libm's long double version, whose 64-bit
 * significand (x86-64; 113 bits on aarch64) stands in for the exact value, and the
 * error of a result in units in the last place of the exact value. */
#ifndef ZERO_EXACT_MATH_REF_H
#define ZERO_EXACT_MATH_REF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/exact_math.h"

struct exact_ref_f32 {
    const char *name;
    float (*fn)(float);
    long double (*ref)(long double);
};

static float ref_expf(float x)
{
    return exact_expf(x);
}
static float ref_logf(float x)
{
    return exact_logf(x);
}
static float ref_erff(float x)
{
    return exact_erff(x);
}
static float ref_tanhf(float x)
{
    return exact_tanhf(x);
}

static const struct exact_ref_f32 exact_ref_f32_fns[] = {
    {"expf", ref_expf, expl},
    {"logf", ref_logf, logl},
    {"erff", ref_erff, erfl},
    {"tanhf", ref_tanhf, tanhl},
};
#define EXACT_REF_F32_COUNT (sizeof(exact_ref_f32_fns) / sizeof(exact_ref_f32_fns[0]))

/* |got - ref| in ulps of ref at `mant` significand bits (24: float, 53: double) with the
 * subnormal ulp at `min_exp` (-149, -1074). Specials: a NaN where ref is NaN, or the
 * same infinity or zero, is error 0; a NaN or infinity where ref has a finite value that
 * does not round to it is error INFINITY. `round_to_inf` is |ref| from which it rounds to
 * infinity. */
static inline double exact_ulp_error(long double got, long double ref, int mant, int min_exp,
                                     long double round_to_inf)
{
    if (isnan(ref) || isnan(got))
        return isnan(ref) && isnan(got) ? 0.0 : INFINITY;
    if (isinf(got)) {
        long double aref = fabsl(ref);
        return (signbit(got) == signbit(ref) && aref >= round_to_inf) ? 0.0 : INFINITY;
    }
    if (isinf(ref))
        return INFINITY;
    int e;
    frexpl(ref, &e); /* |ref| in [2^(e-1), 2^e) */
    int ulp_exp = e - mant;
    if (ulp_exp < min_exp)
        ulp_exp = min_exp;
    if (ref == 0.0L)
        ulp_exp = min_exp;
    return (double)(fabsl(got - ref) / ldexpl(1.0L, ulp_exp));
}

static inline double exact_ulp_error_f32(float got, long double ref)
{
    /* 2^128 (1 - 2^-25): the midpoint between FLT_MAX and 2^128 */
    return exact_ulp_error(got, ref, 24, -149, ldexpl(1.0L - ldexpl(1.0L, -25), 128));
}

static inline double exact_ulp_error_f64(double got, long double ref)
{
    return exact_ulp_error(got, ref, 53, -1074, ldexpl(1.0L - ldexpl(1.0L, -54), 1024));
}

static inline float exact_ref_f32_of(uint32_t bits)
{
    float x;
    memcpy(&x, &bits, sizeof(x));
    return x;
}

/* The dense sample of float inputs: every 8191st bit pattern of all 2^32, then the
 * floats of [-10, 10] (where the kernels' arguments live) at a stride of 2039 bit
 * patterns per sign. */
#define EXACT_SAMPLE_STRIDE 8191u
#define EXACT_SAMPLE_NEAR_STRIDE 2039u
#define EXACT_SAMPLE_NEAR_END 0x41200000u /* 10.0f */
#define EXACT_SAMPLE_ALL (0xffffffffu / EXACT_SAMPLE_STRIDE + 1u)
#define EXACT_SAMPLE_NEAR ((EXACT_SAMPLE_NEAR_END - 1u) / EXACT_SAMPLE_NEAR_STRIDE + 1u)
#define EXACT_SAMPLE_COUNT (EXACT_SAMPLE_ALL + 2u * EXACT_SAMPLE_NEAR)

/* the bit pattern of sample i < EXACT_SAMPLE_COUNT */
static inline uint32_t exact_sample_bits(uint32_t i)
{
    if (i < EXACT_SAMPLE_ALL)
        return i * EXACT_SAMPLE_STRIDE;
    i -= EXACT_SAMPLE_ALL;
    uint32_t sign = i < EXACT_SAMPLE_NEAR ? 0u : 0x80000000u;
    return sign | (i % EXACT_SAMPLE_NEAR) * EXACT_SAMPLE_NEAR_STRIDE;
}

/* FNV-1a 64 of a 32-bit value's four bytes, low byte first on every machine */
static inline uint64_t exact_fnv32(uint64_t h, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        h = (h ^ ((v >> (8 * k)) & 0xffu)) * 0x100000001b3ULL;
    return h;
}

#define EXACT_FNV_BASIS 0xcbf29ce484222325ULL

/* The hash of a float function's outputs over the dense sample: a fixed number for a
 * fixed algorithm, on any machine. */
static inline uint64_t exact_sample_hash_f32(float (*fn)(float))
{
    uint64_t h = EXACT_FNV_BASIS;
    for (uint32_t i = 0; i < EXACT_SAMPLE_COUNT; i++) {
        float y = fn(exact_ref_f32_of(exact_sample_bits(i)));
        uint32_t b;
        memcpy(&b, &y, sizeof(b));
        h = exact_fnv32(h, b);
    }
    return h;
}

/* splitmix64, for the double functions' samples */
static inline uint64_t exact_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* uniform in [lo, hi) from sample index i */
static inline double exact_sample_f64(uint64_t i, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(exact_mix64(i) >> 11) * 0x1p-53);
}

enum exact_f64_fn { EXACT_EXP, EXACT_LOG, EXACT_COS, EXACT_POWI, EXACT_F64_COUNT };

/* The double functions' sample i: the argument libzero's callers pass, over their
 * ranges (the powers: beta in [0.9, 1), step in [1, 10^6)) and beyond. */
static inline double exact_f64_arg(enum exact_f64_fn f, uint64_t i, uint64_t *n)
{
    switch (f) {
    case EXACT_EXP:
        return exact_sample_f64(i, -745.0, 710.0);
    case EXACT_LOG:
        return i % 2 ? exact_sample_f64(i, 0x1p-60, 1.0) : exact_sample_f64(i, 1.0, 1e6);
    case EXACT_COS:
        return i % 2 ? exact_sample_f64(i, 0.0, 6.283185307179586)
                     : exact_sample_f64(i, -1647099.0, 1647099.0);
    default:
        *n = 1 + exact_mix64(~i) % 999999;
        return exact_sample_f64(i, 0.9, 1.0);
    }
}

static inline double exact_f64_call(enum exact_f64_fn f, double x, uint64_t n)
{
    switch (f) {
    case EXACT_EXP:
        return exact_exp(x);
    case EXACT_LOG:
        return exact_log(x);
    case EXACT_COS:
        return exact_cos(x);
    default:
        return exact_powi(x, n);
    }
}

static const char *const exact_f64_names[EXACT_F64_COUNT] = {"exp", "log", "cos", "powi"};

/* libm's long double value of the double function f at x (and n) */
static inline long double exact_f64_ref(enum exact_f64_fn f, double x, uint64_t n)
{
    switch (f) {
    case EXACT_EXP:
        return expl(x);
    case EXACT_LOG:
        return logl(x);
    case EXACT_COS:
        return cosl(x);
    default:
        return powl(x, (long double)n);
    }
}

/* The largest error of f over its first `count` sample arguments (powers below 2^-960
 * left out: their double-double tails go subnormal). */
static inline double exact_f64_max_error(enum exact_f64_fn f, uint64_t count, double *where)
{
    double worst = 0.0;
    *where = 0.0;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t n = 0;
        double x = exact_f64_arg(f, i, &n);
        double got = exact_f64_call(f, x, n);
        if (f == EXACT_POWI && got < 0x1p-960)
            continue;
        double err = exact_ulp_error_f64(got, exact_f64_ref(f, x, n));
        if (err > worst) {
            worst = err;
            *where = x;
        }
    }
    return worst;
}

static inline uint64_t exact_sample_hash_f64(enum exact_f64_fn f, uint64_t count)
{
    uint64_t h = EXACT_FNV_BASIS;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t n = 0;
        double x = exact_f64_arg(f, i, &n);
        uint64_t b = exact_bits(exact_f64_call(f, x, n));
        h = exact_fnv32(exact_fnv32(h, (uint32_t)b), (uint32_t)(b >> 32));
    }
    return h;
}

#endif

/* Deterministic elementary functions: every result is a fixed sequence of IEEE-754
 * double operations (+, -, *, / and conversions, all rounded to nearest), with
 * coefficients written as hex floats and no libm call, so gcc on x86-64 and aarch64
 * and nvcc (host and device) compute the same bits for the same input. The cpu and
 * cuda backends' kernels and the core (schedules, initialization, optimizer
 * constants) call these instead of libm, whose results differ between libraries,
 * versions and devices by an ulp. Not installed.
 *
 * Needs -ffp-contract=off on the host (the build sets it: a fused multiply-add
 * would round differently); device code rounds every product apart with __dmul_rn.
 *
 * Float functions (exact_expf, exact_logf, exact_erff, exact_tanhf) compute in double,
 * far below an ulp of float, and round once: within 0.5001 ulp of the exact value
 * (tests/test_exact_math.c asserts it on 1.6 million floats; the measured maxima over
 * all 2^32 inputs, from bench/math_ulp, are in docs/exactness.md). Double functions
 * (exact_exp, exact_log, exact_cos) follow fdlibm's algorithms, < 1 ulp; exact_cos
 * takes |x| <= 2^20 pi/2 (NaN beyond); exact_powi is x^n by squaring in double-double.
 * Specials: NaN in gives NaN out (quieted, payload kept), +-inf and +-0 as C99 Annex F,
 * overflow to inf, underflow through the subnormals to 0. */
#ifndef ZERO_EXACT_MATH_H
#define ZERO_EXACT_MATH_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define EXACT_FN static inline __host__ __device__
#else
#define EXACT_FN static inline
#endif

/* A product that is never fused with the sum it feeds (nvcc fuses a * b + c by default). */
#ifdef __CUDA_ARCH__
#define EXACT_MUL(a, b) __dmul_rn((a), (b))
#else
#define EXACT_MUL(a, b) ((a) * (b))
#endif

/* Horner's rule, highest coefficient first: EXACT_POLY3(t, a, b, c) = (a t + b) t + c. */
#define EXACT_POLY1(t, a) (a)
#define EXACT_POLY2(t, c0, c1) EXACT_POLY1(t, EXACT_MUL((double)(c0), (t)) + (c1))
#define EXACT_POLY3(t, c0, c1, c2) EXACT_POLY2(t, EXACT_MUL((double)(c0), (t)) + (c1), c2)
#define EXACT_POLY4(t, c0, c1, c2, c3) EXACT_POLY3(t, EXACT_MUL((double)(c0), (t)) + (c1), c2, c3)
#define EXACT_POLY5(t, c0, c1, c2, c3, c4)                                                         \
    EXACT_POLY4(t, EXACT_MUL((double)(c0), (t)) + (c1), c2, c3, c4)
#define EXACT_POLY6(t, c0, c1, c2, c3, c4, c5)                                                     \
    EXACT_POLY5(t, EXACT_MUL((double)(c0), (t)) + (c1), c2, c3, c4, c5)
#define EXACT_POLY7(t, c0, c1, c2, c3, c4, c5, c6)                                                 \
    EXACT_POLY6(t, EXACT_MUL((double)(c0), (t)) + (c1), c2, c3, c4, c5, c6)
#define EXACT_POLY8(t, c0, c1, c2, c3, c4, c5, c6, c7)                                             \
    EXACT_POLY7(t, EXACT_MUL((double)(c0), (t)) + (c1), c2, c3, c4, c5, c6, c7)
#define EXACT_POLY9(t, c0, c1, c2, c3, c4, c5, c6, c7, c8)                                         \
    EXACT_POLY8(t, EXACT_MUL((double)(c0), (t)) + (c1), c2, c3, c4, c5, c6, c7, c8)
#define EXACT_POLY10(t, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9)                                    \
    EXACT_POLY9(t, EXACT_MUL((double)(c0), (t)) + (c1), c2, c3, c4, c5, c6, c7, c8, c9)
#define EXACT_POLY11(t, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10)                               \
    EXACT_POLY10(t, EXACT_MUL((double)(c0), (t)) + (c1), c2, c3, c4, c5, c6, c7, c8, c9, c10)

EXACT_FN uint64_t exact_bits(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof(b));
    return b;
}

EXACT_FN double exact_from_bits(uint64_t b)
{
    double x;
    memcpy(&x, &b, sizeof(x));
    return x;
}

EXACT_FN uint32_t exact_f32_bits(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof(b));
    return b;
}

EXACT_FN float exact_f32_from_bits(uint32_t b)
{
    float x;
    memcpy(&x, &b, sizeof(x));
    return x;
}

/* NaN results by bits, not by 0/0 or x + x, whose NaN differs between x86, arm and cuda. */
#define EXACT_NAN_BITS 0x7ff8000000000000ULL
#define EXACT_F32_NAN_BITS 0x7fc00000u
#define EXACT_INF_BITS 0x7ff0000000000000ULL

EXACT_FN double exact_quiet(double x)
{
    return exact_from_bits(exact_bits(x) | 0x0008000000000000ULL);
}

EXACT_FN float exact_f32_quiet(float x)
{
    return exact_f32_from_bits(exact_f32_bits(x) | 0x00400000u);
}

/* 2^k for -1022 <= k <= 1023 */
EXACT_FN double exact_pow2(int k)
{
    return exact_from_bits((uint64_t)(k + 1023) << 52);
}

/* ---------------------------------------------------------------- double */

/* e^x, fdlibm's algorithm: x = k ln2 + r with |r| <= ln2/2, e^r by a rational form of
 * a degree-5 minimax polynomial in r^2, then the exact scaling by 2^k (below 2^-1022
 * in one rounding). Error < 1 ulp. */
EXACT_FN double exact_exp(double x)
{
    const double ln2_hi = 0x1.62e42fee00000p-1, ln2_lo = 0x1.a39ef35793c76p-33;
    const double inv_ln2 = 0x1.71547652b82fep+0;
    const double p1 = 0x1.555555555553ep-3, p2 = -0x1.6c16c16bebd93p-9, p3 = 0x1.1566aaf25de2cp-14,
                 p4 = -0x1.bbd41c5d26bf1p-20, p5 = 0x1.6376972bea4d0p-25;
    uint64_t bits = exact_bits(x);
    uint32_t hx = (uint32_t)(bits >> 32) & 0x7fffffffu;
    int negative = (int)(bits >> 63);
    double hi = x, lo = 0.0;
    int k = 0;
    if (hx >= 0x40862e42u) { /* |x| >= 709.78 */
        if (hx >= 0x7ff00000u) {
            if ((bits << 1) != (EXACT_INF_BITS << 1))
                return exact_quiet(x);
            return negative ? 0.0 : x; /* e^-inf = 0, e^inf = inf */
        }
        if (x > 0x1.62e42fefa39efp+9)
            return exact_from_bits(EXACT_INF_BITS);
        if (x < -0x1.74910d52d3051p+9)
            return 0.0;
    }
    if (hx > 0x3fd62e42u) { /* |x| > ln2 / 2 */
        double t = EXACT_MUL(inv_ln2, x) + (negative ? -0.5 : 0.5);
        k = (int)t; /* rounds half away from zero: truncation of t */
        double dk = (double)k;
        hi = x - EXACT_MUL(dk, ln2_hi); /* dk ln2_hi is exact */
        lo = EXACT_MUL(dk, ln2_lo);
        x = hi - lo;
    } else if (hx < 0x3e300000u) { /* |x| < 2^-28 */
        return 1.0 + x;
    }
    double t = EXACT_MUL(x, x);
    double c = x - EXACT_MUL(t, EXACT_POLY5(t, p5, p4, p3, p2, p1));
    if (k == 0)
        return 1.0 - (EXACT_MUL(x, c) / (c - 2.0) - x);
    double y = 1.0 - ((lo - EXACT_MUL(x, c) / (2.0 - c)) - hi);
    if (k >= -1021)
        return k == 1024 ? EXACT_MUL(EXACT_MUL(y, 2.0), exact_pow2(1023))
                         : EXACT_MUL(y, exact_pow2(k));
    return EXACT_MUL(EXACT_MUL(y, exact_pow2(k + 1000)), 0x1p-1000); /* one rounding */
}

/* log(x), fdlibm's algorithm: x = 2^k (1 + f) with sqrt(2)/2 <= 1 + f < sqrt(2),
 * log(1 + f) = f - s (f - R) with s = f / (2 + f) and R a degree-7 minimax polynomial
 * in s^2. Error < 1 ulp. */
EXACT_FN double exact_log(double x)
{
    const double ln2_hi = 0x1.62e42fee00000p-1, ln2_lo = 0x1.a39ef35793c76p-33;
    const double lg1 = 0x1.5555555555593p-1, lg2 = 0x1.999999997fa04p-2, lg3 = 0x1.2492494229359p-2,
                 lg4 = 0x1.c71c51d8e78afp-3, lg5 = 0x1.7466496cb03dep-3, lg6 = 0x1.39a09d078c69fp-3,
                 lg7 = 0x1.2f112df3e5244p-3;
    uint64_t bits = exact_bits(x);
    int32_t hx = (int32_t)(bits >> 32);
    int k = 0;
    if (hx < 0x00100000) { /* x < 2^-1022, negative, zero or NaN with the sign bit */
        if ((bits << 1) == 0)
            return -exact_from_bits(EXACT_INF_BITS); /* log(+-0) = -inf */
        if ((bits << 1) > (EXACT_INF_BITS << 1))
            return exact_quiet(x);
        if (hx < 0)
            return exact_from_bits(EXACT_NAN_BITS); /* log of a negative number */
        k -= 54;
        x = EXACT_MUL(x, 0x1p54); /* a subnormal: scale up, exactly */
        bits = exact_bits(x);
        hx = (int32_t)(bits >> 32);
    }
    if (hx >= 0x7ff00000)
        return (bits << 12) != 0 ? exact_quiet(x) : x; /* NaN, +inf */
    k += (hx >> 20) - 1023;
    hx &= 0x000fffff;
    int32_t i = (hx + 0x95f64) & 0x100000;
    /* x or x / 2 into [sqrt(2)/2, sqrt(2)) */
    x = exact_from_bits(((uint64_t)(uint32_t)(hx | (i ^ 0x3ff00000)) << 32) | (bits & 0xffffffffu));
    k += i >> 20;
    double f = x - 1.0;
    double dk = (double)k;
    if ((0x000fffff & (2 + hx)) < 3) { /* |f| < 2^-20 */
        if (f == 0.0)
            return k == 0 ? 0.0 : EXACT_MUL(dk, ln2_hi) + EXACT_MUL(dk, ln2_lo);
        double r = EXACT_MUL(EXACT_MUL(f, f), 0.5 - EXACT_MUL(0x1.5555555555555p-2, f));
        if (k == 0)
            return f - r;
        return EXACT_MUL(dk, ln2_hi) - ((r - EXACT_MUL(dk, ln2_lo)) - f);
    }
    double s = f / (2.0 + f);
    double z = EXACT_MUL(s, s);
    double w = EXACT_MUL(z, z);
    double t1 = EXACT_MUL(w, EXACT_POLY3(w, lg6, lg4, lg2));
    double t2 = EXACT_MUL(z, EXACT_POLY4(w, lg7, lg5, lg3, lg1));
    double r = t2 + t1;
    if (((hx - 0x6147a) | (0x6b851 - hx)) > 0) {
        double hfsq = EXACT_MUL(EXACT_MUL(0.5, f), f);
        if (k == 0)
            return f - (hfsq - EXACT_MUL(s, hfsq + r));
        return EXACT_MUL(dk, ln2_hi) -
               ((hfsq - (EXACT_MUL(s, hfsq + r) + EXACT_MUL(dk, ln2_lo))) - f);
    }
    if (k == 0)
        return f - EXACT_MUL(s, f - r);
    return EXACT_MUL(dk, ln2_hi) - ((EXACT_MUL(s, f - r) - EXACT_MUL(dk, ln2_lo)) - f);
}

/* cos(x + y) for |x + y| <= pi/4, y a tail below x's last bit (fdlibm's kernel) */
EXACT_FN double exact_cos_kernel(double x, double y)
{
    const double c1 = 0x1.555555555554cp-5, c2 = -0x1.6c16c16c15177p-10, c3 = 0x1.a01a019cb1590p-16,
                 c4 = -0x1.27e4f809c52adp-22, c5 = 0x1.1ee9ebdb4b1c4p-29,
                 c6 = -0x1.8fae9be8838d4p-37;
    uint32_t ix = (uint32_t)(exact_bits(x) >> 32) & 0x7fffffffu;
    if (ix < 0x3e400000u) /* |x| < 2^-27 */
        return 1.0;
    double z = EXACT_MUL(x, x);
    double r = EXACT_MUL(z, EXACT_POLY6(z, c6, c5, c4, c3, c2, c1));
    if (ix < 0x3fd33333u) /* |x| < 0.3 */
        return 1.0 - (EXACT_MUL(0.5, z) - (EXACT_MUL(z, r) - EXACT_MUL(x, y)));
    double qx = ix > 0x3fe90000u ? 0.28125 : exact_from_bits((uint64_t)(ix - 0x00200000u) << 32);
    double hz = EXACT_MUL(0.5, z) - qx;
    double a = 1.0 - qx;
    return a - (hz - (EXACT_MUL(z, r) - EXACT_MUL(x, y)));
}

/* sin(x + y) for |x + y| <= pi/4 (fdlibm's kernel with a tail) */
EXACT_FN double exact_sin_kernel(double x, double y)
{
    const double s1 = -0x1.5555555555549p-3, s2 = 0x1.111111110f8a6p-7, s3 = -0x1.a01a019c161d5p-13,
                 s4 = 0x1.71de357b1fe7dp-19, s5 = -0x1.ae5e68a2b9cebp-26,
                 s6 = 0x1.5d93a5acfd57cp-33;
    uint32_t ix = (uint32_t)(exact_bits(x) >> 32) & 0x7fffffffu;
    if (ix < 0x3e400000u) /* |x| < 2^-27 */
        return x;
    double z = EXACT_MUL(x, x);
    double v = EXACT_MUL(z, x);
    double r = EXACT_POLY5(z, s6, s5, s4, s3, s2);
    return x - ((EXACT_MUL(z, EXACT_MUL(0.5, y) - EXACT_MUL(v, r)) - y) - EXACT_MUL(v, s1));
}

/* |x| = n pi/2 + (y0 + y1), fdlibm's reduction for |x| in (pi/4, 2^20 pi/2]: pi/2 in
 * three 33-bit pieces and their tails (Cody-Waite, up to 151 bits where the reduction
 * cancels). t is |x| and ix its high word without the sign. Returns n. */
EXACT_FN int exact_rem_pio2(double t, uint32_t ix, double *y0_out, double *y1_out)
{
    const double inv_pio2 = 0x1.45f306dc9c883p-1;
    const double pio2_1 = 0x1.921fb54400000p+0, pio2_1t = 0x1.0b4611a626331p-34;
    const double pio2_2 = 0x1.0b4611a600000p-34, pio2_2t = 0x1.3198a2e037073p-69;
    const double pio2_3 = 0x1.3198a2e000000p-69, pio2_3t = 0x1.b839a252049c1p-104;
    int n = (int)(EXACT_MUL(t, inv_pio2) + 0.5);
    double fn = (double)n;
    double r = t - EXACT_MUL(fn, pio2_1); /* exact: fn has <= 20 bits, pio2_1 33 */
    double w = EXACT_MUL(fn, pio2_1t);
    double y0 = r - w;
    int j = (int)(ix >> 20);
    if (j - (int)((exact_bits(y0) >> 52) & 0x7ff) > 16) { /* cancelled: next piece */
        double u = r;
        w = EXACT_MUL(fn, pio2_2);
        r = u - w;
        w = EXACT_MUL(fn, pio2_2t) - ((u - r) - w);
        y0 = r - w;
        if (j - (int)((exact_bits(y0) >> 52) & 0x7ff) > 49) {
            u = r;
            w = EXACT_MUL(fn, pio2_3);
            r = u - w;
            w = EXACT_MUL(fn, pio2_3t) - ((u - r) - w);
            y0 = r - w;
        }
    }
    *y0_out = y0;
    *y1_out = (r - y0) - w;
    return n;
}

/* cos(x), fdlibm's algorithm: the reduction above, then the sin or cos kernel by
 * n mod 4. Error < 1 ulp for |x| <= 2^20 pi/2 (about 1.6e6); beyond that the reduction
 * would need Payne-Hanek and the result is NaN (libzero's arguments lie in [0, 2 pi],
 * the rope's in [0, max_position_embeddings]). */
EXACT_FN double exact_cos(double x)
{
    uint64_t bits = exact_bits(x);
    uint32_t ix = (uint32_t)(bits >> 32) & 0x7fffffffu;
    if (ix <= 0x3fe921fbu) /* |x| <~ pi/4 */
        return exact_cos_kernel(x, 0.0);
    if (ix >= 0x7ff00000u) /* cos(+-inf) = NaN, NaN stays NaN */
        return (bits << 12) != 0 ? exact_quiet(x) : exact_from_bits(EXACT_NAN_BITS);
    if (ix > 0x413921fbu) /* |x| > 2^20 pi/2: outside the domain */
        return exact_from_bits(EXACT_NAN_BITS);
    double y0, y1; /* |x|: cos is even */
    int n = exact_rem_pio2(exact_from_bits(bits & 0x7fffffffffffffffULL), ix, &y0, &y1);
    switch (n & 3) {
    case 0:
        return exact_cos_kernel(y0, y1);
    case 1:
        return -exact_sin_kernel(y0, y1);
    case 2:
        return -exact_cos_kernel(y0, y1);
    default:
        return exact_sin_kernel(y0, y1);
    }
}

/* sin(x), as exact_cos (the same reduction and domain); sin is odd. */
EXACT_FN double exact_sin(double x)
{
    uint64_t bits = exact_bits(x);
    uint32_t ix = (uint32_t)(bits >> 32) & 0x7fffffffu;
    if (ix <= 0x3fe921fbu) /* |x| <~ pi/4 */
        return exact_sin_kernel(x, 0.0);
    if (ix >= 0x7ff00000u)
        return (bits << 12) != 0 ? exact_quiet(x) : exact_from_bits(EXACT_NAN_BITS);
    if (ix > 0x413921fbu)
        return exact_from_bits(EXACT_NAN_BITS);
    double y0, y1, r;
    int n = exact_rem_pio2(exact_from_bits(bits & 0x7fffffffffffffffULL), ix, &y0, &y1);
    switch (n & 3) {
    case 0:
        r = exact_sin_kernel(y0, y1);
        break;
    case 1:
        r = exact_cos_kernel(y0, y1);
        break;
    case 2:
        r = -exact_sin_kernel(y0, y1);
        break;
    default:
        r = -exact_cos_kernel(y0, y1);
        break;
    }
    return (bits >> 63) ? -r : r;
}

/* Double-double arithmetic for exact_powi: a value is hi + lo with |lo| <= ulp(hi)/2. */
struct exact_dd {
    double hi, lo;
};

/* a * b = p + e exactly (Dekker's product with Veltkamp's split; no fused multiply-add,
 * so that every machine takes the same path). |a|, |b| < 2^995. */
EXACT_FN struct exact_dd exact_two_prod(double a, double b)
{
    double ca = EXACT_MUL(134217729.0, a), cb = EXACT_MUL(134217729.0, b); /* 2^27 + 1 */
    double ah = ca - (ca - a), al = a - ah;
    double bh = cb - (cb - b), bl = b - bh;
    double p = EXACT_MUL(a, b);
    double e =
        ((EXACT_MUL(ah, bh) - p) + EXACT_MUL(ah, bl) + EXACT_MUL(al, bh)) + EXACT_MUL(al, bl);
    struct exact_dd r = {p, e};
    return r;
}

EXACT_FN struct exact_dd exact_dd_mul(struct exact_dd a, struct exact_dd b)
{
    struct exact_dd p = exact_two_prod(a.hi, b.hi);
    double e = p.lo + (EXACT_MUL(a.hi, b.lo) + EXACT_MUL(a.lo, b.hi));
    double hi = p.hi + e;
    struct exact_dd r = {hi, e - (hi - p.hi)};
    return r;
}

/* x^n for n >= 0 by binary powering in double-double (relative error about 2^-100 per
 * product), rounded once to double: correctly rounded (but for near-ties) while the
 * result is above 2^-960, where the tails go subnormal (1.5 ulp measured below).
 * For |x| <= 1 (libzero: 1 - beta^step); larger |x| may overflow early in the split. */
EXACT_FN double exact_powi(double x, uint64_t n)
{
    struct exact_dd r = {1.0, 0.0}, b = {x, 0.0};
    while (n) {
        if (n & 1)
            r = exact_dd_mul(r, b);
        n >>= 1;
        if (n)
            b = exact_dd_mul(b, b);
    }
    return r.hi + r.lo;
}

/* ---------------------------------------------------------------- float */

/* The coefficient lists below are macros so that the cpu backend's vectorized copies of
 * these functions (backends/cpu/cpu_exact_vec_body.h) read the same numbers:
 * EXACT_APPLY(EXACT_POLY10, r, EXACT_EXP_COEFFS) is EXACT_POLY10(r, <the ten>). */
#define EXACT_APPLY(macro, ...) macro(__VA_ARGS__)

/* e^r, |r| <= ln2 / 2; max fit error 1.39e-14 (bench/exact_math_coeffs.py) */
#define EXACT_EXP_COEFFS                                                                           \
    0x1.72e1150d0c9b6p-19, 0x1.a17e031985654p-16, 0x1.a01994bd214e7p-13, 0x1.6c162ba880942p-10,    \
        0x1.11111123c1f47p-7, 0x1.55555588c026cp-5, 0x1.5555555550d79p-3, 0x1.ffffffffe74a0p-2,    \
        0x1.0000000000006p+0, 0x1.000000000003dp+0
EXACT_FN double exact_exp_poly(double r)
{
    return EXACT_APPLY(EXACT_POLY10, r, EXACT_EXP_COEFFS);
}

/* exact_exp_for_float's constants: ln2 in two pieces (k ln2_hi exact for |k| < 2^21),
 * 1/ln2, and 1.5 * 2^52, to which adding a double rounds it to an integer */
#define EXACT_LN2_HI 0x1.62e42fee00000p-1
#define EXACT_LN2_LO 0x1.a39ef35793c76p-33
#define EXACT_INV_LN2 0x1.71547652b82fep+0
#define EXACT_ROUND_INT 0x1.8p52

/* e^y for -150 ln2 < y < 129 ln2 within 2^-45 relative: enough for a float result
 * (2^-21 ulp before its one rounding), and no division. y = k ln2 + r with k the
 * nearest integer (added to 1.5 * 2^52, a double rounds to an integer), k ln2 in two
 * pieces (k ln2_hi exact), then e^r times 2^k, exact in double. */
EXACT_FN double exact_exp_for_float(double y)
{
    double kd = (EXACT_MUL(y, EXACT_INV_LN2) + EXACT_ROUND_INT) - EXACT_ROUND_INT;
    double r = (y - EXACT_MUL(kd, EXACT_LN2_HI)) - EXACT_MUL(kd, EXACT_LN2_LO);
    return EXACT_MUL(exact_exp_poly(r), exact_pow2((int)kd));
}

/* e^x rounded once from double; 0 below -104 (e^-104 < 2^-150), inf above 89. */
EXACT_FN float exact_expf(float x)
{
    if (x != x)
        return exact_f32_quiet(x);
    if (x > 89.0f)
        return exact_f32_from_bits(0x7f800000u);
    if (x < -104.0f)
        return 0.0f;
    return (float)exact_exp_for_float((double)x);
}

/* The float functions below compute in double (error far below an ulp of float) and
 * round once. */
EXACT_FN float exact_logf(float x)
{
    if (x != x)
        return exact_f32_quiet(x);
    if (x < 0.0f)
        return exact_f32_from_bits(EXACT_F32_NAN_BITS);
    return (float)exact_log((double)x);
}

/* erf(x) / x, a polynomial in s = x^2, s in [0, 1/4]; max fit error 6.94e-16 */
#define EXACT_ERF_SMALL_COEFFS                                                                     \
    -0x1.c0b68bc7545bbp-17, 0x1.f70acf658bd21p-14, -0x1.c01c4d48c53fbp-11, 0x1.565b8c26bce7fp-8,   \
        -0x1.b82ce20b0d02dp-6, 0x1.ce2f219e34cc1p-4, -0x1.812746b0360e2p-2, 0x1.20dd750429b6ap+0
EXACT_FN double exact_erf_small(double s)
{
    return EXACT_APPLY(EXACT_POLY8, s, EXACT_ERF_SMALL_COEFFS);
}

/* erf(c + t), t in [-1/4, 1/4], c = 0.75, 1.25, ..., 3.75; max fit error 1.47e-13 */
#define EXACT_ERF_PIECE0_COEFFS                                                                    \
    0x1.60b9795a53b4bp-13, -0x1.fa417c01ddd10p-9, 0x1.2dd8566f65b84p-9, 0x1.2def5ae5f4191p-6,      \
        -0x1.b84799c97a713p-6, -0x1.b429b8110db66p-5, 0x1.349b5eb5a0577p-3, 0x1.b6e856f884cd9p-6,  \
        -0x1.edc5644358601p-2, 0x1.492e42d79af0ap-1, 0x1.6c1c9759d0e5fp-1
#define EXACT_ERF_PIECE1_COEFFS                                                                    \
    0x1.9b3f6891eb78ep-11, 0x1.af7c8265d0ec9p-11, -0x1.755d9882f40a2p-8, 0x1.dbb5ae5ba731bp-9,     \
        0x1.5cfff2e80dbb5p-6, -0x1.8281ffbb86e22p-5, -0x1.93a9a6fba807dp-8, 0x1.571d01e936acbp-3,  \
        -0x1.2ebf3dcca188fp-2, 0x1.e4652fadaf147p-3, 0x1.d8865d98abe01p-1
#define EXACT_ERF_PIECE2_COEFFS                                                                    \
    -0x1.c3f9057326902p-12, 0x1.d4257135639e1p-11, 0x1.7e5fc6de99801p-11, -0x1.8d0f8c2bb600fp-8,   \
        0x1.25b3a3a1d00d9p-7, 0x1.b2224d784576bp-8, -0x1.8a0da5619c848p-5, 0x1.7148c3d75f48ap-4,   \
        -0x1.7a4a8a2bd0a5bp-4, 0x1.b05530321df77p-5, 0x1.f92d077f8d56dp-1
#define EXACT_ERF_PIECE3_COEFFS                                                                    \
    -0x1.00ba02add0f6ep-16, -0x1.779cc0aff17e6p-12, 0x1.0612e3882bc25p-10, -0x1.5fe0b15cdaed6p-11, \
        -0x1.7cae45233f92ep-9, 0x1.5d3b40ad066d7p-7, -0x1.38a983139ba61p-6, 0x1.63ef61ada9eccp-6,  \
        -0x1.074b60f8ef23bp-6, 0x1.d4143a9eb9b3fp-8, 0x1.ff404760319b4p-1
#define EXACT_ERF_PIECE4_COEFFS                                                                    \
    0x1.cba93f52c4f07p-15, -0x1.35f0f3fdd7fbbp-14, -0x1.754995bd44647p-14, 0x1.52cc6ece25739p-11,  \
        -0x1.b2756220c2fe6p-10, 0x1.69356f2381d69p-9, -0x1.ab0c2731f05c1p-9, 0x1.69cf46dbc0a44p-9, \
        -0x1.a6a519a122fc2p-10, 0x1.3360ccd0dadcap-11, 0x1.fff2cfb0453d9p-1
#define EXACT_ERF_PIECE5_COEFFS                                                                    \
    -0x1.0ca448b2514afp-19, 0x1.aa54ec177efa1p-16, -0x1.568a713e85e0bp-14, 0x1.64906a83ea82dp-13,  \
        -0x1.14543e792cdb9p-12, 0x1.490a1190a8536p-12, -0x1.2c7d5f5e28e06p-12,                     \
        0x1.9aa48b38b364ep-13, -0x1.8de3cd27ab05fp-14, 0x1.e9b5e8c785d9fp-16, 0x1.ffff6f9f67e55p-1
#define EXACT_ERF_PIECE6_COEFFS                                                                    \
    -0x1.5f61cd2db161dp-19, 0x1.a2d4499b6dc3ap-18, -0x1.755eff579586fp-17, 0x1.10ea831f75b78p-16,  \
        -0x1.4357d039a648cp-16, 0x1.3437b3fa88326p-16, -0x1.d06f57c786977p-17,                     \
        0x1.0b6a758a899d5p-17, -0x1.bba3ac4ee140cp-19, 0x1.d9371e76943d0p-21, 0x1.fffffc2f171e3p-1
EXACT_FN double exact_erf_piece(double ax)
{
    if (ax < 1.0)
        return EXACT_APPLY(EXACT_POLY11, (ax - 0.75), EXACT_ERF_PIECE0_COEFFS);
    if (ax < 1.5)
        return EXACT_APPLY(EXACT_POLY11, (ax - 1.25), EXACT_ERF_PIECE1_COEFFS);
    if (ax < 2.0)
        return EXACT_APPLY(EXACT_POLY11, (ax - 1.75), EXACT_ERF_PIECE2_COEFFS);
    if (ax < 2.5)
        return EXACT_APPLY(EXACT_POLY11, (ax - 2.25), EXACT_ERF_PIECE3_COEFFS);
    if (ax < 3.0)
        return EXACT_APPLY(EXACT_POLY11, (ax - 2.75), EXACT_ERF_PIECE4_COEFFS);
    if (ax < 3.5)
        return EXACT_APPLY(EXACT_POLY11, (ax - 3.25), EXACT_ERF_PIECE5_COEFFS);
    if (ax < 4.0)
        return EXACT_APPLY(EXACT_POLY11, (ax - 3.75), EXACT_ERF_PIECE6_COEFFS);
    return 1.0;
}

/* erf(x): x P(x^2) below 1/2, seven degree-10 pieces on [1/2, 4), 1 beyond (erff(x)
 * rounds to 1 from 3.92 on). Chebyshev fits (bench/exact_math_coeffs.py), in double. */
EXACT_FN float exact_erff(float x)
{
    if (x != x)
        return exact_f32_quiet(x);
    double xd = (double)x, ax = xd < 0.0 ? -xd : xd;
    if (ax < 0.5)
        return (float)EXACT_MUL(xd, exact_erf_small(EXACT_MUL(xd, xd)));
    double r = exact_erf_piece(ax);
    return (float)(xd < 0.0 ? -r : r);
}

/* tanh(x) / x, a polynomial in s = x^2, |x| <= 0.5625; max fit error 1.0e-15 */
#define EXACT_TANH_SMALL_COEFFS                                                                    \
    -0x1.0fd737a408af2p-13, 0x1.13333b5c17191p-11, -0x1.77a8becf9a400p-10, 0x1.d62da4092b797p-9,   \
        -0x1.22688d6fc1506p-7, 0x1.664f0c0c85fc9p-6, -0x1.ba1ba0450794fp-5, 0x1.1111110ec6733p-3,  \
        -0x1.555555555287cp-2, 0x1.ffffffffffff7p-1
EXACT_FN double exact_tanh_small(double s)
{
    return EXACT_APPLY(EXACT_POLY10, s, EXACT_TANH_SMALL_COEFFS);
}

/* tanh(x): x P(x^2) up to 0.5625, then 1 - 2 / (e^2|x| + 1) (no cancellation: the
 * quotient is below 1/2), 1 from 10 on (tanhf rounds to 1 from 9.01 on). */
EXACT_FN float exact_tanhf(float x)
{
    if (x != x)
        return exact_f32_quiet(x);
    double xd = (double)x, ax = xd < 0.0 ? -xd : xd;
    if (ax <= 0.5625)
        return (float)EXACT_MUL(xd, exact_tanh_small(EXACT_MUL(xd, xd)));
    double r = ax < 10.0 ? 1.0 - 2.0 / (exact_exp_for_float(2.0 * ax) + 1.0) : 1.0;
    return (float)(xd < 0.0 ? -r : r);
}

#endif

/* The fp16/bf16 <-> fp32 conversions by bit manipulation, inline: src/dtype.c
 * exports them (zero_f32_to_f16, ...) and loops over arrays include this header
 * so the compiler can vectorize them. Portable C (no _Float16, no F16C), so every
 * caller, the cuda backend's kernels included, sees the same bits. Narrowing rounds to nearest,
 * ties to even; NaNs come out quiet with their sign and the top payload bits kept. Not installed.
 */
#ifndef ZERO_DTYPE_CONVERT_H
#define ZERO_DTYPE_CONVERT_H

#include <stdint.h>
#include <string.h>

/* The cuda backend's kernels include this header too (cuda_device.cuh). */
#ifdef __CUDACC__
#define DTYPE_FN static inline __host__ __device__
#else
#define DTYPE_FN static inline
#endif

DTYPE_FN uint32_t dtype_f32_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    return x;
}

DTYPE_FN float dtype_f32_from_bits(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}

/* Drops the low `shift` bits of v, rounding to nearest with ties to even. The
 * result may carry into the next bit (the next binade, or inf): that is wanted. */
DTYPE_FN uint32_t dtype_round_shift_rne(uint32_t v, unsigned shift)
{
    uint32_t kept = v >> shift;
    uint32_t rest = v & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1)))
        kept++;
    return kept;
}

/* fp16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
DTYPE_FN uint16_t dtype_f32_to_f16(float f)
{
    uint32_t x = dtype_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t mag = x & 0x7fffffff;

    if (mag >= 0x7f800000) {
        if (mag == 0x7f800000)
            return sign | 0x7c00;
        /* NaN: quiet bit set so a payload living only in the dropped bits stays NaN */
        return sign | 0x7e00 | (uint16_t)((mag >> 13) & 0x3ff);
    }
    /* 65520 = 0x477ff000 is halfway between 65504 (max fp16) and 65536: ties go to
     * the even neighbour, which is inf. */
    if (mag >= 0x477ff000)
        return sign | 0x7c00;
    if (mag >= 0x38800000) /* >= 2^-14: a normal fp16; rebias the exponent 127 -> 15 */
        return sign | (uint16_t)dtype_round_shift_rne(mag - (112u << 23), 13);
    if (mag < 0x33000000) /* < 2^-25 (half the smallest subnormal): rounds to zero */
        return sign;
    /* Subnormal fp16: value = q * 2^-24. With mant = 1.m * 2^23 and biased exponent
     * e, q = mant * 2^(e - 126), a right shift by 126 - e in [14, 24]. */
    uint32_t e = mag >> 23;
    uint32_t mant = (mag & 0x7fffff) | 0x800000;
    return sign | (uint16_t)dtype_round_shift_rne(mant, 126 - e);
}

DTYPE_FN float dtype_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1f;
    uint32_t m = h & 0x3ff;

    if (e == 0x1f) /* inf, or NaN made quiet */
        return dtype_f32_from_bits(sign | 0x7f800000 | (m << 13) | (m ? 0x400000u : 0));
    if (e == 0) {
        if (m == 0)
            return dtype_f32_from_bits(sign);
        /* Subnormal (m / 2^10) * 2^-14: each shift that moves the leading one up to
         * the implicit bit 10 halves the exponent. */
        uint32_t exp = 113; /* biased fp32 exponent of 2^-14 */
        while (!(m & 0x400)) {
            m <<= 1;
            exp--;
        }
        return dtype_f32_from_bits(sign | (exp << 23) | ((m & 0x3ff) << 13));
    }
    return dtype_f32_from_bits(sign | ((e + 112) << 23) | (m << 13));
}

/* bf16 is the top half of an fp32: same exponent range, 7 mantissa bits. */
DTYPE_FN uint16_t dtype_f32_to_bf16(float f)
{
    uint32_t x = dtype_f32_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000) /* NaN: never let rounding carry it into inf */
        return (uint16_t)((x >> 16) | 0x0040);
    return (uint16_t)(dtype_round_shift_rne(x, 16));
}

DTYPE_FN float dtype_bf16_to_f32(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    if ((x & 0x7fffffff) > 0x7f800000)
        x |= 0x400000;
    return dtype_f32_from_bits(x);
}

#endif

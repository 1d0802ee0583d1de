/* The fp16/bf16 <-> fp32 conversions by bit manipulation, inline: src/base/dtype.c
 * exports them (zero_f32_to_f16, ...) and loops over arrays include this header
 * so the compiler can vectorize them. Portable C (no _Float16, no F16C), so every
 * caller, the cuda backend's kernels included, sees the same bits. Narrowing rounds to nearest,
 * ties to even; NaNs come out quiet with their sign and the top payload bits kept. Not installed.
 */
#ifndef ZERO_DTYPE_CONVERT_H
#define ZERO_DTYPE_CONVERT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "zero/dtype.h"

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
 * result may carry into the next bit (the next binade, or inf): that is wanted.
 * Up when rest > half, or rest == half and kept is odd: both are rest + (kept & 1)
 * > half (no branch, so loops vectorize). */
DTYPE_FN uint32_t dtype_round_shift_rne(uint32_t v, unsigned shift)
{
    uint32_t kept = v >> shift;
    uint32_t rest = v & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    return kept + (uint32_t)(rest + (kept & 1) > half);
}

/* all ones when c, else 0: the selections below are and/or of masks, because gcc
 * does not if-convert a choice between values computed by floating-point operations
 * (they might trap), and a branch per element keeps a loop scalar */
DTYPE_FN uint32_t dtype_mask(int c)
{
    return 0u - (uint32_t)(c != 0);
}

/* fp16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. Both directions compute
 * every case and select one with masks, without branches or loops, so loops over
 * arrays vectorize (the same bits as the selection by cases: checked over every input). */
DTYPE_FN uint16_t dtype_f32_to_f16(float f)
{
    uint32_t x = dtype_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t mag = x & 0x7fffffff;

    /* NaN: quiet bit set so a payload living only in the dropped bits stays NaN */
    uint32_t nan = 0x7e00 | ((mag >> 13) & 0x3ff);
    /* >= 2^-14: a normal fp16; rebias the exponent 127 -> 15 (wraps, unused, below) */
    uint32_t normal = dtype_round_shift_rne(mag - (112u << 23), 13);
    /* < 2^-14: a subnormal q * 2^-24 (or zero). In [0.5, 1) an fp32's ulp is 2^-24,
     * so the IEEE addition |f| + 0.5 rounds |f| to the nearest multiple of 2^-24,
     * ties to even, and leaves q in the low mantissa bits (q = 1024 is 2^-14, the
     * smallest normal, as it should be). */
    uint32_t subnormal = dtype_f32_bits(dtype_f32_from_bits(mag) + 0.5f) - 0x3f000000u;
    /* 65520 = 0x477ff000 is halfway between 65504 (max fp16) and 65536: ties go to
     * the even neighbour, which is inf; inf itself lands there too. */
    uint32_t is_nan = dtype_mask(mag > 0x7f800000);
    uint32_t is_inf = ~is_nan & dtype_mask(mag >= 0x477ff000);
    uint32_t is_normal = ~(is_nan | is_inf) & dtype_mask(mag >= 0x38800000);
    uint32_t is_subnormal = ~(is_nan | is_inf | is_normal);
    uint32_t r =
        (nan & is_nan) | (0x7c00u & is_inf) | (normal & is_normal) | (subnormal & is_subnormal);
    return sign | (uint16_t)r;
}

DTYPE_FN float dtype_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1f;
    uint32_t m = h & 0x3ff;

    /* inf, or NaN made quiet */
    uint32_t special = 0x7f800000 | (m << 13) | (dtype_mask(m) & 0x400000u);
    /* subnormal (or zero) m * 2^-24: exact in fp32, a normal number there (m < 2^10,
     * so the signed conversion, which vectorizes everywhere, is exact too) */
    uint32_t subnormal = dtype_f32_bits((float)(int32_t)m * 0x1p-24f);
    uint32_t normal = ((e + 112) << 23) | (m << 13);
    uint32_t is_special = dtype_mask(e == 0x1f), is_subnormal = dtype_mask(e == 0);
    return dtype_f32_from_bits(sign | (special & is_special) | (subnormal & is_subnormal) |
                               (normal & ~(is_special | is_subnormal)));
}

/* bf16 is the top half of an fp32: same exponent range, 7 mantissa bits. Rounding
 * to nearest even is one carry: x + 0x7fff + (kept & 1) carries into the kept half
 * exactly when dtype_round_shift_rne(x, 16) rounds up (no wrap: the patterns near
 * 2^32 are NaNs, which take the other value). The choice between two integers,
 * unlike one between floating-point results, is if-converted, and gcc's selection
 * is a blend where the and/or of masks cost twice the instructions (most of a
 * bf16 optimizer step's integer work). */
DTYPE_FN uint16_t dtype_f32_to_bf16(float f)
{
    uint32_t x = dtype_f32_bits(f);
    uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1)) >> 16;
    /* NaN: quiet, truncated; rounding could carry it into inf */
    return (x & 0x7fffffff) > 0x7f800000 ? (uint16_t)((x >> 16) | 0x0040) : (uint16_t)rounded;
}

DTYPE_FN float dtype_bf16_to_f32(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    return dtype_f32_from_bits(x | (0x400000u & dtype_mask((x & 0x7fffffff) > 0x7f800000)));
}

/* Element i of an fp32/fp16/bf16 array as fp32 (exact). */
DTYPE_FN float dtype_load_f32(const void *x, enum zero_dtype t, size_t i)
{
    switch (t) {
    case ZERO_F16:
        return dtype_f16_to_f32(((const uint16_t *)x)[i]);
    case ZERO_BF16:
        return dtype_bf16_to_f32(((const uint16_t *)x)[i]);
    default:
        return ((const float *)x)[i];
    }
}

/* Stores v as element i of an fp32/fp16/bf16 array (rounded to nearest even). */
DTYPE_FN void dtype_store_f32(void *x, enum zero_dtype t, size_t i, float v)
{
    switch (t) {
    case ZERO_F16:
        ((uint16_t *)x)[i] = dtype_f32_to_f16(v);
        break;
    case ZERO_BF16:
        ((uint16_t *)x)[i] = dtype_f32_to_bf16(v);
        break;
    default:
        ((float *)x)[i] = v;
        break;
    }
}

#endif

/* The bf16-product contract ("bf16_dot"): the arithmetic of x86's VDPBF16PS, written
 * as IEEE operations so that every processor reproduces it bit for bit (not installed).
 *
 * Intel's definition (SDM, VDPBF16PS; "FP32 FMA with DAZ in, FTZ out and RNE rounding,
 * MXCSR neither consulted nor updated"), per fp32 lane i and dword pair (x, y):
 *
 *   acc = acc + x.bf16[1] * y.bf16[1]      the odd (high) element first
 *   acc = acc + x.bf16[0] * y.bf16[0]      then the even (low) one
 *
 * each line one fused multiply-add (the bf16 product is exact in fp32's precision,
 * the sum rounded once) with
 *   - round to nearest even, whatever MXCSR says;
 *   - DAZ in: a subnormal bf16 operand, and a subnormal fp32 acc, count as zero of
 *     their sign;
 *   - FTZ out: a result whose magnitude, rounded to fp32's 24 bits as if the exponent
 *     were unbounded, is below 2^-126 becomes zero of its sign ("tininess after
 *     rounding", as MXCSR.FTZ does: 2^-126 - 2^-160 stays 2^-126, 2^-126 - 0.75 *
 *     2^-150 becomes 0 although IEEE rounding onto the subnormal grid gives 2^-126);
 *   - inf and NaN as in IEEE (inf * 0 and inf - inf are NaN). A NaN's payload is not
 *     part of the contract (as for the fp32 chain: x86, arm and CUDA choose differently).
 * tests/test_bf16_dot.c checks all of this against the instruction (every bf16 against a
 * grid of partners, random pairs, the edge table in tests/fixtures/bf16_dot_edges.txt).
 *
 * A GEMM under the contract: each output is one chain over k in pairs (2p, 2p + 1),
 * p = 0, 1, ..., each pair as above (k = 2p + 1 first); an odd K ends with the pair
 * (K - 1, K) whose element K is +0 in both operands, so its first step adds +0 * +0
 * (turning a -0 acc into +0). The chain's start is 0 or C's old value (DAZ applies to
 * it on the first step); alpha and beta act after it as in the fp32 chain
 * (backends/cpu/cpu_gemm.h). */
#ifndef ZERO_BF16_DOT_H
#define ZERO_BF16_DOT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define BF16_DOT_MIN_NORMAL 0x1p-126f

/* host code, and CUDA device code too (backends/cuda/cuda_exact_gemm.cu) */
#ifdef __CUDACC__
#define BF16_DOT_FN __host__ __device__ static inline
#else
#define BF16_DOT_FN static inline
#endif

/* a bf16 as fp32, a subnormal as zero of its sign (DAZ) */
BF16_DOT_FN float bf16_dot_operand(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    if ((x & 0x7f800000u) == 0)
        x &= 0x80000000u;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* an fp32 acc, a subnormal as zero of its sign (DAZ) */
BF16_DOT_FN float bf16_dot_daz(float a)
{
    return fabsf(a) < BF16_DOT_MIN_NORMAL ? copysignf(0.0f, a) : a;
}

/* x * y + acc with DAZ'd operands, rounded to nearest even, FTZ'd as above. fmaf rounds
 * onto the subnormal grid; the two roundings differ only where fmaf gives exactly
 * +-2^-126, and there every term is small (|x| < 2^17 with |y| >= 2^-126, |acc| <
 * 2^-101: a nonzero sum near 2^-126 needs terms that fine), so the same sum scaled by
 * 2^24 is rounded in the normal range and decides. */
BF16_DOT_FN float bf16_dot_fma(float x, float y, float acc)
{
    const float r = fmaf(x, y, acc);
    const float m = fabsf(r);
    if (m < BF16_DOT_MIN_NORMAL)
        return copysignf(0.0f, r);
    if (m == BF16_DOT_MIN_NORMAL && fabsf(fmaf(x * 0x1p24f, y, acc * 0x1p24f)) < 0x1p-102f)
        return copysignf(0.0f, r);
    return r;
}

/* One VDPBF16PS lane: acc + x (2 bf16, element 0 in the low half) . y */
BF16_DOT_FN float bf16_dot_pair(float acc, uint32_t x, uint32_t y)
{
    acc = bf16_dot_daz(acc);
    acc = bf16_dot_fma(bf16_dot_operand((uint16_t)(x >> 16)), bf16_dot_operand((uint16_t)(y >> 16)),
                       acc);
    return bf16_dot_fma(bf16_dot_operand((uint16_t)x), bf16_dot_operand((uint16_t)y), acc);
}

/* The chain over n elements x (n), y (n) from acc (the reference of a GEMM output). */
BF16_DOT_FN float bf16_dot_chain(float acc, const uint16_t *x, const uint16_t *y, int64_t n)
{
    for (int64_t k = 0; k < n; k += 2) {
        const uint32_t xp = x[k] | (k + 1 < n ? (uint32_t)x[k + 1] << 16 : 0u);
        const uint32_t yp = y[k] | (k + 1 < n ? (uint32_t)y[k + 1] << 16 : 0u);
        acc = bf16_dot_pair(acc, xp, yp);
    }
    return acc;
}

#endif

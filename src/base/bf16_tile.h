/* The bf16-tile contract ("bf16_tile"): the arithmetic of x86's AMX tile product
 * TDPBF16PS, written as IEEE operations so that every processor reproduces it bit for
 * bit (not installed).
 *
 * Intel's pseudo-code adds a row's products to the fp32 accumulator "with DAZ in, FTZ
 * out, RNE rounding, MXCSR neither consulted nor updated" and leaves the order of the
 * additions to the implementation. The order, read off the instruction on an Intel Xeon
 * with amx_bf16 (tests/test_bf16_tile_hw.c checks it there on every run), per output
 * and per instruction, i.e. per block of at most 32 k (16 pairs):
 *
 *   E = +0;  for the block's even k, in increasing k:  E = E + x[k] * y[k]
 *   O = +0;  for the block's odd k, in increasing k:   O = O + x[k] * y[k]
 *   acc = acc + (E + O)
 *
 * each line one step of bf16_dot.h (a fused multiply-add with the bf16 product exact,
 * rounded once to nearest even; bf16 subnormals and a subnormal acc read as zero of
 * their sign; a result below 2^-126 after rounding flushed to zero of its sign; inf and
 * NaN as in IEEE, a NaN's payload not promised). The two sums are plain additions
 * (exact below 2^-125, so their flush is the IEEE result's). A GEMM output is the chain
 * of its blocks: k in [0, 32), [32, 64), ... from the start (0 or C's old value), the
 * last block padded to 32 with elements +0 in both operands when 32 does not divide K
 * (the padding's products +0 * +0 are steps of the chains: they turn an E or O of -0,
 * which a flushed negative product leaves, into +0). alpha and beta act after the
 * chain, as in the fp32 chain (backends/cpu/cpu_gemm.h). */
#ifndef ZERO_BF16_TILE_H
#define ZERO_BF16_TILE_H

#include "base/bf16_dot.h"

/* k per TDPBF16PS: a tile row of 64 bytes holds 32 bf16 */
#define BF16_TILE_BLOCK 32

/* The sum of two contract values (E + O, acc + their sum), flushed as every step. */
BF16_DOT_FN float bf16_tile_add(float a, float b)
{
    return bf16_dot_fma(a, 1.0f, b);
}

/* One block for one output: acc + (E + O) over n <= 32 elements x (n), y (n), the
 * block's other elements +0. */
BF16_DOT_FN float bf16_tile_block(float acc, const uint16_t *x, const uint16_t *y, int64_t n)
{
    float e = 0.0f, o = 0.0f;
    for (int64_t k = 0; k < BF16_TILE_BLOCK; k++) {
        const float p = k < n ? bf16_dot_operand(x[k]) : 0.0f,
                    q = k < n ? bf16_dot_operand(y[k]) : 0.0f;
        if (k % 2 == 0)
            e = bf16_dot_fma(p, q, e);
        else
            o = bf16_dot_fma(p, q, o);
    }
    return bf16_tile_add(bf16_dot_daz(acc), bf16_tile_add(e, o));
}

/* The chain over n elements x (n), y (n) from acc (the reference of a GEMM output). */
BF16_DOT_FN float bf16_tile_chain(float acc, const uint16_t *x, const uint16_t *y, int64_t n)
{
    for (int64_t k = 0; k < n; k += BF16_TILE_BLOCK)
        acc = bf16_tile_block(acc, x + k, y + k, n - k < BF16_TILE_BLOCK ? n - k : BF16_TILE_BLOCK);
    return acc;
}

#endif

/* Block-wise symmetric int4 quantization, one element at a time (zero/backend_quant.h
 * states the format: scale max |x| / 7, codes in [-7, 7], two to a byte, element 2i in
 * the low nibble). The cpu backend's loops and the cuda backend's kernels call these,
 * so both produce the same codes and values; each step is one correctly rounded IEEE
 * operation, as for int8 (quant_int8.h). Not installed. */
#ifndef ZERO_QUANT_INT4_H
#define ZERO_QUANT_INT4_H

#include <math.h>
#include <stdint.h>

#include "base/quant_int8.h" /* QUANT_DIV, QUANT_MUL, DTYPE_FN */

#define QUANT_INT4_MAX 7.0f

/* A block's scale from max |x| over it (0 for an all-zero block). */
DTYPE_FN float quant_int4_scale(float amax)
{
    return QUANT_DIV(amax, QUANT_INT4_MAX);
}

/* x's code: round-half-even(x / scale) in [-7, 7]; 0 for a zero scale or a NaN quotient. */
DTYPE_FN int quant_int4_code(float x, float scale)
{
    if (scale == 0.0f)
        return 0;
    float v = rintf(QUANT_DIV(x, scale));
    if (v > QUANT_INT4_MAX)
        v = QUANT_INT4_MAX;
    else if (v < -QUANT_INT4_MAX)
        v = -QUANT_INT4_MAX;
    else if (v != v)
        v = 0.0f;
    return (int)v;
}

/* Two codes in one byte: lo (element 2i) in bits 0-3, hi (element 2i + 1) in bits 4-7. */
DTYPE_FN uint8_t quant_int4_pack(int lo, int hi)
{
    return (uint8_t)(((unsigned)lo & 0xFu) | (((unsigned)hi & 0xFu) << 4));
}

/* Element i's code from the packed bytes q, sign-extended from its nibble. */
DTYPE_FN int quant_int4_unpack(const uint8_t *q, size_t i)
{
    int nibble = (q[i / 2] >> (4 * (i % 2))) & 0xF;
    return nibble >= 8 ? nibble - 16 : nibble;
}

/* The value a code stands for, in fp32 (exact: 4 bits times a float). */
DTYPE_FN float quant_int4_value(int q, float scale)
{
    return QUANT_MUL((float)q, scale);
}

#endif

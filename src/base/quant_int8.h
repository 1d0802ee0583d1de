/* Block-wise symmetric int8 quantization, one element at a time (zero/backend_quant.h
 * states the format): the cpu backend's loops and the cuda backend's kernels call
 * these, so both produce the same codes and values. Each is one correctly rounded
 * IEEE operation (no contraction can fuse them). Not installed. */
#ifndef ZERO_QUANT_INT8_H
#define ZERO_QUANT_INT8_H

#include <math.h>
#include <stdint.h>

#include "base/dtype_convert.h" /* DTYPE_FN: host, and device under nvcc */

#define QUANT_INT8_MAX 127.0f

/* the device's explicitly rounded operations: what the host's / and * give */
#ifdef __CUDA_ARCH__
#define QUANT_DIV(a, b) __fdiv_rn(a, b)
#define QUANT_MUL(a, b) __fmul_rn(a, b)
#else
#define QUANT_DIV(a, b) ((a) / (b))
#define QUANT_MUL(a, b) ((a) * (b))
#endif

/* A block's scale from max |x| over it (0 for an all-zero block). */
DTYPE_FN float quant_int8_scale(float amax)
{
    return QUANT_DIV(amax, QUANT_INT8_MAX);
}

/* x's code: round-half-even(x / scale) in [-127, 127]; 0 for a zero scale, and for
 * a NaN quotient (a block holding inf or NaN). */
DTYPE_FN int8_t quant_int8_code(float x, float scale)
{
    if (scale == 0.0f)
        return 0;
    float v = rintf(QUANT_DIV(x, scale));
    if (v > QUANT_INT8_MAX)
        v = QUANT_INT8_MAX;
    else if (v < -QUANT_INT8_MAX)
        v = -QUANT_INT8_MAX;
    else if (v != v)
        v = 0.0f;
    return (int8_t)v;
}

/* The value a code stands for, in fp32 (exact: 8 bits times a float). */
DTYPE_FN float quant_int8_value(int8_t q, float scale)
{
    return QUANT_MUL((float)q, scale);
}

#endif

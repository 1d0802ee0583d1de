/* Quant: block-wise int8 quantization of a flat buffer (ZeRO++ qwZ's parameter gathers).
 *
 * x (n, t) splits into blocks of `block` consecutive elements (the last one shorter).
 * Block b's scale is max |x| over the block / 127 (0 for an all-zero block) and its
 * codes are q = round-half-even(x / scale), clamped to [-127, 127] (0 where the scale
 * is 0). Every operation is one correctly rounded IEEE division or product, so the
 * codes and the values they stand for are the same bits on every backend and ISA.
 * Shared by zero_quantized_weights (src/engine/qwz.c): the owner of a shard quantizes
 * it, the all-gather moves codes and scales, every rank dequantizes the same bits.
 *
 * Reached from struct zero_backend's `quant` pointer (zero/backend.h): NULL = the
 * backend has none (the engine then refuses the key, naming the backend); a present
 * group has every entry (src/base/backend_check.c). */
#ifndef ZERO_BACKEND_QUANT_H
#define ZERO_BACKEND_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "zero/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_QUANT_OPS_VERSION 1

struct zero_quant_ops {
    int version; /* ZERO_QUANT_OPS_VERSION */
    /* scales (ceil(n / block),) fp32 and q (n,) int8 of x (n,) of type t (fp32, fp16,
     * bf16); device memory, block > 0. */
    int (*quantize_int8)(void *self, const void *x, enum zero_dtype t, size_t n, size_t block,
                         float *scales, int8_t *q);
    /* y (n,) of type t = q * scale of its block, rounded once into t. */
    int (*dequantize_int8)(void *self, const float *scales, const int8_t *q, size_t n, size_t block,
                           void *y, enum zero_dtype t);
};

#ifdef __cplusplus
}
#endif

#endif

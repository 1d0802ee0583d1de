/* Quant: block-wise int8 and int4 quantization of a flat buffer and the all-to-all that
 * moves the codes (ZeRO++ qwZ's parameter gathers, qgZ's gradient exchange).
 *
 * x (n, t) splits into blocks of `block` consecutive elements (the last one shorter).
 * Block b's scale is max |x| over the block / 127 (0 for an all-zero block) and its
 * codes are q = round-half-even(x / scale), clamped to [-127, 127] (0 where the scale
 * is 0). Every operation is one correctly rounded IEEE division or product, so the
 * codes and the values they stand for are the same bits on every backend and ISA.
 * Shared by zero_quantized_weights (src/engine/qwz.c): the owner of a shard quantizes
 * it, the all-gather moves codes and scales, every rank dequantizes the same bits.
 *
 * int4 (zero_quantized_gradients, src/engine/qgz.c): the same blocks, scale max |x| / 7,
 * codes round-half-even(x / scale) clamped to [-7, 7], two to a byte: element 2i in the
 * low nibble of byte i, element 2i + 1 in the high nibble, each as 4-bit two's
 * complement (an odd n leaves the last high nibble 0).
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

#define ZERO_QUANT_OPS_VERSION 2

struct zero_group; /* zero/backend_groups.h */

struct zero_quant_ops {
    int version; /* ZERO_QUANT_OPS_VERSION */
    /* scales (ceil(n / block),) fp32 and q (n,) int8 of x (n,) of type t (fp32, fp16,
     * bf16); device memory, block > 0. */
    int (*quantize_int8)(void *self, const void *x, enum zero_dtype t, size_t n, size_t block,
                         float *scales, int8_t *q);
    /* y (n,) of type t = q * scale of its block, rounded once into t. */
    int (*dequantize_int8)(void *self, const float *scales, const int8_t *q, size_t n, size_t block,
                           void *y, enum zero_dtype t);
    /* Version 2 (qgZ). scales (ceil(n / block),) and q (ceil(n / 2),) bytes of nibbles. */
    int (*quantize_int4)(void *self, const void *x, enum zero_dtype t, size_t n, size_t block,
                         float *scales, uint8_t *q);
    int (*dequantize_int4)(void *self, const float *scales, const uint8_t *q, size_t n,
                           size_t block, void *y, enum zero_dtype t);
    /* All-to-all of bytes over group's G ranks (NULL: the world's N): send holds
     * send_bytes[j] bytes for member j, back to back in member order, and recv receives
     * recv_bytes[j] from member j, back to back (host arrays of G; a 0 skips the pair;
     * this rank's own part, the same size both ways, is copied). Blocking. Counted as
     * ZERO_COLL_ALL_TO_ALL, in the comm stats' group[] for a group, kind[] for the world; sent =
     * the bytes to the other members. */
    int (*all_to_all)(void *self, struct zero_group *group, const void *send,
                      const size_t *send_bytes, void *recv, const size_t *recv_bytes);
};

#ifdef __cplusplus
}
#endif

#endif

/* The bf16 products of the backend's GEMMs (libzero.matmul "bf16_dot" and "bf16_tile").
 *
 * Every GEMM of the backend whose two operands are bf16 (of type bf16, or fp32 rounded
 * to bf16 while packing, as the attention kernels' products) follows one of three
 * definitions, the same in exact and native mode (each is the product's definition):
 *
 * ZERO_BF16_PRODUCT_FP32 (the default): the fp32 chain of fused multiply-adds, as any
 * other GEMM.
 *
 * ZERO_BF16_PRODUCT_DOT, the bf16-product contract: each output one chain over k in
 * pairs with exactly x86's VDPBF16PS arithmetic:
 * per pair the odd element's product first, each step one fused multiply-add rounded
 * to nearest even, bf16 and fp32 subnormals read as zero, results below 2^-126 (after
 * rounding, exponent unbounded) flushed to zero of their sign, an odd K padded with +0
 * (docs/exactness.md, "The bf16-product contract"; src/base/bf16_dot.h).
 *
 * ZERO_BF16_PRODUCT_TILE, the bf16-tile contract: each output a chain of blocks of 32 k
 * with exactly the arithmetic of AMX's TDPBF16PS: per block an even-k and an odd-k
 * chain from +0 with the steps above, then acc + (E + O), a short block padded with +0
 * (docs/exactness.md, "The bf16-tile contract"; src/base/bf16_tile.h).
 *
 * The bits do not depend on the processor: the cpu backend runs VDPBF16PS where cpuid
 * has avx512_bf16 and TDPBF16PS where it has amx_bf16, the same IEEE steps elsewhere
 * (scalar, AVX2, AVX-512F, aarch64), as the cuda backend's exact GEMM does. Other GEMMs
 * (an fp32 or fp16 operand) keep the fp32 chain.
 *
 * Reached from struct zero_backend's `bf16_dot` pointer (zero/backend.h): NULL = the
 * backend lacks the contracts (the engine then refuses "bf16_dot" and "bf16_tile"); a
 * present group has every entry (src/base/backend_check.c) and takes every product. */
#ifndef ZERO_BACKEND_BF16_DOT_H
#define ZERO_BACKEND_BF16_DOT_H

#include "zero/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: set_bf16_dot(self, on) became set_bf16_product(self, product), with the tile
 * contract */
#define ZERO_BF16_DOT_OPS_VERSION 2

enum zero_bf16_product {
    ZERO_BF16_PRODUCT_FP32 = 0, /* the fp32 chain (the default) */
    ZERO_BF16_PRODUCT_DOT,      /* the bf16-product contract (VDPBF16PS) */
    ZERO_BF16_PRODUCT_TILE      /* the bf16-tile contract (TDPBF16PS) */
};

struct zero_bf16_dot_ops {
    int version; /* ZERO_BF16_DOT_OPS_VERSION */
    /* The bf16-bf16 GEMMs follow `product` from now on. ZERO_EINVAL for a value outside
     * the enum. */
    int (*set_bf16_product)(void *self, enum zero_bf16_product product);
};

#ifdef __cplusplus
}
#endif

#endif

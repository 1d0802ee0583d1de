/* The bf16-product contract for the backend's GEMMs (libzero.matmul "bf16_dot").
 *
 * While it is on, every GEMM of the backend whose two operands are bf16 (of type bf16,
 * or fp32 rounded to bf16 while packing, as the attention kernels' products) computes
 * each output as one chain over k in pairs with exactly x86's VDPBF16PS arithmetic:
 * per pair the odd element's product first, each step one fused multiply-add rounded
 * to nearest even, bf16 and fp32 subnormals read as zero, results below 2^-126 (after
 * rounding, exponent unbounded) flushed to zero of their sign, an odd K padded with +0
 * (docs/exactness.md, "The bf16-product contract"). The bits do not depend on the
 * processor: the cpu backend runs the instruction where cpuid has avx512_bf16 and the
 * same IEEE steps elsewhere (scalar, AVX2, AVX-512F, aarch64). Other GEMMs (an fp32 or
 * fp16 operand) keep the fp32 chain.
 *
 * Reached from struct zero_backend's `bf16_dot` pointer (zero/backend.h): NULL = the
 * backend lacks the contract (the engine then refuses "bf16_dot"); a present group has
 * every entry (src/base/backend_check.c). */
#ifndef ZERO_BACKEND_BF16_DOT_H
#define ZERO_BACKEND_BF16_DOT_H

#include "zero/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_BF16_DOT_OPS_VERSION 1

struct zero_bf16_dot_ops {
    int version; /* ZERO_BF16_DOT_OPS_VERSION */
    /* on = 1: the bf16-bf16 GEMMs follow the contract from now on (in exact and native
     * mode alike: the contract is the product's definition); on = 0: the fp32 chain
     * again (the default). */
    int (*set_bf16_dot)(void *self, int on);
};

#ifdef __cplusplus
}
#endif

#endif

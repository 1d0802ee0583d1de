/* The 16-bit stores: layer kernels that write (or read) the stored activation dtype.
 *
 * With libzero.activations "compute" the layers keep their activations in the compute
 * dtype (fp16/bf16). Where a backend has this group, a kernel writes the rounded value
 * as it produces it; without it, src/nn runs the fp32 entry into a workspace and casts
 * it into the stored buffer (the same bits). The suffix _stored: the entry reads or
 * writes the stored dtype.
 *
 * Reached from struct zero_backend's `stored` pointer (zero/backend.h): NULL = the
 * backend has none of these; a present group has every entry (src/base/registry.c
 * refuses one with a NULL entry or another version). */
#ifndef ZERO_BACKEND_STORED_H
#define ZERO_BACKEND_STORED_H

#include <stddef.h>
#include <stdint.h>

#include "zero/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_STORED_OPS_VERSION 1

struct zero_stored_ops {
    int version; /* ZERO_STORED_OPS_VERSION */
    /* LayerNorm with its output stored in y_type (ZERO_F32, ZERO_F16 or ZERO_BF16):
     *   x != NULL: layernorm_forward of x;
     *   x == NULL: res = a + b first, then res normalized (the fused group's
     *              residual_layernorm_forward, its aliasing rules)
     * y (rows, cols) holds each fp32 result of that entry rounded once (to nearest
     * even): the bits of the fp32 entry then cast, to that entry's own tolerance where
     * it has one (native mode). mean and rstd fp32, as there. */
    int (*layernorm_forward_stored)(void *self, void *y, enum zero_dtype y_type, float *mean,
                                    float *rstd, const float *x, float *res, const float *a,
                                    const float *b, const float *weight, const float *bias,
                                    int64_t rows, int64_t cols, float eps);
    /* gemm_bias with c (the pre-activation) and gelu stored in out_type (ZERO_F32,
     * ZERO_F16 or ZERO_BF16), arguments as there (gelu NULL: the bias alone):
     *   c32, gelu32 (m, n) = what gemm_bias writes into fp32 (gemm, bias_add and
     *                        gelu_forward in sequence where a backend has no fused group)
     *   c = c32 rounded once, gelu = gelu32 rounded once (to nearest even)
     * gelu32 is GELU of the fp32 c32, never of the rounded c. Exact mode: the bits of that
     * fp32 entry (or sequence) then cast. Native mode: each fp32 value within that entry's
     * own tolerance, so each stored value within it plus one unit in the last place of
     * out_type (at most 2^-7 of the value for bf16, 2^-10 for fp16, in the normal range): a
     * value near a rounding midpoint may round the other way. c and gelu disjoint. */
    int (*gemm_bias_stored)(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                            const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                            enum zero_dtype b_type, int64_t ldb, const float *bias, void *c,
                            void *gelu, enum zero_dtype out_type, int64_t ldc, enum zero_gelu kind);
    /* gemm_dgelu with the saved pre-activation pre (m, n) stored in pre_type (ZERO_F32,
     * ZERO_F16 or ZERO_BF16), read widened exactly; c fp32 as there:
     *   c (m, n) = (op(a) op(b)) * gelu'(widen(pre))
     * Exact mode: the bits of the cast of pre to fp32 then gemm_dgelu (gemm then
     * gelu_backward in place where a backend has no fused group); native mode: to that
     * entry's tolerance (the widening is exact, nothing is added). */
    int (*gemm_dgelu_stored)(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                             const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                             enum zero_dtype b_type, int64_t ldb, float *c, int64_t ldc,
                             const void *pre, enum zero_dtype pre_type, enum zero_gelu kind);
};

#ifdef __cplusplus
}
#endif

#endif

/* The fused layer kernels: a GEMM with its epilogue, a residual add with its LayerNorm.
 *
 * Where a backend has them, src/nn calls one of these instead of the plain core entries
 * they fuse (gemm, bias_add, gelu_forward, gelu_backward, bias_grad, layernorm_forward);
 * without them it calls those entries in sequence. Each entry's result is that
 * sequence's, to rounding.
 *
 * Reached from struct zero_backend's `fused` pointer (zero/backend.h): NULL = the
 * backend has none of these; a present group has every entry (src/base/registry.c
 * refuses one with a NULL entry or another version). */
#ifndef ZERO_BACKEND_FUSED_H
#define ZERO_BACKEND_FUSED_H

#include <stddef.h>
#include <stdint.h>

#include "zero/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_FUSED_OPS_VERSION 1

struct zero_fused_ops {
    int version; /* ZERO_FUSED_OPS_VERSION */
    /* The residual add fused with the LayerNorm that follows it:
     *   res (rows, cols) = a + b;  then layernorm_forward(y, mean, rstd, res, weight, bias)
     * res is a or b itself or disjoint from both; y, mean and rstd are disjoint from them. */
    int (*residual_layernorm_forward)(void *self, float *res, float *y, float *mean, float *rstd,
                                      const float *a, const float *b, const float *weight,
                                      const float *bias, int64_t rows, int64_t cols, float eps);
    /* The GEMM with its bias (and GELU) applied as C is written (cuBLASLt's epilogues):
     *   c (m, n) = op(a) op(b) + bias (n) on every row   (gemm with alpha 1, beta 0)
     *   gelu (m, n) = gelu(c) when gelu is not NULL     (c keeps the pre-activation)
     * a, b as in gemm; c and gelu fp32 and contiguous (ldc == n); gemm, bias_add and
     * gelu_forward in sequence, to rounding. */
    int (*gemm_bias)(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                     const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                     enum zero_dtype b_type, int64_t ldb, const float *bias, float *c, int64_t ldc,
                     float *gelu, enum zero_gelu kind);
    /* The GEMM with GELU's backward applied as C is written (cuBLASLt's DGELU):
     *   c (m, n) = (op(a) op(b)) * gelu'(pre)   with pre (m, n) the saved pre-activation
     * a, b as in gemm; c and pre fp32 and contiguous (ldc == n); gemm (alpha 1, beta 0)
     * then gelu_backward in place, to rounding. */
    int (*gemm_dgelu)(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                      const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                      enum zero_dtype b_type, int64_t ldb, float *c, int64_t ldc, const float *pre,
                      enum zero_gelu kind);
    /* The weight gradient's GEMM with the bias gradient taken from the dy operand it
     * reads (cuBLASLt's BGRADA / BGRADB epilogues):
     *   c (m, n)   = op(a) op(b) + beta * c              (gemm with alpha 1)
     *   db (len)   = db_beta * db + sum over rows of dy (k, len)   (bias_grad)
     * dy is the fp32 gradient that one operand holds, stored (k, len) contiguous:
     * db_side 0: a is dy (trans_a 1, lda = m, len = m); 1: b is dy (trans_b 0, ldb = n,
     * len = n). That operand may be dy rounded to a_type: a fused path may sum it as the
     * GEMM reads it (the cuda backend only with ZERO_CUDA_BGRAD=lowp), the unfused one
     * (gemm then bias_grad of dy) sums dy; they agree to dy's rounding to a_type.
     * c fp32 and contiguous (ldc == n). */
    int (*gemm_bgrad)(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                      const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                      enum zero_dtype b_type, int64_t ldb, float beta, float *c, int64_t ldc,
                      int db_side, const float *dy, float *db, float db_beta);
};

#ifdef __cplusplus
}
#endif

#endif

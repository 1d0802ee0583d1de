/* The optional 16-bit stored-activation GEMM entries of include/zero/backend.h
 * (gemm_bias_stored, gemm_dgelu_stored) as their contracts define them, on a backend be
 * that may lack them, whose memory is the host's (the cpu's): be's fp32 entries into
 * fp32 temporaries, then the cast; or the cast of pre to fp32, then the fp32 entries.
 * The temporaries are malloc'ed, outside the ledger, so that a run's workspace peak
 * shows what src/nn itself allocates. test_gpt_stages puts them in a copy of the cpu's
 * table; test_cuda_backend runs them on the cpu device for the expected bits. */
#ifndef ZERO_TEST_STORED_ENTRIES_REF_H
#define ZERO_TEST_STORED_ENTRIES_REF_H

#include "zero/backend.h"
#include "zero/backend_fused.h"

int ref_gemm_bias_stored(const struct zero_backend *be, void *self, int trans_a, int trans_b,
                         int64_t m, int64_t n, int64_t k, const void *a, enum zero_dtype a_type,
                         int64_t lda, const void *b, enum zero_dtype b_type, int64_t ldb,
                         const float *bias, void *c, void *gelu, enum zero_dtype out_type,
                         int64_t ldc, enum zero_gelu kind);
int ref_gemm_dgelu_stored(const struct zero_backend *be, void *self, int trans_a, int trans_b,
                          int64_t m, int64_t n, int64_t k, const void *a, enum zero_dtype a_type,
                          int64_t lda, const void *b, enum zero_dtype b_type, int64_t ldb, float *c,
                          int64_t ldc, const void *pre, enum zero_dtype pre_type,
                          enum zero_gelu kind);

#endif

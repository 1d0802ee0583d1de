/* gemm_bias: a GEMM whose bias (and GELU) cuBLASLt applies in its epilogue as C is
 * written (llm.c's matmul_forward_cublaslt), saving the bias pass and the GELU pass
 * over the output. Native mode only, and only where the epilogue can take the case:
 * device operands of one dtype, 16-byte aligned bias, C and activation, the leading
 * dimension a multiple of 8 (GELU's auxiliary output), the tanh GELU (cuBLASLt's).
 * Everything else, exact mode and a case cuBLASLt refuses, runs the unfused entries
 * (gemm, bias_add, gelu_forward): exact mode keeps the cpu's bits. */
#include <stdint.h>

#include "cuda_ops.h"
#include "zero_cuda_profile.h"

static cudaDataType_t lt_type(enum zero_dtype t)
{
    return t == ZERO_F16 ? CUDA_R_16F : t == ZERO_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

static int aligned16(const void *p)
{
    return ((uintptr_t)p & 15) == 0;
}

/* the epilogue may take this case (cuBLASLt may still refuse it: ZERO_ENOTSUP) */
static int epilogue_fits(struct cuda_state *s, const void *a, enum zero_dtype a_type, const void *b,
                         enum zero_dtype b_type, const float *bias, const float *c, int64_t ldc,
                         const float *gelu, enum zero_gelu kind)
{
    return s->mode == ZERO_COLL_NATIVE && s->lt != NULL && a_type == b_type &&
           (a_type == ZERO_F32 || a_type == ZERO_F16 || a_type == ZERO_BF16) && aligned16(bias) &&
           aligned16(c) && !cuda_is_host_memory(s, a) && !cuda_is_host_memory(s, b) &&
           !cuda_is_host_memory(s, bias) && !cuda_is_host_memory(s, c) &&
           (gelu == NULL || (kind == ZERO_GELU_TANH && ldc % 8 == 0 && aligned16(gelu) &&
                             !cuda_is_host_memory(s, gelu)));
}

int cuda_gemm_bias(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                   const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                   enum zero_dtype b_type, int64_t ldb, const float *bias, float *c, int64_t ldc,
                   float *gelu, enum zero_gelu kind)
{
    struct cuda_state *s = self;
    if (bias == NULL || c == NULL)
        return cuda_fail(s, ZERO_EINVAL, "gemm_bias: no bias or no output");
    if (m < 0 || n < 0 || k < 0 || ldc != n)
        return cuda_fail(s, ZERO_EINVAL,
                         "gemm_bias: m = %lld, n = %lld, k = %lld, ldc = %lld (ldc must be n)",
                         (long long)m, (long long)n, (long long)k, (long long)ldc);
    if (kind != ZERO_GELU_ERF && kind != ZERO_GELU_TANH)
        return cuda_fail(s, ZERO_EINVAL, "gemm_bias: unknown gelu kind %d", (int)kind);
    if (m == 0 || n == 0)
        return ZERO_OK;
    if (k > 0 && epilogue_fits(s, a, a_type, b, b_type, bias, c, ldc, gelu, kind)) {
        struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_GEMM);
        const double mn = (double)m * (double)n;
        const double bytes = (double)zero_dtype_size(a_type) * ((double)m + (double)n) * (double)k +
                             (gelu != NULL ? 8.0 : 4.0) * mn;
        int rc = cuda_prof_end(s, &pm, 2.0 * mn * (double)k, bytes,
                               cuda_lt_gemm_bias(s, trans_a, trans_b, m, n, k, a, lda, b, ldb,
                                                 lt_type(a_type), bias, c, ldc, gelu));
        if (rc != ZERO_ENOTSUP)
            return rc;
    }
    int rc = cuda_gemm(s, trans_a, trans_b, m, n, k, 1.0f, a, a_type, lda, b, b_type, ldb, 0.0f, c,
                       ZERO_F32, ldc);
    if (rc == ZERO_OK)
        rc = cuda_bias_add(s, c, bias, m, n);
    if (rc == ZERO_OK && gelu != NULL)
        rc = cuda_gelu_forward(s, gelu, c, (size_t)m * (size_t)n, kind);
    return rc;
}

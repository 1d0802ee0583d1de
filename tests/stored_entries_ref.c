/* Reference gemm_bias_stored and gemm_dgelu_stored (stored_entries_ref.h). */
#include <stdlib.h>

#include "stored_entries_ref.h"
#include "zero/error.h"

/* c32, gelu32 (m, n) as be's gemm_bias writes them, or its unfused sequence */
static int bias_fp32(const struct zero_backend *be, void *self, int trans_a, int trans_b, int64_t m,
                     int64_t n, int64_t k, const void *a, enum zero_dtype a_type, int64_t lda,
                     const void *b, enum zero_dtype b_type, int64_t ldb, const float *bias,
                     float *c32, float *gelu32, int64_t ldc, enum zero_gelu kind)
{
    if (be->fused != NULL)
        return be->fused->gemm_bias(self, trans_a, trans_b, m, n, k, a, a_type, lda, b, b_type, ldb,
                                    bias, c32, ldc, gelu32, kind);
    int rc = be->gemm(self, trans_a, trans_b, m, n, k, 1.0f, a, a_type, lda, b, b_type, ldb, 0.0f,
                      c32, ZERO_F32, ldc);
    if (!rc)
        rc = be->bias_add(self, c32, bias, m, n);
    if (!rc && gelu32 != NULL)
        rc = be->gelu_forward(self, gelu32, c32, (size_t)(m * n), kind);
    return rc;
}

int ref_gemm_bias_stored(const struct zero_backend *be, void *self, int trans_a, int trans_b,
                         int64_t m, int64_t n, int64_t k, const void *a, enum zero_dtype a_type,
                         int64_t lda, const void *b, enum zero_dtype b_type, int64_t ldb,
                         const float *bias, void *c, void *gelu, enum zero_dtype out_type,
                         int64_t ldc, enum zero_gelu kind)
{
    if (out_type == ZERO_F32)
        return bias_fp32(be, self, trans_a, trans_b, m, n, k, a, a_type, lda, b, b_type, ldb, bias,
                         c, gelu, ldc, kind);
    const size_t mn = (size_t)(m * n);
    void *c32 = NULL, *gelu32 = NULL;
    int rc = (c32 = malloc(mn * sizeof(float))) != NULL ? ZERO_OK : ZERO_ENOMEM;
    if (!rc && gelu != NULL && (gelu32 = malloc(mn * sizeof(float))) == NULL)
        rc = ZERO_ENOMEM;
    if (!rc)
        rc = bias_fp32(be, self, trans_a, trans_b, m, n, k, a, a_type, lda, b, b_type, ldb, bias,
                       c32, gelu32, ldc, kind);
    if (!rc)
        rc = be->cast(self, c, out_type, c32, ZERO_F32, mn);
    if (!rc && gelu != NULL)
        rc = be->cast(self, gelu, out_type, gelu32, ZERO_F32, mn);
    free(gelu32);
    free(c32);
    return rc;
}

int ref_gemm_dgelu_stored(const struct zero_backend *be, void *self, int trans_a, int trans_b,
                          int64_t m, int64_t n, int64_t k, const void *a, enum zero_dtype a_type,
                          int64_t lda, const void *b, enum zero_dtype b_type, int64_t ldb, float *c,
                          int64_t ldc, const void *pre, enum zero_dtype pre_type,
                          enum zero_gelu kind)
{
    const size_t mn = (size_t)(m * n);
    void *pre32 = NULL;
    int rc = ZERO_OK;
    if (pre_type != ZERO_F32)
        rc = (pre32 = malloc(mn * sizeof(float))) != NULL
                 ? be->cast(self, pre32, ZERO_F32, pre, pre_type, mn)
                 : ZERO_ENOMEM;
    const float *p32 = pre_type == ZERO_F32 ? pre : pre32;
    if (!rc && be->fused != NULL)
        rc = be->fused->gemm_dgelu(self, trans_a, trans_b, m, n, k, a, a_type, lda, b, b_type, ldb,
                                   c, ldc, p32, kind);
    else if (!rc) {
        rc = be->gemm(self, trans_a, trans_b, m, n, k, 1.0f, a, a_type, lda, b, b_type, ldb, 0.0f,
                      c, ZERO_F32, ldc);
        if (!rc)
            rc = be->gelu_backward(self, c, p32, c, mn, kind);
    }
    free(pre32);
    return rc;
}

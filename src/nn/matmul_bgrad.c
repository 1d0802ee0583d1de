/* nn_gemm_bgrad: a weight gradient's GEMM with its bias gradient, the two sums of the
 * same dy, in one call where the backend fuses them (gemm_bgrad: cuBLASLt's bias
 * gradient epilogue), else nn_gemm then bias_grad, the order the layers always ran.
 * Kept apart from matmul.c: it only composes nn_lower, nn_gemm and the backend. */
#include "nn_internal.h"

/* an operand as the GEMM reads it once nn_lower ran */
static const void *lowered_ptr(const struct zero_unit_ctx *ctx, struct nn_operand o,
                               enum zero_dtype *t)
{
    *t = o.lowp != NULL ? ctx->matmul_type : ZERO_F32;
    return o.lowp != NULL ? o.lowp : o.x;
}

int nn_gemm_bgrad(struct zero_unit_ctx *ctx, const char *what, int w, int ta, int tb, int64_t m,
                  int64_t n, int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b,
                  int64_t ldb, int db_side, float *db, float db_beta)
{
    const struct zero_backend *be = ctx->be;
    const float *dy = db_side == 0 ? a.x : b.x; /* (k, len) fp32 */
    const int64_t len = db_side == 0 ? m : n;
    const float beta = ctx->grad_accumulate[w] ? 1.0f : 0.0f;
    float *c = ctx->grad[w];
    /* the two passes: no fused entry, or the weight gradient takes the direct
     * route (nn_gemm_grad writes it in the compute dtype) */
    if (be->gemm_bgrad == NULL || (ctx->grad_lowp[w] != NULL && !ctx->grad_accumulate[w])) {
        int rc = nn_gemm_grad(ctx, what, w, ta, tb, m, n, k, a, lda, b, ldb);
        if (rc == ZERO_OK && (rc = be->bias_grad(ctx->bself, db, dy, k, len, db_beta)) != ZERO_OK)
            return nn_backend_fail(ctx, rc, "bias_grad db");
        return rc;
    }
    /* operands rounded as nn_gemm rounds activations (a no-op for dy already lowered) */
    void *tmp_a = NULL, *tmp_b = NULL;
    int rc = nn_lower(ctx, &a, (size_t)((ta ? k : m) * lda), &tmp_a);
    if (rc == ZERO_OK)
        rc = nn_lower(ctx, &b, (size_t)((tb ? n : k) * ldb), &tmp_b);
    if (rc == ZERO_OK) {
        enum zero_dtype t_a, t_b;
        const void *pa = lowered_ptr(ctx, a, &t_a), *pb = lowered_ptr(ctx, b, &t_b);
        rc = be->gemm_bgrad(ctx->bself, ta, tb, m, n, k, pa, t_a, lda, pb, t_b, ldb, beta, c, n,
                            db_side, dy, db, db_beta);
        if (rc != ZERO_OK)
            rc = nn_backend_fail(ctx, rc, what);
    }
    nn_release(ctx, tmp_b);
    nn_release(ctx, tmp_a);
    return rc;
}

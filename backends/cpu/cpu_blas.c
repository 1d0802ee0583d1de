/* gemm on the cpu, row-major, by mode. Exact mode: libzero's own fixed-order
 * GEMM (cpu_gemm.h), whose bits depend on the operands alone; fp16/bf16
 * operands are widened while packing. Native mode: OpenBLAS sgemm (loaded by
 * the backend when it entered native mode: cpu_openblas.c), with
 * fp16/bf16 operands converted to fp32 in workspace blocks first (the ledger
 * sees them). Either way every product is fp32 with fp32 accumulation. */
#include "cpu_ops.h"
#include "cpu_openblas.h"
#include "base/backend_contract.h"

/* An operand as fp32: the caller's memory when it is fp32 already, else a packed
 * (ld = cols) converted copy that this file owns. */
struct f32_matrix {
    float *p;
    int64_t ld;
    float *owned;
};

/* x (rows, cols) with leading dimension ld, stored as t; load = 0 only reserves
 * the fp32 copy (for an output whose old values beta = 0 ignores). */
static int f32_matrix_open(struct cpu_state *s, struct f32_matrix *v, const void *x,
                           enum zero_dtype t, int64_t rows, int64_t cols, int64_t ld, int load)
{
    v->owned = NULL;
    if (t == ZERO_F32) {
        v->p = (float *)x;
        v->ld = ld;
        return ZERO_OK;
    }
    void *block;
    int rc = cpu_alloc(s, (size_t)(rows * cols) * sizeof(float), ZERO_TAG_WORKSPACE, &block);
    if (rc != ZERO_OK)
        return rc;
    v->owned = block;
    v->p = block;
    v->ld = cols > 1 ? cols : 1;
    size_t row_bytes = (size_t)ld * zero_dtype_size(t);
    for (int64_t r = 0; load && r < rows; r++) {
        rc = cpu_cast(s, v->p + r * cols, ZERO_F32, (const char *)x + r * row_bytes, t,
                      (size_t)cols);
        if (rc != ZERO_OK)
            return rc;
    }
    return ZERO_OK;
}

/* Writes a converted output back into the caller's (rows, cols) matrix. */
static int f32_matrix_store(struct cpu_state *s, const struct f32_matrix *v, void *x,
                            enum zero_dtype t, int64_t rows, int64_t cols, int64_t ld)
{
    if (v->owned == NULL)
        return ZERO_OK;
    size_t row_bytes = (size_t)ld * zero_dtype_size(t);
    for (int64_t r = 0; r < rows; r++) {
        int rc = cpu_cast(s, (char *)x + r * row_bytes, t, v->p + r * cols, ZERO_F32, (size_t)cols);
        if (rc != ZERO_OK)
            return rc;
    }
    return ZERO_OK;
}

/* Native mode: OpenBLAS on fp32 copies of the 16-bit operands. */
static int native_gemm(struct cpu_state *s, int trans_a, int trans_b, int64_t m, int64_t n,
                       int64_t k, float alpha, const void *a, enum zero_dtype a_type, int64_t lda,
                       const void *b, enum zero_dtype b_type, int64_t ldb, float beta, void *c,
                       enum zero_dtype c_type, int64_t ldc)
{
    int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
    int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
    int rc;
    struct f32_matrix fa = {0}, fb = {0}, fc = {0};
    if ((rc = f32_matrix_open(s, &fa, a, a_type, a_rows, a_cols, lda, 1)) == ZERO_OK &&
        (rc = f32_matrix_open(s, &fb, b, b_type, b_rows, b_cols, ldb, 1)) == ZERO_OK &&
        (rc = f32_matrix_open(s, &fc, c, c_type, m, n, ldc, beta != 0.0f)) == ZERO_OK) {
        /* beta = 0 must ignore C's old values (NaN included): BLAS semantics, and the
         * workspace copy of a non-fp32 C is uninitialized then. */
        cpu_openblas_sgemm(trans_a, trans_b, (int)m, (int)n, (int)k, alpha, fa.p, (int)fa.ld, fb.p,
                           (int)fb.ld, beta, fc.p, (int)fc.ld);
        rc = f32_matrix_store(s, &fc, c, c_type, m, n, ldc);
    }
    cpu_free(s, fa.owned);
    cpu_free(s, fb.owned);
    cpu_free(s, fc.owned);
    return rc;
}

/* Exact mode: the own GEMM, its packing buffers from the workspace pool. */
static int exact_gemm(struct cpu_state *s, const struct cpu_gemm_args *g)
{
    size_t bytes = cpu_gemm_workspace_bytes(s->gemm_isa, s->gemm_threads, g);
    void *ws;
    int rc = cpu_alloc(s, bytes, ZERO_TAG_WORKSPACE, &ws);
    if (rc != ZERO_OK)
        return rc;
    cpu_gemm_exact(s->gemm_isa, s->gemm_threads, g, ws);
    return cpu_free(s, ws);
}

size_t cpu_product_workspace_bytes(void *self)
{
    const struct cpu_state *s = self;
    return cpu_gemm_workspace_bound(s->gemm_threads); /* native mode's copies are operands' */
}

/* g's products: the bf16 contract that is on where g's operands are both bf16 (as
 * stored or rounded while packing), else the fp32 chain */
static enum cpu_product bf16_product_of(const struct cpu_state *s, const struct cpu_gemm_args *g)
{
    const int a16 = g->a.type == ZERO_BF16 || (g->a.type == ZERO_F32 && g->a.round == ZERO_BF16);
    const int b16 = g->b.type == ZERO_BF16 || (g->b.type == ZERO_F32 && g->b.round == ZERO_BF16);
    return a16 && b16 ? s->bf16_product : CPU_PRODUCT_FP32;
}

int cpu_set_bf16_product(void *self, enum zero_bf16_product product)
{
    struct cpu_state *s = self;
    switch (product) {
    case ZERO_BF16_PRODUCT_FP32:
        s->bf16_product = CPU_PRODUCT_FP32;
        return ZERO_OK;
    case ZERO_BF16_PRODUCT_DOT:
        s->bf16_product = CPU_PRODUCT_BF16_DOT;
        return ZERO_OK;
    case ZERO_BF16_PRODUCT_TILE:
        s->bf16_product = CPU_PRODUCT_BF16_TILE;
        return ZERO_OK;
    }
    return cpu_fail(s, ZERO_EINVAL, "set_bf16_product: %d is no bf16 product", (int)product);
}

int cpu_gemm(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
             enum zero_dtype b_type, int64_t ldb, float beta, void *c, enum zero_dtype c_type,
             int64_t ldc)
{
    struct cpu_state *s = self;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_gemm(trans_a, trans_b, m, n, k, a_type, lda, b_type, ldb, c_type, ldc,
                                why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(s, rc, "%s", why);
    if (m == 0 || n == 0)
        return ZERO_OK;
    /* a bf16 contract is the product's definition in either mode */
    const enum cpu_product product =
        a_type == ZERO_BF16 && b_type == ZERO_BF16 ? s->bf16_product : CPU_PRODUCT_FP32;
    if (s->mode != ZERO_COLL_EXACT && product == CPU_PRODUCT_FP32)
        return native_gemm(s, trans_a, trans_b, m, n, k, alpha, a, a_type, lda, b, b_type, ldb,
                           beta, c, c_type, ldc);
    struct cpu_gemm_args g = {.m = m,
                              .n = n,
                              .k = k,
                              .alpha = alpha,
                              .beta = beta,
                              .a = {a, a_type, lda, trans_a, ZERO_F32},
                              .b = {b, b_type, ldb, trans_b, ZERO_F32},
                              .c = c,
                              .c_type = c_type,
                              .ldc = ldc,
                              .product = product};
    return exact_gemm(s, &g);
}

int cpu_gemm_rounds_while_packing(const struct cpu_state *s)
{
    return s->mode == ZERO_COLL_EXACT;
}

int cpu_gemm_f32(struct cpu_state *s, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                 float alpha, const float *a, int64_t lda, enum zero_dtype a_round, const float *b,
                 int64_t ldb, enum zero_dtype b_round, float beta, float *c, int64_t ldc)
{
    if (s->mode != ZERO_COLL_EXACT) {
        if (a_round != ZERO_F32 || b_round != ZERO_F32)
            return cpu_fail(s, ZERO_EINVAL, "gemm: native mode cannot round operands");
        cpu_openblas_sgemm(trans_a, trans_b, (int)m, (int)n, (int)k, alpha, a, (int)lda, b,
                           (int)ldb, beta, c, (int)ldc);
        return ZERO_OK;
    }
    if (m == 0 || n == 0)
        return ZERO_OK;
    struct cpu_gemm_args g = {.m = m,
                              .n = n,
                              .k = k,
                              .alpha = alpha,
                              .beta = beta,
                              .a = {a, ZERO_F32, lda, trans_a, a_round},
                              .b = {b, ZERO_F32, ldb, trans_b, b_round},
                              .c = c,
                              .c_type = ZERO_F32,
                              .ldc = ldc};
    g.product = bf16_product_of(s, &g);
    return exact_gemm(s, &g);
}

/* GEMMs with cuBLASLt epilogues (llm.c's matmul_forward_cublaslt and the GELU backward
 * fused into its matmul): gemm_bias applies the bias (and GPT-2's tanh GELU, keeping the
 * pre-activation) as C is written, gemm_dgelu multiplies the product by GELU's
 * derivative at a saved pre-activation, gemm_bgrad sums dy into the bias gradient as the
 * weight gradient's GEMM reads it; each saves a pass over a matrix. Native mode
 * only, and only where the epilogue can take the case: device operands of one dtype,
 * 16-byte aligned vectors and outputs, the leading dimension a multiple of 8 where GELU's
 * auxiliary matrix is read or written, the tanh GELU (cuBLASLt's). Everything else,
 * exact mode and a case cuBLASLt refuses, runs the unfused entries (gemm, bias_add,
 * gelu_forward, gelu_backward, bias_grad): exact mode keeps the cpu's bits. */
#include <cublasLt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/backend_contract.h"
#include "cuda_ops.h"
#include "zero_cuda_profile.h"
#include "zero/knobs.h"

static cudaDataType_t lt_type(enum zero_dtype t)
{
    return t == ZERO_F16 ? CUDA_R_16F : t == ZERO_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* p is 16-byte aligned device memory (NULL passes: no such operand) */
static int device16(struct cuda_state *s, const void *p)
{
    return p == NULL || (((uintptr_t)p & 15) == 0 && !cuda_is_host_memory(s, p));
}

/* the epilogue may take this case (cuBLASLt may still refuse it: ZERO_ENOTSUP) */
static int epilogue_fits(struct cuda_state *s, int64_t k, const void *a, enum zero_dtype a_type,
                         const void *b, enum zero_dtype b_type, const float *vec, const void *c,
                         int64_t ldc, const void *aux, enum zero_gelu kind)
{
    return s->mode == ZERO_COLL_NATIVE && !cuda_fused_disabled() && s->lt != NULL && k > 0 &&
           a_type == b_type && (a_type == ZERO_F32 || a_type == ZERO_F16 || a_type == ZERO_BF16) &&
           !cuda_is_host_memory(s, a) && !cuda_is_host_memory(s, b) && device16(s, vec) &&
           device16(s, c) &&
           (aux == NULL || (kind == ZERO_GELU_TANH && ldc % 8 == 0 && device16(s, aux)));
}

static int check_dims(struct cuda_state *s, const char *what, int64_t m, int64_t n, int64_t k,
                      int64_t ldc)
{
    if (m < 0 || n < 0 || k < 0 || ldc != n)
        return cuda_fail(s, ZERO_EINVAL,
                         "%s: m = %lld, n = %lld, k = %lld, ldc = %lld (ldc must be n)", what,
                         (long long)m, (long long)n, (long long)k, (long long)ldc);
    return ZERO_OK;
}

static int check_shape(struct cuda_state *s, const char *what, int64_t m, int64_t n, int64_t k,
                       int64_t ldc, enum zero_gelu kind)
{
    int rc = check_dims(s, what, m, n, k, ldc);
    if (rc != ZERO_OK)
        return rc;
    if (kind != ZERO_GELU_ERF && kind != ZERO_GELU_TANH)
        return cuda_fail(s, ZERO_EINVAL, "%s: unknown gelu kind %d", what, (int)kind);
    return ZERO_OK;
}

/* the epilogue's launch, profiled as a GEMM: operands read, the output (and aux) moved;
 * d of d_type, aux of aux_type */
static int lt_epilogue_typed(struct cuda_state *s, int trans_a, int trans_b, int64_t m, int64_t n,
                             int64_t k, const void *a, enum zero_dtype a_type, int64_t lda,
                             const void *b, int64_t ldb, int epilogue, const float *bias,
                             const void *aux, enum zero_dtype aux_type, float beta, void *d,
                             enum zero_dtype d_type)
{
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_GEMM);
    const double mn = (double)m * (double)n;
    const double bytes = (double)zero_dtype_size(a_type) * ((double)m + (double)n) * (double)k +
                         (double)zero_dtype_size(d_type) * (beta != 0.0f ? 2.0 : 1.0) * mn +
                         (aux != NULL ? (double)zero_dtype_size(aux_type) * mn : 0.0);
    /* an aux of d's type is cuBLASLt's default; another is asked for by name */
    const int32_t lt_aux = aux_type == d_type ? -1 : (int32_t)lt_type(aux_type);
    return cuda_prof_end(s, &pm, 2.0 * mn * (double)k, bytes,
                         cuda_lt_gemm_epilogue(s, trans_a, trans_b, m, n, k, a, lda, b, ldb,
                                               lt_type(a_type), epilogue, bias, aux, lt_aux, beta,
                                               d, lt_type(d_type), n));
}

static int lt_epilogue(struct cuda_state *s, int trans_a, int trans_b, int64_t m, int64_t n,
                       int64_t k, const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                       int64_t ldb, int epilogue, const float *bias, const void *aux, float beta,
                       float *d)
{
    return lt_epilogue_typed(s, trans_a, trans_b, m, n, k, a, a_type, lda, b, ldb, epilogue, bias,
                             aux, ZERO_F32, beta, d, ZERO_F32);
}

int cuda_gemm_bias(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                   const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                   enum zero_dtype b_type, int64_t ldb, const float *bias, float *c, int64_t ldc,
                   float *gelu, enum zero_gelu kind)
{
    struct cuda_state *s = self;
    if (bias == NULL || c == NULL)
        return cuda_fail(s, ZERO_EINVAL, "gemm_bias: no bias or no output");
    int rc = check_shape(s, "gemm_bias", m, n, k, ldc, kind);
    if (rc != ZERO_OK || m == 0 || n == 0)
        return rc;
    /* with GELU the activation is cuBLASLt's D and the pre-activation c its aux output */
    if (epilogue_fits(s, k, a, a_type, b, b_type, bias, gelu != NULL ? gelu : c, ldc,
                      gelu != NULL ? c : NULL, kind)) {
        rc = lt_epilogue(s, trans_a, trans_b, m, n, k, a, a_type, lda, b, ldb,
                         gelu != NULL ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_BIAS,
                         bias, gelu != NULL ? c : NULL, 0.0f, gelu != NULL ? gelu : c);
        if (rc != ZERO_ENOTSUP)
            return rc;
    }
    rc = cuda_gemm(s, trans_a, trans_b, m, n, k, 1.0f, a, a_type, lda, b, b_type, ldb, 0.0f, c,
                   ZERO_F32, ldc);
    if (rc == ZERO_OK)
        rc = cuda_bias_add(s, c, bias, m, n);
    if (rc == ZERO_OK && gelu != NULL)
        rc = cuda_gelu_forward(s, gelu, c, (size_t)m * (size_t)n, kind);
    return rc;
}

int cuda_gemm_dgelu(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                    const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                    enum zero_dtype b_type, int64_t ldb, float *c, int64_t ldc, const float *pre,
                    enum zero_gelu kind)
{
    struct cuda_state *s = self;
    if (pre == NULL || c == NULL)
        return cuda_fail(s, ZERO_EINVAL, "gemm_dgelu: no pre-activation or no output");
    int rc = check_shape(s, "gemm_dgelu", m, n, k, ldc, kind);
    if (rc != ZERO_OK || m == 0 || n == 0)
        return rc;
    if (epilogue_fits(s, k, a, a_type, b, b_type, NULL, c, ldc, pre, kind)) {
        rc = lt_epilogue(s, trans_a, trans_b, m, n, k, a, a_type, lda, b, ldb,
                         CUBLASLT_EPILOGUE_DGELU, NULL, pre, 0.0f, c);
        if (rc != ZERO_ENOTSUP)
            return rc;
    }
    rc = cuda_gemm(s, trans_a, trans_b, m, n, k, 1.0f, a, a_type, lda, b, b_type, ldb, 0.0f, c,
                   ZERO_F32, ldc);
    if (rc == ZERO_OK) /* elementwise: dx may be dy */
        rc = cuda_gelu_backward(s, c, pre, c, (size_t)m * (size_t)n, kind);
    return rc;
}

static int disjoint(const void *p, const void *q, size_t bytes)
{
    const char *x = p, *y = q;
    return p == NULL || q == NULL || x + bytes <= y || y + bytes <= x;
}

/* y (n, t) = x (n, fp32) rounded, then x released: the cast kernel's 128-bit stores where
 * y is 16-byte aligned (rc: the status so far, kept if it failed) */
static int round_into(struct cuda_state *s, int rc, void *y, enum zero_dtype t, void *x, size_t n)
{
    if (rc == ZERO_OK && y != NULL)
        rc = cuda_cast(s, y, t, x, ZERO_F32, n);
    int frc = cuda_free(s, x); /* the stream's order keeps the block until the cast ran */
    return rc == ZERO_OK ? frc : rc;
}

/* gemm_bias_stored (include/zero/backend.h). Native mode, where the epilogue fits: cuBLASLt
 * with a 16-bit D (GELU_AUX_BIAS: D the GELU, aux the pre-activation in D's type, as
 * llm.c stores its bf16 activations; BIAS: D the pre-activation) and the fp32 bias. Its
 * epilogue rounds the fp32 value it formed (GELU of the unrounded pre-activation), which
 * is the contract's order; the values may differ from the fp32 D's by the algorithm
 * cuBLASLt picks for another D type, so native mode is to the stated tolerance.
 * Otherwise (exact mode, a case the epilogue does not take, cuBLASLt refusing the fp32
 * bias with a 16-bit D): gemm_bias into fp32 workspaces, then the cast: in exact mode
 * the cpu's bits. */
int cuda_gemm_bias_stored(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                          const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                          enum zero_dtype b_type, int64_t ldb, const float *bias, void *c,
                          void *gelu, enum zero_dtype out_type, int64_t ldc, enum zero_gelu kind)
{
    struct cuda_state *s = self;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_stored_type("gemm_bias_stored: out_type", out_type, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    if (out_type == ZERO_F32)
        return cuda_gemm_bias(s, trans_a, trans_b, m, n, k, a, a_type, lda, b, b_type, ldb, bias, c,
                              ldc, gelu, kind);
    if (bias == NULL || c == NULL)
        return cuda_fail(s, ZERO_EINVAL, "gemm_bias_stored: no bias or no output");
    rc = check_shape(s, "gemm_bias_stored", m, n, k, ldc, kind);
    if (rc != ZERO_OK || m == 0 || n == 0)
        return rc;
    const size_t mn = (size_t)m * (size_t)n;
    if (!disjoint(c, gelu, mn * zero_dtype_size(out_type)))
        return cuda_fail(s, ZERO_EINVAL, "gemm_bias_stored: c and gelu overlap");
    if (epilogue_fits(s, k, a, a_type, b, b_type, bias, gelu != NULL ? gelu : c, ldc,
                      gelu != NULL ? c : NULL, kind) &&
        a_type == out_type) {
        rc = lt_epilogue_typed(
            s, trans_a, trans_b, m, n, k, a, a_type, lda, b, ldb,
            gelu != NULL ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_BIAS, bias,
            gelu != NULL ? c : NULL, out_type, 0.0f, gelu != NULL ? gelu : c, out_type);
        if (rc != ZERO_ENOTSUP)
            return rc;
    }
    void *c32 = NULL, *gelu32 = NULL;
    rc = cuda_alloc(s, mn * sizeof(float), ZERO_TAG_WORKSPACE, &c32);
    if (rc == ZERO_OK && gelu != NULL &&
        (rc = cuda_alloc(s, mn * sizeof(float), ZERO_TAG_WORKSPACE, &gelu32)) != ZERO_OK) {
        cuda_free(s, c32);
        return rc;
    }
    if (rc != ZERO_OK)
        return rc;
    rc = cuda_gemm_bias(s, trans_a, trans_b, m, n, k, a, a_type, lda, b, b_type, ldb, bias, c32,
                        ldc, gelu32, kind);
    rc = round_into(s, rc, c, out_type, c32, mn);
    return gelu32 != NULL ? round_into(s, rc, gelu, out_type, gelu32, mn) : rc;
}

/* gemm_dgelu_stored (include/zero/backend.h). Native mode, where the epilogue fits:
 * DGELU reading the 16-bit pre-activation as it is (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_
 * DATA_TYPE, D fp32), where this cuBLASLt takes that combination; the widening is exact,
 * so the values are gemm_dgelu's. Otherwise pre widened into a workspace (the cast kernel's
 * 128-bit loads where aligned) then gemm_dgelu: in exact mode the cpu's bits. */
int cuda_gemm_dgelu_stored(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                           const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                           enum zero_dtype b_type, int64_t ldb, float *c, int64_t ldc,
                           const void *pre, enum zero_dtype pre_type, enum zero_gelu kind)
{
    struct cuda_state *s = self;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_stored_type("gemm_dgelu_stored: pre_type", pre_type, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    if (pre_type == ZERO_F32)
        return cuda_gemm_dgelu(s, trans_a, trans_b, m, n, k, a, a_type, lda, b, b_type, ldb, c, ldc,
                               pre, kind);
    if (pre == NULL || c == NULL)
        return cuda_fail(s, ZERO_EINVAL, "gemm_dgelu_stored: no pre-activation or no output");
    rc = check_shape(s, "gemm_dgelu_stored", m, n, k, ldc, kind);
    if (rc != ZERO_OK || m == 0 || n == 0)
        return rc;
    if (epilogue_fits(s, k, a, a_type, b, b_type, NULL, c, ldc, pre, kind)) {
        rc = lt_epilogue_typed(s, trans_a, trans_b, m, n, k, a, a_type, lda, b, ldb,
                               CUBLASLT_EPILOGUE_DGELU, NULL, pre, pre_type, 0.0f, c, ZERO_F32);
        if (rc != ZERO_ENOTSUP)
            return rc;
    }
    const size_t mn = (size_t)m * (size_t)n;
    void *pre32 = NULL;
    rc = cuda_alloc(s, mn * sizeof(float), ZERO_TAG_WORKSPACE, &pre32);
    if (rc != ZERO_OK)
        return rc;
    rc = cuda_cast(s, pre32, ZERO_F32, pre, pre_type, mn);
    if (rc == ZERO_OK)
        rc = cuda_gemm_dgelu(s, trans_a, trans_b, m, n, k, a, a_type, lda, b, b_type, ldb, c, ldc,
                             pre32, kind);
    int frc = cuda_free(s, pre32);
    return rc == ZERO_OK ? frc : rc;
}

/* The epilogue sums the operand as the GEMM reads it: fp32, the values bias_grad sums;
 * a bf16 or fp16 operand is dy rounded, which moves a bf16 training run's weights by
 * rel 7e-4 (toy MLP) and 4e-4 (tiny GPT) after test_cuda_training's 10 steps (measured
 * on the cpu backend with that rounding alone), a third of that test's tolerance: so
 * only where ZERO_CUDA_BGRAD=lowp asks for it (llm.c and autocast sum the rounded dy). */
static int bgrad_sums_dy(enum zero_dtype t)
{
    const char *env = zero_knob(ZERO_KNOB_CUDA_BGRAD);
    return t == ZERO_F32 || (env != NULL && strcmp(env, "lowp") == 0);
}

/* The bias gradient through BGRADA / BGRADB. cuBLASLt writes the sums fresh, so where
 * db accumulates (db_beta != 0: another unit or micro-step wrote it) they go to a
 * scratch vector that bias_grad then adds as one row (db = db_beta * db + scratch).
 * Our A is cuBLASLt's B: sums of a over k are BGRADB's, sums of b are BGRADA's. */
static int bgrad_epilogue(struct cuda_state *s, int trans_a, int trans_b, int64_t m, int64_t n,
                          int64_t k, const void *a, enum zero_dtype a_type, int64_t lda,
                          const void *b, int64_t ldb, float beta, float *c, int db_side, float *db,
                          int64_t len, float db_beta)
{
    const int epilogue = db_side == 0 ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_BGRADA;
    float *sums = db; /* (len) */
    void *scratch = NULL;
    if (db_beta != 0.0f) {
        int rc = cuda_alloc(s, (size_t)len * sizeof(float), ZERO_TAG_WORKSPACE, &scratch);
        if (rc != ZERO_OK)
            return rc;
        sums = scratch;
    }
    int rc = lt_epilogue(s, trans_a, trans_b, m, n, k, a, a_type, lda, b, ldb, epilogue, sums, NULL,
                         beta, c);
    if (rc == ZERO_OK && scratch != NULL)
        rc = cuda_bias_grad(s, db, sums, 1, len, db_beta);
    if (scratch != NULL) { /* the compute stream's order keeps the block until bias_grad ran */
        int frc = cuda_free(s, scratch);
        if (rc == ZERO_OK)
            rc = frc;
    }
    return rc;
}

int cuda_gemm_bgrad(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                    const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                    enum zero_dtype b_type, int64_t ldb, float beta, float *c, int64_t ldc,
                    int db_side, const float *dy, float *db, float db_beta)
{
    struct cuda_state *s = self;
    if (c == NULL || dy == NULL || db == NULL)
        return cuda_fail(s, ZERO_EINVAL, "gemm_bgrad: no output, no dy or no bias gradient");
    int rc = check_dims(s, "gemm_bgrad", m, n, k, ldc);
    if (rc != ZERO_OK)
        return rc;
    /* dy (k, len) as bias_grad reads it: the reduced operand stored untransposed */
    const int64_t len = db_side == 0 ? m : n;
    if ((db_side != 0 && db_side != 1) || (db_side == 0 && (!trans_a || lda != m)) ||
        (db_side == 1 && (trans_b || ldb != n)))
        return cuda_fail(s, ZERO_EINVAL,
                         "gemm_bgrad: db_side %d with trans_a %d, trans_b %d, lda %lld, ldb %lld "
                         "(dy must be a, transposed, lda = m; or b, untransposed, ldb = n)",
                         db_side, trans_a, trans_b, (long long)lda, (long long)ldb);
    if (m == 0 || n == 0) /* no product; db still sums dy */
        return len > 0 ? cuda_bias_grad(s, db, dy, k, len, db_beta) : ZERO_OK;
    if (bgrad_sums_dy(a_type) &&
        epilogue_fits(s, k, a, a_type, b, b_type, db, c, ldc, NULL, ZERO_GELU_TANH)) {
        rc = bgrad_epilogue(s, trans_a, trans_b, m, n, k, a, a_type, lda, b, ldb, beta, c, db_side,
                            db, len, db_beta);
        if (rc != ZERO_ENOTSUP)
            return rc;
    }
    /* exact mode, ZERO_CUDA_FUSED=off, a rounded dy not asked for, or refused: the
     * sequence src/nn runs without us */
    rc = cuda_gemm(s, trans_a, trans_b, m, n, k, 1.0f, a, a_type, lda, b, b_type, ldb, beta, c,
                   ZERO_F32, ldc);
    if (rc == ZERO_OK)
        rc = cuda_bias_grad(s, db, dy, k, len, db_beta);
    return rc;
}

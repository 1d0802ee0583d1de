/* gemm on the GPU: cuBLASLt (cuda_blaslt.c) with fp32 accumulation (CUBLAS_COMPUTE_32F),
 * cublasGemmEx where cuBLASLt has no algorithm for a case or ZERO_CUDA_GEMM=cublas.
 *
 * Row-major through the usual operand swap: a row-major (r, c) matrix is the
 * column-major (c, r) matrix with the same leading dimension, so C = op(A) op(B)
 * row-major is C^T = op(B)^T op(A)^T column-major: cuBLAS gets B first, then A,
 * with the same transpose flags and m, n exchanged.
 *
 * cuBLAS multiplies fp32 x fp32, fp16 x fp16 and bf16 x bf16 with fp32 accumulation,
 * writing C in the input type or fp32. Other mixes (an fp32 activation times a bf16
 * weight) are done as the cpu backend does them: the odd operands are converted to
 * fp32 workspace first (exact), and a non-fp32 C that cuBLAS cannot write directly is
 * produced in fp32 and rounded once.
 *
 * Operands in host_alloc memory are copied to device workspace in their own type first
 * (and C copied back): a GEMM reads each element of A once per column block of B, which
 * over the bus costs many times one copy, and cuBLAS promises nothing for host memory.
 * The copies keep the types, so the bits are those of the same operands in device
 * memory.
 *
 * Exact mode (the backend's collective mode ZERO_COLL_EXACT) sends every GEMM to the
 * fixed-order fp32 kernel of cuda_exact_gemm.cu instead: one fmaf chain per output
 * over k in increasing order, the cpu backend's exact GEMM bit for bit, any mix of
 * fp32/fp16/bf16 operands read in place (no conversion copies, no cuBLAS). */
#include <limits.h>

#include "cuda_launch.h"
#include "cuda_ops.h"
#include "base/backend_contract.h"
#include "zero_cuda_profile.h"

static cudaDataType_t cuda_type(enum zero_dtype t)
{
    return t == ZERO_F16 ? CUDA_R_16F : t == ZERO_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* An operand as the GEMM sees it: the caller's memory, or an fp32 copy we own. */
struct operand {
    void *p;
    enum zero_dtype t;
    int64_t ld;
    void *owned;
};

/* x (rows, cols; ld) as fp32 in workspace (packed, ld = cols); load = 0 only reserves */
static int operand_f32(struct cuda_state *s, struct operand *o, const void *x, enum zero_dtype t,
                       int64_t rows, int64_t cols, int64_t ld, int load)
{
    o->ld = cols > 1 ? cols : 1;
    o->t = ZERO_F32;
    int rc = cuda_alloc(s, (size_t)(rows * o->ld) * sizeof(float), ZERO_TAG_WORKSPACE, &o->owned);
    if (rc != ZERO_OK)
        return rc;
    o->p = o->owned;
    if (!load)
        return ZERO_OK;
    return cuda_check(s,
                      cuda_launch_cast(s->compute, o->p, ZERO_F32, x, t, (size_t)rows, (size_t)cols,
                                       (size_t)o->ld, (size_t)ld),
                      "gemm: operand conversion to fp32");
}

/* o's matrix (rows, cols; o->ld) copied to device workspace in its type (packed, ld =
 * cols); load = 0 only reserves */
static int operand_staged(struct cuda_state *s, struct operand *o, int64_t rows, int64_t cols,
                          int load)
{
    size_t esize = zero_dtype_size(o->t);
    int64_t ld = cols > 1 ? cols : 1;
    void *dev = NULL;
    int rc = cuda_alloc(s, (size_t)(rows * ld) * esize, ZERO_TAG_WORKSPACE, &dev);
    if (rc != ZERO_OK)
        return rc;
    if (load && rows > 0 && cols > 0)
        rc = cuda_check(s,
                        cudaMemcpy2DAsync(dev, (size_t)ld * esize, o->p, (size_t)o->ld * esize,
                                          (size_t)cols * esize, (size_t)rows, cudaMemcpyDefault,
                                          s->compute),
                        "gemm: staging a host operand");
    o->owned = dev;
    o->p = dev;
    o->ld = ld;
    return rc;
}

static struct operand as_is(const void *x, enum zero_dtype t, int64_t ld)
{
    return (struct operand){.p = (void *)x, .t = t, .ld = ld, .owned = NULL};
}

/* Exact mode: host_alloc operands staged in their types, then the fixed-order kernel. */
static int exact_gemm(struct cuda_state *s, int trans_a, int trans_b, int64_t m, int64_t n,
                      int64_t k, float alpha, struct operand oa, int64_t a_rows, int64_t a_cols,
                      struct operand ob, int64_t b_rows, int64_t b_cols, float beta,
                      struct operand oc)
{
    void *c = oc.p;
    int64_t ldc = oc.ld;
    int rc = ZERO_OK;
    if (cuda_is_host_memory(s, oa.p))
        rc = operand_staged(s, &oa, a_rows, a_cols, 1);
    if (rc == ZERO_OK && cuda_is_host_memory(s, ob.p))
        rc = operand_staged(s, &ob, b_rows, b_cols, 1);
    if (rc == ZERO_OK && cuda_is_host_memory(s, oc.p))
        rc = operand_staged(s, &oc, m, n, beta != 0.0f);
    if (rc == ZERO_OK)
        rc = cuda_check(s,
                        cuda_launch_exact_gemm(s->compute, trans_a, trans_b, m, n, k, alpha, oa.p,
                                               oa.t, oa.ld, 0, ob.p, ob.t, ob.ld, 0, beta, oc.p,
                                               oc.t, oc.ld, 0, 1, s->bf16_product),
                        "gemm: exact kernel");
    if (rc == ZERO_OK && oc.owned != NULL) /* staged C back to the host */
        rc = cuda_check(s,
                        cudaMemcpy2DAsync(c, (size_t)ldc * zero_dtype_size(oc.t), oc.p,
                                          (size_t)oc.ld * zero_dtype_size(oc.t),
                                          (size_t)n * zero_dtype_size(oc.t), (size_t)m,
                                          cudaMemcpyDefault, s->compute),
                        "gemm: C back to host memory");
    cuda_free(s, oa.owned);
    cuda_free(s, ob.owned);
    cuda_free(s, oc.owned);
    return rc;
}

static int gemm(struct cuda_state *s, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                float alpha, const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                enum zero_dtype b_type, int64_t ldb, float beta, void *c, enum zero_dtype c_type,
                int64_t ldc)
{
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_gemm(trans_a, trans_b, m, n, k, a_type, lda, b_type, ldb, c_type, ldc,
                                why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    /* stored shapes: A (m, k) or (k, m) transposed; B (k, n) or (n, k) */
    int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
    int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
    if (m == 0 || n == 0)
        return ZERO_OK;

    struct operand oa = as_is(a, a_type, lda), ob = as_is(b, b_type, ldb);
    struct operand oc = as_is(c, c_type, ldc);
    /* a bf16 contract is the product's definition in either mode */
    if (s->mode == ZERO_COLL_EXACT ||
        (s->bf16_product != 0 && a_type == ZERO_BF16 && b_type == ZERO_BF16))
        return exact_gemm(s, trans_a, trans_b, m, n, k, alpha, oa, a_rows, a_cols, ob, b_rows,
                          b_cols, beta, oc);
    int same_inputs = a_type == b_type;
    int c_ok = c_type == a_type || c_type == ZERO_F32;
    if (!same_inputs) { /* widen the narrow one(s): fp32 x fp32 */
        if (a_type != ZERO_F32)
            rc = operand_f32(s, &oa, a, a_type, a_rows, a_cols, lda, 1);
        if (rc == ZERO_OK && b_type != ZERO_F32)
            rc = operand_f32(s, &ob, b, b_type, b_rows, b_cols, ldb, 1);
        c_ok = c_type == ZERO_F32;
    }
    /* beta = 0 must ignore C's old values (NaN included): cuBLAS does, and an fp32 copy
     * of C is only loaded when beta != 0 */
    if (rc == ZERO_OK && !c_ok)
        rc = operand_f32(s, &oc, c, c_type, m, n, ldc, beta != 0.0f);
    /* host_alloc operands not already converted into workspace above */
    if (rc == ZERO_OK && oa.owned == NULL && cuda_is_host_memory(s, a))
        rc = operand_staged(s, &oa, a_rows, a_cols, 1);
    if (rc == ZERO_OK && ob.owned == NULL && cuda_is_host_memory(s, b))
        rc = operand_staged(s, &ob, b_rows, b_cols, 1);
    if (rc == ZERO_OK && oc.owned == NULL && cuda_is_host_memory(s, c))
        rc = operand_staged(s, &oc, m, n, beta != 0.0f);
    if (rc == ZERO_OK)
        rc = cuda_lt_gemm(s, trans_a, trans_b, m, n, k, alpha, oa.p, oa.ld, ob.p, ob.ld,
                          cuda_type(oa.t), beta, oc.p, oc.ld, cuda_type(oc.t));
    if (rc == ZERO_ENOTSUP) { /* no cuBLASLt (ZERO_CUDA_GEMM=cublas) or no algorithm */
        cublasStatus_t st = cublasGemmEx(s->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                         trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m,
                                         (int)k, &alpha, ob.p, cuda_type(ob.t), (int)ob.ld, oa.p,
                                         cuda_type(oa.t), (int)oa.ld, &beta, oc.p, cuda_type(oc.t),
                                         (int)oc.ld, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        rc = cuda_blas_check(s, st, "gemm: cublasGemmEx");
    }
    if (rc == ZERO_OK && oc.owned != NULL && oc.t == c_type) /* staged C back to the host */
        rc = cuda_check(s,
                        cudaMemcpy2DAsync(c, (size_t)ldc * zero_dtype_size(c_type), oc.p,
                                          (size_t)oc.ld * zero_dtype_size(c_type),
                                          (size_t)n * zero_dtype_size(c_type), (size_t)m,
                                          cudaMemcpyDefault, s->compute),
                        "gemm: C back to host memory");
    else if (rc == ZERO_OK && oc.owned != NULL)
        rc = cuda_check(s,
                        cuda_launch_cast(s->compute, c, c_type, oc.p, ZERO_F32, (size_t)m,
                                         (size_t)n, (size_t)ldc, (size_t)oc.ld),
                        "gemm: rounding C");
    /* workspace goes back to the cache; the stream order keeps it alive for the GEMM */
    cuda_free(s, oa.owned);
    cuda_free(s, ob.owned);
    cuda_free(s, oc.owned);
    return rc;
}

int cuda_gemm(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
              enum zero_dtype b_type, int64_t ldb, float beta, void *c, enum zero_dtype c_type,
              int64_t ldc)
{
    struct cuda_state *s = self;
    /* each operand once, C read too when beta != 0 (the profile's byte count) */
    double mk = (double)m * (double)k, kn = (double)k * (double)n, mn = (double)m * (double)n;
    double bytes = mk * (double)zero_dtype_size(a_type) + kn * (double)zero_dtype_size(b_type) +
                   mn * (double)zero_dtype_size(c_type) * (beta != 0.0f ? 2.0 : 1.0);
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_GEMM);
    return cuda_prof_end(s, &pm, 2.0 * mk * (double)n, bytes,
                         gemm(s, trans_a, trans_b, m, n, k, alpha, a, a_type, lda, b, b_type, ldb,
                              beta, c, c_type, ldc));
}

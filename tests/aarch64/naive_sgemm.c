/* A stand-in for OpenBLAS in tests/aarch64/run.sh's diagnosis: cblas_sgemm (and the
 * openblas_set_num_threads the cpu backend calls) as one loop nest whose every output
 * element is the sum over k = 0..K-1 in order, each product rounded apart from its sum
 * (built with -ffp-contract=off). Preloaded into both the x86-64 and the aarch64 runs,
 * it shows whether a difference between them comes from the vendor BLAS alone. Slow,
 * and only for that: libzero's exact mode has its own fixed-order GEMM. */
#include <stddef.h>

enum { ROW_MAJOR = 101, NO_TRANS = 111 }; /* CBLAS's enumerator values */

void openblas_set_num_threads(int n);
void openblas_set_num_threads(int n)
{
    (void)n;
}

void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);

/* C (m, n) = alpha op(A) (m, k) op(B) (k, n) + beta C; beta 0 ignores C's old values */
void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    int row = order == ROW_MAJOR;
    /* op(A)(i, p) is a[i * lda + p] when A is stored row by row as used, else a[p * lda + i];
     * op(B)(p, j) likewise b[p * ldb + j] or b[j * ldb + p] */
    int a_by_rows = row == (trans_a == NO_TRANS), b_by_rows = row == (trans_b == NO_TRANS);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float s = 0.0f;
            for (int p = 0; p < k; p++) {
                float x = a_by_rows ? a[(size_t)i * (size_t)lda + (size_t)p]
                                    : a[(size_t)p * (size_t)lda + (size_t)i];
                float y = b_by_rows ? b[(size_t)p * (size_t)ldb + (size_t)j]
                                    : b[(size_t)j * (size_t)ldb + (size_t)p];
                s += x * y;
            }
            size_t ci =
                row ? (size_t)i * (size_t)ldc + (size_t)j : (size_t)j * (size_t)ldc + (size_t)i;
            c[ci] = beta == 0.0f ? alpha * s : alpha * s + beta * c[ci];
        }
}

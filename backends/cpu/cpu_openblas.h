/* OpenBLAS for native mode, loaded at its first use (cpu_openblas.c). */
#ifndef ZERO_CPU_OPENBLAS_H
#define ZERO_CPU_OPENBLAS_H

#include <stddef.h>

/* Loads OpenBLAS once per process (later calls only report the first one's
 * result); threads > 0 then sets its thread count, 0 keeps OpenBLAS's own. 0 or
 * ZERO_EINVAL with why naming the file and dlerror's text. */
int cpu_openblas_load(int threads, char *why, size_t why_len);

/* c (m, n) = alpha * op(a) @ op(b) + beta * c, fp32 row-major (cblas_sgemm);
 * only after a cpu_openblas_load that succeeded. */
void cpu_openblas_sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                        int lda, const float *b, int ldb, float beta, float *c, int ldc);

#endif

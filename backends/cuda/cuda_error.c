/* The cuda backend's error helpers: every file of the backend reports through them, so
 * they sit in their own file rather than in the table's (cuda_backend.c). */
#include <stdarg.h>
#include <stdio.h>

#include "cuda_internal.h"
#include "common/backend_error.h"

int cuda_fail(struct cuda_state *s, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    backend_error_vformat(s->err, sizeof(s->err), s->rank, fmt, ap);
    va_end(ap);
    return code;
}

int cuda_check(struct cuda_state *s, cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return ZERO_OK;
    return cuda_fail(s, ZERO_EBACKEND, "%s: CUDA error %d (%s): %s", what, (int)e,
                     cudaGetErrorName(e), cudaGetErrorString(e));
}

int cuda_blas_check(struct cuda_state *s, cublasStatus_t st, const char *what)
{
    if (st == CUBLAS_STATUS_SUCCESS)
        return ZERO_OK;
    return cuda_fail(s, ZERO_EBACKEND, "%s: cuBLAS error %d (%s)", what, (int)st,
                     cublasGetStatusString(st));
}

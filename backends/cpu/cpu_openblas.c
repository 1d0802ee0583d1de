/* OpenBLAS serves native mode only, so the cpu backend loads it (dlopen) when
 * native mode first needs it, never at program load. Why: a threaded OpenBLAS
 * starts its thread pool in a load-time constructor; each worker mallocs its
 * buffer (128 MiB) and retries for ever when that fails (ulimit -v), and its
 * fork handler joins the workers, so MPI_Init's fork of a singleton (a trainer
 * started without mpirun) hung for ever instead of reaching our memory check.
 * Exact mode (the default) now never loads it; native mode loads it after
 * MPI_Init. ZERO_OPENBLAS_LIBRARY is the file configure saw (m4/zero_blas.m4). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <cblas.h>

#include "zero/error.h"
#include "cpu_openblas.h"

#ifndef ZERO_OPENBLAS_LIBRARY
#define ZERO_OPENBLAS_LIBRARY "libopenblas.so.0"
#endif

void openblas_set_num_threads(int num_threads);

static struct {
    pthread_once_t once;
    __typeof__(&cblas_sgemm) sgemm;
    __typeof__(&openblas_set_num_threads) set_num_threads;
    char err[256]; /* empty: loaded */
} openblas = {.once = PTHREAD_ONCE_INIT};

/* By its file name first (one already loaded, LD_LIBRARY_PATH, the loader's cache: a
 * bundle unpacked elsewhere, tests/gpu/run.sh), then at the path configure saw. */
static void openblas_open(void)
{
    const char *slash = strrchr(ZERO_OPENBLAS_LIBRARY, '/');
    void *lib = dlopen(slash ? slash + 1 : ZERO_OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        lib = dlopen(ZERO_OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        snprintf(openblas.err, sizeof openblas.err, "%s", dlerror());
        return;
    }
    openblas.sgemm = (__typeof__(&cblas_sgemm))dlsym(lib, "cblas_sgemm");
    openblas.set_num_threads =
        (__typeof__(&openblas_set_num_threads))dlsym(lib, "openblas_set_num_threads");
    if (openblas.sgemm == NULL || openblas.set_num_threads == NULL)
        snprintf(openblas.err, sizeof openblas.err,
                 "no cblas_sgemm or openblas_set_num_threads in it");
    /* never dlclose: OpenBLAS's threads live until the process ends */
}

int cpu_openblas_load(int threads, char *why, size_t why_len)
{
    pthread_once(&openblas.once, openblas_open);
    if (openblas.err[0] != '\0') {
        snprintf(why, why_len, "cpu backend: native mode needs OpenBLAS: %s: %s",
                 ZERO_OPENBLAS_LIBRARY, openblas.err);
        return ZERO_EINVAL;
    }
    if (threads > 0)
        openblas.set_num_threads(threads);
    return ZERO_OK;
}

void cpu_openblas_sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a,
                        int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    openblas.sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                   trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
                   ldc);
}

/* GEMM rate of a backend's gemm entry (cuBLAS on the cuda backend): fp32 and bf16
 * inputs, fp32 accumulation, on random data (never zeros: they run faster).
 *
 *   gemm_bench [backend (cuda)] [size (8192)] [repeats (10)]
 *
 * Prints one line per dtype: the median of `repeats` timed products after three
 * warm-ups, each timed from issue to synchronize. Exit 77 when the backend cannot run. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zero/backend.h"
#include "zero/error.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* one operand of n elements of t, random in [-1, 1) */
static void *random_matrix(struct zero_device *d, size_t n, enum zero_dtype t, unsigned seed)
{
    float *h = malloc(n * sizeof(float));
    void *dev = NULL, *f32 = NULL;
    if (h == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = (float)(seed >> 8) / (float)(1u << 23) - 1.0f;
    }
    int rc = d->be->alloc(d->self, n * zero_dtype_size(t), ZERO_TAG_WORKSPACE, &dev);
    if (!rc)
        rc = d->be->alloc(d->self, n * sizeof(float), ZERO_TAG_WORKSPACE, &f32);
    if (!rc)
        rc = d->be->from_host(d->self, f32, h, n * sizeof(float));
    if (!rc)
        rc = d->be->cast(d->self, dev, t, f32, ZERO_F32, n);
    d->be->free(d->self, f32);
    free(h);
    return rc ? NULL : dev;
}

static int bench(struct zero_device *d, enum zero_dtype t, long size, int repeats)
{
    size_t n = (size_t)size * (size_t)size;
    void *a = random_matrix(d, n, t, 1), *b = random_matrix(d, n, t, 2), *c = NULL;
    if (a == NULL || b == NULL ||
        d->be->alloc(d->self, n * sizeof(float), ZERO_TAG_WORKSPACE, &c) != ZERO_OK) {
        fprintf(stderr, "gemm_bench: %s\n", d->be->last_error(d->self));
        return 1;
    }
    double *t_s = calloc((size_t)repeats, sizeof(double));
    int rc = 0;
    for (int i = -3; i < repeats && !rc; i++) {
        double t0 = MPI_Wtime();
        rc = d->be->gemm(d->self, 0, 1, size, size, size, 1.0f, a, t, size, b, t, size, 0.0f, c,
                         ZERO_F32, size);
        if (!rc)
            rc = d->be->synchronize(d->self);
        if (i >= 0)
            t_s[i] = MPI_Wtime() - t0;
    }
    if (rc) {
        fprintf(stderr, "gemm_bench: %s\n", d->be->last_error(d->self));
    } else {
        qsort(t_s, (size_t)repeats, sizeof(double), cmp_double);
        double med = t_s[repeats / 2], flops = 2.0 * (double)size * (double)size * (double)size;
        printf("gemm %-4s x %-4s -> fp32  %ld^3  median %8.3f ms  %8.1f TFLOP/s\n",
               zero_dtype_name(t), zero_dtype_name(t), size, med * 1e3, flops / med * 1e-12);
    }
    free(t_s);
    d->be->free(d->self, a);
    d->be->free(d->self, b);
    d->be->free(d->self, c);
    return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *name = argc > 1 ? argv[1] : "cuda";
    long size = argc > 2 ? atol(argv[2]) : 8192;
    int repeats = argc > 3 ? atoi(argv[3]) : 10;
    const struct zero_backend *be = zero_backend_find(name);
    char why[ZERO_ERRMSG_LEN] = "not built in";
    if (be == NULL || be->probe(why, sizeof(why)) != ZERO_OK || size < 1 || repeats < 1) {
        printf("SKIP: gemm_bench: backend %s: %s\n", name, why);
        MPI_Finalize();
        return 77;
    }
    struct zero_device *d = NULL;
    struct zero_error err = {0};
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    MPI_Comm comm = MPI_COMM_WORLD;
    if (zero_device_open(&d, name, &comm, &opt, &err) != ZERO_OK) {
        fprintf(stderr, "gemm_bench: %s\n", err.msg);
        MPI_Finalize();
        return 1;
    }
    int rc = bench(d, ZERO_F32, size, repeats) | bench(d, ZERO_BF16, size, repeats) |
             bench(d, ZERO_F16, size, repeats);
    zero_device_close(d);
    MPI_Finalize();
    return rc;
}

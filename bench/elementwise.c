/* The elementwise kernels of one toy-MLP block (src/nn/mlp_block.c) at bench/roofline's
 * shapes, each timed alone through the backend's table: what the roofline's
 * "elementwise" row is made of. One process:
 *
 *     bench/elementwise [--rows 16] [--hidden 1024] [--layers 12] [--reps 200]
 *
 * Per kernel: the elements of one call, the median and fastest microseconds of a call
 * over the repetitions, ns per element (fastest), and ms per step (the fastest call
 * times its calls per block times the layers; bf16's casts and workspace blocks only
 * run in bf16). The GELU kernels run in the variant ZERO_HOST_ISA=base|avx2|avx512
 * names (default: the widest); running the program against another build of libzero
 * (LD_LIBRARY_PATH) times that build's kernels. Not a test: nothing here can fail. */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "zero/backend.h"
#include "zero/error.h"

enum kernel {
    BIAS_ADD_WIDE,
    GELU_FORWARD,
    BIAS_ADD,
    RESIDUAL,
    BIAS_GRAD,
    GELU_BACKWARD,
    COPY_DX,
    BIAS_GRAD_WIDE,
    CAST_BF16,
    WORKSPACE,
    GELU_TANH_FORWARD,
    GELU_TANH_BACKWARD,
    NKERNELS
};

static const struct {
    const char *name;
    int per_block; /* calls per block and micro-step (0: not in the toy MLP's step) */
    int bf16_only;
} kernels[NKERNELS] = {
    [BIAS_ADD_WIDE] = {"bias_add (rows, 4h)", 1, 0},
    [GELU_FORWARD] = {"gelu_forward erf", 1, 0},
    [BIAS_ADD] = {"bias_add (rows, h)", 1, 0},
    [RESIDUAL] = {"axpy y += x", 1, 0},
    [BIAS_GRAD] = {"bias_grad (rows, h)", 1, 0},
    [GELU_BACKWARD] = {"gelu_backward erf", 1, 0},
    [COPY_DX] = {"copy dx = dy", 1, 0},
    [BIAS_GRAD_WIDE] = {"bias_grad (rows, 4h)", 1, 0},
    /* nn_matmul rounds x, a (forward), dy, x, dh, a (backward): 2 (rows, h) + 2 (rows, 4h),
     * counted as 2 calls of (rows, 5h) */
    [CAST_BF16] = {"cast f32->bf16 (rows, 5h)", 2, 1},
    [WORKSPACE] = {"alloc+free workspace", 6, 1},
    [GELU_TANH_FORWARD] = {"gelu_forward tanh", 0, 0},
    [GELU_TANH_BACKWARD] = {"gelu_backward tanh", 0, 0},
};

struct bufs {
    float *h, *a, *b1, *b2, *x, *y, *dy, *dx, *db;
    void *lowp;
};

static int run(const struct zero_backend *be, void *self, enum kernel k, int64_t rows,
               int64_t hidden, struct bufs *m)
{
    const int64_t wide = 4 * hidden;
    const size_t nh = (size_t)(rows * wide), nx = (size_t)(rows * hidden);
    void *tmp;
    int rc;
    switch (k) {
    case BIAS_ADD_WIDE:
        return be->bias_add(self, m->h, m->b1, rows, wide);
    case GELU_FORWARD:
        return be->gelu_forward(self, m->a, m->h, nh, ZERO_GELU_ERF);
    case BIAS_ADD:
        return be->bias_add(self, m->y, m->b2, rows, hidden);
    case RESIDUAL:
        return be->axpy(self, 1.0f, m->x, m->y, nx);
    case BIAS_GRAD:
        return be->bias_grad(self, m->db, m->dy, rows, hidden, 0.0f);
    case GELU_BACKWARD: /* in place, as mlp_block calls it */
        return be->gelu_backward(self, m->a, m->h, m->a, nh, ZERO_GELU_ERF);
    case COPY_DX:
        return be->copy(self, m->dx, m->dy, nx * sizeof(float));
    case BIAS_GRAD_WIDE:
        return be->bias_grad(self, m->db, m->a, rows, wide, 0.0f);
    case CAST_BF16:
        return be->cast(self, m->lowp, ZERO_BF16, m->h, ZERO_F32, nh + nx);
    case WORKSPACE:
        rc = be->alloc(self, nh * 2, ZERO_TAG_WORKSPACE, &tmp);
        return rc != ZERO_OK ? rc : be->free(self, tmp);
    case GELU_TANH_FORWARD:
        return be->gelu_forward(self, m->a, m->h, nh, ZERO_GELU_TANH);
    case GELU_TANH_BACKWARD:
        return be->gelu_backward(self, m->a, m->h, m->a, nh, ZERO_GELU_TANH);
    default:
        return ZERO_EINVAL;
    }
}

static size_t elements(enum kernel k, int64_t rows, int64_t hidden)
{
    const size_t nx = (size_t)(rows * hidden);
    switch (k) {
    case BIAS_ADD_WIDE:
    case GELU_FORWARD:
    case GELU_BACKWARD:
    case BIAS_GRAD_WIDE:
    case GELU_TANH_FORWARD:
    case GELU_TANH_BACKWARD:
        return 4 * nx;
    case CAST_BF16:
        return 5 * nx;
    case WORKSPACE:
        return 0;
    default:
        return nx;
    }
}

/* pre-activations spread like a trained MLP's: roughly normal, sd 1.5 */
static void fill(float *x, size_t n, uint32_t seed)
{
    uint32_t h = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        float u = 0.0f;
        for (int k = 0; k < 4; k++) {
            h = h * 1664525u + 1013904223u;
            u += (float)(h >> 8) / 16777216.0f;
        }
        x[i] = (u - 2.0f) * 2.6f;
    }
}

int main(int argc, char **argv)
{
    int64_t rows = 16, hidden = 1024;
    int layers = 12, reps = 200;
    static const struct option longs[] = {{"rows", required_argument, NULL, 'r'},
                                          {"hidden", required_argument, NULL, 'H'},
                                          {"layers", required_argument, NULL, 'L'},
                                          {"reps", required_argument, NULL, 'k'},
                                          {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        if (c == 'r')
            rows = atoll(optarg);
        else if (c == 'H')
            hidden = atoll(optarg);
        else if (c == 'L')
            layers = atoi(optarg);
        else if (c == 'k')
            reps = atoi(optarg);
        else {
            fprintf(stderr, "usage: bench/elementwise [--rows R] [--hidden H] [--layers L] "
                            "[--reps K]\n");
            return 2;
        }
    }
    if (rows < 1 || hidden < 1 || layers < 1 || reps < 1 || reps > 100000)
        return 2;
    MPI_Init(&argc, &argv);
    struct zero_error err = {0};
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    MPI_Comm world = MPI_COMM_WORLD;
    struct zero_device *dev;
    if (zero_device_open(&dev, "cpu", &world, &opt, &err) != ZERO_OK) {
        fprintf(stderr, "bench/elementwise: %s\n", err.msg);
        MPI_Finalize();
        return 1;
    }
    const struct zero_backend *be = dev->be;
    const size_t nh = (size_t)(rows * 4 * hidden), nx = (size_t)(rows * hidden);
    struct bufs m = {malloc(nh * sizeof(float)),
                     malloc(nh * sizeof(float)),
                     malloc((size_t)(4 * hidden) * sizeof(float)),
                     malloc((size_t)hidden * sizeof(float)),
                     malloc(nx * sizeof(float)),
                     malloc(nx * sizeof(float)),
                     malloc(nx * sizeof(float)),
                     malloc(nx * sizeof(float)),
                     malloc((size_t)(4 * hidden) * sizeof(float)),
                     malloc((nh + nx) * 2)};
    double *t = malloc((size_t)reps * sizeof *t);
    if (!m.h || !m.a || !m.b1 || !m.b2 || !m.x || !m.y || !m.dy || !m.dx || !m.db || !m.lowp ||
        !t) {
        fprintf(stderr, "bench/elementwise: out of memory\n");
        return 1;
    }
    float *h0 = malloc(nh * sizeof(float)), *a0 = malloc(nh * sizeof(float));
    if (!h0 || !a0)
        return 1;
    fill(h0, nh, 1);
    fill(a0, nh, 7);
    fill(m.b1, (size_t)(4 * hidden), 2);
    fill(m.b2, (size_t)hidden, 3);
    fill(m.x, nx, 4);
    fill(m.y, nx, 5);
    fill(m.dy, nx, 6);
    const char *isa = getenv("ZERO_HOST_ISA");
    printf("elementwise kernels of one mlp_block: rows %lld, hidden %lld (4h = %lld), %d layers; "
           "ZERO_HOST_ISA=%s\n",
           (long long)rows, (long long)hidden, (long long)(4 * hidden), layers,
           isa != NULL ? isa : "(widest)");
    printf("  %-28s %10s %10s %10s %9s %12s\n", "kernel", "elements", "median us", "min us",
           "ns/elem", "ms per step");
    double step[2] = {0.0, 0.0}; /* fp32, bf16 */
    for (int k = 0; k < NKERNELS; k++) {
        for (int r = 0; r < reps; r++) {
            /* the kernels that change their input get it back first (outside the timing) */
            memcpy(m.h, h0, nh * sizeof(float));
            memcpy(m.a, a0, nh * sizeof(float));
            double t0 = bench_now();
            int rc = run(be, dev->self, (enum kernel)k, rows, hidden, &m);
            t[r] = bench_now() - t0;
            if (rc != ZERO_OK) {
                fprintf(stderr, "bench/elementwise: %s: %s\n", kernels[k].name,
                        be->last_error(dev->self));
                return 1;
            }
        }
        qsort(t, (size_t)reps, sizeof *t, bench_by_value);
        size_t n = elements((enum kernel)k, rows, hidden);
        double per_step = 1e3 * t[0] * kernels[k].per_block * layers;
        step[1] += per_step;
        if (!kernels[k].bf16_only)
            step[0] += per_step;
        printf("  %-28s %10zu %10.1f %10.1f %9.2f %12.2f%s\n", kernels[k].name, n,
               1e6 * t[reps / 2], 1e6 * t[0], n > 0 ? 1e9 * t[0] / (double)n : 0.0, per_step,
               kernels[k].per_block == 0 ? " (not in the step)"
               : kernels[k].bf16_only    ? " (bf16 only)"
                                         : "");
    }
    printf("  sum per step: fp32 %.2f ms, bf16 %.2f ms\n", step[0], step[1]);
    free(h0);
    free(a0);
    free(t);
    free(m.h), free(m.a), free(m.b1), free(m.b2), free(m.x), free(m.y), free(m.dy), free(m.dx);
    free(m.db), free(m.lowp);
    zero_device_close(dev);
    MPI_Finalize();
    return 0;
}

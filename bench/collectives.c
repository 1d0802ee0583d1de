/* Bandwidth of the cpu backend's collectives, exact and native, next to a memcpy.
 *
 *     mpirun -np 2 bench/collectives [max_mb]      (default 256)
 *
 * For each size S (1, 4, 16, 64, 256 MB: the whole logical buffer, N * count * 4 bytes
 * of fp32 for reduce-scatter and all-gather, count * 4 for all-reduce) it times every
 * operation several times and prints S / median time in GB/s. The time of one repetition
 * is the slowest rank's, from a common barrier. Not a test: nothing here can fail. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zero/backend.h"
#include "zero/error.h"

enum op {
    OP_MEMCPY,
    OP_RS_EXACT,
    OP_RS_NATIVE,
    OP_AG_EXACT,
    OP_AG_NATIVE,
    OP_AR_EXACT,
    OP_AR_NATIVE,
    OP_COUNT
};
static const char *const op_name[OP_COUNT] = {"memcpy",    "rs exact", "rs native", "ag exact",
                                              "ag native", "ar exact", "ar native"};

struct buffers {
    float *send;  /* (N * count) */
    float *recv;  /* (N * count) */
    size_t count; /* per rank */
};

static int run_once(struct zero_device *d, enum op op, struct buffers *b)
{
    const struct zero_backend *be = d->be;
    size_t whole = b->count * (size_t)d->size;
    switch (op) {
    case OP_MEMCPY:
        memcpy(b->recv, b->send, whole * sizeof(float));
        return 0;
    case OP_RS_EXACT:
    case OP_RS_NATIVE:
        return be->reduce_scatter(d->self, b->send, ZERO_F32, b->recv, ZERO_F32, b->count, NULL);
    case OP_AG_EXACT:
    case OP_AG_NATIVE:
        return be->all_gather(d->self, b->send, b->recv, ZERO_F32, b->count, NULL);
    case OP_AR_EXACT:
    case OP_AR_NATIVE:
        return be->all_reduce(d->self, b->send, b->recv, ZERO_F32, whole, NULL);
    default:
        return 0;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median over reps of the slowest rank's seconds; negative on error */
static double time_op(struct zero_device *d, enum op op, struct buffers *b, int reps)
{
    enum zero_coll_mode mode = op == OP_RS_NATIVE || op == OP_AG_NATIVE || op == OP_AR_NATIVE
                                   ? ZERO_COLL_NATIVE
                                   : ZERO_COLL_EXACT;
    d->be->set_coll_mode(d->self, mode);
    double times[16];
    for (int rep = -1; rep < reps; rep++) { /* rep -1 warms up: window growth, page faults */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        int rc = run_once(d, op, b);
        double dt = MPI_Wtime() - t0, slowest = 0.0;
        if (rc != ZERO_OK) {
            fprintf(stderr, "%s: %s\n", op_name[op], d->be->last_error(d->self));
            return -1.0;
        }
        MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (rep >= 0)
            times[rep] = slowest;
    }
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    return times[reps / 2];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm world = MPI_COMM_WORLD;
    int max_mb = argc > 1 ? atoi(argv[1]) : 256;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    struct zero_error err = {0};
    struct zero_device *d = NULL;
    if (zero_device_open(&d, "cpu", &world, &opt, &err) != ZERO_OK) {
        fprintf(stderr, "bench/collectives: %s\n", err.msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int root = d->rank == 0, n = d->size;
    if (root) {
        printf("cpu collectives, N = %d, fp32, GB/s = buffer bytes / median seconds\n", n);
        printf("%8s", "MB");
        for (int op = 0; op < OP_COUNT; op++)
            printf(" %10s", op_name[op]);
        printf("\n");
    }
    double rs_64[2] = {0, 0};
    for (int mb = 1; mb <= max_mb; mb *= 4) {
        size_t bytes = (size_t)mb << 20;
        struct buffers b = {.count = bytes / sizeof(float) / (size_t)n};
        b.send = malloc(bytes);
        b.recv = malloc(bytes);
        if (b.send == NULL || b.recv == NULL) {
            fprintf(stderr, "bench/collectives: no memory for %d MB\n", mb);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (size_t i = 0; i < bytes / sizeof(float); i++)
            b.send[i] = (float)(i % 1000) * 0.001f;
        memset(b.recv, 0, bytes);
        int reps = mb >= 64 ? 5 : 9;
        if (root)
            printf("%8d", mb);
        for (int op = 0; op < OP_COUNT; op++) {
            double t = time_op(d, (enum op)op, &b, reps);
            if (mb == 64 && op == OP_RS_EXACT)
                rs_64[0] = t;
            if (mb == 64 && op == OP_RS_NATIVE)
                rs_64[1] = t;
            if (root)
                printf(" %10.2f", t > 0 ? (double)bytes / t / 1e9 : 0.0);
            fflush(stdout);
        }
        if (root)
            printf("\n");
        free(b.send);
        free(b.recv);
    }
    if (root && rs_64[0] > 0)
        printf("64 MB reduce-scatter: exact %.1f ms, native (MPI_Reduce_scatter_block) "
               "%.1f ms: exact is %.1fx faster\n",
               rs_64[0] * 1e3, rs_64[1] * 1e3, rs_64[1] / rs_64[0]);
    if (root)
        printf("comm window/staging on rank 0: %.1f MB\n",
               (double)d->ledger.peak[ZERO_TAG_COMM] / (1 << 20));
    zero_device_close(d);
    MPI_Finalize();
    return 0;
}

/* See rig.h. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "rig.h"

void bench_mpi_start(int *argc, char ***argv, int threaded, int *rank, int *world)
{
    int provided;
    if (threaded)
        MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, world);
}

int bench_usage_exit(int rank, const char *usage)
{
    if (rank == 0)
        fputs(usage, stderr);
    MPI_Finalize();
    return 2;
}

int bench_open(struct zero_device **dev, const char *backend, enum zero_coll_mode mode,
               struct zero_error *err)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    struct zero_backend_options bo = {.coll_mode = mode, .device = -1};
    return zero_device_open(dev, backend, &comm, &bo, err);
}

double bench_max_over_ranks(double v)
{
    double m = 0.0;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

void bench_max_over_ranks_n(const double *mine, double *worst, int n)
{
    MPI_Allreduce(mine, worst, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
}

double bench_comm_seconds(const struct zero_comm_stats *c)
{
    double s = 0.0;
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++)
        s += c->kind[k].seconds;
    return s;
}

double bench_sent_bytes(const struct zero_comm_stats *c)
{
    double s = 0.0;
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++)
        s += (double)c->kind[k].sent_bytes;
    return s;
}

int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- the toy MLP ---- */

void bench_toy_config(struct zero_config *cfg, int stage, int64_t batch, int world,
                      enum zero_coll_mode mode)
{
    zero_config_defaults(cfg);
    cfg->zero_optimization.stage = stage;
    cfg->libzero.coll_mode = mode;
    cfg->optimizer.type = ZERO_OPTIM_ADAMW;
    cfg->optimizer.lr = 1e-4;
    cfg->optimizer.weight_decay = 0.01;
    cfg->train_batch_size = batch;
    cfg->train_micro_batch_size_per_gpu = batch / world;
}

int bench_toy_open(struct bench_toy *t, const struct zero_config *cfg, int64_t hidden, int layers,
                   struct zero_device *dev, struct zero_error *err)
{
    *t = (struct bench_toy){.hidden = hidden, .rows = cfg->train_micro_batch_size_per_gpu};
    int rc = zero_nn_build_mlp(&t->m, hidden, layers, 10, err);
    if (!rc)
        rc = zero_engine_create(&t->e, cfg, t->m, dev, err);
    t->x = malloc((size_t)(t->rows * hidden) * sizeof *t->x);
    t->y = malloc((size_t)t->rows * sizeof *t->y);
    if (!rc && (!t->x || !t->y))
        rc = zero_fail(err, ZERO_ENOMEM, "batch of %lld rows", (long long)t->rows);
    return rc;
}

int bench_toy_step(struct bench_toy *t, int step, struct zero_device *dev, struct zero_error *err)
{
    int64_t first = zero_atom_first_sample(step, 0, dev->rank, dev->size, 1, t->rows);
    zero_synthetic_samples(1, t->hidden, 10, first, t->rows, t->x, t->y);
    struct zero_batch b = {.rows = t->rows, .inputs = t->x, .labels = t->y};
    MPI_Barrier(MPI_COMM_WORLD);
    int rc;
    if ((rc = zero_engine_forward(t->e, &b, NULL, err)) || (rc = zero_engine_backward(t->e, err)))
        return rc;
    return zero_engine_step(t->e, NULL, err);
}

void bench_toy_close(struct bench_toy *t)
{
    free(t->x);
    free(t->y);
    zero_engine_destroy(t->e);
    zero_model_destroy(t->m);
    *t = (struct bench_toy){0};
}

/* ---- GPT shapes ---- */

int bench_gpt_model_option(struct zero_gpt_config *model, int c, long v)
{
    switch (c) {
    case 'l':
        model->n_layer = (int)v;
        return 0;
    case 'c':
        model->n_embd = v;
        return 0;
    case 'h':
        model->n_head = (int)v;
        return 0;
    case 't':
        model->block_size = v;
        return 0;
    case 'v':
        model->vocab_size = v;
        return 0;
    default:
        return -1;
    }
}

/* ---- the backend's gemm, timed ---- */

struct bench_gemm_timing bench_gemm;
const struct zero_backend *bench_real_be;
static struct zero_backend timed_be;

static int timed_gemm(void *self, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                      const void *a, enum zero_dtype at, int64_t lda, const void *b,
                      enum zero_dtype bt, int64_t ldb, float beta, void *c, enum zero_dtype ct,
                      int64_t ldc)
{
    double t0 = MPI_Wtime();
    int rc =
        bench_real_be->gemm(self, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc);
    bench_gemm.seconds += MPI_Wtime() - t0;
    bench_gemm.flop += 2.0 * (double)m * (double)n * (double)k;
    if (bench_gemm.recording && bench_gemm.nshapes < BENCH_MAX_SHAPES)
        bench_gemm.shapes[bench_gemm.nshapes++] =
            (struct bench_gemm_shape){ta, tb, m, n, k, lda, ldb, ldc, beta};
    return rc;
}

struct zero_backend *bench_wrap_gemm(struct zero_device *dev)
{
    bench_real_be = dev->be;
    timed_be = *dev->be;
    timed_be.gemm = timed_gemm;
    dev->be = &timed_be;
    return &timed_be;
}

void bench_unwrap(struct zero_device *dev)
{
    if (dev != NULL && bench_real_be != NULL)
        dev->be = bench_real_be;
}

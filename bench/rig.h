/* What the training benchmarks share (bench/stages, bench/roofline, bench/gpt,
 * bench/gpt_mfu): MPI start-up, the toy MLP's training loop, the GPT model's flags,
 * the backend's gemm entry timed, reductions over ranks and the comm stats' sums.
 * Each program keeps what it measures and how it prints it. */
#ifndef ZERO_BENCH_RIG_H
#define ZERO_BENCH_RIG_H

#include <getopt.h>
#include <stdint.h>

#include "zero/gpt.h"
#include "zero/zero.h"

/* ---- start-up ---- */

/* MPI_Init, or with threaded MPI_Init_thread(MULTIPLE) (the cpu backend's communication
 * thread, for overlap); this rank and the world size. */
void bench_mpi_start(int *argc, char ***argv, int threaded, int *rank, int *world);
/* Bad arguments: usage on rank 0's stderr, MPI finalized; returns 2 (the exit status). */
int bench_usage_exit(int rank, const char *usage);
/* zero_device_open of backend on MPI_COMM_WORLD in mode, the device chosen by rank. */
int bench_open(struct zero_device **dev, const char *backend, enum zero_coll_mode mode,
               struct zero_error *err);

/* ---- over ranks, comm stats, sorting ---- */

double bench_max_over_ranks(double v);
void bench_max_over_ranks_n(const double *mine, double *worst, int n); /* element-wise */
double bench_comm_seconds(const struct zero_comm_stats *c);            /* issue to completion */
double bench_sent_bytes(const struct zero_comm_stats *c);
int bench_cmp_double(const void *a, const void *b); /* for qsort, ascending */

/* ---- the toy MLP (stages, roofline) ---- */

/* AdamW (lr 1e-4, weight decay 0.01), global batch over world ranks, the collective mode. */
void bench_toy_config(struct zero_config *cfg, int stage, int64_t batch, int world,
                      enum zero_coll_mode mode);

/* The toy model (hidden, layers, 10 classes) in an engine, with this rank's batch. */
struct bench_toy {
    struct zero_model *m;
    struct zero_engine *e;
    int64_t hidden, rows; /* rows: the micro-batch */
    float *x;             /* (rows, hidden) */
    int32_t *y;           /* (rows) */
};

int bench_toy_open(struct bench_toy *t, const struct zero_config *cfg, int64_t hidden, int layers,
                   struct zero_device *dev, struct zero_error *err);
/* Global step `step`'s synthetic samples, a barrier, forward, backward, step. */
int bench_toy_step(struct bench_toy *t, int step, struct zero_device *dev, struct zero_error *err);
void bench_toy_close(struct bench_toy *t);

/* ---- GPT shapes (gpt, gpt_mfu) ---- */

/* The long options of a GPT's shape; their getopt codes are 'l', 'c', 'h', 't', 'v'. */
#define BENCH_GPT_MODEL_OPTIONS                                                                    \
    {"n-layer", required_argument, NULL, 'l'}, {"n-embd", required_argument, NULL, 'c'},           \
        {"n-head", required_argument, NULL, 'h'}, {"block-size", required_argument, NULL, 't'},    \
    {                                                                                              \
        "vocab-size", required_argument, NULL, 'v'                                                 \
    }

/* Sets the model field of option c to v; returns 0, or -1 when c is not a shape option. */
int bench_gpt_model_option(struct zero_gpt_config *model, int c, long v);

/* ---- the backend's gemm, timed ---- */

struct bench_gemm_shape {
    int ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    float beta;
};

#define BENCH_MAX_SHAPES 4096

/* What the wrapped gemm adds up; shapes are recorded while recording is set. */
struct bench_gemm_timing {
    double seconds, flop;
    int recording, nshapes;
    struct bench_gemm_shape shapes[BENCH_MAX_SHAPES];
};

extern struct bench_gemm_timing bench_gemm;

/* Replaces dev->be by a copy whose gemm is timed into bench_gemm; the copy stays
 * writable (*timed) for a program's own wrappers. bench_unwrap puts the table back. */
struct zero_backend *bench_wrap_gemm(struct zero_device *dev);
void bench_unwrap(struct zero_device *dev);
/* The backend as it was before bench_wrap_gemm (for the programs' own wrappers). */
extern const struct zero_backend *bench_real_be;

#endif

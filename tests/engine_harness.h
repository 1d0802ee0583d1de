/* Trains a small residual MLP on synthetic data over a given communicator and
 * records what the engine tests compare: every step's loss, the final weights,
 * the ledger, the last step's comm stats. */
#ifndef ZERO_TEST_ENGINE_HARNESS_H
#define ZERO_TEST_ENGINE_HARNESS_H

#include <mpi.h>

#include "zero/zero.h"

#define HARNESS_MAX_STEPS 64

struct harness_run {
    /* inputs */
    struct zero_config cfg; /* stage, accumulation, clipping, knobs; batch sizes set */
    int64_t hidden, classes;
    int layers;
    int steps;
    uint64_t data_seed;
    int checkpoint;            /* activation checkpointing on every block */
    enum zero_dtype precision; /* fp32 (default), fp16 (scale 2^8, dynamic) or bf16 */
    /* outputs */
    float losses[HARNESS_MAX_STEPS];  /* global mean loss of each step */
    double scales[HARNESS_MAX_STEPS]; /* fp16: loss scale of each step */
    int skipped[HARNESS_MAX_STEPS];   /* fp16: step skipped on overflow */
    float *weights;                   /* all parameters, whole, in model order */
    int64_t nweights;
    struct zero_ledger ledger_after_create;
    struct zero_ledger host_ledger_after_create; /* offloaded states */
    struct zero_ledger nvme_ledger_after_create; /* states in NVMe swap files */
    int64_t nvme_read, nvme_written;             /* swap-file bytes over the whole run */
    struct zero_ledger ledger_end;
    struct zero_comm_stats last_comm;
    struct zero_theory theory;
    int64_t peak_live;
    int64_t limit_live;
    int64_t direct_grad_elements; /* zero_engine_direct_grad_elements after the run */
};

/* A default config: AdamW lr 1e-2, micro-batch 2, accumulation 1, the given stage. */
void harness_defaults(struct harness_run *r, int stage);
/* Runs on comm; returns 0 or a status with err filled. Caller frees r->weights. */
int harness_train(struct harness_run *r, MPI_Comm comm, struct zero_error *err);
/* Trains r on the first n ranks of MPI_COMM_WORLD only (the others wait);
 * returns 1 where it ran. Fails the test on every rank if any run failed. */
int harness_run_on_first(struct harness_run *r, int n);
/* 1 if both runs have bit-identical losses and weights. */
int harness_same_bits(const struct harness_run *a, const struct harness_run *b);

#endif

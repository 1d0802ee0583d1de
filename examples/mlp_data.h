/* Training samples for examples/train_mlp: synthetic (zero_synthetic_samples)
 * or read from a .safetensors file with tensors
 *     inputs  F32 (S, hidden)     labels  I64 (S), each in 0 .. classes-1
 * Sample s of a run is sample s mod S of the file: epochs wrap around. */
#ifndef EXAMPLES_MLP_DATA_H
#define EXAMPLES_MLP_DATA_H

#include <stdint.h>

#include "zero/error.h"
#include "zero/job.h"

struct mlp_data {
    int64_t hidden, classes;
    uint64_t seed;   /* synthetic samples */
    int64_t samples; /* S of the file; 0 = synthetic */
    float *inputs;   /* (S, hidden) */
    int32_t *labels; /* (S) */
};

void mlp_data_synthetic(struct mlp_data *d, int64_t hidden, int64_t classes, uint64_t seed);

/* Rank 0 reads and checks path, then broadcasts it; collective, the same
 * status and message on all ranks. */
int mlp_data_load(struct mlp_data *d, const char *path, int64_t hidden, int64_t classes,
                  struct zero_comm *comm, struct zero_error *err);
void mlp_data_free(struct mlp_data *d);

/* inputs (n, hidden) and labels (n) of samples first .. first+n-1. */
void mlp_data_fill(const struct mlp_data *d, int64_t first, int64_t n, float *inputs,
                   int32_t *labels);

/* Writes samples 0 .. samples-1 of the synthetic set to path in the format above. */
int mlp_data_write_synthetic(const char *path, uint64_t seed, int64_t hidden, int64_t classes,
                             int64_t samples, struct zero_error *err);

#endif

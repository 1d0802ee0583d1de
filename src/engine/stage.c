/* The stage table (stage.h). Ψ: parameters, N: ranks, K: optimizer-side bytes per
 * parameter (fp32 master + Adam's two moments = 12 in mixed precision; 8 in fp32,
 * where the fp32 parameters are the master). Per-rank model states, parameters
 * and gradients in the compute dtype (2 bytes in mixed precision):
 *
 *   stage | params | grads | master + optimizer | reduction       | after the update
 *   0 DP  | whole  | whole | whole              | all-reduce      | nothing: all whole
 *   1     | whole  | whole | shard              | reduce-scatter  | all-gather params
 *   2     | whole  | shard | shard              | reduce-scatter  | all-gather params
 *   3     | shard  | shard | shard              | reduce-scatter  | nothing; gathered per unit
 *
 * The reductions run per unit, bucketed in backward order (grad_reduce.c); stage 3
 * gathers each unit before its forward and its backward and releases it after
 * (stage3.c). */
#include <stddef.h>

#include "stage.h"

static const struct zero_stage stages[ZERO_STAGE_COUNT] = {
    [0] =
        {
            .number = 0,
            .name = "DP",
            .summary = "plain data parallel: every rank keeps every state whole",
            .shards_optim = 0,
            .shards_grads = 0,
            .shards_params = 0,
            .reduce = ZERO_STAGE_ALL_REDUCE,
            .after = ZERO_STAGE_UPDATED_WHOLE,
            .ledger = "(2 + 2 + K)Ψ",
        },
    [1] =
        {
            .number = 1,
            .name = "Pos",
            .summary = "optimizer state partitioned",
            .shards_optim = 1,
            .shards_grads = 0,
            .shards_params = 0,
            .reduce = ZERO_STAGE_REDUCE_SCATTER,
            .after = ZERO_STAGE_ALL_GATHER_PARAMS,
            .ledger = "2Ψ + 2Ψ + KΨ/N",
        },
    [2] =
        {
            .number = 2,
            .name = "Pos+g",
            .summary = "optimizer state and gradients partitioned",
            .shards_optim = 1,
            .shards_grads = 1,
            .shards_params = 0,
            .reduce = ZERO_STAGE_REDUCE_SCATTER,
            .after = ZERO_STAGE_ALL_GATHER_PARAMS,
            .ledger = "2Ψ + (2 + K)Ψ/N",
        },
    [3] =
        {
            .number = 3,
            .name = "Pos+g+p",
            .summary = "optimizer state, gradients and parameters partitioned",
            .shards_optim = 1,
            .shards_grads = 1,
            .shards_params = 1,
            .reduce = ZERO_STAGE_REDUCE_SCATTER,
            .after = ZERO_STAGE_GATHER_PER_UNIT_USE,
            .ledger = "(2 + 2 + K)Ψ/N",
        },
};

const struct zero_stage *zero_stage_get(int number)
{
    return number >= 0 && number < ZERO_STAGE_COUNT ? &stages[number] : NULL;
}

void zero_stage_coefficients(const struct zero_stage *s, int param_bytes, int grad_bytes,
                             int optim_bytes, int *whole_coef, int *shard_coef)
{
    *whole_coef = (s->shards_params ? 0 : param_bytes) + (s->shards_grads ? 0 : grad_bytes) +
                  (s->shards_optim ? 0 : optim_bytes);
    *shard_coef = (s->shards_params ? param_bytes : 0) + (s->shards_grads ? grad_bytes : 0) +
                  (s->shards_optim ? optim_bytes : 0);
}

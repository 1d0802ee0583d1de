/* The four stages as data: what each keeps whole and what it shards, how it
 * reduces gradients, what follows the update, and the paper's per-rank bytes.
 * Every engine decision that depends on the stage asks this table (stage.c),
 * never the stage number; the estimator and the theory read it too.
 * docs/design.md prints the same table. */
#ifndef ZERO_ENGINE_STAGE_H
#define ZERO_ENGINE_STAGE_H

#include <stdint.h>

#define ZERO_STAGE_COUNT 4

/* How a micro-step's gradient is summed over the ranks. */
enum zero_stage_reduce {
    ZERO_STAGE_ALL_REDUCE,     /* every rank needs the whole sum (stage 0) */
    ZERO_STAGE_REDUCE_SCATTER, /* rank r receives the sum of its shard r (stages 1-3) */
};

/* What makes the parameters usable again after this rank updated its part. */
enum zero_stage_after_update {
    ZERO_STAGE_UPDATED_WHOLE,       /* every rank updated the whole buffer: nothing (stage 0) */
    ZERO_STAGE_ALL_GATHER_PARAMS,   /* all-gather the updated shards, bucketed (stages 1-2) */
    ZERO_STAGE_GATHER_PER_UNIT_USE, /* nothing now; each unit is gathered when next used,
                                       persistent units right away (stage 3) */
};

struct zero_stage {
    int number;          /* zero_optimization.stage */
    const char *name;    /* the paper's: DP, Pos, Pos+g, Pos+g+p */
    const char *summary; /* one line, for docs and help */
    /* what this rank keeps as its shard (1) or whole (0) */
    int shards_optim;              /* fp32 master and optimizer state (Pos) */
    int shards_grads;              /* the reduced gradient (Pg); backward then writes a transient
                                      whole local gradient that the reduction scatters */
    int shards_params;             /* compute-dtype parameters (Pp): gathered per unit before use,
                                      released after (stage3.c) */
    enum zero_stage_reduce reduce; /* bucketed in backward order (grad_reduce.c) */
    enum zero_stage_after_update after; /* optimizer.c */
    /* the paper's per-rank model-state bytes, Ψ parameters, N ranks, K bytes of
     * optimizer side per parameter (mixed precision with Adam: 2 + 2 + K, K = 12) */
    const char *ledger;
};

/* The entry of stage number (0-3), NULL for any other number. */
const struct zero_stage *zero_stage_get(int number);

/* Elements of this rank's part of a state kept whole (padded) or as a shard. */
static inline int64_t zero_stage_part(int sharded, int64_t padded, int64_t shard)
{
    return sharded ? shard : padded;
}

/* Where this rank's part of a state begins in the unit's flat index space. */
static inline int64_t zero_stage_part_begin(int sharded, int64_t shard_begin)
{
    return sharded ? shard_begin : 0;
}

/* Offset of this rank's part of a state (sharded or whole) inside a buffer that
 * holds the whole unit or only this rank's shard: a shard inside a whole buffer
 * starts at shard_begin; anything else at 0. */
static inline int64_t zero_stage_offset_in(int part_sharded, int buffer_sharded,
                                           int64_t shard_begin)
{
    return part_sharded && !buffer_sharded ? shard_begin : 0;
}

/* Bytes per parameter of the per-rank model states that stay whole and that are
 * divided by N, given the bytes per parameter of each state (the ledger formula
 * whole_coef Ψ + shard_coef Ψ/N). */
void zero_stage_coefficients(const struct zero_stage *s, int param_bytes, int grad_bytes,
                             int optim_bytes, int *whole_coef, int *shard_coef);

#endif

/* --order-seed S: which sample of a global batch sits in which row of which atom.
 *
 * Exact mode fixes the order of every sum over samples: the rows of an atom's GEMMs
 * (weight and bias gradients, the loss), then the tree over atoms (the owners' combine
 * over ranks, the counter over micro-steps). Seed 0 is that default: position q of step
 * s's global batch (atom q / m, row q % m) holds sample q of it. A seed S > 0 puts
 * sample perm_S,s(q) there instead, a permutation of the batch drawn from (S, s) alone,
 * so each step trains on the same samples, each sum over them adds the same terms in
 * another fixed order, and, since the permutation depends neither on the world size nor
 * on the stage, the contract holds for it: stages 0-3 and world sizes agree to the bit
 * under every seed as they do under the default. What stays in its one order: the sums
 * inside a sample (a GEMM's chain over its inner dimension, LayerNorm's statistics,
 * attention's), and the norm's fixed blocks. */
#ifndef ZERO_PROGRAM_SAMPLE_ORDER_H
#define ZERO_PROGRAM_SAMPLE_ORDER_H

#include <stdint.h>

#include "zero/error.h"

struct sample_order {
    uint64_t seed; /* 0: the identity */
    int64_t step;  /* whose permutation perm holds; -1 none yet */
    int64_t n;     /* the global batch */
    int64_t *perm; /* (n): position -> sample, within the step */
};

/* Sets o up for global batches of n samples (allocates when seed > 0). */
int sample_order_init(struct sample_order *o, uint64_t seed, int64_t n, struct zero_error *err);
void sample_order_free(struct sample_order *o);

/* The sample (global index) at global position q: q itself for seed 0, else the
 * permutation of q's step, drawn on the first call for that step. */
int64_t sample_order_at(struct sample_order *o, int64_t q);

#endif

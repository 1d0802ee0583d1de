/* Deterministic synthetic classification data, so runs need no files and any
 * two runs (any stage, any world size) see the same samples.
 *
 * Sample s has inputs x[s] (width,) uniform in [-1, 1) from a counter-based
 * hash of (seed, s, feature) and label argmax_c (T x[s])_c for a fixed random
 * "teacher" matrix T (classes, width): a task a small network can learn. */
#ifndef ZERO_SYNTHETIC_H
#define ZERO_SYNTHETIC_H

#include <stdint.h>

#include "zero/atom.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills inputs (n, width) and labels (n) for global samples first .. first+n-1. */
void zero_synthetic_samples(uint64_t seed, int64_t width, int64_t classes, int64_t first, int64_t n,
                            float *inputs, int32_t *labels);

/* The first global sample of one rank's micro-batch (an "atom", docs/design.md):
 * atom a = micro_step * world + rank covers samples [a*m, (a+1)*m) of the
 * global batch `step` of size world * accum * m. The default atom order;
 * zero_atom_first_sample_in (atom.h) takes libzero.atom_order. */
int64_t zero_atom_first_sample(int64_t step, int64_t micro_step, int rank, int world, int64_t accum,
                               int64_t micro_batch);

#ifdef __cplusplus
}
#endif

#endif

/* Atoms: one rank's micro-batch at one micro-step (docs/design.md, "Exactness
 * contract"). The atom index fixes which global samples a micro-batch holds and
 * where its gradient sits in the canonical summation tree, so the data side (which
 * samples a rank reads) and the engine (how it sums them) must use one order:
 * libzero.atom_order. */
#ifndef ZERO_ATOM_H
#define ZERO_ATOM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum zero_atom_order {
    /* a = micro_step * world + rank (the default): every micro-step's atoms are
     * consecutive; exact mode reduces every micro-step */
    ZERO_ATOM_MICRO_STEP_MAJOR = 0,
    /* a = rank * accum + micro_step: each rank's atoms are consecutive; exact mode
     * sums them locally and reduces once per step */
    ZERO_ATOM_RANK_MAJOR = 1
};

/* The index of rank `rank`'s atom at micro-step `micro_step` in a step of
 * world * accum atoms. */
int64_t zero_atom_index(enum zero_atom_order order, int64_t micro_step, int rank, int world,
                        int64_t accum);

/* The first global sample of that atom: atom a of global batch `step` (world * accum
 * * micro_batch samples) covers samples [a*m, (a+1)*m) of it. */
int64_t zero_atom_first_sample_in(enum zero_atom_order order, int64_t step, int64_t micro_step,
                                  int rank, int world, int64_t accum, int64_t micro_batch);

#ifdef __cplusplus
}
#endif

#endif

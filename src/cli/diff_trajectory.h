/* Two trajectory files compared step by step (zero diff's second half): each step's loss,
 * grad norm, lr and loss scale, and its tensors' hashes; where the hashes differ and both
 * runs wrote that step's weights, the weights themselves (diff_weights.h), judged by the
 * envelope's step when one is given. */
#ifndef ZERO_CLI_DIFF_TRAJECTORY_H
#define ZERO_CLI_DIFF_TRAJECTORY_H

#include <stdio.h>

#include "diff_weights.h"

struct traj_summary {
    int steps, equal, inside, outside, unmeasured; /* steps in both files */
    int only_one;                                  /* steps in one file only */
    char first_outside[512];
};

/* Returns 0 when both files (and the weights they name) were read, 2 on bad input. */
int diff_trajectories(const char *a, const char *b, const struct diff_options *o, FILE *out,
                      struct traj_summary *s, char *msg, size_t len);

#endif

/* The flags every trainer of the program driver takes for a reference run (program_init
 * takes them out of argv before the trainer's own parser sees the rest):
 *
 *   --trajectory FILE                the trajectory file (trajectory.h)
 *   --trajectory-weights-every K     also the whole weights every K steps (0: only at the start)
 *   --order-seed S                   the global batch's samples in a seeded order
 *                                    (sample_order.h); 0, the default, is exact mode's own */
#ifndef ZERO_PROGRAM_REFERENCE_FLAGS_H
#define ZERO_PROGRAM_REFERENCE_FLAGS_H

#include <stddef.h>
#include <stdint.h>

struct program_startup;

struct reference_flags {
    const char *trajectory;
    int64_t weights_every; /* -1: not given */
    uint64_t order_seed;
};

/* Removes the flags from argv (*argc shrinks) into f. Returns 0, or 2 with
 * "prog: --flag: why" in msg. */
int reference_flags_take(struct reference_flags *f, const char *prog, int *argc, char **argv,
                         char *msg, size_t len);

/* The flags as start-up fields, and the trajectory's path checked (a directory or a FIFO
 * is refused now, not after the training). */
void reference_flags_startup(const struct reference_flags *f, struct program_startup *s);

const char *reference_flags_usage(void);

#endif

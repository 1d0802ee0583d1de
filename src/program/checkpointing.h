/* Sharded checkpoints for the example trainers: --save-checkpoint DIR (at the
 * end and every --checkpoint-every K steps, keeping the last --keep-last M)
 * and --resume DIR (the latest checkpoint in DIR, on any world size and
 * stage). The user metadata records where the data continues ("next_step") and
 * the model's architecture ("arch"). */
#ifndef ZERO_PROGRAM_CHECKPOINTING_H
#define ZERO_PROGRAM_CHECKPOINTING_H

#include <stdint.h>

#include "zero/zero.h"

struct example_checkpointing {
    const char *save_dir;   /* NULL: no saving */
    const char *resume_dir; /* NULL: start fresh */
    int64_t every;          /* 0: only at the end */
    int64_t keep_last;      /* 0: keep all */
    int64_t total_steps;
    int64_t batch; /* global batch, for the samples-seen record */
    int quiet, rank;
    /* The model's architecture ("gpt2", "llama"), recorded as user.arch and required to
     * match on resume (a checkpoint without one is "gpt2"); NULL: not recorded. */
    const char *arch;
};

/* After step `done` (1-based): saves when it is the last step or a multiple of
 * every. Collective. */
int example_checkpoint_after(struct zero_engine *e, const struct example_checkpointing *c,
                             int64_t done, struct zero_error *err);

/* Loads the latest checkpoint of c->resume_dir into e; *next_step is the step
 * the training continues with. Collective. */
int example_resume(struct zero_engine *e, const struct example_checkpointing *c, int64_t *next_step,
                   struct zero_error *err);

#endif

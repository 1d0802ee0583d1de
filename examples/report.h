/* End-of-run tables for the example trainers: the memory ledger next to the
 * ZeRO paper's formula, and one step's communication next to theory. */
#ifndef EXAMPLES_REPORT_H
#define EXAMPLES_REPORT_H

#include <stdio.h>

#include <mpi.h>

#include "zero/zero.h"

/* Memory per rank: rank 0's current and peak bytes per ledger tag, the
 * theory for the model-state rows and "ok"/"MISMATCH", then the max over
 * ranks of the peak total. Collective over comm (an MPI_Reduce); rank 0
 * prints. Returns the number of model-state rows that disagree with theory
 * on rank 0 (0 on the other ranks). */
int report_memory(FILE *out, const struct zero_engine *e, MPI_Comm comm);

/* Communication of the last optimizer step as rank 0 saw it: per collective
 * kind calls, payload, sent bytes and seconds, and the sent elements next to
 * 2Ψ(N-1)/N (stages 0-2) or 3Ψ(N-1)/N (stage 3). Call on rank 0 only. */
void report_comm(FILE *out, const struct zero_engine *e, int world);

/* Bytes this step sent over all collective kinds (control included). */
int64_t report_sent_bytes(const struct zero_comm_stats *s);

/* steps_per_print: whether optimizer step `step` (1-based) of `total` prints its
 * progress line: every step when the key is null (DeepSpeed's None), else every
 * steps_per_print-th step and the last one. */
int report_progress_due(const struct zero_config *c, int64_t step, int64_t total);

/* wall_clock_breakdown: seconds in forward, backward and step since the last
 * report_wall_clock. */
struct report_clock {
    double forward, backward, step;
    int64_t micro_steps;
};

/* One micro-step, forward + backward + step, timed into clock. */
int report_micro_step(struct zero_engine *e, const struct zero_batch *b, struct report_clock *clock,
                      struct zero_error *err);

/* "time: forward 1.20 ms | backward 2.31 ms | step 0.40 ms | communication 0.91 ms" per
 * optimizer step, averaged over the steps since the last call (the communication
 * is the last step's, inside the three); then restarts clock. */
void report_wall_clock(FILE *out, const struct zero_engine *e, struct report_clock *clock,
                       int64_t steps);

#endif

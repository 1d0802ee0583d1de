/* End-of-run tables for the example trainers: the memory ledger next to the
 * ZeRO paper's formula, and one step's communication next to theory. */
#ifndef ZERO_PROGRAM_REPORT_H
#define ZERO_PROGRAM_REPORT_H

#include <stdio.h>

#include "zero/job.h"
#include "zero/zero.h"

/* Memory per rank: rank 0's current and peak bytes per ledger tag, the
 * theory for the model-state rows and "ok"/"MISMATCH", then the max over
 * ranks of the peak total. Collective over comm (a reduction); rank 0
 * prints. Returns the number of model-state rows that disagree with theory
 * on rank 0 (0 on the other ranks). */
int report_memory(FILE *out, const struct zero_engine *e, struct zero_comm *comm);

/* Communication of the last optimizer step as rank 0 saw it: per collective
 * kind calls, payload, sent bytes and seconds, and the sent elements next to
 * 2Ψ(N-1)/N (stages 0-2) or 3Ψ(N-1)/N (stage 3). Call on rank 0 only. */
void report_comm(FILE *out, const struct zero_engine *e, int world);

/* Bytes this step sent over all collective kinds (control included). */
int64_t report_sent_bytes(const struct zero_comm_stats *s);

#endif

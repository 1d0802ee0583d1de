/* The memory table of the ZeRO paper, measured: the same model and batch run
 * one step at each of stages 0-3, and rank 0's model-state bytes are printed
 * per stage next to the formula (16Ψ, 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N, 16Ψ/N in mixed
 * precision; 16Ψ, 8Ψ + 8Ψ/N, 4Ψ + 12Ψ/N, 16Ψ/N in fp32). With ZeRO-Offload in
 * cfg each stage keeps what offload it can (the optimizer from stage 1, the
 * parameters at stage 3) and a host column shows the offloaded states; with
 * device = nvme an nvme column shows those in the swap files (the third tier). */
#ifndef EXAMPLES_STAGE_MEMORY_H
#define EXAMPLES_STAGE_MEMORY_H

#include <stdio.h>

#include "zero/zero.h"

/* For stage = 0..3: an engine for model with cfg at that stage (no gradient
 * accumulation), one training step on batch, one table row. Needs the device
 * free of other engines' transient buffers. Collective; rank 0 prints.
 * Returns a status, the same on all ranks, with err filled: ZERO_EMISMATCH
 * when some stage's measured model states differ from the theory on some rank. */
int stage_memory_table(FILE *out, const struct zero_config *cfg, struct zero_model *model,
                       struct zero_device *dev, const struct zero_batch *batch,
                       struct zero_comm *comm, struct zero_error *err);

#endif

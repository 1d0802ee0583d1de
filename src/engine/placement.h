/* Where each model state of a unit lives on this rank: the stage table's answers
 * (stage.c) as buffers. The one place that decides which buffer a gradient is
 * written to, reduced from, lands in and is read from by the update. */
#ifndef ZERO_ENGINE_PLACEMENT_H
#define ZERO_ENGINE_PLACEMENT_H

#include <stddef.h>

#include "zero/dtype.h"
#include "zero/error.h"

struct zero_engine;

/* The fp32 master of this rank's part: its shard (stages 1-3) or the whole (stage 0). */
float *engine_master(struct zero_engine *e, int unit);
/* (cdt) the whole parameters of unit, NULL if not whole now (stage 3, not gathered) */
void *engine_param_whole(struct zero_engine *e, int unit);
/* Where unit u's update writes the compute-dtype parameters (NULL: nowhere, the
 * master is the parameters); it writes engine_update_count elements. */
void *engine_param_copy(struct zero_engine *e, int u);

/* Backward: where the layers write dL/d(param p of unit owner) this micro-step
 * (fp32), allocated on first use; *acc: add to it (another unit wrote it first). */
int grad_write_target(struct zero_engine *e, int owner, int p, float **g, int *acc,
                      struct zero_error *err);
/* Mixed precision: the compute-dtype buffer (padded,) unit u's micro-step gradient
 * ends in for the reduction, the fp32 workspace converted into it once final
 * (allocated on first use, before the unit's backward, where the stage shards grads). */
int grad_convert_target(struct zero_engine *e, int u, void **dst, struct zero_error *err);
/* At engine creation: whether the direct route may be offered (mixed precision, the
 * backend's ZERO_CAP_ROUNDING_GEMM_STORE, not ZERO_DIRECT_LOWP_GRAD=0). */
int grad_direct_available(const struct zero_engine *e);
/* Backward of unit u: where the layer may write own parameter p's final gradient in
 * the compute dtype (grad_convert_target's buffer at p's offset), or *dst = NULL
 * where it may not (acc: another unit wrote it first; route unavailable). */
int grad_direct_target(struct zero_engine *e, int u, int p, int acc, void **dst,
                       struct zero_error *err);
/* This micro-step's whole local gradient (cdt, (padded,)), what the reduction reads. */
void *grad_micro_step(struct zero_engine *e, int u);
/* This rank's part of the reduced gradient (cdt, (shard,)): its slice of the whole
 * buffer (stages 0-1) or its shard (stages 2-3). */
void *grad_landing(struct zero_engine *e, int u);
/* The reduced gradient the update of unit u reads (*t: its dtype): the whole
 * buffer where the stage keeps the optimizer state whole, else the landing. */
const void *grad_for_update(struct zero_engine *e, int u, enum zero_dtype *t);

#endif

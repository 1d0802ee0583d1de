/* The optimizer step at the accumulation boundary (optimizer.c): norm, clipping,
 * update, and what the stage does after it. */
#ifndef ZERO_ENGINE_OPTIMIZER_H
#define ZERO_ENGINE_OPTIMIZER_H

struct zero_engine;
struct zero_error;

int optimizer_step(struct zero_engine *e, struct zero_error *err);

#endif

/* The arguments of this step's update (optimizer.type picks which one applies). */
#ifndef ZERO_ENGINE_OPTIMIZER_ARGS_H
#define ZERO_ENGINE_OPTIMIZER_ARGS_H

#include "zero/backend.h"

struct zero_engine;

struct zero_adam_args optimizer_adam_args(const struct zero_engine *e, float lr, float grad_div);
struct zero_sgd_args optimizer_sgd_args(const struct zero_engine *e, float lr, float grad_div);

#endif

/* Before the model states are allocated: their plan against what the process may
 * use (memory_plan.c); ZERO_ENOMEM with the per-tag breakdown when it cannot fit. */
#ifndef ZERO_ENGINE_MEMORY_PLAN_H
#define ZERO_ENGINE_MEMORY_PLAN_H

struct zero_engine;
struct zero_error;

/* Collective: rc is the layout's status, folded into the same agreement. */
int engine_check_memory_plan(struct zero_engine *e, int rc, struct zero_error *err);

#endif

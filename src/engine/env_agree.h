/* The ZERO_* variables that change results or collectives, agreed across ranks at
 * engine creation (env_agree.c). */
#ifndef ZERO_ENGINE_ENV_AGREE_H
#define ZERO_ENGINE_ENV_AGREE_H

struct zero_engine;
struct zero_error;

/* Collective: ZERO_EMISMATCH naming the first variable whose value differs from
 * rank 0's, on every rank. */
int engine_env_agree(struct zero_engine *e, struct zero_error *err);

#endif

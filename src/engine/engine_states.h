/* Allocate and initialize the model states in shards (engine_states.c). */
#ifndef ZERO_ENGINE_ENGINE_STATES_H
#define ZERO_ENGINE_ENGINE_STATES_H

struct zero_engine;
struct zero_error;

int engine_states_create(struct zero_engine *e, struct zero_error *err);
void engine_states_destroy(struct zero_engine *e);

#endif

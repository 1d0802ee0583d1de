/* Parameter initialization, the same values at any world size (init_rng.c). */
#ifndef ZERO_ENGINE_INIT_RNG_H
#define ZERO_ENGINE_INIT_RNG_H

struct zero_engine;
struct zero_error;

int engine_init_params(struct zero_engine *e, struct zero_error *err);

#endif

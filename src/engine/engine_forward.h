/* The forward pass and the micro-batch (engine_forward.c). */
#ifndef ZERO_ENGINE_ENGINE_FORWARD_H
#define ZERO_ENGINE_ENGINE_FORWARD_H

struct zero_engine;
struct zero_error;
struct zero_unit_ctx;

void engine_free_batch(struct zero_engine *e);
void engine_discard_activations(struct zero_engine *e); /* after eval or a failure */
int engine_recompute_unit(struct zero_engine *e, int u, struct zero_unit_ctx *ctx, const float *x,
                          char *msg, struct zero_error *err);

#endif

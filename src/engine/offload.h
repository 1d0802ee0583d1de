/* ZeRO-Offload (offload.c), which alone writes struct offload_plan. */
#ifndef ZERO_OFFLOAD_OFFLOAD_H
#define ZERO_OFFLOAD_OFFLOAD_H

#include <stdint.h>

struct zero_engine;
struct zero_error;

struct offload_plan {
    int opt;     /* master and optimizer state in host memory */
    int param;   /* stage 3: the parameter shard in host memory */
    int threads; /* host threads of the offloaded optimizer */
};

/* One unit's part, offload_optimizer (host memory, (shard,) cdt): the reduced
 * gradient comes in here and the updated parameters go out of it. */
struct unit_offload {
    void *staging;
    void *ready; /* event: the gradient has landed in staging */
};

/* Unit u's host staging shard of n elements and its event. */
int offload_alloc_unit(struct zero_engine *e, int u, int64_t n, const char *what,
                       struct zero_error *err);
void offload_unit_destroy(struct zero_engine *e, int u);

/* Reads the offload keys (the stage rules are zero_config_validate's) and sets
 * e->offload. */
int offload_configure(struct zero_engine *e, struct zero_error *err);
/* The update of every unit on the host: gradients copied out, the host
 * optimizer, parameters copied back; overlapped unit by unit. */
int offload_update(struct zero_engine *e, float lr, float grad_div, struct zero_error *err);

#endif

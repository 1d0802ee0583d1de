/* The device step: losses kept on the device, deferred input checks, graph capture.
 *
 * A step with no host wait inside its passes (docs/gpu.md, CUDA Graphs). The six entries
 * come together: a backend that has none of them (cpu) leaves the pointer NULL; the
 * engine then reads each micro-step's losses back and every id is checked before
 * anything is written.
 *
 * Reached from struct zero_backend's `device_step` pointer (zero/backend.h): NULL = the
 * backend has none of these; a present group has every entry (src/base/registry.c
 * refuses one with a NULL entry or another version). */
#ifndef ZERO_BACKEND_DEVICE_STEP_H
#define ZERO_BACKEND_DEVICE_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "zero/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_DEVICE_STEP_OPS_VERSION 1

struct zero_device_step_ops {
    int version; /* ZERO_DEVICE_STEP_OPS_VERSION */
    /* The micro-step's mean loss kept on the device, summed in the host's order:
     *   sum (double) = losses[0] + losses[1] + ... + losses[n-1], in that order
     *   *last (float) = (float)(sum / rows);  *acc (double) += (double)*last
     * losses (n floats), acc and last are device memory. */
    int (*loss_accumulate)(void *self, double *acc, float *last, const float *losses, size_t n,
                           int64_t rows);
    /* Deferred input checks and graph capture, for libzero.cuda_graphs. graph_open turns
     * the deferred checks on: from then on embedding_forward, xent_forward,
     * xent_backward and xent_fused do not fail on an id outside its range: they record
     * the first one (the first call that met one, its smallest row) on the device and
     * replace it by 0 in the ids buffer itself, so nothing after it (the embedding
     * backward included) reads or writes outside a table or the logits. input_errors reads that
     * record (a host wait) and clears it: ZERO_OK, or ZERO_EINVAL with the message the immediate
     * check gives ("embedding_forward: row R: token id V is outside [0, vocab)"). graph_open fails,
     * naming why, where this instance cannot capture (cuda: host-staged collectives, profiling on).
     */
    int (*graph_open)(void *self);
    void (*graph_close)(void *self); /* destroys the graphs and their memory pool */
    int (*input_errors)(void *self);
    /* The work queued between graph_begin and graph_end (compute and comm streams, no
     * host wait, no entry that waits: to_host, from_host, synchronize, nonfinite, ...)
     * is captured as graph `key` (>= 0, the engine's name for the pass) and launched
     * by graph_end; launch 0 discards it (the pass failed). Blocks alloc hands out
     * between them come from a pool kept for the graphs. */
    int (*graph_begin)(void *self, int key);
    int (*graph_end)(void *self, int key, int launch);
};

#ifdef __cplusplus
}
#endif

#endif

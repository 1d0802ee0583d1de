/* What a step keeps on the device so that its passes need no host wait (docs/gpu.md,
 * "CUDA Graphs"): the loss summed on the device over the micro-steps, the deferred
 * input checks read once at the step's end, and the capture of each pass as a graph
 * (libzero.cuda_graphs). Each part is used where the backend has the device_step group
 * (include/zero/backend_device_step.h); elsewhere the engine reads
 * the losses back per micro-step and the backend checks ids before it writes. */
#ifndef ZERO_ENGINE_DEVICE_STEP_H
#define ZERO_ENGINE_DEVICE_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "zero/error.h"

struct zero_engine;

struct device_step {
    /* device memory, where the backend has loss_accumulate: */
    double *loss_sum; /* (1) this rank's micro-step mean losses since the step began */
    float *loss_last; /* (1) the last micro-step's mean loss */
    int graphs;       /* libzero.cuda_graphs: passes captured (graph_open succeeded) */
    int refused;      /* the last step's inputs were bad: nothing applied */
    int64_t captured; /* passes launched as graphs over the run */
    /* a training micro-step's bad input found by an evaluation's own check, kept for
     * the step's end (code 0: none) */
    struct zero_error pending;
};

enum device_pass { DEVICE_PASS_FORWARD = 0, DEVICE_PASS_BACKWARD = 1 };

/* At creation: the loss buffers, and the graphs where libzero.cuda_graphs asks for them
 * (fails naming why the backend cannot capture). */
int device_step_open(struct zero_engine *e, struct zero_error *err);
void device_step_close(struct zero_engine *e);
/* 1 if the losses are summed on the device. */
int device_step_keeps_loss(const struct zero_engine *e);
/* Adds the micro-step's losses (n floats on the device, rows rows) to the step's sum. */
int device_step_add_loss(struct zero_engine *e, const float *losses, size_t n, int64_t rows,
                         struct zero_error *err);
/* *loss = the last micro-step's mean loss (a host wait). */
int device_step_read_last_loss(struct zero_engine *e, float *loss, struct zero_error *err);
/* Brackets a training pass: captured as a graph once the first step has run. end's rc
 * is the pass's status: a failed pass is discarded, never launched; returns rc or
 * end's own failure. */
int device_step_begin(struct zero_engine *e, enum device_pass pass, struct zero_error *err);
int device_step_end(struct zero_engine *e, enum device_pass pass, int rc, struct zero_error *err);
/* The step-end hook, before the optimizer reads a gradient: the loss sum into
 * e->loss_sum, then the deferred input checks, agreed by every rank. Fails (with
 * e->dstep.refused set) when any rank met a bad id: the step must apply nothing. */
int device_step_finish(struct zero_engine *e, struct zero_error *err);
/* Around an evaluation or prediction (never captured): its ids are checked at once.
 * before keeps a training micro-step's bad input for the step's end; after returns
 * the pass's own. */
void device_step_before_eval(struct zero_engine *e);
int device_step_after_eval(struct zero_engine *e, struct zero_error *err);

#endif

/* The step's device-side parts: the loss sum, the deferred input checks and the
 * graphs of the passes (device_step.h). The engine decides what a graph holds: one
 * training pass (forward after the batch's upload, or backward with its reductions),
 * captured from the second step on, so that the first, uncaptured step has grown every
 * buffer and made every plan a pass needs; the backend re-captures each pass and
 * launches it (docs/gpu.md, "CUDA Graphs"). */
#include <stdio.h>
#include <string.h>

#include "engine_internal.h"
#include "device_step.h"
#include "zero/backend_device_step.h"

int device_step_keeps_loss(const struct zero_engine *e)
{
    return e->dstep.loss_sum != NULL;
}

int device_step_open(struct zero_engine *e, struct zero_error *err)
{
    struct device_step *d = &e->dstep;
    memset(d, 0, sizeof *d);
    if (e->cfg.libzero.cuda_graphs) {
        if (e->be->device_step == NULL)
            return zero_fail(err, ZERO_ENOTSUP,
                             "libzero.cuda_graphs = true: the %s backend cannot capture a pass "
                             "(it has no graph entries)",
                             e->be->name);
        int rc = e->be->device_step->graph_open(e->bself);
        if (rc)
            return engine_backend_error(e, rc, err, "libzero.cuda_graphs = true");
        d->graphs = 1;
    }
    if (e->be->device_step == NULL)
        return ZERO_OK;
    /* (2) doubles: the sum, then the last mean in the first half of the second */
    int rc = engine_alloc(e, 2 * sizeof(double), ZERO_TAG_WORKSPACE, (void **)&d->loss_sum,
                          "loss sum", err);
    if (!rc && (rc = e->be->fill(e->bself, d->loss_sum, ZERO_F64, 0.0, 2)))
        rc = engine_backend_error(e, rc, err, "clearing the loss sum");
    d->loss_last = d->loss_sum ? (float *)(d->loss_sum + 1) : NULL;
    return rc;
}

void device_step_close(struct zero_engine *e)
{
    struct device_step *d = &e->dstep;
    if (d->graphs)
        e->be->device_step->graph_close(e->bself);
    d->graphs = 0;
    engine_free(e, d->loss_sum);
    d->loss_sum = NULL;
    d->loss_last = NULL;
}

int device_step_add_loss(struct zero_engine *e, const float *losses, size_t n, int64_t rows,
                         struct zero_error *err)
{
    int rc = e->be->device_step->loss_accumulate(e->bself, e->dstep.loss_sum, e->dstep.loss_last,
                                                 losses, n, rows);
    return rc ? engine_backend_error(e, rc, err, "summing the losses") : ZERO_OK;
}

int device_step_read_last_loss(struct zero_engine *e, float *loss, struct zero_error *err)
{
    int rc = e->be->to_host(e->bself, loss, e->dstep.loss_last, sizeof *loss);
    return rc ? engine_backend_error(e, rc, err, "reading the loss") : ZERO_OK;
}

/* Captured from the second step on; the graph's name is the pass and the micro-step's
 * place in the step (its gradient counter slots and buckets differ). */
static int graph_key(const struct zero_engine *e, enum device_pass pass)
{
    if (!e->dstep.graphs || e->global_steps < 1)
        return -1;
    return (int)(e->micro_steps % e->accum) * 2 + (int)pass;
}

int device_step_begin(struct zero_engine *e, enum device_pass pass, struct zero_error *err)
{
    int key = graph_key(e, pass);
    if (key < 0)
        return ZERO_OK;
    int rc = e->be->device_step->graph_begin(e->bself, key);
    return rc ? engine_backend_error(e, rc, err, "capturing the %s pass",
                                     pass == DEVICE_PASS_FORWARD ? "forward" : "backward")
              : ZERO_OK;
}

int device_step_end(struct zero_engine *e, enum device_pass pass, int rc, struct zero_error *err)
{
    int key = graph_key(e, pass);
    if (key < 0)
        return rc;
    int end = e->be->device_step->graph_end(e->bself, key, rc == ZERO_OK);
    if (rc)
        return rc; /* the pass's own message stands; its graph was discarded */
    if (end)
        return engine_backend_error(e, end, err, "launching the %s pass's graph",
                                    pass == DEVICE_PASS_FORWARD ? "forward" : "backward");
    e->dstep.captured++;
    return ZERO_OK;
}

/* This rank's verdict on the step's inputs: a kept one first, then the record. */
static int inputs_verdict(struct zero_engine *e, struct zero_error *err)
{
    struct device_step *d = &e->dstep;
    int rc = e->be->device_step->input_errors(e->bself);
    if (d->pending.code) {
        *err = d->pending;
        zero_error_clear(&d->pending);
        return err->code;
    }
    if (rc)
        return engine_backend_error(e, rc, err, "step %lld", (long long)e->global_steps + 1);
    return ZERO_OK;
}

int device_step_finish(struct zero_engine *e, struct zero_error *err)
{
    struct device_step *d = &e->dstep;
    d->refused = 0;
    int rc = ZERO_OK;
    if (d->loss_sum) {
        if ((rc = e->be->to_host(e->bself, &e->loss_sum, d->loss_sum, sizeof(double))))
            rc = engine_backend_error(e, rc, err, "reading the loss sum");
        else if ((rc = e->be->fill(e->bself, d->loss_sum, ZERO_F64, 0.0, 1)))
            rc = engine_backend_error(e, rc, err, "clearing the loss sum");
    }
    if (!d->graphs)
        return rc;
    /* every rank's verdict (a failed readback counts: the step is not applied either) */
    int first = -1, mine = rc ? rc : inputs_verdict(e, err);
    int xrc = engine_first_failed(e, mine, &first, err);
    if (first < 0)
        return xrc;
    d->refused = 1;
    if (mine) {
        char msg[sizeof err->msg];
        memcpy(msg, err->msg, sizeof msg);
        return zero_fail(err, mine, "%s; nothing of this step was applied", msg);
    }
    return zero_fail(err, ZERO_EINVAL,
                     "rank %d: rank %d stopped step %lld at its end (an input outside its range, "
                     "or a failure: its message names it); nothing of this step was applied",
                     e->rank, first, (long long)e->global_steps + 1);
}

void device_step_before_eval(struct zero_engine *e)
{
    struct device_step *d = &e->dstep;
    if (!d->graphs || d->pending.code)
        return;
    int rc = e->be->device_step->input_errors(e->bself);
    if (rc)
        engine_backend_error(e, rc, &d->pending, "step %lld", (long long)e->global_steps + 1);
}

int device_step_after_eval(struct zero_engine *e, struct zero_error *err)
{
    if (!e->dstep.graphs)
        return ZERO_OK;
    int rc = e->be->device_step->input_errors(e->bself);
    return rc ? engine_backend_error(e, rc, err, "evaluation") : ZERO_OK;
}

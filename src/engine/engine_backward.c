/* The backward pass: units in reverse order, each writing its gradients
 * fresh (or adding, for a parameter another unit already used), then handing
 * finished units to the bucketed reduction (grad_reduce.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

/* A whole-unit gradient buffer of type t whose gaps and tail are zero (the
 * parameters' parts are overwritten by backward). */
static int alloc_grad_buffer(struct zero_engine *e, int u, enum zero_tag tag, enum zero_dtype t,
                             void **out, struct zero_error *err)
{
    const struct zero_unit_layout *l = &e->us[u].layout;
    size_t size = zero_dtype_size(t);
    int rc = engine_alloc(e, (size_t)l->padded * size, tag, out, "unit gradient", err);
    if (rc)
        return zero_error_wrap(err, "unit %s: ", e->model->units[u]->name);
    int64_t at = 0;
    for (int p = 0; p <= l->nparams && !rc; p++) {
        int64_t end = p < l->nparams ? l->offset[p] : l->padded;
        if (end > at)
            rc = e->be->fill(e->bself, (char *)*out + at * (int64_t)size, t, 0.0,
                             (size_t)(end - at));
        if (p < l->nparams)
            at = l->offset[p] + l->numel[p];
    }
    return rc ? engine_backend_error(e, rc, err, "zeroing gradient padding") : ZERO_OK;
}

/* Where the layers write dL/d(param p of unit owner) this micro-step (fp32):
 *   fp32, stages 0-1: the whole gradient buffer itself
 *   fp32, stages 2-3: the transient local gradient (reduce-scattered after)
 *   mixed precision: an fp32 workspace, converted to the compute dtype once
 *                    the owner's gradient is final (finish_unit_grad) */
static int grad_target(struct zero_engine *e, int owner, int p, float **g, int *acc,
                       struct zero_error *err)
{
    struct unit_states *s = &e->us[owner];
    int rc = ZERO_OK;
    float *base;
    if (e->mixed) {
        if (!s->grad_work)
            rc = alloc_grad_buffer(e, owner, ZERO_TAG_WORKSPACE, ZERO_F32, (void **)&s->grad_work,
                                   err);
        base = s->grad_work;
    } else if (e->stage_def->shards_grads) {
        if (!s->local_grad)
            rc = alloc_grad_buffer(e, owner, ZERO_TAG_BUCKETS, ZERO_F32, &s->local_grad, err);
        base = s->local_grad;
    } else {
        base = s->grads;
    }
    if (rc)
        return rc;
    *g = base + s->layout.offset[p];
    *acc = s->grad_written[p];
    s->grad_written[p] = 1;
    return ZERO_OK;
}

/* Mixed precision: unit u's fp32 gradient is final; convert it to the compute
 * dtype where the reduction reads it (the wire carries the compute dtype). */
static int finish_unit_grad(struct zero_engine *e, int u, struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    if (!e->mixed || !s->grad_work)
        return ZERO_OK;
    int rc = ZERO_OK;
    void *dst = s->grads;
    if (e->stage_def->shards_grads) {
        rc = engine_alloc(e, (size_t)s->layout.padded * e->csize, ZERO_TAG_BUCKETS, &s->local_grad,
                          "unit gradient", err);
        dst = s->local_grad;
    }
    if (!rc &&
        (rc = e->be->cast(e->bself, dst, e->cdt, s->grad_work, ZERO_F32, (size_t)s->layout.padded)))
        rc = engine_backend_error(e, rc, err, "converting gradients of %s",
                                  e->model->units[u]->name);
    engine_free(e, s->grad_work);
    s->grad_work = NULL;
    return rc;
}

static int backward_unit(struct zero_engine *e, int u, float **dy, struct zero_error *err)
{
    const struct zero_unit *unit = e->model->units[u];
    struct unit_states *s = &e->us[u];
    int rc = compute_fetch(e, u, err);
    if (rc)
        return rc;
    char msg[512];
    struct zero_unit_ctx ctx;
    compute_init_ctx(e, &ctx, msg, sizeof msg);
    rc = compute_fill_params(e, u, &ctx, err);
    for (int p = 0; p < unit->nparams && !rc; p++)
        rc = grad_target(e, u, p, &ctx.grad[p], &ctx.grad_accumulate[p], err);
    for (int x = 0; x < unit->nexternal && !rc; x++)
        rc =
            grad_target(e, unit->external[x].unit, unit->external[x].param,
                        &ctx.grad[unit->nparams + x], &ctx.grad_accumulate[unit->nparams + x], err);
    float *dx = NULL;
    size_t scratch = unit->ops->scratch_bytes ? unit->ops->scratch_bytes(unit, e->rows) : 0;
    if (!rc && u > 0)
        rc = engine_alloc(e, (size_t)e->rows * (size_t)unit->in_width * sizeof(float),
                          ZERO_TAG_ACTIVATIONS, (void **)&dx, "input gradient", err);
    if (!rc && scratch)
        rc = engine_alloc(e, scratch, ZERO_TAG_WORKSPACE, &ctx.scratch, unit->name, err);
    if (rc) {
        engine_free(e, dx);
        compute_drop_param_copies(e, u);
        return rc;
    }
    const float *x = u == 0 ? e->input : e->us[u - 1].out;
    if (unit->checkpoint && (rc = engine_recompute_unit(e, u, &ctx, x, msg, err))) {
        engine_free(e, dx);
        engine_free(e, ctx.scratch);
        compute_drop_param_copies(e, u);
        return rc;
    }
    ctx.saved = s->saved;
    double t0 = engine_now();
    rc = unit->ops->backward(unit, &ctx, x, *dy, dx);
    engine_event(e, ZERO_EV_BACKWARD, u, -1, NULL, e->rows, t0);
    compute_drop_param_copies(e, u);
    engine_free(e, ctx.scratch);
    engine_free(e, s->saved);
    engine_free(e, s->out);
    engine_free(e, *dy);
    s->saved = NULL;
    s->out = NULL;
    *dy = dx;
    if (rc)
        return compute_failed(e, u, rc, "backward", msg, err);
    if ((rc = compute_release(e, u, err)) || (rc = finish_unit_grad(e, u, err)))
        return rc;
    return reduce_unit_ready(e, u, err);
}

int zero_engine_backward(struct zero_engine *e, struct zero_error *err)
{
    if (!e->forward_done)
        return zero_fail(err, ZERO_EINVAL, "backward called without a forward");
    int rc = engine_outside_scope(e, "zero_engine_backward", err);
    if (rc)
        return rc;
    for (int u = 0; u < e->nunits; u++)
        memset(e->us[u].grad_written, 0, sizeof e->us[u].grad_written);
    float *dy = NULL;
    for (int u = e->nunits - 1; u >= 0 && !rc; u--)
        rc = backward_unit(e, u, &dy, err);
    engine_free(e, dy);
    engine_free_batch(e);
    if (!rc)
        rc = reduce_finish_micro_step(e, err);
    if (rc)
        return rc;
    e->forward_done = 0;
    e->trace_recorded = 1;
    e->micro_steps++;
    return ZERO_OK;
}

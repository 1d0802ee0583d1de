/* The backward pass: units in reverse order, each writing its gradients
 * fresh (or adding, for a parameter another unit already used), then handing
 * finished units to the bucketed reduction (grad_reduce.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "engine_forward.h"
#include "device_step.h"
#include "gathered.h"
#include "grad_reduce.h"
#include "stage3.h"
#include "unit_compute.h"
#include "placement.h"

/* Mixed precision: unit u's fp32 gradient is final; convert it to the compute
 * dtype where the reduction reads it (the wire carries the compute dtype): the
 * whole workspace, gaps included, except the parameters the layers wrote there
 * directly (grad_direct). */
static int finish_unit_grad(struct zero_engine *e, int u, struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    const struct zero_unit_layout *l = &s->layout;
    if (!e->mixed || !s->grad_work)
        return ZERO_OK;
    void *dst;
    int rc = grad_convert_target(e, u, &dst, err);
    int64_t at = 0; /* the run [at, end) still to convert */
    for (int p = 0; p <= l->nparams && !rc; p++) {
        if (p < l->nparams && !s->grad_direct[p])
            continue;
        int64_t end = p < l->nparams ? l->offset[p] : l->padded;
        if (end > at && (rc = e->be->cast(e->bself, engine_at(e, dst, at), e->cdt,
                                          s->grad_work + at, ZERO_F32, (size_t)(end - at))))
            rc = engine_backend_error(e, rc, err, "converting gradients of %s",
                                      e->model->units[u]->name);
        if (p < l->nparams)
            at = l->offset[p] + l->numel[p];
    }
    engine_free(e, s->grad_work);
    s->grad_work = NULL;
    return rc;
}

/* The direct route (placement.c): own parameter p's compute-dtype destination
 * where the engine offers it; the layer says which it used. */
static int offer_direct(struct zero_engine *e, int u, struct zero_unit_ctx *ctx,
                        struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    const struct zero_unit *unit = e->model->units[u];
    void *dst;
    ctx->grad_lowp_type = e->cdt;
    memset(s->grad_direct, 0, sizeof s->grad_direct);
    /* mixed precision: the compute-dtype gradient exists before backward */
    int rc = e->mixed && unit->nparams > 0 ? grad_convert_target(e, u, &dst, err) : ZERO_OK;
    for (int p = 0; p < unit->nparams && !rc; p++)
        rc = grad_direct_target(e, u, p, ctx->grad_accumulate[p], &ctx->grad_lowp[p], err);
    return rc;
}

static void note_direct(struct zero_engine *e, int u, const struct zero_unit_ctx *ctx)
{
    struct unit_states *s = &e->us[u];
    for (int p = 0; p < e->model->units[u]->nparams; p++) {
        s->grad_direct[p] = ctx->grad_lowp[p] != NULL && ctx->grad_lowp_written[p];
        if (s->grad_direct[p])
            e->direct_grad_elements += s->layout.numel[p];
    }
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
        rc = grad_write_target(e, u, p, &ctx.grad[p], &ctx.grad_accumulate[p], err);
    for (int x = 0; x < unit->nexternal && !rc; x++)
        rc = grad_write_target(e, unit->external[x].unit, unit->external[x].param,
                               &ctx.grad[unit->nparams + x],
                               &ctx.grad_accumulate[unit->nparams + x], err);
    if (!rc)
        rc = offer_direct(e, u, &ctx, err);
    float *dx = NULL;
    size_t scratch = compute_scratch_bytes(e, u, e->rows);
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
    note_direct(e, u, &ctx);
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
    /* the whole pass, reductions included, is one graph where the step's graphs are on */
    if ((rc = device_step_begin(e, DEVICE_PASS_BACKWARD, err)))
        return rc;
    float *dy = NULL;
    stage3_set_backward(e, 1);
    for (int u = e->nunits - 1; u >= 0 && !rc; u--)
        rc = backward_unit(e, u, &dy, err);
    stage3_set_backward(e, 0);
    engine_free(e, dy);
    engine_free_batch(e);
    if (!rc)
        rc = reduce_finish_micro_step(e, err);
    if ((rc = device_step_end(e, DEVICE_PASS_BACKWARD, rc, err)))
        return rc;
    e->forward_done = 0;
    stage3_order_recorded(e);
    e->micro_steps++;
    return ZERO_OK;
}

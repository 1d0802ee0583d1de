/* The forward passes: training (keeps activations for backward), evaluation
 * and prediction (keep nothing), with activation checkpointing's recompute. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "engine_forward.h"
#include "device_step.h"
#include "gathered.h"
#include "stage3.h"
#include "unit_compute.h"
#include "zero/size.h"

void engine_free_batch(struct zero_engine *e)
{
    engine_free(e, e->input);
    engine_free(e, e->tokens);
    engine_free(e, e->labels);
    e->input = NULL;
    e->tokens = e->labels = NULL;
}

/* Drops every activation of the current pass (after eval, or after a failure). */
void engine_discard_activations(struct zero_engine *e)
{
    for (int u = 0; u < e->nunits; u++) {
        engine_free(e, e->us[u].param_work);
        engine_free(e, e->us[u].grad_work);
        e->us[u].param_work = NULL;
        e->us[u].grad_work = NULL;
        engine_free(e, e->us[u].out);
        engine_free(e, e->us[u].saved);
        e->us[u].out = NULL;
        e->us[u].saved = NULL;
    }
    engine_free_batch(e);
}

static int upload(struct zero_engine *e, const void *host, size_t bytes, enum zero_tag tag,
                  void **dev, const char *what, struct zero_error *err)
{
    int rc = engine_alloc(e, bytes, tag, dev, what, err);
    if (!rc && (rc = e->be->from_host(e->bself, *dev, host, bytes)))
        rc = engine_backend_error(e, rc, err, "uploading %s", what);
    return rc;
}

static int upload_batch(struct zero_engine *e, const struct zero_batch *b, int need_labels,
                        struct zero_error *err)
{
    const struct zero_model *m = e->model;
    int64_t in_width = m->units[0]->in_width;
    if (b->rows < 1)
        return zero_fail(err, ZERO_EINVAL, "batch has %lld rows", (long long)b->rows);
    if (in_width > 0 && !b->inputs)
        return zero_fail(err, ZERO_EINVAL, "batch has no inputs but unit %s reads %lld columns",
                         m->units[0]->name, (long long)in_width);
    if (!b->labels && need_labels)
        return zero_fail(err, ZERO_EINVAL, "batch has no labels for the loss unit %s",
                         m->units[m->nunits - 1]->name);
    /* every activation buffer is rows x a unit's width floats: checked once here */
    for (int u = 0; u < m->nunits; u++) {
        const struct zero_unit *unit = m->units[u];
        int64_t width =
            unit->out_width > unit->predict_width ? unit->out_width : unit->predict_width;
        width = width > unit->in_width ? width : unit->in_width;
        size_t bytes;
        if (zero_size_mul(&width, width, (int64_t)sizeof(float), unit->name, err) ||
            zero_size_bytes(&bytes, b->rows, (size_t)width, unit->name, err))
            return zero_error_wrap(err, "batch of %lld rows: activations of unit ",
                                   (long long)b->rows);
    }
    e->rows = b->rows;
    size_t rows = (size_t)b->rows;
    int rc = 0;
    if (in_width > 0)
        rc = upload(e, b->inputs, rows * (size_t)in_width * sizeof(float), ZERO_TAG_ACTIVATIONS,
                    (void **)&e->input, "batch inputs", err);
    if (!rc && b->tokens)
        rc = upload(e, b->tokens, rows * sizeof(int32_t), ZERO_TAG_ACTIVATIONS, (void **)&e->tokens,
                    "batch tokens", err);
    if (!rc && b->labels)
        rc = upload(e, b->labels, rows * sizeof(int32_t), ZERO_TAG_ACTIVATIONS, (void **)&e->labels,
                    "batch labels", err);
    return rc;
}

enum pass { PASS_TRAIN, PASS_EVAL, PASS_PREDICT };

/* Runs unit u's forward (or, for PASS_PREDICT on the loss unit, its predict)
 * into s->out. Training keeps the saved activations for backward unless the
 * unit is checkpointed; evaluation keeps nothing but the output. */
static int forward_unit(struct zero_engine *e, int u, enum pass pass, struct zero_error *err)
{
    const struct zero_unit *unit = e->model->units[u];
    struct unit_states *s = &e->us[u];
    int predict = pass == PASS_PREDICT && u == e->nunits - 1;
    if (predict && !unit->ops->predict)
        return zero_fail(err, ZERO_ENOTSUP, "unit %s (%s) cannot predict", unit->name,
                         unit->ops->kind);
    int rc = compute_fetch(e, u, err);
    if (rc)
        return rc;
    char msg[512];
    struct zero_unit_ctx ctx;
    compute_init_ctx(e, &ctx, msg, sizeof msg);
    if ((rc = compute_fill_params(e, u, &ctx, err)))
        return rc;
    int64_t width = predict ? unit->predict_width : unit->out_width;
    size_t out_bytes = (size_t)e->rows * (size_t)width * sizeof(float);
    size_t saved = compute_saved_bytes(e, u, e->rows);
    size_t scratch = compute_scratch_bytes(e, u, e->rows);
    if ((rc =
             engine_alloc(e, out_bytes, ZERO_TAG_ACTIVATIONS, (void **)&s->out, unit->name, err)) ||
        (saved &&
         (rc = engine_alloc(e, saved, ZERO_TAG_ACTIVATIONS, &s->saved, unit->name, err))) ||
        (scratch &&
         (rc = engine_alloc(e, scratch, ZERO_TAG_WORKSPACE, &ctx.scratch, unit->name, err))))
        return rc;
    ctx.saved = s->saved;
    const float *x = u == 0 ? e->input : e->us[u - 1].out;
    double t0 = engine_now();
    rc = predict ? unit->ops->predict(unit, &ctx, x, s->out)
                 : unit->ops->forward(unit, &ctx, x, s->out);
    engine_event(e, ZERO_EV_FORWARD, u, -1, NULL, e->rows, t0);
    engine_free(e, ctx.scratch);
    compute_drop_param_copies(e, u);
    if (rc)
        return compute_failed(e, u, rc, predict ? "predict" : "forward", msg, err);
    if (pass != PASS_TRAIN || unit->checkpoint) {
        engine_free(e, s->saved);
        s->saved = NULL;
    }
    if (pass != PASS_TRAIN && u > 0) { /* the input is consumed */
        engine_free(e, e->us[u - 1].out);
        e->us[u - 1].out = NULL;
    }
    return compute_release(e, u, err);
}

/* Activation checkpointing: rebuilds unit u's saved activations by running
 * its forward again (same inputs, same parameters: the same bits). */
int engine_recompute_unit(struct zero_engine *e, int u, struct zero_unit_ctx *ctx, const float *x,
                          char *msg, struct zero_error *err)
{
    const struct zero_unit *unit = e->model->units[u];
    struct unit_states *s = &e->us[u];
    size_t saved = compute_saved_bytes(e, u, e->rows);
    float *y = NULL;
    int rc = engine_alloc(e, (size_t)e->rows * (size_t)unit->out_width * sizeof(float),
                          ZERO_TAG_ACTIVATIONS, (void **)&y, "recomputed output", err);
    if (!rc && saved)
        rc = engine_alloc(e, saved, ZERO_TAG_ACTIVATIONS, &s->saved, unit->name, err);
    if (!rc) {
        ctx->saved = s->saved;
        double t0 = engine_now();
        if ((rc = unit->ops->forward(unit, ctx, x, y)))
            rc = compute_failed(e, u, rc, "recompute", msg, err);
        engine_event(e, ZERO_EV_RECOMPUTE, u, -1, NULL, e->rows, t0);
    }
    engine_free(e, y);
    return rc;
}

static int mean_loss(struct zero_engine *e, float *loss, struct zero_error *err)
{
    const struct zero_unit *last = e->model->units[e->nunits - 1];
    size_t n = (size_t)e->rows * (size_t)last->out_width;
    float *host = malloc(n * sizeof *host);
    if (!host)
        return zero_fail(err, ZERO_ENOMEM, "rank %d: losses", e->rank);
    int rc = e->be->to_host(e->bself, host, e->us[e->nunits - 1].out, n * sizeof *host);
    if (rc) {
        free(host);
        return engine_backend_error(e, rc, err, "reading the losses");
    }
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += host[i];
    free(host);
    *loss = (float)(sum / (double)e->rows);
    return ZERO_OK;
}

/* A forward may start only when no other pass holds activations. */
static int check_can_start(struct zero_engine *e, struct zero_error *err)
{
    if (e->forward_done)
        return zero_fail(err, ZERO_EINVAL, "forward called twice without backward in between");
    return engine_outside_scope(e, "forward", err);
}

/* The units' forwards, and in training the loss added to the device's sum where the
 * device keeps it: a training pass with no host wait, captured where the step's graphs
 * are on (device_step.c), the batch uploaded before. On failure the caller discards
 * the pass's activations. */
static int run_forward(struct zero_engine *e, const struct zero_batch *batch, enum pass pass,
                       struct zero_error *err)
{
    int rc = upload_batch(e, batch, pass != PASS_PREDICT, err);
    if (rc)
        return rc;
    int train = pass == PASS_TRAIN;
    if (train && (rc = device_step_begin(e, DEVICE_PASS_FORWARD, err)))
        return rc;
    stage3_set_untraced(e, !train);
    rc = stage3_begin_pass(e, err);
    for (int u = 0; u < e->nunits && !rc; u++)
        rc = forward_unit(e, u, pass, err);
    stage3_set_untraced(e, 0);
    if (!rc && train && device_step_keeps_loss(e)) {
        const struct zero_unit *last = e->model->units[e->nunits - 1];
        rc = device_step_add_loss(e, e->us[e->nunits - 1].out,
                                  (size_t)e->rows * (size_t)last->out_width, e->rows, err);
    }
    return train ? device_step_end(e, DEVICE_PASS_FORWARD, rc, err) : rc;
}

/* A pass that ends in the loss unit's forward: *l is the micro-batch's mean loss (in
 * training where the device sums the losses, read back only when l is not NULL). */
static int forward_with_loss(struct zero_engine *e, const struct zero_batch *batch, enum pass pass,
                             float *l, struct zero_error *err)
{
    int rc = run_forward(e, batch, pass, err);
    if (rc || (pass == PASS_TRAIN && device_step_keeps_loss(e)))
        return rc || !l ? rc : device_step_read_last_loss(e, l, err);
    float mean = 0.0f;
    rc = mean_loss(e, &mean, err);
    if (l)
        *l = mean;
    return rc;
}

int zero_engine_forward(struct zero_engine *e, const struct zero_batch *batch, float *loss,
                        struct zero_error *err)
{
    int rc = check_can_start(e, err);
    if (rc)
        return rc;
    if (!e->step_started) {
        e->step_started = 1;
        e->step_t0 = engine_now();
        e->comm_at_step_start = e->dev->comm_stats;
    }
    float l = 0.0f;
    int on_device = device_step_keeps_loss(e);
    rc = forward_with_loss(e, batch, PASS_TRAIN, on_device && !loss ? NULL : &l, err);
    if (rc) {
        engine_discard_activations(e);
        return rc;
    }
    if (loss)
        *loss = l;
    if (!on_device)
        e->loss_sum += l;
    e->forward_done = 1;
    return ZERO_OK;
}

int zero_engine_eval(struct zero_engine *e, const struct zero_batch *batch, float *loss,
                     struct zero_error *err)
{
    int rc = check_can_start(e, err);
    if (rc)
        return rc;
    float l = 0.0f;
    device_step_before_eval(e);
    rc = forward_with_loss(e, batch, PASS_EVAL, &l, err);
    if (!rc)
        rc = device_step_after_eval(e, err);
    engine_discard_activations(e);
    if (!rc && loss)
        *loss = l;
    return rc;
}

int zero_engine_predict(struct zero_engine *e, const struct zero_batch *batch, float *host_out,
                        struct zero_error *err)
{
    int rc = check_can_start(e, err);
    if (rc)
        return rc;
    device_step_before_eval(e);
    rc = run_forward(e, batch, PASS_PREDICT, err);
    if (!rc)
        rc = device_step_after_eval(e, err);
    if (!rc) {
        const struct zero_unit *last = e->model->units[e->nunits - 1];
        size_t bytes = (size_t)e->rows * (size_t)last->predict_width * sizeof(float);
        if ((rc = e->be->to_host(e->bself, host_out, e->us[e->nunits - 1].out, bytes)))
            rc = engine_backend_error(e, rc, err, "reading predictions");
    }
    engine_discard_activations(e);
    return rc;
}

/* The engine's life cycle and its forward, backward and step. The stage
 * decides only where states live (engine_states.c), how gradients are reduced
 * (grad_reduce.c), when units are gathered (stage3.c) and what the optimizer
 * updates (optimizer.c); this file is the same for all of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

/* ---- creation ---- */

static uint64_t mix(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* A fingerprint of what every rank must agree on: the model's structure and
 * the settings that decide the collectives each rank issues. */
static uint64_t fingerprint(const struct zero_engine *e)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    const struct zero_model *m = e->model;
    h = mix(h, &m->nunits, sizeof m->nunits);
    for (int u = 0; u < m->nunits; u++) {
        const struct zero_unit *unit = m->units[u];
        h = mix(h, unit->name, strlen(unit->name));
        h = mix(h, &unit->nparams, sizeof unit->nparams);
        for (int p = 0; p < unit->nparams; p++) {
            h = mix(h, unit->params[p].name, strlen(unit->params[p].name));
            h = mix(h, unit->params[p].shape, sizeof unit->params[p].shape);
        }
        h = mix(h, unit->external, sizeof unit->external);
    }
    const struct zero_config *c = &e->cfg;
    h = mix(h, &c->zero_optimization, sizeof c->zero_optimization);
    h = mix(h, &c->gradient_accumulation_steps, sizeof c->gradient_accumulation_steps);
    h = mix(h, &c->libzero.align, sizeof c->libzero.align);
    h = mix(h, &c->libzero.coll_mode, sizeof c->libzero.coll_mode);
    h = mix(h, &c->optimizer.type, sizeof c->optimizer.type);
    h = mix(h, &c->fp16.enabled, sizeof c->fp16.enabled);
    h = mix(h, &c->bf16.enabled, sizeof c->bf16.enabled);
    return h;
}

static int check_ranks_agree(struct zero_engine *e, struct zero_error *err)
{
    uint64_t mine = fingerprint(e);
    uint64_t *all = malloc((size_t)e->world * sizeof *all);
    if (!all)
        return zero_fail(err, ZERO_ENOMEM, "rank %d: fingerprints", e->rank);
    int rc = e->be->host_all_gather(e->bself, &mine, all, sizeof mine);
    if (rc) {
        free(all);
        return engine_backend_error(e, rc, err, "exchanging model fingerprints");
    }
    for (int r = 1; r < e->world && !rc; r++)
        if (all[r] != all[0])
            rc = zero_fail(err, ZERO_EMISMATCH,
                           "rank %d: ranks 0 and %d disagree on the model structure or the "
                           "zero_optimization settings (fingerprints %016llx and %016llx)",
                           e->rank, r, (unsigned long long)all[0], (unsigned long long)all[r]);
    free(all);
    return rc;
}

static int check_config(struct zero_engine *e, struct zero_error *err)
{
    const struct zero_config *c = &e->cfg;
    if (c->fp16.enabled && c->bf16.enabled)
        return zero_fail(err, ZERO_EINVAL, "fp16.enabled and bf16.enabled are both true; "
                                           "choose one compute dtype");
    if (c->fp16.enabled && c->fp16.loss_scale <= 0.0 && c->fp16.min_loss_scale <= 0.0)
        return zero_fail(err, ZERO_EINVAL, "fp16.min_loss_scale is %g; expected > 0",
                         c->fp16.min_loss_scale);
    if (c->zero_optimization.stage < 0 || c->zero_optimization.stage > 3)
        return zero_fail(err, ZERO_EINVAL, "zero_optimization.stage is %d; expected 0, 1, 2 or 3",
                         c->zero_optimization.stage);
    if (c->libzero.align < 1)
        return zero_fail(err, ZERO_EINVAL, "libzero.align is %lld; expected a positive count",
                         (long long)c->libzero.align);
    if (c->zero_optimization.reduce_bucket_size < 1 ||
        c->zero_optimization.allgather_bucket_size < 1)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.reduce_bucket_size and allgather_bucket_size must be "
                         "positive (got %lld and %lld)",
                         (long long)c->zero_optimization.reduce_bucket_size,
                         (long long)c->zero_optimization.allgather_bucket_size);
    if (c->gradient_clipping < 0.0)
        return zero_fail(err, ZERO_EINVAL, "gradient_clipping is %g; expected >= 0",
                         c->gradient_clipping);
    const struct zero_model *m = e->model;
    if (m->nunits < 1 || !m->units[m->nunits - 1]->is_loss)
        return zero_fail(err, ZERO_EINVAL, "the model's last unit must compute the loss");
    return ZERO_OK;
}

int zero_engine_create(struct zero_engine **out, const struct zero_config *cfg,
                       struct zero_model *model, struct zero_device *dev, struct zero_error *err)
{
    *out = NULL;
    struct zero_engine *e = calloc(1, sizeof *e);
    if (!e)
        return zero_fail(err, ZERO_ENOMEM, "engine");
    e->cfg = *cfg;
    e->model = model;
    e->dev = dev;
    e->be = dev->be;
    e->bself = dev->self;
    e->rank = dev->rank;
    e->world = dev->size;
    e->stage = cfg->zero_optimization.stage;
    e->t_created = engine_now();
    e->cdt = cfg->fp16.enabled ? ZERO_F16 : cfg->bf16.enabled ? ZERO_BF16 : ZERO_F32;
    e->csize = zero_dtype_size(e->cdt);
    e->mixed = e->cdt != ZERO_F32;
    if (e->cdt == ZERO_F16)
        zero_loss_scaler_init(&e->scaler, &cfg->fp16);
    int rc;
    if ((rc = zero_config_resolve_batch(&e->cfg, e->world, err)) || (rc = check_config(e, err)) ||
        (rc = e->be->set_coll_mode(e->bself, e->cfg.libzero.coll_mode)) ||
        (rc = check_ranks_agree(e, err)) || (rc = engine_states_create(e, err)) ||
        (rc = reduce_plan_buckets(e, err))) {
        if (rc && !err->msg[0])
            engine_backend_error(e, rc, err, "engine setup");
        zero_engine_destroy(e);
        return rc;
    }
    e->accum = e->cfg.gradient_accumulation_steps;
    *out = e;
    return ZERO_OK;
}

static void free_batch(struct zero_engine *e)
{
    engine_free(e, e->input);
    engine_free(e, e->tokens);
    engine_free(e, e->labels);
    e->input = NULL;
    e->tokens = e->labels = NULL;
}

/* Drops every activation of the current pass (after eval, or after a failure). */
static void discard_activations(struct zero_engine *e)
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
    free_batch(e);
}

void zero_engine_destroy(struct zero_engine *e)
{
    if (!e)
        return;
    free_batch(e);
    engine_states_destroy(e);
    free(e->trace);
    free(e->bucket_first);
    free(e->bucket_of_unit);
    free(e->scope_units);
    free(e);
}

/* ---- one unit's compute ---- */

/* Fetches (stage 3) a unit and the owners of its external parameters. */
static int fetch_set(struct zero_engine *e, int u, struct zero_error *err)
{
    const struct zero_unit *unit = e->model->units[u];
    int rc = stage3_fetch(e, u, err);
    for (int x = 0; x < unit->nexternal && !rc; x++)
        rc = stage3_fetch(e, unit->external[x].unit, err);
    return rc;
}

static int release_set(struct zero_engine *e, int u, struct zero_error *err)
{
    const struct zero_unit *unit = e->model->units[u];
    int rc = stage3_release(e, u, err);
    for (int x = 0; x < unit->nexternal && !rc; x++)
        rc = stage3_release(e, unit->external[x].unit, err);
    return rc;
}

/* The whole parameters of unit o as fp32 for the layers: the buffer itself in
 * fp32 training; a converted workspace copy in mixed precision (the cpu
 * kernels compute in fp32). */
static int param_fp32(struct zero_engine *e, int o, float **out, struct zero_error *err)
{
    struct unit_states *s = &e->us[o];
    void *whole = engine_param_whole(e, o);
    if (!e->mixed || !whole) {
        *out = whole;
        return ZERO_OK;
    }
    if (!s->param_work) {
        int rc = engine_alloc(e, (size_t)s->layout.padded * sizeof(float), ZERO_TAG_WORKSPACE,
                              (void **)&s->param_work, "fp32 copy of parameters", err);
        if (!rc && (rc = e->be->cast(e->bself, s->param_work, ZERO_F32, whole, e->cdt,
                                     (size_t)s->layout.padded)))
            rc = engine_backend_error(e, rc, err, "converting parameters of %s",
                                      e->model->units[o]->name);
        if (rc)
            return rc;
    }
    *out = s->param_work;
    return ZERO_OK;
}

static int fill_params(struct zero_engine *e, int u, struct zero_unit_ctx *ctx,
                       struct zero_error *err)
{
    const struct zero_unit *unit = e->model->units[u];
    float *whole;
    int rc = param_fp32(e, u, &whole, err);
    for (int p = 0; p < unit->nparams && !rc; p++)
        ctx->param[p] = whole + e->us[u].layout.offset[p];
    for (int x = 0; x < unit->nexternal && !rc; x++) {
        int o = unit->external[x].unit, p = unit->external[x].param;
        if (!(rc = param_fp32(e, o, &whole, err)))
            ctx->param[unit->nparams + x] = whole + e->us[o].layout.offset[p];
    }
    return rc;
}

/* Frees the fp32 copies made for unit u's compute. */
static void drop_param_copies(struct zero_engine *e, int u)
{
    const struct zero_unit *unit = e->model->units[u];
    engine_free(e, e->us[u].param_work);
    e->us[u].param_work = NULL;
    for (int x = 0; x < unit->nexternal; x++) {
        struct unit_states *o = &e->us[unit->external[x].unit];
        engine_free(e, o->param_work);
        o->param_work = NULL;
    }
}

static void init_ctx(struct zero_engine *e, struct zero_unit_ctx *ctx, char *msg, size_t len)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->be = e->be;
    ctx->bself = e->bself;
    ctx->rows = e->rows;
    ctx->tokens = e->tokens;
    ctx->labels = e->labels;
    /* fp16: the loss is scaled before backward (DeepSpeed's loss scaling) */
    double scale = e->cdt == ZERO_F16 ? e->scaler.scale : 1.0;
    ctx->dloss = (float)(scale / (double)e->rows);
    ctx->errmsg = msg;
    ctx->errlen = len;
    msg[0] = '\0';
}

static int unit_failed(struct zero_engine *e, int u, int rc, const char *pass, const char *msg,
                       struct zero_error *err)
{
    return zero_fail(err, rc, "rank %d: unit %s: %s: %s", e->rank, e->model->units[u]->name,
                     pass, msg[0] ? msg : e->be->last_error(e->bself));
}

/* ---- forward ---- */

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
    e->rows = b->rows;
    size_t rows = (size_t)b->rows;
    int rc = 0;
    if (in_width > 0)
        rc = upload(e, b->inputs, rows * (size_t)in_width * sizeof(float), ZERO_TAG_ACTIVATIONS,
                    (void **)&e->input, "batch inputs", err);
    if (!rc && b->tokens)
        rc = upload(e, b->tokens, rows * sizeof(int32_t), ZERO_TAG_ACTIVATIONS,
                    (void **)&e->tokens, "batch tokens", err);
    if (!rc && b->labels)
        rc = upload(e, b->labels, rows * sizeof(int32_t), ZERO_TAG_ACTIVATIONS,
                    (void **)&e->labels, "batch labels", err);
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
    int rc = fetch_set(e, u, err);
    if (rc)
        return rc;
    char msg[512];
    struct zero_unit_ctx ctx;
    init_ctx(e, &ctx, msg, sizeof msg);
    if ((rc = fill_params(e, u, &ctx, err)))
        return rc;
    int64_t width = predict ? unit->predict_width : unit->out_width;
    size_t out_bytes = (size_t)e->rows * (size_t)width * sizeof(float);
    size_t saved = unit->ops->saved_bytes ? unit->ops->saved_bytes(unit, e->rows) : 0;
    size_t scratch = unit->ops->scratch_bytes ? unit->ops->scratch_bytes(unit, e->rows) : 0;
    if ((rc = engine_alloc(e, out_bytes, ZERO_TAG_ACTIVATIONS, (void **)&s->out, unit->name,
                           err)) ||
        (saved && (rc = engine_alloc(e, saved, ZERO_TAG_ACTIVATIONS, &s->saved, unit->name, err))) ||
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
    drop_param_copies(e, u);
    if (rc)
        return unit_failed(e, u, rc, predict ? "predict" : "forward", msg, err);
    if (pass != PASS_TRAIN || unit->checkpoint) {
        engine_free(e, s->saved);
        s->saved = NULL;
    }
    if (pass != PASS_TRAIN && u > 0) { /* the input is consumed */
        engine_free(e, e->us[u - 1].out);
        e->us[u - 1].out = NULL;
    }
    return release_set(e, u, err);
}

/* Activation checkpointing: rebuilds unit u's saved activations by running
 * its forward again (same inputs, same parameters: the same bits). */
static int recompute_unit(struct zero_engine *e, int u, struct zero_unit_ctx *ctx, const float *x,
                          char *msg, struct zero_error *err)
{
    const struct zero_unit *unit = e->model->units[u];
    struct unit_states *s = &e->us[u];
    size_t saved = unit->ops->saved_bytes ? unit->ops->saved_bytes(unit, e->rows) : 0;
    float *y = NULL;
    int rc = engine_alloc(e, (size_t)e->rows * (size_t)unit->out_width * sizeof(float),
                          ZERO_TAG_ACTIVATIONS, (void **)&y, "recomputed output", err);
    if (!rc && saved)
        rc = engine_alloc(e, saved, ZERO_TAG_ACTIVATIONS, &s->saved, unit->name, err);
    if (!rc) {
        ctx->saved = s->saved;
        double t0 = engine_now();
        if ((rc = unit->ops->forward(unit, ctx, x, y)))
            rc = unit_failed(e, u, rc, "recompute", msg, err);
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
    if (e->scope_active)
        return zero_fail(err, ZERO_EINVAL, "forward called inside a gathered-parameters scope");
    return ZERO_OK;
}

/* On failure the caller discards the pass's activations. */
static int run_forward(struct zero_engine *e, const struct zero_batch *batch, enum pass pass,
                       struct zero_error *err)
{
    int rc = upload_batch(e, batch, pass != PASS_PREDICT, err);
    e->untraced = pass != PASS_TRAIN;
    if (!rc)
        rc = stage3_begin_pass(e, err);
    for (int u = 0; u < e->nunits && !rc; u++)
        rc = forward_unit(e, u, pass, err);
    e->untraced = 0;
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
    rc = run_forward(e, batch, PASS_TRAIN, err);
    float l = 0.0f;
    if (!rc)
        rc = mean_loss(e, &l, err);
    if (rc) {
        discard_activations(e);
        return rc;
    }
    if (loss)
        *loss = l;
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
    rc = run_forward(e, batch, PASS_EVAL, err);
    float l = 0.0f;
    if (!rc)
        rc = mean_loss(e, &l, err);
    discard_activations(e);
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
    rc = run_forward(e, batch, PASS_PREDICT, err);
    if (!rc) {
        const struct zero_unit *last = e->model->units[e->nunits - 1];
        size_t bytes = (size_t)e->rows * (size_t)last->predict_width * sizeof(float);
        if ((rc = e->be->to_host(e->bself, host_out, e->us[e->nunits - 1].out, bytes)))
            rc = engine_backend_error(e, rc, err, "reading predictions");
    }
    discard_activations(e);
    return rc;
}

/* ---- backward ---- */

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
            rc = alloc_grad_buffer(e, owner, ZERO_TAG_WORKSPACE, ZERO_F32,
                                   (void **)&s->grad_work, err);
        base = s->grad_work;
    } else if (e->stage >= 2) {
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
    if (e->stage >= 2) {
        rc = engine_alloc(e, (size_t)s->layout.padded * e->csize, ZERO_TAG_BUCKETS,
                          &s->local_grad, "unit gradient", err);
        dst = s->local_grad;
    }
    if (!rc && (rc = e->be->cast(e->bself, dst, e->cdt, s->grad_work, ZERO_F32,
                                 (size_t)s->layout.padded)))
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
    int rc = fetch_set(e, u, err);
    if (rc)
        return rc;
    char msg[512];
    struct zero_unit_ctx ctx;
    init_ctx(e, &ctx, msg, sizeof msg);
    rc = fill_params(e, u, &ctx, err);
    for (int p = 0; p < unit->nparams && !rc; p++)
        rc = grad_target(e, u, p, &ctx.grad[p], &ctx.grad_accumulate[p], err);
    for (int x = 0; x < unit->nexternal && !rc; x++)
        rc = grad_target(e, unit->external[x].unit, unit->external[x].param,
                         &ctx.grad[unit->nparams + x], &ctx.grad_accumulate[unit->nparams + x],
                         err);
    float *dx = NULL;
    size_t scratch = unit->ops->scratch_bytes ? unit->ops->scratch_bytes(unit, e->rows) : 0;
    if (!rc && u > 0)
        rc = engine_alloc(e, (size_t)e->rows * (size_t)unit->in_width * sizeof(float),
                          ZERO_TAG_ACTIVATIONS, (void **)&dx, "input gradient", err);
    if (!rc && scratch)
        rc = engine_alloc(e, scratch, ZERO_TAG_WORKSPACE, &ctx.scratch, unit->name, err);
    if (rc) {
        engine_free(e, dx);
        drop_param_copies(e, u);
        return rc;
    }
    const float *x = u == 0 ? e->input : e->us[u - 1].out;
    if (unit->checkpoint && (rc = recompute_unit(e, u, &ctx, x, msg, err))) {
        engine_free(e, dx);
        engine_free(e, ctx.scratch);
        drop_param_copies(e, u);
        return rc;
    }
    ctx.saved = s->saved;
    double t0 = engine_now();
    rc = unit->ops->backward(unit, &ctx, x, *dy, dx);
    engine_event(e, ZERO_EV_BACKWARD, u, -1, NULL, e->rows, t0);
    drop_param_copies(e, u);
    engine_free(e, ctx.scratch);
    engine_free(e, s->saved);
    engine_free(e, s->out);
    engine_free(e, *dy);
    s->saved = NULL;
    s->out = NULL;
    *dy = dx;
    if (rc)
        return unit_failed(e, u, rc, "backward", msg, err);
    if ((rc = release_set(e, u, err)) || (rc = finish_unit_grad(e, u, err)))
        return rc;
    return reduce_unit_ready(e, u, err);
}

int zero_engine_backward(struct zero_engine *e, struct zero_error *err)
{
    if (!e->forward_done)
        return zero_fail(err, ZERO_EINVAL, "backward called without a forward");
    for (int u = 0; u < e->nunits; u++)
        memset(e->us[u].grad_written, 0, sizeof e->us[u].grad_written);
    float *dy = NULL;
    int rc = 0;
    for (int u = e->nunits - 1; u >= 0 && !rc; u--)
        rc = backward_unit(e, u, &dy, err);
    engine_free(e, dy);
    free_batch(e);
    if (!rc)
        rc = reduce_finish_micro_step(e, err);
    if (rc)
        return rc;
    e->forward_done = 0;
    e->trace_recorded = 1;
    e->micro_steps++;
    return ZERO_OK;
}

/* ---- step ---- */

static int global_mean_loss(struct zero_engine *e, double *out, struct zero_error *err)
{
    double *all = malloc((size_t)e->world * sizeof *all);
    if (!all)
        return zero_fail(err, ZERO_ENOMEM, "rank %d: losses", e->rank);
    int rc = e->be->host_all_gather(e->bself, &e->loss_sum, all, sizeof(double));
    double sum = 0.0;
    for (int r = 0; r < e->world && !rc; r++)
        sum += all[r];
    free(all);
    if (rc)
        return engine_backend_error(e, rc, err, "exchanging losses");
    *out = sum / ((double)e->world * (double)e->accum);
    return ZERO_OK;
}

int zero_engine_step(struct zero_engine *e, int *stepped, struct zero_error *err)
{
    if (stepped)
        *stepped = 0;
    if (e->forward_done)
        return zero_fail(err, ZERO_EINVAL, "step called between forward and backward");
    if (e->micro_steps == 0 || e->micro_steps % e->accum != 0)
        return ZERO_OK;
    if (e->micro_steps / e->accum == e->global_steps)
        return ZERO_OK; /* this boundary was already stepped */
    int rc = optimizer_step(e, err);
    if (!rc)
        rc = global_mean_loss(e, &e->last.loss, err);
    if (rc)
        return rc;
    zero_comm_stats_diff(&e->last.comm, &e->dev->comm_stats, &e->comm_at_step_start);
    e->last.seconds = engine_now() - e->step_t0;
    e->loss_sum = 0.0;
    e->step_started = 0;
    if (stepped)
        *stepped = 1;
    return ZERO_OK;
}

/* ---- queries ---- */

void zero_engine_set_observer(struct zero_engine *e, zero_event_fn fn, void *user)
{
    e->observer = fn;
    e->observer_user = user;
}

const struct zero_config *zero_engine_config(const struct zero_engine *e) { return &e->cfg; }
int64_t zero_engine_global_steps(const struct zero_engine *e) { return e->global_steps; }
int64_t zero_engine_applied_steps(const struct zero_engine *e) { return e->applied_steps; }
double zero_engine_loss_scale(const struct zero_engine *e)
{
    return e->cdt == ZERO_F16 ? e->scaler.scale : 1.0;
}
enum zero_dtype zero_engine_compute_dtype(const struct zero_engine *e) { return e->cdt; }
int64_t zero_engine_micro_steps(const struct zero_engine *e) { return e->micro_steps; }
const struct zero_step_info *zero_engine_last_step(const struct zero_engine *e)
{
    return &e->last;
}
const struct zero_ledger *zero_engine_ledger(const struct zero_engine *e)
{
    return &e->dev->ledger;
}
const struct zero_comm_stats *zero_engine_comm_stats(const struct zero_engine *e)
{
    return &e->dev->comm_stats;
}
enum zero_unit_state zero_engine_unit_state(const struct zero_engine *e, int unit)
{
    return e->us[unit].state;
}
int64_t zero_engine_peak_live_elements(const struct zero_engine *e)
{
    return e->peak_live_elements;
}
int zero_engine_unit_persistent(const struct zero_engine *e, int unit)
{
    return e->us[unit].persistent;
}

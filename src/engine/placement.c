/* Where each model state of a unit lives on this rank (placement.h), from the
 * stage table (stage.c):
 *
 *   state (dtype)              | kept whole (padded,)          | kept as a shard (shard,)
 *   params (cdt)               | stages 0-2                    | stage 3 (gathered: whole)
 *   grads (cdt)                | stages 0-1                    | stages 2-3
 *   master, optimizer (fp32)   | stage 0                       | stages 1-3
 *
 * A gradient's way through a micro-step:
 *   written by backward (fp32): grads itself (fp32, grads whole), the transient
 *       local gradient (fp32, grads sharded) or, in mixed precision, an fp32
 *       workspace converted to cdt once the unit's gradient is final
 *   or written by backward in cdt (the direct route, mixed precision): a gradient
 *       that one GEMM writes whole with beta 0 and nothing adds to after goes
 *       straight to its place in the cdt micro-step gradient (grads whole, the
 *       local gradient sharded, allocated before the unit's backward); the
 *       conversion then skips it. Same bits: the backend rounds the fp32 result
 *       once (ZERO_CAP_ROUNDING_GEMM_STORE), as the conversion would
 *   reduced from: the whole micro-step gradient (grads or the local gradient)
 *   lands in: this rank's part, its slice of grads (whole) or grads (the shard)
 *   read by the update: the whole grads where the optimizer state is whole
 *       (every rank updates everything), else the landing. */
#include "placement.h"

#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "zero/knobs.h"

float *engine_master(struct zero_engine *e, int unit)
{
    struct unit_states *s = &e->us[unit];
    if (engine_separate_master(e))
        return s->master;
    /* fp32: the parameters are the master */
    return (float *)s->params + engine_update_offset(e, unit);
}

void *engine_param_whole(struct zero_engine *e, int unit)
{
    struct unit_states *s = &e->us[unit];
    if (!e->stage_def->shards_params)
        return s->params;
    return s->stage3.state == ZERO_UNIT_AVAILABLE ? s->stage3.gathered : NULL;
}

void *engine_param_copy(struct zero_engine *e, int u)
{
    struct unit_states *s = &e->us[u];
    if (!engine_separate_master(e))
        return NULL;
    return engine_at(e, s->params, engine_update_offset(e, u));
}

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

/*   fp32, stages 0-1: the whole gradient buffer itself
 *   fp32, stages 2-3: the transient local gradient (reduce-scattered after)
 *   mixed precision: an fp32 workspace, converted to the compute dtype once
 *                    the owner's gradient is final (grad_convert_target) */
int grad_write_target(struct zero_engine *e, int owner, int p, float **g, int *acc,
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

int grad_convert_target(struct zero_engine *e, int u, void **dst, struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    *dst = s->grads;
    if (!e->stage_def->shards_grads)
        return ZERO_OK;
    int rc = ZERO_OK;
    if (!s->local_grad) /* the first call, before the unit's backward */
        rc = engine_alloc(e, (size_t)s->layout.padded * e->csize, ZERO_TAG_BUCKETS, &s->local_grad,
                          "unit gradient", err);
    *dst = s->local_grad;
    return rc;
}

int grad_direct_available(const struct zero_engine *e)
{
    const char *env = zero_knob(ZERO_KNOB_DIRECT_LOWP_GRAD); /* "0": the old route, to compare */
    return e->mixed && (e->be->caps & ZERO_CAP_ROUNDING_GEMM_STORE) &&
           !(env && strcmp(env, "0") == 0);
}

/* Own parameters only: an external's gradient belongs to an earlier unit, whose
 * own backward adds to it later. An own parameter's gradient is final after this
 * unit's backward: only later units may use it (model.c), and their backward ran
 * before; acc says one of them wrote it first. */
int grad_direct_target(struct zero_engine *e, int u, int p, int acc, void **dst,
                       struct zero_error *err)
{
    *dst = NULL;
    if (!e->direct_lowp_grad || acc)
        return ZERO_OK;
    void *base;
    int rc = grad_convert_target(e, u, &base, err);
    if (!rc)
        *dst = engine_at(e, base, e->us[u].layout.offset[p]);
    return rc;
}

void *grad_micro_step(struct zero_engine *e, int u)
{
    struct unit_states *s = &e->us[u];
    return e->stage_def->shards_grads ? s->local_grad : s->grads;
}

void *grad_landing(struct zero_engine *e, int u)
{
    struct unit_states *s = &e->us[u];
    return engine_at(e, s->grads,
                     zero_stage_offset_in(1, e->stage_def->shards_grads, s->shard_begin));
}

const void *grad_for_update(struct zero_engine *e, int u, enum zero_dtype *t)
{
    *t = e->cdt;
    return e->stage_def->shards_optim ? grad_landing(e, u) : e->us[u].grads;
}

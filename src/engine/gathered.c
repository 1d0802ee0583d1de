/* Whole parameters on demand: reading and writing one parameter, and the
 * gathered-parameters scope (DeepSpeed's GatheredParameters). Under stages
 * 0-2 parameters are already whole; under stage 3 the scope gathers units and
 * pins them until it ends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "gathered.h"
#include "stage3.h"
#include "placement.h"
#include "nvme_swap.h"

static int check_index(struct zero_engine *e, int unit, int param, struct zero_error *err)
{
    if (unit < 0 || unit >= e->nunits)
        return zero_fail(err, ZERO_EINVAL, "unit index %d out of range (model has %d units)", unit,
                         e->nunits);
    if (param < 0 || param >= e->model->units[unit]->nparams)
        return zero_fail(err, ZERO_EINVAL, "unit %s has no parameter %d",
                         e->model->units[unit]->name, param);
    return ZERO_OK;
}

/* Every rank passes the same unit list: a mismatch is reported, not a hang. */
static int check_same_units(struct zero_engine *e, const int *units, int n, int modifier,
                            struct zero_error *err)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)(units[i] + 1)) * 0x100000001b3ULL;
    h = (h ^ (uint64_t)(modifier + 7)) * 0x100000001b3ULL;
    uint64_t *all = malloc((size_t)e->world * sizeof *all);
    if (!all)
        return zero_fail(err, ZERO_ENOMEM, "rank %d: scope check", e->rank);
    int rc = e->be->host_all_gather(e->bself, &h, all, sizeof h);
    for (int r = 1; r < e->world && !rc; r++)
        if (all[r] != all[0])
            rc = zero_fail(err, ZERO_EMISMATCH,
                           "rank %d: gathered-parameters scope: ranks 0 and %d passed different "
                           "units or modifier ranks",
                           e->rank, r);
    free(all);
    return rc;
}

int zero_engine_read_param(struct zero_engine *e, int unit, int param, float *host,
                           struct zero_error *err)
{
    int rc = check_index(e, unit, param, err);
    if (rc)
        return rc;
    struct unit_states *s = &e->us[unit];
    size_t bytes = (size_t)s->layout.numel[param] * sizeof(float);
    int64_t offset = s->layout.offset[param];
    /* the whole fp32 master is at hand in stage 0, and in fp32 stages 1-2
     * (where the parameters are the master) */
    const struct zero_stage *st = e->stage_def;
    if (!st->shards_optim || (!engine_separate_master(e) && !st->shards_params)) {
        const float *whole = !st->shards_optim ? engine_master(e, unit) : (const float *)s->params;
        rc = e->be->to_host(e->bself, host, whole + offset, bytes);
        return rc ? engine_backend_error(e, rc, err, "reading parameter") : ZERO_OK;
    }
    float *tmp = NULL;
    if ((rc = nvme_unit_load_agreed(e, unit, 1, err))) /* the all-gather needs every shard */
        return rc;
    if (!(rc = engine_alloc(e, (size_t)s->layout.padded * sizeof(float), ZERO_TAG_GATHER,
                            (void **)&tmp, "parameter read", err))) {
        rc = mics_all_gather(e, engine_master(e, unit), tmp, ZERO_F32, (size_t)s->layout.shard,
                             NULL);
        if (!rc)
            rc = e->be->to_host(e->bself, host, tmp + offset, bytes);
        if (rc)
            rc = engine_backend_error(e, rc, err, "reading parameter");
    }
    engine_free(e, tmp);
    int rs = nvme_unit_store(e, unit, 0, err);
    return rc ? rc : rs;
}

/* dst (cdt, n) = host (fp32, n) */
static int upload_cast(struct zero_engine *e, void *dst, const float *host, size_t n)
{
    if (e->cdt == ZERO_F32)
        return e->be->from_host(e->bself, dst, host, n * sizeof(float));
    float *tmp = NULL;
    int rc = e->be->alloc(e->bself, n * sizeof(float), ZERO_TAG_WORKSPACE, (void **)&tmp);
    if (!rc && !(rc = e->be->from_host(e->bself, tmp, host, n * sizeof(float))))
        rc = e->be->cast(e->bself, dst, e->cdt, tmp, ZERO_F32, n);
    e->be->free(e->bself, tmp);
    return rc;
}

int zero_engine_write_param(struct zero_engine *e, int unit, int param, const float *host,
                            struct zero_error *err)
{
    int rc = check_index(e, unit, param, err);
    if (rc)
        return rc;
    struct unit_states *s = &e->us[unit];
    const struct zero_unit_layout *l = &s->layout;
    int64_t off = l->offset[param], n = l->numel[param], b = off, end = off + n;
    if (e->stage_def->shards_optim) /* this rank's part of the master */
        zero_layout_param_in_shard(l, param, e->mics.rank, &b, &end);
    int64_t master_base = engine_update_begin(e, unit);
    if ((rc = nvme_unit_load(e, unit, 1, err)))
        return rc;
    if (end > b && engine_separate_master(e))
        rc = e->be->from_host(e->bself, engine_master(e, unit) + (b - master_base),
                              host + (b - off), (size_t)(end - b) * sizeof(float));
    if (!rc && !e->stage_def->shards_params) {
        rc = upload_cast(e, engine_at(e, s->params, off), host, (size_t)n);
    } else if (!rc) {
        if (end > b)
            rc = upload_cast(e, engine_at(e, s->params, b - s->shard_begin), host + (b - off),
                             (size_t)(end - b));
        if (!rc && s->stage3.gathered) /* keep a live whole copy (persistent, scope) current */
            rc = upload_cast(e, engine_at(e, s->stage3.gathered, off), host, (size_t)n);
    }
    hpz_params_changed(e); /* the secondary shards hold the old values */
    if (rc)
        nvme_unit_store(e, unit, 0, err);
    else if ((rc = nvme_unit_store(e, unit, 1, err)))
        return rc;
    return rc ? engine_backend_error(e, rc, err, "writing parameter %s.%s",
                                     e->model->units[unit]->name,
                                     e->model->units[unit]->params[param].name)
              : ZERO_OK;
}

/* Unpins units[0..n) of an open scope and releases those no longer pinned. */
static int unpin(struct zero_engine *e, const int *units, int n, struct zero_error *err)
{
    int rc = ZERO_OK;
    for (int i = 0; i < n && e->stage_def->shards_params; i++) {
        struct unit_states *s = &e->us[units[i]];
        if (--s->scope_pins == 0 && !rc)
            rc = stage3_release(e, units[i], err);
    }
    return rc;
}

static void close_scope(struct zero_engine *e)
{
    free(e->scope.units);
    e->scope.units = NULL;
    e->scope.n = 0;
    e->scope.active = 0;
}

int zero_engine_gathered_begin(struct zero_engine *e, const int *units, int nunits,
                               int modifier_rank, struct zero_error *err)
{
    if (e->scope.active)
        return zero_fail(err, ZERO_EINVAL, "a gathered-parameters scope is already open");
    if (e->forward_done)
        return zero_fail(err, ZERO_EINVAL,
                         "gathered-parameters scope opened between forward and backward");
    if (modifier_rank >= e->world)
        return zero_fail(err, ZERO_EINVAL, "modifier rank %d does not exist (world size %d)",
                         modifier_rank, e->world);
    for (int i = 0; i < nunits; i++)
        if (units[i] < 0 || units[i] >= e->nunits)
            return zero_fail(err, ZERO_EINVAL, "unit index %d out of range", units[i]);
    int rc = check_same_units(e, units, nunits, modifier_rank, err);
    if (rc)
        return rc;
    e->scope.units = malloc((size_t)(nunits > 0 ? nunits : 1) * sizeof *e->scope.units);
    if (!e->scope.units)
        return zero_fail(err, ZERO_ENOMEM, "scope");
    memcpy(e->scope.units, units, (size_t)nunits * sizeof *units);
    e->scope.n = nunits;
    e->scope.modifier = modifier_rank;
    e->scope.active = 1;
    /* stage 3 gathers like any fetch (live limit, events); the pins keep the
     * units whole until the end */
    int pinned = 0;
    for (; pinned < nunits && e->stage_def->shards_params && !rc; pinned++) {
        struct unit_states *s = &e->us[units[pinned]];
        if (s->scope_pins++ == 0 && s->layout.padded > 0)
            rc = stage3_gather_for_scope(e, units[pinned], err);
    }
    if (rc) { /* the scope does not open: every rank failed the same check */
        struct zero_error ignored = {0};
        unpin(e, units, pinned, &ignored);
        close_scope(e);
    }
    return rc;
}

int engine_outside_scope(struct zero_engine *e, const char *what, struct zero_error *err)
{
    if (!e->scope.active)
        return ZERO_OK;
    char names[200] = "";
    size_t used = 0;
    for (int i = 0; i < e->scope.n && used < sizeof names; i++) {
        int n = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                         e->model->units[e->scope.units[i]]->name);
        if (n > 0)
            used += (size_t)n;
    }
    return zero_fail(err, ZERO_EINVAL,
                     "rank %d: %s inside the open gathered-parameters scope (units %s, modifier "
                     "rank %d): call zero_engine_gathered_end first; the scope's end writes its "
                     "whole copy back over the parameters",
                     e->rank, what, names[0] ? names : "none", e->scope.modifier);
}

void *zero_engine_param_ptr(struct zero_engine *e, int unit, int param, enum zero_dtype *t)
{
    if (t)
        *t = e->cdt;
    if (!e->scope.active || unit < 0 || unit >= e->nunits || param < 0 ||
        param >= e->model->units[unit]->nparams)
        return NULL;
    void *whole = engine_param_whole(e, unit);
    return whole ? engine_at(e, whole, e->us[unit].layout.offset[param]) : NULL;
}

/* After a scope's broadcast: the whole (cdt) values become this rank's model
 * states: the stage-3 parameter shard and the master when it is a buffer of
 * its own (mixed precision, offload). */
static int scatter_back(struct zero_engine *e, int u, const void *whole)
{
    struct unit_states *s = &e->us[u];
    int rc = ZERO_OK;
    if (e->stage_def->shards_params)
        rc = e->be->copy(e->bself, s->params, engine_at(e, whole, s->shard_begin),
                         (size_t)s->layout.shard * e->csize);
    if (!rc && engine_separate_master(e)) {
        int64_t begin = engine_update_begin(e, u), n = engine_update_count(e, u);
        rc = e->be->cast(e->bself, s->master, ZERO_F32, engine_at(e, whole, begin), e->cdt,
                         (size_t)n);
    }
    return rc;
}

int zero_engine_gathered_end(struct zero_engine *e, struct zero_error *err)
{
    if (!e->scope.active)
        return zero_fail(err, ZERO_EINVAL, "no gathered-parameters scope is open");
    int rc = ZERO_OK;
    for (int i = 0; i < e->scope.n && !rc && e->scope.modifier >= 0; i++) {
        int u = e->scope.units[i];
        struct unit_states *s = &e->us[u];
        if (s->layout.padded == 0)
            continue;
        void *whole = engine_param_whole(e, u);
        rc = e->be->broadcast(e->bself, whole, e->cdt, (size_t)s->layout.padded, e->scope.modifier,
                              NULL);
        if (rc) {
            rc = engine_backend_error(e, rc, err, "scattering unit %s back",
                                      e->model->units[u]->name);
        } else if (!(rc = nvme_unit_load_agreed(e, u, 1, err))) { /* next: a broadcast */
            /* the shard and master on NVMe are paged in, overwritten, written back */
            if ((rc = scatter_back(e, u, whole)))
                rc = engine_backend_error(e, rc, err, "scattering unit %s back",
                                          e->model->units[u]->name);
            int rs = nvme_unit_store(e, u, !rc, err);
            rc = rc ? rc : rs;
        }
    }
    int released = unpin(e, e->scope.units, e->scope.n, rc ? &(struct zero_error){0} : err);
    close_scope(e);
    return rc ? rc : released;
}

void gathered_destroy(struct zero_engine *e)
{
    free(e->scope.units);
    e->scope.units = NULL;
}

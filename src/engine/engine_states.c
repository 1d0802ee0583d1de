/* Model states per stage (docs/design.md's table):
 *
 *   stage | params (cdt)    | grads (cdt)     | fp32 master     | optimizer state (fp32)
 *   0     | whole (padded,) | whole (padded,) | whole           | whole  (2 x padded,)
 *   1     | whole           | whole           | shard (shard,)  | shard  (2 x shard,)
 *   2     | whole           | shard (shard,)  | shard           | shard
 *   3     | shard (shard,)  | shard           | shard           | shard
 *
 * cdt is the compute dtype. In fp32 training there is no separate master:
 * this rank's slice of the fp32 parameters is the master its optimizer shard
 * updates (4 + 4 + 8 bytes per parameter); mixed precision keeps the fp32
 * master apart (2 + 2 + 4 + 8).
 *
 * ZeRO-Offload (offload.c) moves states to host memory: offload_optimizer the
 * master (always a buffer of its own then) and the optimizer state, plus a
 * host staging shard for the gradient; offload_param (stage 3) the parameter
 * shard. The ledger counts them on the host side. With device = nvme the
 * master and optimizer state (and the parameter shards past max_in_cpu) live
 * in swap files instead (nvme_swap.c), counted by the nvme ledger. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "engine_states.h"
#include "grad_counter.h"
#include "grad_reduce.h"
#include "init_rng.h"
#include "memory_plan.h"
#include "stage3.h"
#include "nvme_swap.h"
#include "offload.h"

static int optim_buffers(const struct zero_engine *e)
{
    if (e->cfg.optimizer.type == ZERO_OPTIM_SGD)
        return e->cfg.optimizer.momentum != 0.0 ? 1 : 0;
    return 2;
}

/* A model-state buffer in device memory, or in host memory when offloaded. */
static int state_alloc(struct zero_engine *e, int on_host, size_t bytes, enum zero_tag tag,
                       void **p, const char *what, struct zero_error *err)
{
    return on_host ? engine_host_alloc(e, bytes, tag, p, what, err)
                   : engine_alloc(e, bytes, tag, p, what, err);
}

static void state_free(struct zero_engine *e, int on_host, void *p)
{
    if (on_host)
        engine_host_free(e, p);
    else
        engine_free(e, p);
}

/* Unit u's layout and stage-3 persistence: all the memory plan needs. */
static int lay_out_unit(struct zero_engine *e, int u, struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    const struct zero_unit *unit = e->model->units[u];
    int64_t numel[ZERO_UNIT_MAX_PARAMS];
    for (int p = 0; p < unit->nparams; p++)
        numel[p] = zero_param_numel(&unit->params[p]);
    int rc =
        zero_layout_unit(&s->layout, numel, unit->nparams, e->world, e->cfg.libzero.align, err);
    if (rc)
        return zero_error_wrap(err, "unit %s: ", unit->name);
    /* MiCS: the flat layout's padding, split into the shard group's M shards */
    s->layout.shard = s->layout.padded / e->mics.size;
    s->shard_begin = (int64_t)e->mics.rank * s->layout.shard;
    stage3_plan_unit(e, u);
    return ZERO_OK;
}

static int alloc_unit(struct zero_engine *e, int u, struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    const struct zero_unit *unit = e->model->units[u];
    int rc;
    size_t whole = (size_t)s->layout.padded, shard = (size_t)s->layout.shard;
    const struct zero_stage *st = e->stage_def;
    size_t pcount = (size_t)zero_stage_part(st->shards_params, whole, shard);
    size_t gcount = (size_t)zero_stage_part(st->shards_grads, whole, shard);
    size_t ocount = (size_t)zero_stage_part(st->shards_optim, whole, shard); /* and master */
    size_t obytes = ocount * sizeof(float);
    char what[ZERO_NAME_LEN + 32];
    snprintf(what, sizeof what, "unit %s", unit->name);
    int host = e->offload.opt;
    /* on NVMe (nvme_swap.c) the master and optimizer state have no buffers here,
     * and the parameter shards get theirs once max_in_cpu has placed them */
    if ((!e->nvme.param && (rc = state_alloc(e, e->offload.param, pcount * e->csize,
                                             ZERO_TAG_PARAMS, &s->params, what, err))) ||
        (rc = engine_alloc(e, gcount * e->csize, ZERO_TAG_GRADS, &s->grads, what, err)))
        return rc;
    if (engine_separate_master(e) && !e->nvme.opt &&
        (rc = state_alloc(e, host, obytes, ZERO_TAG_MASTER, (void **)&s->master, what, err)))
        return rc;
    int nopt = e->nvme.opt ? 0 : optim_buffers(e);
    if (nopt >= 1 &&
        (rc = state_alloc(e, host, obytes, ZERO_TAG_OPTIM, (void **)&s->exp_avg, what, err)))
        return rc;
    if (nopt >= 2 &&
        (rc = state_alloc(e, host, obytes, ZERO_TAG_OPTIM, (void **)&s->exp_avg_sq, what, err)))
        return rc;
    if (host && (rc = offload_alloc_unit(e, u, ocount, what, err)))
        return rc;
    if ((rc = e->be->fill(e->bself, s->grads, e->cdt, 0.0, gcount)))
        return engine_backend_error(e, rc, err, "zeroing gradients of %s", unit->name);
    if (s->exp_avg && (rc = e->be->fill(e->bself, s->exp_avg, ZERO_F32, 0.0, ocount)))
        return engine_backend_error(e, rc, err, "zeroing optimizer state of %s", unit->name);
    if (s->exp_avg_sq && (rc = e->be->fill(e->bself, s->exp_avg_sq, ZERO_F32, 0.0, ocount)))
        return engine_backend_error(e, rc, err, "zeroing optimizer state of %s", unit->name);
    s->counter.len = s->layout.shard; /* every stage accumulates this rank's shard */
    return ZERO_OK;
}

/* Stages 1-2: every rank initialized its shard of the whole buffer; make it whole. */
static int gather_initial_params(struct zero_engine *e, struct zero_error *err)
{
    for (int u = 0; u < e->nunits; u++) {
        struct unit_states *s = &e->us[u];
        if (s->layout.padded == 0)
            continue;
        int rc = mics_all_gather(e, engine_at(e, s->params, s->shard_begin), s->params, e->cdt,
                                 (size_t)s->layout.shard, NULL);
        if (rc)
            return engine_backend_error(e, rc, err, "all-gather of initial parameters of %s",
                                        e->model->units[u]->name);
    }
    return ZERO_OK;
}

int engine_states_create(struct zero_engine *e, struct zero_error *err)
{
    e->nunits = e->model->nunits;
    e->us = calloc((size_t)e->nunits, sizeof *e->us);
    int rc = e->us ? ZERO_OK : zero_fail(err, ZERO_ENOMEM, "rank %d: unit states", e->rank);
    for (int u = 0; u < e->nunits && !rc; u++)
        rc = lay_out_unit(e, u, err);
    if ((rc = engine_check_memory_plan(e, rc, err)))
        return rc;
    /* Allocation, the swap files and the initialization are rank-local (memory,
     * a disk, a path that exists on one node only): the one agreement after
     * them comes before the first collective, whichever rank stopped where. */
    for (int u = 0; u < e->nunits && !rc; u++)
        rc = alloc_unit(e, u, err);
    if (!rc)
        rc = nvme_open(e, err);
    for (int u = 0; u < e->nunits && e->nvme.param && !rc;
         u++) /* kept in host memory: max_in_cpu */
        if (!nvme_holds_params(e, u))
            rc = engine_host_alloc(e, (size_t)e->us[u].layout.shard * e->csize, ZERO_TAG_PARAMS,
                                   &e->us[u].params, "parameter shard", err);
    if (!rc)
        rc = engine_init_params(e, err);
    if ((rc = engine_agree(e, rc, ZERO_EIO, "could not allocate or initialize its model states",
                           err)))
        return rc;
    /* the initialization wrote this rank's part: what follows an update follows it too */
    switch (e->stage_def->after) {
    case ZERO_STAGE_UPDATED_WHOLE:
        return ZERO_OK;
    case ZERO_STAGE_ALL_GATHER_PARAMS:
        return gather_initial_params(e, err);
    case ZERO_STAGE_GATHER_PER_UNIT_USE:
        break;
    }
    if ((rc = stage3_check_live_limit(e, err)))
        return rc;
    return stage3_gather_persistent(e, err);
}

void engine_states_destroy(struct zero_engine *e)
{
    if (!e->us)
        return;
    for (int u = 0; u < e->nunits; u++) {
        struct unit_states *s = &e->us[u];
        stage3_unit_destroy(e, u); /* waits for a gather in flight */
        reduce_unit_destroy(e, u);
        mics_unit_destroy(e, &s->mics); /* after the wait: nothing reads it now */
        state_free(e, e->offload.param, s->params);
        state_free(e, e->offload.opt, s->master);
        engine_free(e, s->grad_work);
        engine_free(e, s->param_work);
        engine_free(e, s->grads);
        engine_free(e, s->local_grad);
        state_free(e, e->offload.opt, s->exp_avg);
        state_free(e, e->offload.opt, s->exp_avg_sq);
        offload_unit_destroy(e, u);
        engine_free(e, s->out);
        engine_free(e, s->saved);
        counter_destroy(e, &s->counter);
    }
    free(e->us);
    e->us = NULL;
    nvme_close(e); /* the swap files go with the states */
}

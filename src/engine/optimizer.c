/* The optimizer step at the gradient-accumulation boundary: finish the
 * accumulation, compute the global gradient norm in a fixed order, clip by
 * DeepSpeed's rule, update this rank's shard, and make parameters whole again
 * where the stage keeps them whole. */
#include <math.h>
#include <stdlib.h>

#include "engine_internal.h"
#include "optimizer.h"
#include "device_step.h"
#include "grad_reduce.h"
#include "stage3.h"
#include "offload.h"
#include "optimizer_args.h"
#include "placement.h"

/* Sum of squares of the reduced gradient, in a fixed order: blocks of `align`
 * elements of each unit's flat index space (shards are block-aligned), each
 * summed in double, combined unit by unit, block by block. The order does not
 * depend on N: padding blocks are zero. With MiCS the first shard group's M shards
 * are the unit's blocks in the same order (the other groups hold copies). */
static int grad_sumsq(struct zero_engine *e, double *out, struct zero_error *err)
{
    int64_t align = e->cfg.libzero.align, total = 0;
    for (int u = 0; u < e->nunits; u++)
        total += e->us[u].layout.shard / align;
    double *dev = NULL, *mine = malloc((size_t)total * sizeof(double));
    double *all = malloc((size_t)total * (size_t)e->world * sizeof(double));
    int rc = (!mine || !all) ? zero_fail(err, ZERO_ENOMEM, "rank %d: norm blocks", e->rank) : 0;
    if (!rc)
        rc = engine_alloc(e, (size_t)total * sizeof(double), ZERO_TAG_WORKSPACE, (void **)&dev,
                          "gradient norm blocks", err);
    int64_t at = 0;
    for (int u = 0; u < e->nunits && !rc; u++) {
        int64_t shard = e->us[u].layout.shard;
        const void *g = grad_landing(e, u);
        rc = e->be->sumsq_blocks(e->bself, g, e->cdt, (size_t)shard, (size_t)align, dev + at);
        if (rc)
            rc = engine_backend_error(e, rc, err, "gradient norm of %s", e->model->units[u]->name);
        at += shard / align;
    }
    if (!rc && (rc = e->be->to_host(e->bself, mine, dev, (size_t)total * sizeof(double))))
        rc = engine_backend_error(e, rc, err, "gradient norm copy");
    if (!rc && (rc = e->be->host_all_gather(e->bself, mine, all, (size_t)total * sizeof(double))))
        rc = engine_backend_error(e, rc, err, "gradient norm exchange");
    if (!rc) {
        double sum = 0.0;
        int64_t base = 0; /* offset of unit u's blocks inside one rank's piece */
        for (int u = 0; u < e->nunits; u++) {
            int64_t nb = e->us[u].layout.shard / align;
            for (int r = 0; r < e->mics.size; r++) /* MiCS: one copy of each shard */
                for (int64_t b = 0; b < nb; b++)
                    sum += all[(int64_t)r * total + base + b];
            base += nb;
        }
        *out = sum;
    }
    engine_free(e, dev);
    free(mine);
    free(all);
    return rc;
}

static int update_unit(struct zero_engine *e, int u, float lr, float grad_div,
                       struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    size_t n = (size_t)engine_update_count(e, u);
    float *master = engine_master(e, u);
    /* mixed precision: the updated master is also written to the compute-dtype params */
    void *copy = engine_param_copy(e, u);
    enum zero_dtype gt;
    const void *grad = grad_for_update(e, u, &gt);
    double t0 = engine_now();
    int rc;
    if (e->cfg.optimizer.type == ZERO_OPTIM_SGD) {
        struct zero_sgd_args a = optimizer_sgd_args(e, lr, grad_div);
        rc = e->be->sgd(e->bself, master, grad, gt, s->exp_avg, n, &a, copy, e->cdt);
    } else {
        struct zero_adam_args a = optimizer_adam_args(e, lr, grad_div);
        rc =
            e->be->adam(e->bself, master, grad, gt, s->exp_avg, s->exp_avg_sq, n, &a, copy, e->cdt);
    }
    if (rc)
        return engine_backend_error(e, rc, err, "optimizer update of %s", e->model->units[u]->name);
    engine_event(e, ZERO_EV_OPTIMIZER, u, -1, NULL, (int64_t)n, t0);
    return ZERO_OK;
}

/* Stages 1-2: all-gather the updated shards, units grouped so that at most
 * allgather_bucket_size elements are in flight. */
static int gather_params(struct zero_engine *e, struct zero_error *err)
{
    const struct zero_optimization_config *z = &e->cfg.zero_optimization;
    int64_t *size = malloc((size_t)e->nunits * sizeof *size);
    int *first = malloc((size_t)(e->nunits + 1) * sizeof *first);
    struct zero_request **req = calloc((size_t)e->nunits, sizeof *req);
    double *t_issue = calloc((size_t)e->nunits, sizeof *t_issue);
    int rc =
        (!size || !first || !req || !t_issue) ? zero_fail(err, ZERO_ENOMEM, "all-gather plan") : 0;
    int groups = 0;
    if (!rc) {
        for (int u = 0; u < e->nunits; u++)
            size[u] = e->us[u].layout.padded;
        groups = zero_plan_buckets(size, e->nunits, z->allgather_bucket_size, first);
    }
    for (int g = 0; g < groups && !rc; g++) {
        for (int u = first[g]; u < first[g + 1] && !rc; u++) {
            struct unit_states *s = &e->us[u];
            if (s->layout.padded == 0)
                continue;
            double t0 = t_issue[u] = engine_now();
            if (z->allgather_partitions) {
                rc = mics_all_gather(e, engine_at(e, s->params, s->shard_begin), s->params, e->cdt,
                                     (size_t)s->layout.shard, &req[u]);
            } else {
                /* DeepSpeed's allgather_partitions: false — one broadcast per shard (from
                 * rank r, which holds shard r: with MiCS, in the first shard group) */
                for (int r = 0; r < e->mics.size && !rc; r++)
                    rc = e->be->broadcast(e->bself,
                                          engine_at(e, s->params, (int64_t)r * s->layout.shard),
                                          e->cdt, (size_t)s->layout.shard, r, NULL);
            }
            if (rc)
                rc = engine_backend_error(e, rc, err, "parameter all-gather of %s",
                                          e->model->units[u]->name);
            else
                engine_event(e, ZERO_EV_PARAM_GATHER, u, -1,
                             z->allgather_partitions ? mics_gather_name(&e->mics) : "broadcast",
                             s->layout.padded, t0);
        }
        for (int u = first[g]; u < first[g + 1]; u++) {
            if (!req[u])
                continue;
            /* a slice of its own: the step's time in it is the gather's, not the engine's */
            int w = engine_wait(e, req[u], ZERO_EV_PARAM_GATHER_WAIT, u, -1,
                                mics_gather_name(&e->mics), e->us[u].layout.padded, t_issue[u]);
            req[u] = NULL;
            if (w && !rc)
                rc = engine_backend_error(e, w, err, "waiting for parameter all-gather");
        }
    }
    free(size);
    free(first);
    free(req);
    free(t_issue);
    return rc;
}

/* Every rank computes the same sum of squares, so every rank reaches the same
 * verdict: a non-finite norm means some rank's gradient overflowed. */
static int overflowed(double sumsq)
{
    return !isfinite(sumsq);
}

int optimizer_step(struct zero_engine *e, struct zero_error *err)
{
    int rc = reduce_finish_accumulation(e, err);
    if (rc)
        return rc;
    /* the step-end hook: the loss sum, and the inputs the passes checked on the device;
     * a bad one on any rank refuses the step on every rank, before any update */
    if ((rc = device_step_finish(e, err))) {
        reduce_release_accumulation(e);
        if (e->dstep.refused) {
            e->last.skipped = 1;
            e->global_steps++;
            e->last.step = e->global_steps;
        }
        return rc;
    }
    int fp16 = e->cdt == ZERO_F16;
    double scale = fp16 ? e->scaler.scale : 1.0;
    double atoms = (double)e->world * (double)e->accum;
    double sumsq, t0 = engine_now();
    if ((rc = grad_sumsq(e, &sumsq, err))) {
        reduce_release_accumulation(e);
        return rc;
    }
    engine_event(e, ZERO_EV_NORM, -1, -1, "control", 0, t0);
    e->last.loss_scale = scale;
    e->last.skipped = fp16 && overflowed(sumsq);
    if (fp16 && (rc = zero_loss_scaler_update(&e->scaler, e->last.skipped, err))) {
        reduce_release_accumulation(e);
        return zero_error_wrap(err, "rank %d: step %lld: ", e->rank,
                               (long long)e->global_steps + 1);
    }
    double norm = sqrt(sumsq) / atoms / scale;
    double clip = 1.0;
    /* DeepSpeed: divide by (norm + 1e-6) / max_norm when that exceeds one */
    if (e->cfg.gradient_clipping > 0.0 && !e->last.skipped) {
        double c = (norm + 1e-6) / e->cfg.gradient_clipping;
        if (c > 1.0)
            clip = c;
    }
    double lr = zero_lr_at(&e->cfg, e->applied_steps);
    float grad_div = (float)(atoms * scale * clip);
    if (e->offload.opt && !e->last.skipped) {
        rc = offload_update(e, (float)lr, grad_div, err);
        if (e->nvme.opt) /* disk errors are rank-local: the step ends on every rank */
            rc = engine_agree(e, rc, ZERO_EIO,
                              "failed in the NVMe optimizer step (its message names the cause)",
                              err);
    }
    for (int u = 0; u < e->nunits && !e->offload.opt && !e->last.skipped && !rc; u++)
        rc = update_unit(e, u, (float)lr, grad_div, err);
    reduce_release_accumulation(e);
    if (!rc && !e->last.skipped) {
        switch (e->stage_def->after) {
        case ZERO_STAGE_UPDATED_WHOLE:
            break;
        case ZERO_STAGE_ALL_GATHER_PARAMS:
            rc = gather_params(e, err);
            break;
        case ZERO_STAGE_GATHER_PER_UNIT_USE:
            rc = stage3_end_step(e, err);
            break;
        }
    }
    if (rc)
        return rc;
    e->last.lr = lr;
    e->last.grad_norm = norm;
    e->last.clip_coef = clip;
    if (!e->last.skipped)
        e->applied_steps++;
    e->global_steps++;
    e->last.step = e->global_steps;
    return ZERO_OK;
}

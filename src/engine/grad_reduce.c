/* Per-micro-step gradient reduction, bucketed in backward order.
 *
 * Exact mode reduces every micro-step in every stage (docs/design.md): a unit's
 * gradient is final once its backward ran (later units, the external users of
 * its parameters, ran their backward before it). Units are grouped in backward
 * order into buckets of at most reduce_bucket_size elements; when a bucket's
 * last unit finishes, the reductions of all its units are issued together and,
 * with overlap_comm, waited only at the end of backward.
 *
 *   stage 0: all-reduce the whole gradient in place
 *   stage 1: reduce-scatter in place; this rank's slice of the whole buffer
 *            receives the sum of its shard
 *   stage 2, 3: reduce-scatter the transient whole local gradient into the
 *            persistent gradient shard; the local buffer is freed after
 *
 * With gradient accumulation every stage reduce-scatters each micro-step's
 * sum, in fp32, into a slot of the binary counter (grad_counter.c); at the
 * boundary the counter's sum is rounded to the compute dtype once, into this
 * rank's part of the gradient, and stage 0 all-gathers it. Rounding once,
 * after the whole tree over atoms, is what keeps mixed precision bit-identical
 * across world sizes (the tree does not depend on how atoms spread over ranks;
 * a rounding per micro-step would).
 *
 * Native (fast) mode with accumulation, stages 0-2, no offload: each rank
 * accumulates its whole local gradient over the micro-steps in the same
 * binary counter (slots of the whole unit, fp32) and reduces the sum once, at
 * the last micro-step: 2Ψ(N-1)/N per step with the parameter gather, DeepSpeed's
 * volume, instead of (A + 1)Ψ(N-1)/N. The sums then depend on how atoms spread
 * over ranks (MPI's reduction on top of that), so results match exact mode to a
 * tolerance, not in bits (docs/stages.md, "Overlap and accumulation").
 *
 * Exact mode with libzero.atom_order = rank_major accumulates locally the same
 * way, in every stage and with offload, and reduces once along the canonical
 * tree (atom_order.c). */
#include <stdlib.h>

#include "engine_internal.h"
#include "grad_reduce.h"
#include "atom_order.h"
#include "grad_counter.h"
#include "placement.h"

int reduce_accumulates_locally(const struct zero_engine *e)
{
    if (atom_order_reduces_once(e)) /* exact mode, rank-major atoms: atom_order.c */
        return 1;
    return e->accum > 1 && !e->stage_def->shards_params &&
           e->cfg.libzero.coll_mode == ZERO_COLL_NATIVE &&
           e->cfg.zero_optimization.reduce_scatter && !e->offload.opt;
}

int reduce_plan_buckets(struct zero_engine *e, struct zero_error *err)
{
    int n = e->nunits;
    int64_t *size = malloc((size_t)n * sizeof *size);
    e->reduce.bucket_first = malloc((size_t)(n + 1) * sizeof *e->reduce.bucket_first);
    e->reduce.bucket_of_unit = malloc((size_t)n * sizeof *e->reduce.bucket_of_unit);
    if (!size || !e->reduce.bucket_first || !e->reduce.bucket_of_unit) {
        free(size);
        return zero_fail(err, ZERO_ENOMEM, "rank %d: bucket plan", e->rank);
    }
    for (int pos = 0; pos < n; pos++) /* position pos in backward order is unit n-1-pos */
        size[pos] = e->us[n - 1 - pos].layout.padded;
    e->reduce.nbuckets = zero_plan_buckets(size, n, e->cfg.zero_optimization.reduce_bucket_size,
                                           e->reduce.bucket_first);
    for (int b = 0; b < e->reduce.nbuckets; b++)
        for (int pos = e->reduce.bucket_first[b]; pos < e->reduce.bucket_first[b + 1]; pos++)
            e->reduce.bucket_of_unit[n - 1 - pos] = b;
    e->reduce.pending_bucket = -1;
    free(size);
    return ZERO_OK;
}

/* Fast mode: keep this micro-step's whole gradient in the counter; at the last
 * micro-step reduce the counter's fp32 sum once into this rank's part. */
static int accumulate_locally(struct zero_engine *e, int u, struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    const void *mine = grad_micro_step(e, u); /* (padded,) cdt */
    size_t padded = (size_t)s->layout.padded, shard = (size_t)s->layout.shard;
    if (s->counter.len != s->layout.padded) { /* first use: slots of the whole unit */
        counter_destroy(e, &s->counter);
        s->counter.len = s->layout.padded;
    }
    int last = s->counter.pushed + 1 == e->accum;
    int rc = counter_push(e, &s->counter, mine, e->cdt, err);
    float *sum = NULL;
    if (rc || !last)
        return rc;
    double t0 = engine_now();
    if ((rc = counter_finish(e, &s->counter, &sum, err)))
        return rc;
    if (atom_order_reduces_once(e)) {
        rc = atom_order_reduce(e, u, sum, grad_landing(e, u), err);
        counter_release(&s->counter);
        return rc;
    }
    int all_reduce = e->stage_def->reduce == ZERO_STAGE_ALL_REDUCE;
    const char *coll = all_reduce ? "all_reduce" : "reduce_scatter";
    if (all_reduce) {
        rc = e->be->all_reduce(e->bself, sum, sum, ZERO_F32, padded, NULL);
        if (!rc)
            rc = e->cdt == ZERO_F32
                     ? e->be->copy(e->bself, s->grads, sum, padded * sizeof(float))
                     : e->be->cast(e->bself, s->grads, e->cdt, sum, ZERO_F32, padded);
    } else {
        rc =
            mics_reduce_scatter(e, u, sum, ZERO_F32, grad_landing(e, u), e->cdt, shard, NULL, NULL);
    }
    counter_release(&s->counter);
    if (rc)
        return engine_backend_error(e, rc, err, "reduction of the accumulated gradient of %s",
                                    e->model->units[u]->name);
    if (all_reduce || !mics_reports_reductions(&e->mics)) /* else mics.c reported them */
        engine_event(e, ZERO_EV_REDUCE, u, e->reduce.bucket_of_unit[u], coll, s->layout.padded, t0);
    return ZERO_OK;
}

/* Stages 2-3's reduce-scatter of the local gradient: qgZ's all-to-alls where it is on. */
static int reduce_scatter_shard(struct zero_engine *e, int u, const void *send, enum zero_dtype st,
                                void *recv, enum zero_dtype rt, struct zero_request **req)
{
    struct unit_states *s = &e->us[u];
    size_t shard = (size_t)s->layout.shard;
    if (qgz_on(e)) { /* blocking: nothing stays in flight */
        if (req != NULL)
            *req = NULL;
        return qgz_reduce_scatter(e, u, send, st, recv, rt, shard);
    }
    return mics_reduce_scatter(e, u, send, st, recv, rt, shard, req, &s->mics);
}

static int issue_unit(struct zero_engine *e, int u, struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    const struct zero_optimization_config *z = &e->cfg.zero_optimization;
    struct zero_request **req = z->overlap_comm ? &s->reduce.req : NULL;
    size_t shard = (size_t)s->layout.shard;
    enum zero_dtype t = e->cdt;
    int rc;
    if (shard == 0)
        return ZERO_OK; /* no parameters */
    if (reduce_accumulates_locally(e))
        return accumulate_locally(e, u, err);
    double t0 = engine_now();
    int all_reduce = e->stage_def->reduce == ZERO_STAGE_ALL_REDUCE, by_mics = 0;
    const char *coll = qgz_on(e) ? "all_to_all" /* qgZ's, inside and across the groups */
                       : (all_reduce && e->accum == 1) || !z->reduce_scatter ? "all_reduce"
                                                                             : "reduce_scatter";
    if (e->accum > 1 && z->reduce_scatter) {
        /* accumulation: this micro-step's sum stays fp32 in a counter slot */
        const void *send = grad_micro_step(e, u);
        rc = counter_take(e, &s->counter, &s->reduce.into, err);
        if (rc)
            return zero_error_wrap(err, "unit %s: ", e->model->units[u]->name);
        rc = reduce_scatter_shard(e, u, send, t, s->reduce.into, ZERO_F32, req);
        by_mics = !qgz_on(e);
    } else if (all_reduce) {
        rc = e->be->all_reduce(e->bself, s->grads, s->grads, t, (size_t)s->layout.padded, req);
    } else if (!z->reduce_scatter) {
        /* DeepSpeed's reduce_scatter: false — all-reduce, keep this rank's shard */
        void *buf = grad_micro_step(e, u);
        rc = e->be->all_reduce(e->bself, buf, buf, t, (size_t)s->layout.padded, NULL);
        if (!rc && e->stage_def->shards_grads)
            rc = e->be->copy(e->bself, s->grads, engine_at(e, s->local_grad, s->shard_begin),
                             shard * e->csize);
    } else { /* stage 1 in place into its slice; stages 2-3 into the shard */
        rc = reduce_scatter_shard(e, u, grad_micro_step(e, u), t, grad_landing(e, u), t, req);
        by_mics = !qgz_on(e);
    }
    if (rc)
        return engine_backend_error(e, rc, err, "gradient reduction of unit %s",
                                    e->model->units[u]->name);
    s->reduce.t_issue = t0;
    s->reduce.coll = by_mics && mics_reduces_in_groups(e) ? "group_all_reduce" : coll;
    /* else mics.c reported its two, or qgz.c its hops */
    if ((!by_mics || !mics_reports_reductions(&e->mics)) && !qgz_on(e))
        engine_event(e, ZERO_EV_REDUCE, u, e->reduce.bucket_of_unit[u], coll, s->layout.padded, t0);
    return ZERO_OK;
}

/* Waits for a bucket's reductions and frees its transient local gradients. */
static int complete_bucket(struct zero_engine *e, int b, struct zero_error *err)
{
    for (int pos = e->reduce.bucket_first[b]; pos < e->reduce.bucket_first[b + 1]; pos++) {
        int u = e->nunits - 1 - pos;
        struct unit_states *s = &e->us[u];
        if (s->reduce.req) {
            struct zero_comm_stats before = e->dev->comm_stats;
            int rc = engine_wait(e, s->reduce.req, ZERO_EV_REDUCE_WAIT, u, b, s->reduce.coll,
                                 s->layout.padded, s->reduce.t_issue);
            if (mics_reduces_in_groups(e)) /* the replica group's all-reduce, counted now */
                mics_count_replica(e, &before);
            s->reduce.req = NULL;
            if (rc)
                return engine_backend_error(e, rc, err, "waiting for the reduction of %s",
                                            e->model->units[u]->name);
        }
        int rc = mics_reduce_finish(e, &s->mics); /* MiCS: the replica group's all-gather */
        if (rc)
            return engine_backend_error(e, rc, err, "replica all-gather of the gradient of %s",
                                        e->model->units[u]->name);
        engine_free(e, s->local_grad);
        s->local_grad = NULL;
    }
    return ZERO_OK;
}

int reduce_unit_ready(struct zero_engine *e, int unit, struct zero_error *err)
{
    int b = e->reduce.bucket_of_unit[unit];
    int last_pos = e->reduce.bucket_first[b + 1] - 1;
    if (e->nunits - 1 - unit != last_pos)
        return ZERO_OK; /* the bucket is not complete yet */
    int rc = ZERO_OK;
    for (int pos = e->reduce.bucket_first[b]; pos <= last_pos && !rc; pos++)
        rc = issue_unit(e, e->nunits - 1 - pos, err);
    if (rc)
        return rc;
    if (!e->cfg.zero_optimization.overlap_comm)
        return complete_bucket(e, b, err);
    /* overlap: the previous bucket finishes while this one is in flight, so
     * at most two buckets of local gradients are alive */
    if (e->reduce.pending_bucket >= 0 && (rc = complete_bucket(e, e->reduce.pending_bucket, err)))
        return rc;
    e->reduce.pending_bucket = b;
    return ZERO_OK;
}

int reduce_finish_micro_step(struct zero_engine *e, struct zero_error *err)
{
    int rc;
    if (e->reduce.pending_bucket >= 0) {
        rc = complete_bucket(e, e->reduce.pending_bucket, err);
        e->reduce.pending_bucket = -1;
        if (rc)
            return rc;
    }
    for (int u = e->nunits - 1; u >= 0 && e->accum > 1 && !reduce_accumulates_locally(e); u--) {
        struct unit_states *s = &e->us[u];
        if (s->layout.shard == 0)
            continue;
        if (s->reduce.into) /* reduce-scattered into a slot: push it as it is */
            rc = counter_push_taken(e, &s->counter, s->reduce.into, err);
        else /* reduce_scatter: false — the all-reduced sum, this rank's part */
            rc = counter_push(e, &s->counter, grad_landing(e, u), e->cdt, err);
        s->reduce.into = NULL;
        if (rc)
            return zero_error_wrap(err, "unit %s: ", e->model->units[u]->name);
    }
    return ZERO_OK;
}

/* At the boundary: combine the micro-step sums along the tree, round once to
 * the compute dtype into this rank's part; stage 0 then makes it whole. */
int reduce_finish_accumulation(struct zero_engine *e, struct zero_error *err)
{
    if (e->accum <= 1 || reduce_accumulates_locally(e))
        return ZERO_OK; /* fast mode reduced at the last micro-step */
    for (int u = 0; u < e->nunits; u++) {
        struct unit_states *s = &e->us[u];
        if (s->layout.shard == 0)
            continue;
        float *sum;
        int rc = counter_finish(e, &s->counter, &sum, err);
        if (!rc && (rc = e->be->cast(e->bself, grad_landing(e, u), e->cdt, sum, ZERO_F32,
                                     (size_t)s->layout.shard)))
            rc = engine_backend_error(e, rc, err, "rounding accumulated gradients");
        counter_release(&s->counter);
        if (!rc && e->stage_def->reduce == ZERO_STAGE_ALL_REDUCE) { /* make the sum whole */
            double t0 = engine_now();
            if ((rc = e->be->all_gather(e->bself, grad_landing(e, u), s->grads, e->cdt,
                                        (size_t)s->layout.shard, NULL)))
                rc = engine_backend_error(e, rc, err, "all-gather of accumulated gradients");
            else /* at the boundary, unit by unit: no bucket of backward's */
                engine_event(e, ZERO_EV_REDUCE, u, -1, "all_gather", s->layout.padded, t0);
        }
        if (rc)
            return zero_error_wrap(err, "unit %s: ", e->model->units[u]->name);
    }
    return ZERO_OK;
}

void reduce_release_accumulation(struct zero_engine *e)
{
    for (int u = 0; u < e->nunits; u++)
        counter_release(&e->us[u].counter);
}

void reduce_destroy(struct zero_engine *e)
{
    free(e->reduce.bucket_first);
    free(e->reduce.bucket_of_unit);
    e->reduce.bucket_first = e->reduce.bucket_of_unit = NULL;
}

void reduce_unit_destroy(struct zero_engine *e, int u)
{
    struct unit_states *s = &e->us[u];
    if (s->reduce.req)
        e->be->wait(e->bself, s->reduce.req);
    s->reduce.req = NULL;
}

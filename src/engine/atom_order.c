/* Rank-major atoms in exact mode: each rank sums its own micro-steps, and the
 * gradient is reduced once per step.
 *
 * With libzero.atom_order = rank_major, atom a = rank * A + micro_step, so rank r
 * holds the consecutive atoms [rA, (r+1)A). The canonical tree (src/base/tree.h)
 * splits n atoms at p, the largest power of two below n. When A is a power of two,
 * p is a multiple of A at every split above the blocks (p = A * p_N for
 * n = A * n_N), so every rank's block is a whole subtree and the tree above the
 * blocks is tree(0, N):
 *
 *   tree(0, N * A) = tree over the N ranks of (tree over the rank's A atoms)
 *
 * The rank's counter (grad_counter.c, slots of whole units in fp32) builds its
 * subtree over the micro-steps; at the last micro-step one exact collective
 * combines the N block sums in tree(0, N) order and the result is rounded to the
 * compute dtype once. Same bits as one tree over all atoms, so the same as N = 1
 * with N * A micro-steps, at any N (3 included), in every stage.
 *
 * When A is not a power of two a rank's atoms are not a subtree (A = 3, N = 2:
 * tree(0, 6) adds g2 to g3 before g0 + g1). The engine runs the same schedule; its
 * tree is then the nested one above, fixed for a given N and A, so stages 0-3
 * still agree bit for bit, but world sizes agree with N = 1 only up to rounding.
 * Reducing every micro-step would not help there: with rank-major atoms a
 * micro-step's atoms s, A + s, 2A + s, ... are no subtree either.
 *
 * The price of one reduction per step is memory: every rank keeps a full-size fp32
 * counter (floor(log2(A)) + 1 unit-sized slots, tagged accum), which undoes
 * the gradient partitioning of stages 2 and 3 while it accumulates. Stage 3 still
 * gathers each unit for every micro-step's forward and backward. */
#include "engine_internal.h"
#include "atom_order.h"

int atom_order_reduces_once(const struct zero_engine *e)
{
    return e->accum > 1 && e->cfg.libzero.atom_order == ZERO_ATOM_RANK_MAJOR &&
           e->cfg.libzero.coll_mode == ZERO_COLL_EXACT;
}

/* The block sums (padded,) fp32 of all ranks combined along tree(0, N): this rank's
 * part lands in `mine` (cdt); with reduce_scatter: false the whole sum, of which
 * stage 0 keeps all and the others their part. */
static int reduce_block_sums(struct zero_engine *e, int u, float *sum, void *mine)
{
    struct unit_states *s = &e->us[u];
    size_t padded = (size_t)s->layout.padded, shard = (size_t)s->layout.shard;
    if (!e->cfg.zero_optimization.reduce_scatter) {
        int rc = e->be->all_reduce(e->bself, sum, sum, ZERO_F32, padded, NULL);
        if (rc)
            return rc;
        if (e->stage_def->reduce == ZERO_STAGE_ALL_REDUCE) /* stage 0 keeps all */
            return e->be->cast(e->bself, s->grads, e->cdt, sum, ZERO_F32, padded);
        return e->be->cast(e->bself, mine, e->cdt, sum + s->shard_begin, ZERO_F32, shard);
    }
    /* the reduced shard is rounded to the compute dtype once, as it lands */
    return mics_reduce_scatter(e, u, sum, ZERO_F32, mine, e->cdt, shard, NULL, NULL);
}

int atom_order_reduce(struct zero_engine *e, int u, float *sum, void *mine, struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    int whole = !e->cfg.zero_optimization.reduce_scatter;
    const char *coll = whole ? "all_reduce" : "reduce_scatter";
    double t0 = engine_now();
    int rc = reduce_block_sums(e, u, sum, mine);
    if (rc)
        return engine_backend_error(e, rc, err, "reduction of the rank-major gradient of %s",
                                    e->model->units[u]->name);
    if (whole || !mics_reports_reductions(&e->mics)) /* else mics.c reported them */
        engine_event(e, ZERO_EV_REDUCE, u, e->reduce.bucket_of_unit[u], coll, s->layout.padded, t0);
    if (e->stage_def->reduce != ZERO_STAGE_ALL_REDUCE || whole)
        return ZERO_OK;
    /* stage 0: every rank needs the whole gradient (in the compute dtype) */
    t0 = engine_now();
    if ((rc = e->be->all_gather(e->bself, mine, s->grads, e->cdt, (size_t)s->layout.shard, NULL)))
        return engine_backend_error(e, rc, err, "all-gather of the rank-major gradient of %s",
                                    e->model->units[u]->name);
    engine_event(e, ZERO_EV_REDUCE, u, e->reduce.bucket_of_unit[u], "all_gather", s->layout.padded,
                 t0);
    return ZERO_OK;
}

/* MiCS / HSDP: shard groups, their gathers, the gradient's path (mics.h). */
#include "mics.h"

#include "engine_internal.h"
#include "zero/backend_groups.h"

/* Opens the group of the ranks that pass the same color and checks its shape. */
static int open_group(struct zero_engine *e, int color, int size, int rank,
                      struct zero_group **group, const char *what, struct zero_error *err)
{
    const struct zero_groups_ops *g = e->be->groups;
    int rc = g->group_open(e->bself, color, group);
    if (rc)
        return engine_backend_error(e, rc, err, "opening the MiCS %s of %d ranks", what, size);
    int got = g->group_size(e->bself, *group), at = g->group_rank(e->bself, *group);
    if (got != size || at != rank)
        return zero_fail(err, ZERO_EBACKEND,
                         "rank %d: the backend's MiCS %s has %d ranks (rank %d in it); expected "
                         "%d (rank %d)",
                         e->rank, what, got, at, size, rank);
    return ZERO_OK;
}

/* Two hops where the shard group spans whole nodes of L ranks (1 < L < M, L | M). */
static int open_hops(struct zero_engine *e, struct zero_error *err)
{
    struct mics_plan *m = &e->mics;
    int l = m->node_group_size, group = e->rank / m->size;
    if (!e->cfg.zero_optimization.mics_hierarchical_params_gather || l <= 1 || l >= m->size ||
        m->size % l != 0)
        return ZERO_OK; /* one node holds the shard group (or the nodes are irregular) */
    int rc = open_group(e, e->rank / l, l, e->rank % l, &m->node_group, "node group", err);
    if (!rc)
        rc = open_group(e, group * l + e->rank % l, m->size / l, m->rank / l, &m->cross_group,
                        "cross-node group", err);
    if (!rc)
        m->hop = l;
    return rc;
}

int mics_open(struct zero_engine *e, struct zero_error *err)
{
    struct mics_plan *m = &e->mics;
    int size = e->cfg.zero_optimization.mics_shard_size;
    *m = (struct mics_plan){.size = e->world, .rank = e->rank, .replicas = 1};
    if (size < 1)
        return ZERO_OK; /* off: the flat layout */
    if (e->be->groups == NULL)
        return zero_fail(err, ZERO_ENOTSUP,
                         "zero_optimization.mics_shard_size = %d: backend '%s' has no groups "
                         "(zero/backend_groups.h), which MiCS's shard groups need",
                         size, e->be->name);
    m->size = size;
    m->rank = e->rank % size;
    m->replicas = e->world / size;
    m->node_group_size = e->be->groups->node_group_size(e->bself);
    int rc = open_group(e, e->rank / size, size, m->rank, &m->shard_group, "shard group", err);
    if (!rc)
        rc = open_group(e, m->rank, m->replicas, e->rank / size, &m->replica_group, "replica group",
                        err);
    if (!rc)
        rc = open_hops(e, err);
    return rc;
}

void mics_close(struct zero_engine *e)
{
    struct mics_plan *m = &e->mics;
    struct zero_group **all[] = {&m->shard_group, &m->replica_group, &m->node_group,
                                 &m->cross_group};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (*all[i] != NULL)
            e->be->groups->group_close(e->bself, *all[i]);
        *all[i] = NULL;
    }
}

int mics_all_gather(struct zero_engine *e, const void *send, void *recv, enum zero_dtype t,
                    size_t count, struct zero_request **req)
{
    const struct mics_plan *m = &e->mics;
    const struct zero_groups_ops *g = e->be->groups;
    if (!mics_on(m))
        return e->be->all_gather(e->bself, send, recv, t, count, req);
    if (m->hop == 0)
        return g->group_all_gather(e->bself, m->shard_group, send, recv, t, count, req);
    /* hop 1, inside the node: its L shards make node p's block (L count) of recv */
    size_t block = (size_t)m->hop * count;
    char *mine = (char *)recv + (size_t)(m->rank / m->hop) * block * zero_dtype_size(t);
    int rc = g->group_all_gather(e->bself, m->node_group, send, mine, t, count, NULL);
    /* hop 2, across the nodes: the P blocks, in place */
    return rc ? rc : g->group_all_gather(e->bself, m->cross_group, mine, recv, t, block, req);
}

int mics_reduces_in_groups(const struct zero_engine *e)
{
    return mics_on(&e->mics) && e->mics.replicas > 1 &&
           e->cfg.libzero.coll_mode == ZERO_COLL_NATIVE;
}

/* Native mode: the backends' own hierarchy. The shard group reduce-scatters its M
 * members' gradients (member j gets the group's sum of shard j), then the replica group
 * all-reduces those R partial sums: the sum over all N ranks, in the library's order.
 * The replica all-reduce stays in flight (req) where the caller overlaps. */
static int reduce_in_groups(struct zero_engine *e, int unit, const void *send, enum zero_dtype st,
                            void *recv, enum zero_dtype rt, size_t count, struct zero_request **req)
{
    const struct zero_groups_ops *g = e->be->groups;
    if (req != NULL)
        *req = NULL; /* nothing in flight until the all-reduce is issued */
    int bucket = e->reduce.bucket_of_unit[unit];
    size_t m = (size_t)e->mics.size;
    double t0 = engine_now();
    int rc =
        g->group_reduce_scatter(e->bself, e->mics.shard_group, send, st, recv, rt, count, NULL);
    if (rc)
        return rc;
    engine_group_event(e, ZERO_EV_REDUCE, unit, bucket, "group_reduce_scatter",
                       (int64_t)(m * count), (int)zero_dtype_size(st), ZERO_EVG_MICS_SHARD, t0);
    struct zero_comm_stats before = e->dev->comm_stats;
    t0 = engine_now();
    rc = g->group_all_reduce(e->bself, e->mics.replica_group, recv, recv, rt, count, req);
    mics_count_replica(e, &before); /* where it completed at issue */
    if (!rc)
        engine_group_event(e, ZERO_EV_REDUCE, unit, bucket, "group_all_reduce", (int64_t)count,
                           (int)zero_dtype_size(rt), ZERO_EVG_MICS_REPLICA, t0);
    return rc;
}

void mics_count_replica(struct zero_engine *e, const struct zero_comm_stats *before)
{
    struct zero_comm_stats *now = &e->dev->comm_stats;
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++) {
        struct zero_coll_counter *c = &now->cross[k];
        const struct zero_coll_counter *g = &now->group[k], *b = &before->group[k];
        c->calls += g->calls - b->calls;
        c->payload_bytes += g->payload_bytes - b->payload_bytes;
        c->sent_bytes += g->sent_bytes - b->sent_bytes;
        c->seconds += g->seconds - b->seconds;
    }
}

int mics_reduce_scatter(struct zero_engine *e, int unit, const void *send, enum zero_dtype st,
                        void *recv, enum zero_dtype rt, size_t count, struct zero_request **req,
                        struct unit_mics *pending)
{
    const struct mics_plan *m = &e->mics;
    if (!mics_on(m) || m->replicas == 1) /* one shard group: the world's reduce-scatter */
        return e->be->reduce_scatter(e->bself, send, st, recv, rt, count, req);
    if (mics_reduces_in_groups(e))
        return reduce_in_groups(e, unit, send, st, recv, rt, count, req);
    int in_flight = req != NULL && pending != NULL; /* else two collectives in sequence */
    if (req != NULL)
        *req = NULL;
    /* send (M count) = N world pieces of c; rank k M + j must receive world piece
     * j R + k, the part k of its shard j: piece j R + k goes to slot k M + j */
    size_t c = count / (size_t)m->replicas, ssize = zero_dtype_size(st),
           rsize = zero_dtype_size(rt);
    void *sent = NULL; /* (N, c) st: the pieces in rank order */
    int rc = e->be->alloc(e->bself, (size_t)e->world * c * ssize, ZERO_TAG_BUCKETS, &sent);
    for (int slot = 0; slot < e->world && !rc; slot++) {
        size_t piece = (size_t)mics_world_piece(m, slot);
        rc = e->be->copy(e->bself, (char *)sent + (size_t)slot * c * ssize,
                         (const char *)send + piece * c * ssize, c * ssize);
    }
    /* this rank's world piece lands as part k of its shard; the replica group (ordered
     * by k) then all-gathers the R parts in place */
    char *part = (char *)recv + (size_t)(e->rank / m->size) * c * rsize;
    struct unit_mics now = {
        .unit = unit, .sent = sent, .part = part, .recv = recv, .type = rt, .part_count = c};
    double t0 = engine_now();
    if (!rc)
        rc = e->be->reduce_scatter(e->bself, sent, st, part, rt, c, in_flight ? req : NULL);
    if (rc) {
        e->be->free(e->bself, sent);
        return rc;
    }
    engine_group_event(e, ZERO_EV_REDUCE, unit, e->reduce.bucket_of_unit[unit], "reduce_scatter",
                       (int64_t)(count * (size_t)m->size), (int)ssize, ZERO_EVG_WORLD, t0);
    if (!in_flight)
        return mics_reduce_finish(e, &now);
    *pending = now; /* sent stays alive while the reduce-scatter reads it */
    return ZERO_OK;
}

int mics_reduce_finish(struct zero_engine *e, struct unit_mics *pending)
{
    if (pending->sent == NULL)
        return ZERO_OK;
    struct unit_mics p = *pending;
    mics_unit_destroy(e, pending);
    struct zero_comm_stats before = e->dev->comm_stats;
    double t0 = engine_now();
    int rc = e->be->groups->group_all_gather(e->bself, e->mics.replica_group, p.part, p.recv,
                                             p.type, p.part_count, NULL);
    mics_count_replica(e, &before); /* blocking: counted at its return */
    if (!rc)                        /* the reduced shard: its R parts */
        engine_group_event(e, ZERO_EV_REDUCE, p.unit, e->reduce.bucket_of_unit[p.unit],
                           "group_all_gather", (int64_t)(p.part_count * (size_t)e->mics.replicas),
                           (int)zero_dtype_size(p.type), ZERO_EVG_MICS_REPLICA, t0);
    return rc;
}

void mics_unit_destroy(struct zero_engine *e, struct unit_mics *pending)
{
    e->be->free(e->bself, pending->sent);
    *pending = (struct unit_mics){0};
}

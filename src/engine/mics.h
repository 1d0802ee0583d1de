/* MiCS / HSDP (mics.c): the model states sharded within a group, replicated across groups.
 *
 * With zero_optimization.mics_shard_size = M (a divisor of N, 1 <= M <= N) the world
 * splits into N/M = R shard groups of M consecutive ranks (k M .. k M + M - 1). Every
 * unit's flat buffer keeps the flat layout's padding (a multiple of N align), but is
 * split into M shards instead of N: rank r holds shard r % M, the same shard as the
 * ranks r % M + k M of the other groups (its replica group). What the stage shards
 * (optimizer states; + gradients; + parameters) is 1/M per rank, and every gather of
 * the shards runs inside the shard group, never across groups.
 *
 * The gradient's sum still runs over all N ranks in the canonical tree: shard j of M is
 * the world shards j R .. j R + R - 1 of N, so a world reduce-scatter whose pieces are
 * sent in the order that hands rank k M + j the world shard j R + k (the owner
 * combines the N ranks' contributions as in every stage) followed by an all-gather
 * inside the replica group puts on every rank its whole shard of the one sum. The
 * hierarchy chooses where the contributions travel, never the order in which they
 * are added: MiCS gives flat ZeRO's and stage 0's bits at every M.
 *
 * Native mode reduces through the groups instead (the backends' own hierarchy): a
 * reduce-scatter inside the shard group, then an all-reduce across the replica group;
 * the sum is the library's, as native mode's always is.
 *
 * mics_hierarchical_params_gather (stage 3): a shard group that spans P nodes of L
 * ranks gathers in two hops: inside the node (the node's L shards, one block), then
 * across the nodes (the P blocks); a copy either way, so the same bits.
 * mics.c alone writes struct mics_plan. */
#ifndef ZERO_ENGINE_MICS_H
#define ZERO_ENGINE_MICS_H

#include <stddef.h>

#include "zero/dtype.h"

struct zero_engine;
struct zero_error;
struct zero_group;
struct zero_request;

struct mics_plan {
    int size;                         /* M: ranks that share one copy of the states; N when off */
    int rank;                         /* this rank's shard: rank % M (rank when off) */
    int replicas;                     /* R = N / M: copies of every state (1 when off) */
    struct zero_group *shard_group;   /* ranks k M .. k M + M - 1 (NULL when off) */
    struct zero_group *replica_group; /* ranks r % M + k M, k = 0 .. R-1 (NULL when off) */
    int hop;                          /* two-hop gathers: L ranks per node; 0 = one hop */
    struct zero_group *node_group;    /* the shard group's L ranks on this node */
    struct zero_group *cross_group;   /* the shard group's ranks of this node-local place */
    int node_group_size;              /* the backend's node split as groups (0: irregular) */
};

/* One unit's reduction whose world reduce-scatter is in flight (overlap_comm): the
 * replica group's all-gather that completes it, once the reduce-scatter is waited. */
struct unit_mics {
    int unit;             /* whose gradient: the replica gather's event */
    void *sent;           /* (N, c) the pieces in rank order, freed at the finish */
    void *part, *recv;    /* the landed part k of recv (count,): gathered in place */
    enum zero_dtype type; /* recv's */
    size_t part_count;    /* c: the part's elements */
};

/* Opens the groups where mics_shard_size is 1 .. N (collective over all ranks);
 * refuses a backend without groups, naming it. M = N holds the flat layout's shards,
 * gathered in the shard group (the world), in two hops where asked. */
int mics_open(struct zero_engine *e, struct zero_error *err);
void mics_close(struct zero_engine *e);
/* 1 when MiCS shards within its groups (mics_shard_size given) */
static inline int mics_on(const struct mics_plan *m)
{
    return m->shard_group != NULL;
}
/* The flat layout's shard (of N) that rank holds as part rank / M of its shard rank % M:
 * the world piece its reduce-scatter receives and its checkpoint file writes (rank when
 * MiCS is off: M = N). */
static inline int mics_world_piece(const struct mics_plan *m, int rank)
{
    return (rank % m->size) * m->replicas + rank / m->size;
}
/* recv (M count) = the shard group's shards (count each, group order); flat: the world
 * all-gather. In place when send == recv + shard index * count. A backend status. */
int mics_all_gather(struct zero_engine *e, const void *send, void *recv, enum zero_dtype t,
                    size_t count, struct zero_request **req);
/* 1 when the gradients are reduced by the groups' own reductions (native mode, more
 * than one shard group): a reduce-scatter in the shard group, then an all-reduce in the
 * replica group, nothing over the world; exact mode keeps the world's canonical tree. */
int mics_reduces_in_groups(const struct zero_engine *e);
/* recv (count, rt) = this rank's shard of the sum over all N ranks of send (M count, st)
 * (unit's gradient: its events)
 * in the canonical order (native mode: the groups' order, mics_reduces_in_groups); flat:
 * the world reduce-scatter. With req and pending the world
 * reduce-scatter stays in flight (req) and mics_reduce_finish completes recv after the
 * wait; else it completes at issue (*req = NULL). A backend status. */
int mics_reduce_scatter(struct zero_engine *e, int unit, const void *send, enum zero_dtype st,
                        void *recv, enum zero_dtype rt, size_t count, struct zero_request **req,
                        struct unit_mics *pending);
/* 1 when mics_reduce_scatter reports its collectives' events itself (more than one
 * shard group: the reduction takes two collectives, each over its own ranks); else the
 * caller reports the world reduce-scatter. */
static inline int mics_reports_reductions(const struct mics_plan *m)
{
    return m->shard_group != NULL && m->replicas > 1;
}
/* The name of a gather of shards in the events: "group_all_gather" with MiCS on (the
 * shard group's), else "all_gather" (the world's). */
static inline const char *mics_gather_name(const struct mics_plan *m)
{
    return m->shard_group != NULL ? "group_all_gather" : "all_gather";
}
/* After the wait for a reduction issued with pending: the replica group's all-gather
 * (nothing when none is pending). A backend status. */
int mics_reduce_finish(struct zero_engine *e, struct unit_mics *pending);
/* Adds what the groups' counters gained since before (the replica group's collective
 * just counted) to the comm stats' cross[], the bytes that cross the shard groups. */
struct zero_comm_stats;
void mics_count_replica(struct zero_engine *e, const struct zero_comm_stats *before);
/* Frees what a reduction left pending (engine teardown, after its wait). */
void mics_unit_destroy(struct zero_engine *e, struct unit_mics *pending);

#endif

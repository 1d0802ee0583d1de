/* ZeRO++ hpZ (hpz.c): a secondary partition of the stage-3 parameters within a group.
 *
 * With zero_optimization.zero_hpz_partition_size = g > 1 the world splits into groups
 * of g consecutive ranks (a node when g is the node's size: the backend's groups,
 * zero/backend_groups.h). Each rank keeps, besides its primary shard (1/N of every
 * unit), a secondary shard: its group rank's 1/g of the unit's whole buffer, in the
 * compute dtype. The forward gathers a unit from the primary shards over all ranks
 * and copies this rank's 1/g of the result into the secondary shard; the backward
 * gathers from the secondary shards inside the group only, so no all-gather crosses
 * between groups in backward. The values are the same parameters either way: hpZ
 * moves bytes, never bits. The secondary shard is derived, never saved, and stale
 * after anything changes the parameters (the update, a load, write_param): an epoch
 * counter says which copies are current. hpz.c alone writes these structs. */
#ifndef ZERO_ENGINE_HPZ_H
#define ZERO_ENGINE_HPZ_H

#include <stdint.h>

struct zero_engine;
struct zero_error;
struct zero_group;
struct zero_request;

struct hpz_plan {
    int size;                 /* g: ranks per group; 1 = hpZ off */
    int rank;                 /* this rank's place in its group */
    struct zero_group *group; /* the backend's sub-communicator (NULL when off) */
    int64_t epoch;            /* bumped whenever the parameters may have changed */
    int node_group;           /* the backend's node split as groups (0: irregular) */
};

/* One unit's secondary shard */
struct unit_hpz {
    void *secondary; /* (cdt) (padded / g,): this group rank's part of the whole buffer */
    int64_t epoch;   /* the plan's epoch when it was filled; current when equal */
};

/* Opens the group where zero_hpz_partition_size > 1 (collective over all ranks);
 * refuses a backend without groups, naming it. */
int hpz_open(struct zero_engine *e, struct zero_error *err);
void hpz_close(struct zero_engine *e);
/* The parameters may have changed: every secondary shard is stale. */
void hpz_params_changed(struct zero_engine *e);
/* 1 when unit u's backward gather may come from its current secondary shard. */
int hpz_can_gather(const struct zero_engine *e, int u);
/* s->stage3.gathered (whole) = the group's secondary shards of u (req as all_gather). */
int hpz_gather(struct zero_engine *e, int u, struct zero_request **req, struct zero_error *err);
/* After a gather from the primary shards completed: this rank's secondary shard of u
 * from the whole buffer (allocated on first use, tagged hpz_secondary). */
int hpz_refresh(struct zero_engine *e, int u, struct zero_error *err);
/* Frees unit u's secondary shard. */
void hpz_unit_destroy(struct zero_engine *e, int u);

#endif

/* Groups: collectives over a subset of the ranks (hierarchical partitioning).
 *
 * ZeRO++'s hpZ and MiCS/HSDP run some collectives inside a group of ranks (a node,
 * or zero_hpz_partition_size / mics_shard_size consecutive ranks) instead of over all
 * of them, because the links inside a node are an order of magnitude faster than the
 * links between nodes. A group is a sub-communicator: the cpu backend's MPI_Comm_split,
 * the cuda backend's ncclCommSplit. Its collectives count into the comm stats'
 * `group` counters (zero/comm_stats.h), so the bytes that stay inside a group are told
 * apart from those that cross between groups.
 *
 * Reached from struct zero_backend's `groups` pointer (zero/backend.h): NULL = the
 * backend has no groups (the engine then refuses the keys that need them, naming the
 * backend); a present group table has every entry (src/base/backend_check.c). */
#ifndef ZERO_BACKEND_GROUPS_H
#define ZERO_BACKEND_GROUPS_H

#include <stddef.h>

#include "zero/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_GROUPS_OPS_VERSION 2 /* 2: group_reduce_scatter, group_all_reduce */

struct zero_group; /* opaque: one backend's sub-communicator */

struct zero_groups_ops {
    int version; /* ZERO_GROUPS_OPS_VERSION */
    /* The node split the backend made at open, as groups: g when every node holds g
     * ranks and node k holds ranks k g .. k g + g - 1 (the same answer on every rank;
     * collective over all ranks); 0 when the nodes differ in size or interleave. */
    int (*node_group_size)(void *self);
    /* Collective over all ranks: the ranks that pass the same color (>= 0) form one
     * group, ordered as in the world. *group is this rank's; rank and size in it are
     * what group_rank and group_size answer. */
    int (*group_open)(void *self, int color, struct zero_group **group);
    void (*group_close)(void *self, struct zero_group *group);
    int (*group_rank)(void *self, const struct zero_group *group);
    int (*group_size)(void *self, const struct zero_group *group);
    /* all_gather over the group's G ranks: recv (G*count) = concatenation of every
     * member's send (count), in group rank order. In place when send == recv +
     * group_rank*count*size. req as the core's collectives (NULL blocks; a backend may
     * complete at issue and hand back NULL). */
    int (*group_all_gather)(void *self, struct zero_group *group, const void *send, void *recv,
                            enum zero_dtype t, size_t count, struct zero_request **req);
    /* The reductions over the group's G ranks, as the world's (zero/backend.h) with the
     * group's rank g in place of r: group rank g receives recv (count, recv_type) = the
     * sum over the members of send[g count .. (g+1) count) (G count, wire_type), in fp32;
     * in place when recv == send + g count size(wire) and the types agree. Exact mode:
     * the owner combines the G members' pieces along the canonical tree over the group
     * ranks (tree.h), rounding once, so the bits do not depend on the transport; native
     * mode: the library's own reduction (MPI_Reduce_scatter_block, ncclReduceScatter). A
     * group reduction is not the world's tree: the engine uses them where the bits may
     * change (MiCS in native mode), never in exact mode's gradient path. req as above. */
    int (*group_reduce_scatter)(void *self, struct zero_group *group, const void *send,
                                enum zero_dtype wire_type, void *recv, enum zero_dtype recv_type,
                                size_t count, struct zero_request **req);
    /* recv (count) = the sum over the members of send (count); send == recv allowed.
     * Exact mode: the group's exact reduce-scatter of nearly equal pieces, then their
     * all-gather; native: MPI_Allreduce, ncclAllReduce. */
    int (*group_all_reduce)(void *self, struct zero_group *group, const void *send, void *recv,
                            enum zero_dtype t, size_t count, struct zero_request **req);
};

#ifdef __cplusplus
}
#endif

#endif

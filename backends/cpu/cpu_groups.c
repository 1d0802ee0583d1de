/* The cpu backend's groups (zero/backend_groups.h): MPI sub-communicators.
 *
 * A group's all-gather is MPI's own on the group's communicator, blocking: a copy,
 * no arithmetic, so exact and native mode are the same bits. It runs on the caller's
 * thread, beside the communication thread's world collectives (their communicators
 * differ, and every member issues its group's calls in the same order). */
#include <stdlib.h>

#include "base/backend_contract.h"
#include "common/backend_mpi.h"
#include "cpu_coll.h"
#include "cpu_internal.h"
#include "zero/backend_groups.h"

struct zero_group {
    MPI_Comm comm;
    int rank, size;
};

static int cpu_node_group_size(void *self)
{
    struct cpu_state *s = self;
    return backend_mpi_node_group_size(s->comm, s->rank, s->size, s->node_rank, s->node_size);
}

static int cpu_group_open(void *self, int color, struct zero_group **group)
{
    struct cpu_state *s = self;
    *group = NULL;
    struct zero_group *g = calloc(1, sizeof *g);
    if (g == NULL)
        return cpu_fail(s, ZERO_ENOMEM, "group_open: out of memory");
    char why[ZERO_ERRMSG_LEN];
    int rc = backend_mpi_split_group("cpu", s->comm, s->rank, color, &g->comm, why, sizeof why);
    if (rc != ZERO_OK) {
        free(g);
        return cpu_fail(s, rc, "%s", why);
    }
    MPI_Comm_rank(g->comm, &g->rank);
    MPI_Comm_size(g->comm, &g->size);
    *group = g;
    return ZERO_OK;
}

static void cpu_group_close(void *self, struct zero_group *group)
{
    (void)self;
    if (group == NULL)
        return;
    if (group->comm != MPI_COMM_NULL)
        MPI_Comm_free(&group->comm);
    free(group);
}

static int cpu_group_rank(void *self, const struct zero_group *group)
{
    (void)self;
    return group->rank;
}

static int cpu_group_size(void *self, const struct zero_group *group)
{
    (void)self;
    return group->size;
}

static int cpu_group_all_gather(void *self, struct zero_group *group, const void *send, void *recv,
                                enum zero_dtype t, size_t count, struct zero_request **req)
{
    struct cpu_state *s = self;
    if (req != NULL)
        *req = NULL; /* completed at issue */
    char why[ZERO_ERRMSG_LEN];
    int rc =
        zero_contract_all_gather(group->rank, group->size, send, recv, t, count, why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(s, rc, "group_all_gather: %s", why);
    size_t n = (size_t)group->size, esize = zero_dtype_size(t);
    if (n * count > (size_t)INT32_MAX)
        return cpu_fail(s, ZERO_ENOTSUP, "group_all_gather: %zu elements exceed MPI's int count",
                        n * count);
    double t0 = MPI_Wtime();
    int in_place = send == (const char *)recv + (size_t)group->rank * count * esize;
    MPI_Datatype type = cpu_mpi_type(t);
    int err = MPI_Allgather(in_place ? MPI_IN_PLACE : send, (int)count, type, recv, (int)count,
                            type, group->comm);
    if (err != MPI_SUCCESS)
        return cpu_mpi_fail(s, "group_all_gather: MPI_Allgather", err);
    struct zero_coll_counter *c = &s->stats->group[ZERO_COLL_ALL_GATHER];
    c->calls++;
    c->payload_bytes += (int64_t)(n * count * esize);
    c->sent_bytes += (int64_t)((n - 1) * count * esize);
    c->seconds += MPI_Wtime() - t0;
    return ZERO_OK;
}

/* MPI_Alltoallv of bytes on the group's communicator, or the caller's duplicate of the
 * world (the communication thread has its own). */
int cpu_all_to_all(void *self, struct zero_group *group, const void *send, const size_t *send_bytes,
                   void *recv, const size_t *recv_bytes)
{
    struct cpu_state *s = self;
    MPI_Comm comm = group != NULL ? group->comm : s->comm;
    int n = group != NULL ? group->size : s->size, me = group != NULL ? group->rank : s->rank;
    if (send_bytes[me] != recv_bytes[me])
        return cpu_fail(s, ZERO_EINVAL, "all_to_all: %zu bytes to itself, %zu from itself",
                        send_bytes[me], recv_bytes[me]);
    int *v = malloc(4 * (size_t)n * sizeof *v); /* send counts, displs, recv counts, displs */
    if (v == NULL)
        return cpu_fail(s, ZERO_ENOMEM, "all_to_all: out of memory for %d ranks", n);
    size_t at_send = 0, at_recv = 0, sent = 0;
    for (int j = 0; j < n; j++) {
        v[j] = (int)send_bytes[j];
        v[n + j] = (int)at_send;
        v[2 * n + j] = (int)recv_bytes[j];
        v[3 * n + j] = (int)at_recv;
        at_send += send_bytes[j];
        at_recv += recv_bytes[j];
        sent += j != me ? send_bytes[j] : 0;
    }
    if (at_send > (size_t)INT32_MAX || at_recv > (size_t)INT32_MAX) {
        free(v);
        return cpu_fail(s, ZERO_ENOTSUP, "all_to_all: %zu bytes exceed MPI's int count",
                        at_send > at_recv ? at_send : at_recv);
    }
    double t0 = MPI_Wtime();
    int err = MPI_Alltoallv(send, v, v + n, MPI_BYTE, recv, v + 2 * n, v + 3 * n, MPI_BYTE, comm);
    free(v);
    if (err != MPI_SUCCESS)
        return cpu_mpi_fail(s, "all_to_all: MPI_Alltoallv", err);
    struct zero_coll_counter *c = group != NULL ? &s->stats->group[ZERO_COLL_ALL_TO_ALL]
                                                : &s->stats->kind[ZERO_COLL_ALL_TO_ALL];
    c->calls++;
    c->payload_bytes += (int64_t)at_send;
    c->sent_bytes += (int64_t)sent;
    c->seconds += MPI_Wtime() - t0;
    return ZERO_OK;
}

const struct zero_groups_ops cpu_groups_ops = {
    .version = ZERO_GROUPS_OPS_VERSION,
    .node_group_size = cpu_node_group_size,
    .group_open = cpu_group_open,
    .group_close = cpu_group_close,
    .group_rank = cpu_group_rank,
    .group_size = cpu_group_size,
    .group_all_gather = cpu_group_all_gather,
};

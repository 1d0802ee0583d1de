/* The cpu backend's groups (zero/backend_groups.h): MPI sub-communicators.
 *
 * A group's all-gather is MPI's own on the group's communicator, blocking: a copy,
 * no arithmetic, so exact and native mode are the same bits. Its reductions: in native
 * mode MPI's (cpu_coll_native.c on the group's communicator); in exact mode MPI_Alltoallv
 * hands each owner the members' pieces of its part and the owner combines them along
 * the canonical tree over the group's ranks (cpu_combine), rounding once, as the world's
 * MPI path does. Every call blocks and runs on the caller's thread, beside the
 * communication thread's world collectives (their communicators differ, and every
 * member issues its group's calls in the same order). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

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

/* Counts one completed group collective (payload and sent bytes as the world's). */
static void count_group(struct cpu_state *s, enum zero_coll_kind kind, size_t payload, size_t sent,
                        double t0)
{
    struct zero_coll_counter *c = &s->stats->group[kind];
    c->calls++;
    c->payload_bytes += (int64_t)payload;
    c->sent_bytes += (int64_t)sent;
    c->seconds += MPI_Wtime() - t0;
}

/* What one exact group reduction moves: member k's part of the buffer is
 * [displ[k], displ[k] + count[k]); staging (G, mine) receives the members' pieces of
 * this rank's part, in group rank order. */
struct group_parts {
    int *counts, *displs, *rcounts, *rdispls; /* (G) each: MPI_Alltoallv's */
    void *staging;
    const void **piece; /* (G) */
    float *scratch;     /* cpu_combine_scratch_floats(G) */
    size_t staging_bytes;
};

static void parts_free(struct cpu_state *s, struct group_parts *p)
{
    zero_ledger_add(s->ledger, ZERO_TAG_COMM, -(int64_t)p->staging_bytes);
    free(p->counts), free(p->displs), free(p->rcounts), free(p->rdispls);
    free(p->staging), free(p->piece), free(p->scratch);
}

/* Splits total elements into the members' parts (the first total % G one larger: the
 * world's cpu_split_even) and sizes the staging for esize-byte elements. */
static int parts_open(struct cpu_state *s, const struct zero_group *g, size_t total, size_t esize,
                      struct group_parts *p, const char *op)
{
    size_t n = (size_t)g->size, base = total / n, extra = total % n;
    size_t mine = base + ((size_t)g->rank < extra);
    *p = (struct group_parts){0};
    if (total > INT_MAX)
        return cpu_fail(s, ZERO_ENOTSUP, "%s: %zu elements exceed the MPI path's limit of INT_MAX",
                        op, total);
    p->counts = malloc(n * sizeof *p->counts);
    p->displs = malloc(n * sizeof *p->displs);
    p->rcounts = malloc(n * sizeof *p->rcounts);
    p->rdispls = malloc(n * sizeof *p->rdispls);
    p->piece = malloc(n * sizeof *p->piece);
    p->scratch = malloc(cpu_combine_scratch_floats(g->size) * sizeof *p->scratch);
    p->staging_bytes = n * mine * esize;
    p->staging = malloc(p->staging_bytes > 0 ? p->staging_bytes : 1);
    zero_ledger_add(s->ledger, ZERO_TAG_COMM, (int64_t)p->staging_bytes);
    if (!p->counts || !p->displs || !p->rcounts || !p->rdispls || !p->piece || !p->scratch ||
        !p->staging) {
        parts_free(s, p);
        return cpu_fail(s, ZERO_ENOMEM, "%s: no memory for the pieces of %d ranks", op, g->size);
    }
    for (size_t k = 0, at = 0; k < n; k++) {
        p->counts[k] = (int)(base + (k < extra));
        p->displs[k] = (int)at;
        p->rcounts[k] = (int)mine;
        p->rdispls[k] = (int)(k * mine);
        at += (size_t)p->counts[k];
    }
    return ZERO_OK;
}

/* Exact: recv (the rank's part, recv_type) = the tree over the members of their pieces of
 * it (send, total elements of wire_type, split as p says). recv may alias send. */
static int exact_reduce_parts(struct cpu_state *s, struct zero_group *g, const void *send,
                              enum zero_dtype wire_type, void *recv, enum zero_dtype recv_type,
                              struct group_parts *p, const char *op)
{
    size_t esize = zero_dtype_size(wire_type), mine = (size_t)p->rcounts[0];
    MPI_Datatype type = cpu_mpi_type(wire_type);
    int err = MPI_Alltoallv(send, p->counts, p->displs, type, p->staging, p->rcounts, p->rdispls,
                            type, g->comm);
    if (err != MPI_SUCCESS)
        return cpu_mpi_fail(s, op, err);
    for (int k = 0; k < g->size; k++)
        p->piece[k] = (const char *)p->staging + (size_t)k * mine * esize;
    cpu_combine(recv, recv_type, p->piece, g->size, wire_type, mine, p->scratch);
    return ZERO_OK;
}

static int cpu_group_reduce_scatter(void *self, struct zero_group *group, const void *send,
                                    enum zero_dtype wire_type, void *recv,
                                    enum zero_dtype recv_type, size_t count,
                                    struct zero_request **req)
{
    struct cpu_state *s = self;
    const char *op = "group_reduce_scatter";
    if (req != NULL)
        *req = NULL; /* completed at issue */
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_reduce_scatter(group->rank, group->size, send, wire_type, recv,
                                          recv_type, count, why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(s, rc, "%s: %s", op, why);
    size_t n = (size_t)group->size, esize = zero_dtype_size(wire_type);
    double t0 = MPI_Wtime();
    if (s->mode == ZERO_COLL_NATIVE) {
        struct zero_request rq = {.mpi = MPI_REQUEST_NULL, .blocking = 1};
        rc = cpu_mpi_check_count(s, op, n * count);
        if (rc == ZERO_OK)
            rc = cpu_native_reduce_scatter(s, group->comm, group->rank, send, wire_type, recv,
                                           recv_type, count, &rq);
        int settled = cpu_request_settle(s, &rq); /* frees the temporary either way */
        rc = rc != ZERO_OK ? rc : settled;
    } else if (count > 0) {
        struct group_parts p;
        rc = parts_open(s, group, n * count, esize, &p, op);
        if (rc == ZERO_OK) {
            rc = exact_reduce_parts(s, group, send, wire_type, recv, recv_type, &p,
                                    "group_reduce_scatter: MPI_Alltoallv");
            parts_free(s, &p);
        }
    }
    if (rc == ZERO_OK)
        count_group(s, ZERO_COLL_REDUCE_SCATTER, n * count * esize, (n - 1) * count * esize, t0);
    return rc;
}

static int cpu_group_all_reduce(void *self, struct zero_group *group, const void *send, void *recv,
                                enum zero_dtype t, size_t count, struct zero_request **req)
{
    struct cpu_state *s = self;
    const char *op = "group_all_reduce";
    if (req != NULL)
        *req = NULL; /* completed at issue */
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_all_reduce(send, recv, t, count, why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(s, rc, "%s: %s", op, why);
    size_t n = (size_t)group->size, esize = zero_dtype_size(t);
    size_t mine = count / n + ((size_t)group->rank < count % n);
    double t0 = MPI_Wtime();
    if (s->mode == ZERO_COLL_NATIVE) {
        struct zero_request rq = {.mpi = MPI_REQUEST_NULL, .blocking = 1};
        rc = cpu_mpi_check_count(s, op, count);
        if (rc == ZERO_OK)
            rc = cpu_native_all_reduce(s, group->comm, send, recv, t, count, &rq);
    } else if (count > 0) {
        /* the owners' exact sums of their parts, then the parts' all-gather in place */
        struct group_parts p;
        rc = parts_open(s, group, count, esize, &p, op);
        if (rc != ZERO_OK)
            return rc;
        char *part = (char *)recv + (size_t)p.displs[group->rank] * esize;
        rc = exact_reduce_parts(s, group, send, t, part, t, &p, "group_all_reduce: MPI_Alltoallv");
        int err = MPI_SUCCESS;
        if (rc == ZERO_OK)
            err = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, p.counts, p.displs,
                                 cpu_mpi_type(t), group->comm);
        parts_free(s, &p);
        if (err != MPI_SUCCESS)
            rc = cpu_mpi_fail(s, "group_all_reduce: MPI_Allgatherv", err);
    }
    if (rc == ZERO_OK) /* the world's all-reduce's volume: the reduce-scatter, the gather */
        count_group(s, ZERO_COLL_ALL_REDUCE, count * esize, (count - mine + (n - 1) * mine) * esize,
                    t0);
    return rc;
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
    .group_reduce_scatter = cpu_group_reduce_scatter,
    .group_all_reduce = cpu_group_all_reduce,
};

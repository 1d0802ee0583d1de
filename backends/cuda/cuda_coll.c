/* The cuda backend's collectives: argument checks (the cpu backend's messages), comm
 * stats, requests, and the NCCL paths; the host-staged test mode is cuda_staged.c.
 *
 * Streams: every collective first makes the comm stream wait for the work queued on
 * the compute stream (its input is ready), then queues its NCCL calls and kernels on
 * the comm stream and records a `done' event there. wait() makes the compute stream
 * wait for that event; the host never blocks. A blocking call (req == NULL) does the
 * same at once: later kernels, copies and to_host see its result.
 *
 * Modes (NCCL):
 *   native  ncclReduceScatter / ncclAllReduce: NCCL's own order of additions.
 *   exact   the owner combine of docs/design.md: grouped ncclSend/ncclRecv hand each owner the
 *           peers' pieces of its shard (each rank sends (N-1)/N of the buffer once, the
 *           bytes of a ring reduce-scatter), then a kernel sums the N pieces along the
 *           canonical tree in fp32 and rounds once: the cpu backend's exact bits.
 *           all_reduce = exact reduce-scatter of nearly equal pieces + grouped gather.
 *   all_gather and broadcast are plain copies, the same in both modes.
 *
 * Comm stats are counted as the cpu backend counts them (see backends/cpu/cpu_coll.c)
 * when an operation completes from the caller's view (blocking return, or wait). The
 * seconds are device time from the start to the done event; they are read without
 * blocking when the event has completed, else at the next synchronize(). */
#include <stdlib.h>
#include <string.h>

#include "base/backend_contract.h"
#include "common/backend_mpi.h"
#include "zero/backend_groups.h"
#include "cuda_launch.h"
#include "cuda_ops.h"

/* What a struct zero_request * points at in this backend. */
struct cuda_request {
    enum zero_coll_kind kind;
    int64_t payload_bytes, sent_bytes;
    int counted;             /* stats already recorded (host-staged: done at issue) */
    cudaEvent_t start, done; /* NULL on the host-staged path; start NULL in a capture */
    int64_t capture;         /* the capture it was issued in (s->capture_gen), 0: none */
    int group;               /* over a group (backend_groups.h): counted in stats->group */
};

/* The counter a request adds to. */
static struct zero_coll_counter *request_counter(struct cuda_state *s,
                                                 const struct cuda_request *rq)
{
    return rq->group ? &s->stats->group[rq->kind] : &s->stats->kind[rq->kind];
}

/* ---- requests ---- */

static void request_count(struct cuda_state *s, struct cuda_request *rq)
{
    if (rq->counted)
        return;
    struct zero_coll_counter *c = request_counter(s, rq);
    c->calls++;
    c->payload_bytes += rq->payload_bytes;
    c->sent_bytes += rq->sent_bytes;
    rq->counted = 1;
    if (rq->done != NULL && rq->start == NULL) /* captured: not timed (cuda_graph.c) */
        cudaEventDestroy(rq->done);
    else if (rq->done != NULL)
        cuda_coll_timing_add(s, rq->start, rq->done, request_counter(s, rq));
    rq->start = rq->done = NULL;
}

/* Whether the compute stream must wait for rq's event now. A request of an ended
 * capture needs none (the capture ended with compute waiting for comm), nor does an
 * eager one waited inside a capture (compute waited for comm before the capture began),
 * and an event of one capture cannot be waited for outside it. */
static int needs_wait(const struct cuda_state *s, const struct cuda_request *rq)
{
    if (rq->done == NULL)
        return 0;
    if (rq->capture != 0)
        return s->capturing && rq->capture == s->capture_gen;
    return !s->capturing;
}

/* Makes the compute stream wait for rq and counts it. */
static int request_complete(struct cuda_state *s, struct cuda_request *rq)
{
    int rc = ZERO_OK;
    if (needs_wait(s, rq))
        rc = cuda_check(s, cudaStreamWaitEvent(s->compute, rq->done, 0),
                        "wait: cudaStreamWaitEvent");
    request_count(s, rq);
    /* no event is queried inside a capture: the times are read after it */
    int rc2 = s->capturing ? ZERO_OK : cuda_coll_timing_harvest(s, 0);
    return rc != ZERO_OK ? rc : rc2;
}

/* Hands rq to the caller (req != NULL) or completes it now. */
static int request_finish(struct cuda_state *s, struct cuda_request *rq, struct zero_request **req)
{
    if (req == NULL)
        return request_complete(s, rq);
    struct cuda_request *h = malloc(sizeof(*h));
    if (h == NULL) {
        int rc = request_complete(s, rq);
        (void)rc;
        return cuda_fail(s, ZERO_ENOMEM,
                         "%s: no memory for a request handle (the operation did complete)",
                         zero_coll_kind_name(rq->kind));
    }
    *h = *rq;
    *req = (struct zero_request *)h;
    return ZERO_OK;
}

int cuda_wait(void *self, struct zero_request *req)
{
    struct cuda_state *s = self;
    if (req == NULL)
        return ZERO_OK;
    struct cuda_request *rq = (struct cuda_request *)req;
    int rc = request_complete(s, rq);
    free(rq);
    return rc;
}

int cuda_wait_timed(void *self, struct zero_request *req, double *done_ago)
{
    *done_ago = 0.0;
    return cuda_wait(self, req);
}

/* rank r's piece of `total` split as evenly as possible over n ranks (the world's or a
 * group's, n <= s->size): the first total % n get one more */
static void split_even(struct cuda_state *s, int n, size_t total)
{
    size_t base = total / (size_t)n, extra = total % (size_t)n, at = 0;
    for (int r = 0; r < n; r++) {
        s->split_count[r] = base + ((size_t)r < extra);
        s->split_displ[r] = at;
        at += s->split_count[r];
    }
}

static void split_equal(struct cuda_state *s, int n, size_t count)
{
    for (int r = 0; r < n; r++) {
        s->split_count[r] = count;
        s->split_displ[r] = (size_t)r * count;
    }
}

/* ---- host-staged path (cuda_staged.c) ---- */

/* The inner cpu backend counted it; the caller still gets a handle to wait on. */
static int staged_finish(struct cuda_state *s, enum zero_coll_kind kind, int rc,
                         struct zero_request **req)
{
    if (rc != ZERO_OK || req == NULL)
        return rc;
    struct cuda_request rq = {.kind = kind, .counted = 1};
    return request_finish(s, &rq, req);
}

/* ---- NCCL paths ---- */

#ifdef ZERO_HAVE_NCCL
static int nccl_check(struct cuda_state *s, ncclResult_t r, const char *what)
{
    if (r == ncclSuccess)
        return ZERO_OK;
    return cuda_fail(s, ZERO_ECOMM, "%s: NCCL error %d (%s): %s", what, (int)r,
                     ncclGetErrorString(r), ncclGetLastError(s->nccl));
}

static ncclDataType_t nccl_type(enum zero_dtype t)
{
    switch (t) {
    case ZERO_F16:
        return ncclFloat16;
    case ZERO_BF16:
        return ncclBfloat16;
    case ZERO_F64:
        return ncclFloat64;
    case ZERO_I32:
        return ncclInt32;
    case ZERO_I64:
        return ncclInt64;
    default:
        return ncclFloat32;
    }
}

/* Orders the comm stream after compute, creates the request's events, records start. */
static int nccl_begin(struct cuda_state *s, struct cuda_request *rq, enum zero_coll_kind kind,
                      int64_t payload, int64_t sent)
{
    memset(rq, 0, sizeof(*rq));
    rq->kind = kind;
    rq->payload_bytes = payload;
    rq->sent_bytes = sent;
    int rc = s->capturing ? ZERO_OK : cuda_coll_timing_harvest(s, 0);
    if (rc == ZERO_OK)
        rc = cuda_comm_after_compute(s, zero_coll_kind_name(kind));
    cudaError_t e = cudaSuccess;
    if (rc == ZERO_OK && s->capturing) { /* only the completion, for the waits: not timed */
        rq->capture = s->capture_gen;
        e = cudaEventCreateWithFlags(&rq->done, cudaEventDisableTiming);
    } else if (rc == ZERO_OK && (e = cudaEventCreate(&rq->start)) == cudaSuccess &&
               (e = cudaEventCreate(&rq->done)) == cudaSuccess)
        e = cudaEventRecord(rq->start, s->comm_stream);
    if (rc == ZERO_OK)
        rc = cuda_check(s, e, zero_coll_kind_name(kind));
    return rc;
}

static int nccl_end(struct cuda_state *s, struct cuda_request *rq, int rc,
                    struct zero_request **req)
{
    if (rc == ZERO_OK)
        rc =
            cuda_check(s, cudaEventRecord(rq->done, s->comm_stream), zero_coll_kind_name(rq->kind));
    if (rc != ZERO_OK) {
        if (rq->start != NULL)
            cudaEventDestroy(rq->start);
        if (rq->done != NULL)
            cudaEventDestroy(rq->done);
        return rc;
    }
    return request_finish(s, rq, req);
}

/* The ranks a collective runs over: the world's communicator or a group's. */
struct nccl_ranks {
    ncclComm_t comm;
    int rank, size;
};

static struct nccl_ranks world_ranks(const struct cuda_state *s)
{
    return (struct nccl_ranks){s->nccl, s->rank, s->size};
}

/* Exact reduce-scatter over the current split (s->split_count/displ, `total` elements)
 * of the ranks w: grouped send/recv of the pieces, then the tree combine into recv. */
static int nccl_exact_reduce_scatter(struct cuda_state *s, struct nccl_ranks w, const void *send,
                                     enum zero_dtype wire_type, void *recv,
                                     enum zero_dtype recv_type, size_t total)
{
    const int n = w.size, me = w.rank;
    const size_t esize = zero_dtype_size(wire_type), mine = s->split_count[me];
    const char *in = send;
    if (total == 0)
        return ZERO_OK;
    int rc = cuda_buffer_grow(s, &s->pieces, &s->pieces_bytes, (size_t)(n - 1) * mine * esize,
                              ZERO_TAG_COMM, "reduce_scatter: peers' pieces");
    if (rc != ZERO_OK)
        return rc;
    char *pieces = s->pieces;
    if (n > 1) {
        ncclResult_t r = ncclGroupStart();
        for (int p = 0; p < n && r == ncclSuccess; p++) {
            if (p == me)
                continue;
            size_t theirs = s->split_count[p];
            if (theirs > 0)
                r = ncclSend(in + s->split_displ[p] * esize, theirs * esize, ncclUint8, p, w.comm,
                             s->comm_stream);
            if (r == ncclSuccess && mine > 0)
                r = ncclRecv(pieces + (size_t)(p < me ? p : p - 1) * mine * esize, mine * esize,
                             ncclUint8, p, w.comm, s->comm_stream);
        }
        ncclResult_t end = ncclGroupEnd();
        rc = nccl_check(s, r != ncclSuccess ? r : end, "reduce_scatter: ncclSend/ncclRecv");
        if (rc != ZERO_OK)
            return rc;
    }
    return cuda_check(s,
                      cuda_launch_combine(s->comm_stream, recv, recv_type,
                                          in + s->split_displ[me] * esize, pieces, wire_type, n, me,
                                          mine),
                      "reduce_scatter: combine");
}

/* recv (total) = every rank's piece of the current split over w, gathered (own piece in
 * place) */
static int nccl_gather_pieces(struct cuda_state *s, struct nccl_ranks w, void *recv, size_t esize)
{
    const int me = w.rank;
    char *out = recv;
    ncclResult_t r = ncclGroupStart();
    for (int p = 0; p < w.size && r == ncclSuccess; p++) {
        if (p == me)
            continue;
        if (s->split_count[me] > 0)
            r = ncclSend(out + s->split_displ[me] * esize, s->split_count[me] * esize, ncclUint8, p,
                         w.comm, s->comm_stream);
        if (r == ncclSuccess && s->split_count[p] > 0)
            r = ncclRecv(out + s->split_displ[p] * esize, s->split_count[p] * esize, ncclUint8, p,
                         w.comm, s->comm_stream);
    }
    ncclResult_t end = ncclGroupEnd();
    return nccl_check(s, r != ncclSuccess ? r : end, "all_reduce: gather of the pieces");
}

/* The world's reduce-scatter (group 0) or a group's (group 1: w is the group's ranks,
 * counted in stats->group). */
static int nccl_reduce_scatter(struct cuda_state *s, struct nccl_ranks w, int group,
                               const void *send, enum zero_dtype wire_type, void *recv,
                               enum zero_dtype recv_type, size_t count, struct zero_request **req)
{
    size_t n = (size_t)w.size, wsize = zero_dtype_size(wire_type);
    struct cuda_request rq;
    int rc = nccl_begin(s, &rq, ZERO_COLL_REDUCE_SCATTER, (int64_t)(n * count * wsize),
                        (int64_t)((n - 1) * count * wsize));
    rq.group = group;
    if (rc == ZERO_OK && s->mode == ZERO_COLL_EXACT) {
        split_equal(s, w.size, count);
        rc = nccl_exact_reduce_scatter(s, w, send, wire_type, recv, recv_type, n * count);
    } else if (rc == ZERO_OK && count > 0) {
        void *dst = recv;
        if (recv_type != wire_type) /* NCCL knows no type change: through a temporary */
            rc = cuda_buffer_grow(s, &s->wire_tmp, &s->wire_tmp_bytes, count * wsize, ZERO_TAG_COMM,
                                  "reduce_scatter: temporary");
        if (rc == ZERO_OK && recv_type != wire_type)
            dst = s->wire_tmp;
        if (rc == ZERO_OK)
            rc = nccl_check(s,
                            ncclReduceScatter(send, dst, count, nccl_type(wire_type), ncclSum,
                                              w.comm, s->comm_stream),
                            "reduce_scatter: ncclReduceScatter");
        if (rc == ZERO_OK && dst != recv)
            rc = cuda_check(s,
                            cuda_launch_cast(s->comm_stream, recv, recv_type, dst, wire_type, 1,
                                             count, count, count),
                            "reduce_scatter: conversion to the recv type");
    }
    return nccl_end(s, &rq, rc, req);
}

/* The world's all-reduce (group 0) or a group's (group 1), as nccl_reduce_scatter. */
static int nccl_all_reduce(struct cuda_state *s, struct nccl_ranks w, int group, const void *send,
                           void *recv, enum zero_dtype t, size_t count, struct zero_request **req)
{
    size_t esize = zero_dtype_size(t);
    split_even(s, w.size, count);
    size_t mine = s->split_count[w.rank];
    int64_t sent = (int64_t)((count - mine + (size_t)(w.size - 1) * mine) * esize);
    struct cuda_request rq;
    int rc = nccl_begin(s, &rq, ZERO_COLL_ALL_REDUCE, (int64_t)(count * esize), sent);
    rq.group = group;
    if (rc == ZERO_OK && s->mode == ZERO_COLL_EXACT) {
        char *my_piece = (char *)recv + s->split_displ[w.rank] * esize;
        rc = nccl_exact_reduce_scatter(s, w, send, t, my_piece, t, count);
        if (rc == ZERO_OK && count > 0 && w.size > 1)
            rc = nccl_gather_pieces(s, w, recv, esize);
    } else if (rc == ZERO_OK && count > 0) {
        rc = nccl_check(
            s, ncclAllReduce(send, recv, count, nccl_type(t), ncclSum, w.comm, s->comm_stream),
            "all_reduce: ncclAllReduce");
    }
    return nccl_end(s, &rq, rc, req);
}

static int nccl_all_gather(struct cuda_state *s, const void *send, void *recv, enum zero_dtype t,
                           size_t count, struct zero_request **req)
{
    size_t n = (size_t)s->size, esize = zero_dtype_size(t);
    struct cuda_request rq;
    int rc = nccl_begin(s, &rq, ZERO_COLL_ALL_GATHER, (int64_t)(n * count * esize),
                        (int64_t)((n - 1) * count * esize));
    if (rc == ZERO_OK && count > 0)
        rc = nccl_check(
            s, ncclAllGather(send, recv, count * esize, ncclUint8, s->nccl, s->comm_stream),
            "all_gather: ncclAllGather");
    return nccl_end(s, &rq, rc, req);
}

static int nccl_broadcast(struct cuda_state *s, void *buf, enum zero_dtype t, size_t count,
                          int root, struct zero_request **req)
{
    size_t bytes = count * zero_dtype_size(t);
    struct cuda_request rq;
    int rc = nccl_begin(s, &rq, ZERO_COLL_BROADCAST, (int64_t)bytes,
                        s->rank == root && s->size > 1 ? (int64_t)bytes : 0);
    if (rc == ZERO_OK && count > 0)
        rc = nccl_check(s, ncclBroadcast(buf, buf, bytes, ncclUint8, root, s->nccl, s->comm_stream),
                        "broadcast: ncclBroadcast");
    return nccl_end(s, &rq, rc, req);
}
#endif /* ZERO_HAVE_NCCL */

/* ---- the table's entries ---- */

int cuda_reduce_scatter(void *self, const void *send, enum zero_dtype wire_type, void *recv,
                        enum zero_dtype recv_type, size_t count, struct zero_request **req)
{
    struct cuda_state *s = self;
    if (req != NULL)
        *req = NULL;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_reduce_scatter(s->rank, s->size, send, wire_type, recv, recv_type, count,
                                          why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    if (s->comm_kind == CUDA_COMM_MPI)
        return staged_finish(s, ZERO_COLL_REDUCE_SCATTER,
                             cuda_staged_reduce_scatter(s, send, wire_type, recv, recv_type, count),
                             req);
#ifdef ZERO_HAVE_NCCL
    return nccl_reduce_scatter(s, world_ranks(s), 0, send, wire_type, recv, recv_type, count, req);
#else
    return cuda_fail(s, ZERO_ENOTSUP, "reduce_scatter: built without NCCL");
#endif
}

int cuda_all_reduce(void *self, const void *send, void *recv, enum zero_dtype t, size_t count,
                    struct zero_request **req)
{
    struct cuda_state *s = self;
    if (req != NULL)
        *req = NULL;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_all_reduce(send, recv, t, count, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    if (s->comm_kind == CUDA_COMM_MPI)
        return staged_finish(s, ZERO_COLL_ALL_REDUCE,
                             cuda_staged_all_reduce(s, send, recv, t, count), req);
#ifdef ZERO_HAVE_NCCL
    return nccl_all_reduce(s, world_ranks(s), 0, send, recv, t, count, req);
#else
    return cuda_fail(s, ZERO_ENOTSUP, "all_reduce: built without NCCL");
#endif
}

int cuda_all_gather(void *self, const void *send, void *recv, enum zero_dtype t, size_t count,
                    struct zero_request **req)
{
    struct cuda_state *s = self;
    if (req != NULL)
        *req = NULL;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_all_gather(s->rank, s->size, send, recv, t, count, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    if (s->comm_kind == CUDA_COMM_MPI)
        return staged_finish(s, ZERO_COLL_ALL_GATHER,
                             cuda_staged_all_gather(s, send, recv, t, count), req);
#ifdef ZERO_HAVE_NCCL
    return nccl_all_gather(s, send, recv, t, count, req);
#else
    return cuda_fail(s, ZERO_ENOTSUP, "all_gather: built without NCCL");
#endif
}

int cuda_broadcast(void *self, void *buf, enum zero_dtype t, size_t count, int root,
                   struct zero_request **req)
{
    struct cuda_state *s = self;
    if (req != NULL)
        *req = NULL;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_broadcast(s->size, buf, t, count, root, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    if (s->comm_kind == CUDA_COMM_MPI)
        return staged_finish(s, ZERO_COLL_BROADCAST, cuda_staged_broadcast(s, buf, t, count, root),
                             req);
#ifdef ZERO_HAVE_NCCL
    return nccl_broadcast(s, buf, t, count, root, req);
#else
    return cuda_fail(s, ZERO_ENOTSUP, "broadcast: built without NCCL");
#endif
}

/* Both streams drained, then every rank meets. */
int cuda_barrier(void *self)
{
    struct cuda_state *s = self;
    int rc = cuda_synchronize(s);
    if (rc != ZERO_OK)
        return rc;
    if (s->comm_kind == CUDA_COMM_MPI)
        return cuda_staged_barrier(s);
    int err = MPI_Barrier(s->comm);
    return err == MPI_SUCCESS ? ZERO_OK : cuda_fail(s, ZERO_ECOMM, "barrier: MPI_Barrier failed");
}

/* Control plane over MPI, counted as the cpu backend counts it. */
int cuda_host_all_gather(void *self, const void *send_host, void *recv_host, size_t bytes)
{
    struct cuda_state *s = self;
    const char *op = "host_all_gather";
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_host_all_gather(send_host, recv_host, bytes, why, sizeof why);
    if (rc != ZERO_OK)
        rc = cuda_fail(s, rc, "%s", why);
    if (rc != ZERO_OK)
        return rc;
    if (s->comm_kind == CUDA_COMM_MPI)
        return cuda_staged_host_all_gather(s, send_host, recv_host, bytes);
    size_t n = (size_t)s->size;
    if (n * bytes > (size_t)INT32_MAX)
        return cuda_fail(s, ZERO_ENOTSUP, "%s: %zu elements exceed MPI's int count", op, n * bytes);
    int in_place = send_host == (const char *)recv_host + (size_t)s->rank * bytes;
    double t0 = MPI_Wtime();
    int err = MPI_Allgather(in_place ? MPI_IN_PLACE : send_host, (int)bytes, MPI_BYTE, recv_host,
                            (int)bytes, MPI_BYTE, s->comm);
    if (err != MPI_SUCCESS)
        return cuda_fail(s, ZERO_ECOMM, "%s: MPI_Allgather failed", op);
    struct zero_coll_counter *c = &s->stats->kind[ZERO_COLL_CONTROL];
    c->calls++;
    c->payload_bytes += (int64_t)(n * bytes);
    c->sent_bytes += (int64_t)((n - 1) * bytes);
    c->seconds += MPI_Wtime() - t0;
    return ZERO_OK;
}

/* ---- groups (zero/backend_groups.h): NCCL communicators split from ours ---- */

struct zero_group {
    MPI_Comm comm; /* the same ranks in MPI: rank and size, and the split's agreement */
    int rank, size;
#ifdef ZERO_HAVE_NCCL
    ncclComm_t nccl; /* ncclCommSplit of s->nccl */
#endif
};

static int cuda_node_group_size(void *self)
{
    struct cuda_state *s = self;
    return backend_mpi_node_group_size(s->comm, s->rank, s->size, s->local_rank, s->local_size);
}

static void cuda_group_close(void *self, struct zero_group *group)
{
    (void)self;
    if (group == NULL)
        return;
#ifdef ZERO_HAVE_NCCL
    if (group->nccl != NULL)
        ncclCommDestroy(group->nccl);
#endif
    if (group->comm != MPI_COMM_NULL)
        MPI_Comm_free(&group->comm);
    free(group);
}

static int cuda_group_open(void *self, int color, struct zero_group **group)
{
    struct cuda_state *s = self;
    *group = NULL;
    if (s->comm_kind != CUDA_COMM_NCCL)
        return cuda_fail(s, ZERO_ENOTSUP,
                         "group_open: groups need NCCL (the host-staged collectives have none)");
    struct zero_group *g = calloc(1, sizeof *g);
    if (g == NULL)
        return cuda_fail(s, ZERO_ENOMEM, "group_open: out of memory");
    char why[ZERO_ERRMSG_LEN];
    int rc = backend_mpi_split_group("cuda", s->comm, s->rank, color, &g->comm, why, sizeof why);
    if (rc != ZERO_OK) {
        free(g);
        return cuda_fail(s, rc, "%s", why);
    }
    MPI_Comm_rank(g->comm, &g->rank);
    MPI_Comm_size(g->comm, &g->size);
#ifdef ZERO_HAVE_NCCL
    /* collective over s->nccl: every rank calls it, in the same order as MPI's split */
    if ((rc = nccl_check(s, ncclCommSplit(s->nccl, color, s->rank, &g->nccl, NULL),
                         "group_open: ncclCommSplit"))) {
        cuda_group_close(self, g);
        return rc;
    }
#endif
    *group = g;
    return ZERO_OK;
}

static int cuda_group_rank(void *self, const struct zero_group *group)
{
    (void)self;
    return group->rank;
}

static int cuda_group_size(void *self, const struct zero_group *group)
{
    (void)self;
    return group->size;
}

/* The group's all-gather: NCCL's on the comm stream, like the world's (a copy: the
 * same bits in exact and native mode). */
static int cuda_group_all_gather(void *self, struct zero_group *group, const void *send, void *recv,
                                 enum zero_dtype t, size_t count, struct zero_request **req)
{
    struct cuda_state *s = self;
    if (req != NULL)
        *req = NULL;
    char why[ZERO_ERRMSG_LEN];
    int rc =
        zero_contract_all_gather(group->rank, group->size, send, recv, t, count, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "group_all_gather: %s", why);
#ifdef ZERO_HAVE_NCCL
    size_t n = (size_t)group->size, esize = zero_dtype_size(t);
    struct cuda_request rq;
    rc = nccl_begin(s, &rq, ZERO_COLL_ALL_GATHER, (int64_t)(n * count * esize),
                    (int64_t)((n - 1) * count * esize));
    rq.group = 1;
    if (rc == ZERO_OK && count > 0)
        rc = nccl_check(
            s, ncclAllGather(send, recv, count * esize, ncclUint8, group->nccl, s->comm_stream),
            "group_all_gather: ncclAllGather");
    return nccl_end(s, &rq, rc, req);
#else
    (void)send, (void)recv, (void)count;
    return cuda_fail(s, ZERO_ENOTSUP, "group_all_gather: built without NCCL");
#endif
}

/* The group's reductions: the world's code on the group's communicator (exact mode's
 * owner combine over the group's ranks, or NCCL's own), queued on the comm stream. */
static int cuda_group_reduce_scatter(void *self, struct zero_group *group, const void *send,
                                     enum zero_dtype wire_type, void *recv,
                                     enum zero_dtype recv_type, size_t count,
                                     struct zero_request **req)
{
    struct cuda_state *s = self;
    if (req != NULL)
        *req = NULL;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_reduce_scatter(group->rank, group->size, send, wire_type, recv,
                                          recv_type, count, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "group_reduce_scatter: %s", why);
#ifdef ZERO_HAVE_NCCL
    struct nccl_ranks w = {group->nccl, group->rank, group->size};
    return nccl_reduce_scatter(s, w, 1, send, wire_type, recv, recv_type, count, req);
#else
    (void)send, (void)recv, (void)count;
    return cuda_fail(s, ZERO_ENOTSUP, "group_reduce_scatter: built without NCCL");
#endif
}

static int cuda_group_all_reduce(void *self, struct zero_group *group, const void *send, void *recv,
                                 enum zero_dtype t, size_t count, struct zero_request **req)
{
    struct cuda_state *s = self;
    if (req != NULL)
        *req = NULL;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_all_reduce(send, recv, t, count, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "group_all_reduce: %s", why);
#ifdef ZERO_HAVE_NCCL
    struct nccl_ranks w = {group->nccl, group->rank, group->size};
    return nccl_all_reduce(s, w, 1, send, recv, t, count, req);
#else
    (void)send, (void)recv, (void)count;
    return cuda_fail(s, ZERO_ENOTSUP, "group_all_reduce: built without NCCL");
#endif
}

/* The quant group's all-to-all (zero/backend_quant.h): grouped ncclSend/ncclRecv of
 * bytes on the group's communicator or the world's, this rank's own part a copy, all on
 * the comm stream; blocking. */
int cuda_all_to_all(void *self, struct zero_group *group, const void *send,
                    const size_t *send_bytes, void *recv, const size_t *recv_bytes)
{
    struct cuda_state *s = self;
    int n = group != NULL ? group->size : s->size, me = group != NULL ? group->rank : s->rank;
    if (send_bytes[me] != recv_bytes[me])
        return cuda_fail(s, ZERO_EINVAL, "all_to_all: %zu bytes to itself, %zu from itself",
                         send_bytes[me], recv_bytes[me]);
#ifdef ZERO_HAVE_NCCL
    if (s->comm_kind != CUDA_COMM_NCCL)
        return cuda_fail(s, ZERO_ENOTSUP, "all_to_all: needs NCCL (not the host-staged path)");
    ncclComm_t comm = group != NULL ? group->nccl : s->nccl;
    size_t payload = 0, sent = 0;
    for (int j = 0; j < n; j++) {
        payload += send_bytes[j];
        sent += j != me ? send_bytes[j] : 0;
    }
    struct cuda_request rq;
    int rc = nccl_begin(s, &rq, ZERO_COLL_ALL_TO_ALL, (int64_t)payload, (int64_t)sent);
    rq.group = group != NULL;
    const char *out = send;
    char *in = recv;
    size_t at_send = 0, at_recv = 0;
    ncclResult_t r = ncclSuccess;
    int started = rc == ZERO_OK;
    if (started)
        r = ncclGroupStart();
    for (int j = 0; j < n && rc == ZERO_OK && r == ncclSuccess; j++) {
        if (j == me && send_bytes[j] > 0)
            rc = cuda_check(s,
                            cudaMemcpyAsync(in + at_recv, out + at_send, send_bytes[j],
                                            cudaMemcpyDeviceToDevice, s->comm_stream),
                            "all_to_all: own part");
        else if (j != me && send_bytes[j] > 0)
            r = ncclSend(out + at_send, send_bytes[j], ncclUint8, j, comm, s->comm_stream);
        if (j != me && r == ncclSuccess && recv_bytes[j] > 0)
            r = ncclRecv(in + at_recv, recv_bytes[j], ncclUint8, j, comm, s->comm_stream);
        at_send += send_bytes[j];
        at_recv += recv_bytes[j];
    }
    if (started) {
        ncclResult_t end = ncclGroupEnd();
        int nrc = nccl_check(s, r != ncclSuccess ? r : end, "all_to_all: ncclSend/ncclRecv");
        rc = rc != ZERO_OK ? rc : nrc;
    }
    return nccl_end(s, &rq, rc, NULL);
#else
    (void)send, (void)send_bytes, (void)recv, (void)recv_bytes, (void)n, (void)me;
    return cuda_fail(s, ZERO_ENOTSUP, "all_to_all: built without NCCL");
#endif
}

const struct zero_groups_ops cuda_groups_ops = {
    .version = ZERO_GROUPS_OPS_VERSION,
    .node_group_size = cuda_node_group_size,
    .group_open = cuda_group_open,
    .group_close = cuda_group_close,
    .group_rank = cuda_group_rank,
    .group_size = cuda_group_size,
    .group_all_gather = cuda_group_all_gather,
    .group_reduce_scatter = cuda_group_reduce_scatter,
    .group_all_reduce = cuda_group_all_reduce,
};

/* ---- lifetime ---- */

int cuda_coll_init(struct cuda_state *s)
{
    s->split_count = calloc((size_t)s->size, sizeof(size_t));
    s->split_displ = calloc((size_t)s->size, sizeof(size_t));
    if (s->split_count == NULL || s->split_displ == NULL || cuda_coll_timing_open(s) != 0)
        return cuda_fail(s, ZERO_ENOMEM, "collectives init: out of memory for %d ranks", s->size);
    return ZERO_OK;
}

void cuda_coll_fini(struct cuda_state *s)
{
    cuda_coll_timing_close(s);
    cuda_buffer_free(s, &s->pieces, &s->pieces_bytes, ZERO_TAG_COMM);
    cuda_buffer_free(s, &s->wire_tmp, &s->wire_tmp_bytes, ZERO_TAG_COMM);
    free(s->split_count);
    free(s->split_displ);
    s->split_count = s->split_displ = NULL;
}

/* The cpu backend's collectives as the backend table sees them: argument checks, comm
 * stats, requests and the choice between exact and native mode. The data movement lives
 * in cpu_coll_exact.c (owner combines), cpu_coll_native.c (MPI reductions) and here for
 * the plain copies (broadcast, and all-gather across nodes or in native mode: MPI's own;
 * exact mode's all-gather on one node goes through the window, cpu_coll_gather.c).
 *
 * Non-blocking calls: native mode issues MPI_I* operations and wait() completes them.
 * Exact mode queues the operation to the communication thread (cpu_progress.c), which
 * performs it while the caller computes; where there is no such thread (MPI below
 * MPI_THREAD_MULTIPLE, one rank, ZERO_CPU_PROGRESS=0) it completes at issue and hands
 * back an already-completed handle. wait() frees every handle.
 *
 * Comm stats (counted when an operation completes):
 *   payload_bytes  N * count * size for reduce-scatter and all-gather, count * size for
 *                  all-reduce and broadcast, N * bytes for host_all_gather (control)
 *   sent_bytes     what this rank gives to other ranks: (N - 1) * count * size for
 *                  reduce-scatter and all-gather (shared memory: what peers read from our
 *                  segment); for all-reduce the reduce-scatter plus all-gather volume of
 *                  our piece, about 2 (N - 1) / N * count * size (native mode reports the
 *                  same: MPI's internal algorithm is not visible); for broadcast count *
 *                  size on the root, 0 elsewhere.
 *   seconds        issue to completion. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/backend_contract.h"
#include "cpu_coll.h"

/* ---- requests and stats ---- */

static void request_start(struct cpu_state *s, struct zero_request *rq, enum zero_coll_kind kind,
                          int64_t payload, int64_t sent, int nonblocking)
{
    memset(rq, 0, sizeof(*rq));
    rq->mpi = MPI_REQUEST_NULL;
    rq->kind = kind;
    rq->payload_bytes = payload;
    rq->sent_bytes = sent;
    rq->blocking = !nonblocking || s->mode == ZERO_COLL_EXACT;
    rq->t_issue = MPI_Wtime();
}

static void request_release_tmp(struct cpu_state *s, struct zero_request *rq)
{
    if (rq->tmp == NULL)
        return;
    free(rq->tmp);
    zero_ledger_add(s->ledger, ZERO_TAG_COMM, -(int64_t)rq->tmp_bytes);
    rq->tmp = NULL;
}

int cpu_request_settle(struct cpu_state *s, struct zero_request *rq)
{
    int rc = 0;
    if (rq->settled)
        return 0;
    if (rq->mpi != MPI_REQUEST_NULL) {
        int err = MPI_Wait(&rq->mpi, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS)
            rc = cpu_mpi_fail(s, "wait: MPI_Wait", err);
    }
    if (rc == 0 && rq->finish_dst != NULL)
        cpu_convert(rq->finish_dst, rq->finish_type, rq->tmp, rq->tmp_type, rq->finish_n);
    request_release_tmp(s, rq);
    rq->t_done = MPI_Wtime();
    rq->settled = 1;
    return rc;
}

static void request_account(struct cpu_state *s, const struct zero_request *rq)
{
    struct zero_coll_counter *c = &s->stats->kind[rq->kind];
    c->calls++;
    c->payload_bytes += rq->payload_bytes;
    c->sent_bytes += rq->sent_bytes;
    c->seconds += rq->t_done - rq->t_issue;
}

/* After issue: a blocking call completes and is counted now; a non-blocking one is
 * handed to the caller (already settled when it completed at issue). */
static int request_finish(struct cpu_state *s, struct zero_request *rq, int rc,
                          struct zero_request **req)
{
    if (rc != 0) {
        request_release_tmp(s, rq);
        return rc;
    }
    if (rq->mpi == MPI_REQUEST_NULL || req == NULL)
        rc = cpu_request_settle(s, rq);
    if (rc != 0)
        return rc;
    if (req == NULL) {
        request_account(s, rq);
        return 0;
    }
    *req = malloc(sizeof(**req));
    if (*req == NULL) {
        cpu_request_settle(s, rq);
        request_account(s, rq);
        return cpu_fail(s, ZERO_ENOMEM,
                        "%s: no memory for a request handle (the operation did complete)",
                        zero_coll_kind_name(rq->kind));
    }
    **req = *rq;
    return 0;
}

/* Exact mode with a communication thread: the handle goes to its queue. */
static int request_submit(struct cpu_state *s, const struct zero_request *rq,
                          struct zero_request **req)
{
    *req = malloc(sizeof(**req));
    if (*req == NULL)
        return cpu_fail(s, ZERO_ENOMEM, "%s: no memory for a request handle",
                        zero_coll_kind_name(rq->kind));
    **req = *rq;
    cpu_progress_submit(s, *req);
    return 0;
}

int cpu_wait_timed(void *self, struct zero_request *req, double *done_ago)
{
    struct cpu_state *s = self;
    *done_ago = 0.0;
    if (req == NULL)
        return 0;
    int rc = req->queued ? cpu_progress_wait(s, req) : cpu_request_settle(s, req);
    if (rc == 0)
        *done_ago = MPI_Wtime() - req->t_done;
    if (rc == 0)
        request_account(s, req);
    free(req);
    return rc;
}

int cpu_wait(void *self, struct zero_request *req)
{
    double done_ago;
    return cpu_wait_timed(self, req, &done_ago);
}

/* ---- the collectives ---- */

int cpu_reduce_scatter(void *self, const void *send, enum zero_dtype wire_type, void *recv,
                       enum zero_dtype recv_type, size_t count, struct zero_request **req)
{
    struct cpu_state *s = self;
    const char *op = "reduce_scatter";
    if (req != NULL)
        *req = NULL;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_reduce_scatter(s->rank, s->size, send, wire_type, recv, recv_type, count,
                                          why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(s, rc, "%s", why);
    size_t n = (size_t)s->size, wsize = zero_dtype_size(wire_type);

    struct zero_request rq;
    request_start(s, &rq, ZERO_COLL_REDUCE_SCATTER, (int64_t)(n * count * wsize),
                  (int64_t)((n - 1) * count * wsize), req != NULL);
    if (s->mode == ZERO_COLL_NATIVE) {
        rc = cpu_mpi_check_count(s, op, n * count);
        if (rc == 0)
            rc = cpu_native_reduce_scatter(s, s->comm, s->rank, send, wire_type, recv, recv_type,
                                           count, &rq);
    } else if (req != NULL && cpu_progress_active(s)) {
        rq.job = (struct cpu_job){send, recv, wire_type, recv_type, count, 0};
        return request_submit(s, &rq, req);
    } else {
        rc = cpu_exact_reduce_scatter_equal(s, send, wire_type, recv, recv_type, count,
                                            &rq.sent_bytes);
    }
    return request_finish(s, &rq, rc, req);
}

int cpu_all_reduce(void *self, const void *send, void *recv, enum zero_dtype t, size_t count,
                   struct zero_request **req)
{
    struct cpu_state *s = self;
    const char *op = "all_reduce";
    if (req != NULL)
        *req = NULL;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_all_reduce(send, recv, t, count, why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(s, rc, "%s", why);
    size_t esize = zero_dtype_size(t);

    struct cpu_split split = cpu_split_even(s, count);
    size_t mine = split.count[s->rank];
    int64_t ring_sent = (int64_t)((count - mine + (size_t)(s->size - 1) * mine) * esize);
    struct zero_request rq;
    request_start(s, &rq, ZERO_COLL_ALL_REDUCE, (int64_t)(count * esize), ring_sent, req != NULL);
    if (s->mode == ZERO_COLL_NATIVE) {
        rc = cpu_mpi_check_count(s, op, count);
        if (rc == 0)
            rc = cpu_native_all_reduce(s, s->comm, send, recv, t, count, &rq);
    } else if (req != NULL && cpu_progress_active(s)) {
        rq.job = (struct cpu_job){send, recv, t, t, count, 0};
        return request_submit(s, &rq, req);
    } else {
        rc = cpu_exact_all_reduce(s, send, recv, t, count, &rq.sent_bytes);
    }
    return request_finish(s, &rq, rc, req);
}

int cpu_all_gather(void *self, const void *send, void *recv, enum zero_dtype t, size_t count,
                   struct zero_request **req)
{
    struct cpu_state *s = self;
    const char *op = "all_gather";
    if (req != NULL)
        *req = NULL;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_all_gather(s->rank, s->size, send, recv, t, count, why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(s, rc, "%s", why);
    if ((rc = cpu_mpi_check_count(s, op, (size_t)s->size * count)) != 0)
        return rc;
    size_t n = (size_t)s->size, esize = zero_dtype_size(t);
    int in_place = send == (const char *)recv + (size_t)s->rank * count * esize;

    struct zero_request rq;
    request_start(s, &rq, ZERO_COLL_ALL_GATHER, (int64_t)(n * count * esize),
                  (int64_t)((n - 1) * count * esize), req != NULL);
    if (req != NULL && cpu_progress_active(s)) {
        rq.job = (struct cpu_job){send, recv, t, t, count, 0};
        return request_submit(s, &rq, req);
    }
    if (s->mode == ZERO_COLL_EXACT && cpu_shm_all_gather_wanted(s, count * esize)) {
        rc = cpu_shm_all_gather_equal(s, send, recv, t, count);
        return request_finish(s, &rq, rc, req);
    }
    MPI_Datatype type = cpu_mpi_type(t);
    const void *src = in_place ? MPI_IN_PLACE : send;
    int err;
    if (rq.blocking)
        err = MPI_Allgather(src, (int)count, type, recv, (int)count, type, s->comm);
    else
        err = MPI_Iallgather(src, (int)count, type, recv, (int)count, type, s->comm, &rq.mpi);
    if (err != MPI_SUCCESS)
        rc = cpu_mpi_fail(s, "all_gather: MPI_Allgather", err);
    return request_finish(s, &rq, rc, req);
}

int cpu_broadcast(void *self, void *buf, enum zero_dtype t, size_t count, int root,
                  struct zero_request **req)
{
    struct cpu_state *s = self;
    const char *op = "broadcast";
    if (req != NULL)
        *req = NULL;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_broadcast(s->size, buf, t, count, root, why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(s, rc, "%s", why);
    if ((rc = cpu_mpi_check_count(s, op, count)) != 0)
        return rc;
    size_t bytes = count * zero_dtype_size(t);
    struct zero_request rq;
    request_start(s, &rq, ZERO_COLL_BROADCAST, (int64_t)bytes,
                  s->rank == root && s->size > 1 ? (int64_t)bytes : 0, req != NULL);
    if (req != NULL && cpu_progress_active(s)) {
        rq.job = (struct cpu_job){buf, buf, t, t, count, root};
        return request_submit(s, &rq, req);
    }
    MPI_Datatype type = cpu_mpi_type(t);
    int err;
    if (rq.blocking)
        err = MPI_Bcast(buf, (int)count, type, root, s->comm);
    else
        err = MPI_Ibcast(buf, (int)count, type, root, s->comm, &rq.mpi);
    if (err != MPI_SUCCESS)
        rc = cpu_mpi_fail(s, "broadcast: MPI_Bcast", err);
    return request_finish(s, &rq, rc, req);
}

int cpu_barrier(void *self)
{
    struct cpu_state *s = self;
    int err = MPI_Barrier(s->comm);
    return err == MPI_SUCCESS ? 0 : cpu_mpi_fail(s, "barrier: MPI_Barrier", err);
}

int cpu_host_all_gather(void *self, const void *send_host, void *recv_host, size_t bytes)
{
    struct cpu_state *s = self;
    const char *op = "host_all_gather";
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_host_all_gather(send_host, recv_host, bytes, why, sizeof why);
    if (rc != ZERO_OK)
        rc = cpu_fail(s, rc, "%s", why);
    if (rc == 0)
        rc = cpu_mpi_check_count(s, op, (size_t)s->size * bytes);
    if (rc != 0)
        return rc;
    size_t n = (size_t)s->size;
    int in_place = send_host == (const char *)recv_host + (size_t)s->rank * bytes;
    struct zero_request rq;
    request_start(s, &rq, ZERO_COLL_CONTROL, (int64_t)(n * bytes), (int64_t)((n - 1) * bytes), 0);
    int err = MPI_Allgather(in_place ? MPI_IN_PLACE : send_host, (int)bytes, MPI_BYTE, recv_host,
                            (int)bytes, MPI_BYTE, s->comm);
    if (err != MPI_SUCCESS)
        rc = cpu_mpi_fail(s, "host_all_gather: MPI_Allgather", err);
    return request_finish(s, &rq, rc, NULL);
}

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
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/backend_contract.h"
#include "cpu_coll.h"
#include "zero/knobs.h"

int cpu_mpi_fail(struct cpu_state *s, const char *what, int mpi_err)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(mpi_err, text, &len) != MPI_SUCCESS)
        len = 0;
    text[len] = '\0';
    return cpu_fail(s, ZERO_ECOMM, "%s failed: %s", what, len > 0 ? text : "unknown error");
}

MPI_Datatype cpu_mpi_type(enum zero_dtype t)
{
    switch (t) {
    case ZERO_F32:
        return MPI_FLOAT;
    case ZERO_F16: /* fall through: 16-bit words, summed by our own MPI_Op */
    case ZERO_BF16:
        return MPI_UINT16_T;
    case ZERO_F64:
        return MPI_DOUBLE;
    case ZERO_I32:
        return MPI_INT32_T;
    case ZERO_I64:
        return MPI_INT64_T;
    default:
        return MPI_DATATYPE_NULL;
    }
}

/* ---- argument checks (the rest: src/base/backend_contract.c) ---- */

/* MPI counts are ints. */
static int check_mpi_count(struct cpu_state *s, const char *op, size_t elements)
{
    if (elements > INT_MAX)
        return cpu_fail(s, ZERO_ENOTSUP, "%s: %zu elements exceed MPI's int count", op, elements);
    return 0;
}

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

/* Wait for MPI if it still works on it, move the result out of the temporary, stamp. */
static int request_settle(struct cpu_state *s, struct zero_request *rq)
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
        rc = request_settle(s, rq);
    if (rc != 0)
        return rc;
    if (req == NULL) {
        request_account(s, rq);
        return 0;
    }
    *req = malloc(sizeof(**req));
    if (*req == NULL) {
        request_settle(s, rq);
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
    int rc = req->queued ? cpu_progress_wait(s, req) : request_settle(s, req);
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

/* rank r's piece of `total` elements split as evenly as possible: the first total % N
 * ranks get one more */
static struct cpu_split split_even(struct cpu_state *s, size_t total)
{
    struct cpu_shm *m = s->shm;
    size_t base = total / (size_t)s->size, extra = total % (size_t)s->size, at = 0;
    for (int r = 0; r < s->size; r++) {
        m->split_count[r] = base + ((size_t)r < extra);
        m->split_displ[r] = at;
        at += m->split_count[r];
    }
    return (struct cpu_split){.count = m->split_count, .displ = m->split_displ, .total = total};
}

/* ---- the collectives ---- */

/* N pieces of count elements each */
static struct cpu_split split_equal(struct cpu_state *s, size_t count)
{
    size_t n = (size_t)s->size;
    for (size_t r = 0; r < n; r++) {
        s->shm->split_count[r] = count;
        s->shm->split_displ[r] = r * count;
    }
    return (struct cpu_split){s->shm->split_count, s->shm->split_displ, n * count};
}

/* Exact reduce-scatter of N pieces of count elements each. */
static int exact_reduce_scatter_equal(struct cpu_state *s, const void *send,
                                      enum zero_dtype wire_type, void *recv,
                                      enum zero_dtype recv_type, size_t count, int64_t *sent)
{
    struct cpu_split split = split_equal(s, count);
    return cpu_exact_reduce_scatter(s, send, wire_type, recv, recv_type, &split, sent);
}

/* Exact mode's all-gather on one node: through the window (cpu_coll_gather.c). */
static int shm_all_gather_equal(struct cpu_state *s, const void *send, void *recv,
                                enum zero_dtype t, size_t count)
{
    struct cpu_split split = split_equal(s, count);
    return cpu_shm_all_gather(s, send, recv, zero_dtype_size(t), &split);
}

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
        rc = check_mpi_count(s, op, n * count);
        if (rc == 0)
            rc = cpu_native_reduce_scatter(s, send, wire_type, recv, recv_type, count, &rq);
    } else if (req != NULL && cpu_progress_active(s)) {
        rq.job = (struct cpu_job){send, recv, wire_type, recv_type, count, 0};
        return request_submit(s, &rq, req);
    } else {
        rc = exact_reduce_scatter_equal(s, send, wire_type, recv, recv_type, count, &rq.sent_bytes);
    }
    return request_finish(s, &rq, rc, req);
}

/* Exact all-reduce = exact reduce-scatter of nearly equal pieces + all-gather (on one
 * node both through the window, cpu_coll_exact.c). */
static int exact_all_reduce(struct cpu_state *s, const void *send, void *recv, enum zero_dtype t,
                            size_t count, int64_t *sent)
{
    struct cpu_split split = split_even(s, count);
    size_t esize = zero_dtype_size(t), mine = split.count[s->rank];
    char *my_piece = (char *)recv + split.displ[s->rank] * esize;
    if (s->size > 1 && s->shm->use_shm) {
        *sent = (int64_t)((count - mine + (size_t)(s->size - 1) * mine) * esize);
        return cpu_exact_all_reduce_shm(s, send, recv, t, &split);
    }
    int64_t rs_sent = 0;
    int rc = cpu_exact_reduce_scatter(s, send, t, my_piece, t, &split, &rs_sent);
    if (rc != 0 || count == 0 || s->size == 1) {
        *sent = rs_sent;
        return rc;
    }
    *sent = rs_sent + (int64_t)((size_t)(s->size - 1) * mine * esize);
    rc = check_mpi_count(s, "all_reduce", count);
    if (rc != 0)
        return rc;
    struct cpu_shm *m = s->shm;
    for (int r = 0; r < s->size; r++) {
        m->recv_counts[r] = (int)split.count[r];
        m->recv_displs[r] = (int)split.displ[r];
    }
    MPI_Datatype type = cpu_mpi_type(t);
    MPI_Request r;
    int err = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, m->recv_counts,
                              m->recv_displs, type, s->comm, &r);
    if (err == MPI_SUCCESS)
        err = cpu_mpi_complete(s, &r);
    if (err != MPI_SUCCESS)
        return cpu_mpi_fail(s, "all_reduce: MPI_Allgatherv", err);
    return 0;
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

    struct cpu_split split = split_even(s, count);
    size_t mine = split.count[s->rank];
    int64_t ring_sent = (int64_t)((count - mine + (size_t)(s->size - 1) * mine) * esize);
    struct zero_request rq;
    request_start(s, &rq, ZERO_COLL_ALL_REDUCE, (int64_t)(count * esize), ring_sent, req != NULL);
    if (s->mode == ZERO_COLL_NATIVE) {
        rc = check_mpi_count(s, op, count);
        if (rc == 0)
            rc = cpu_native_all_reduce(s, send, recv, t, count, &rq);
    } else if (req != NULL && cpu_progress_active(s)) {
        rq.job = (struct cpu_job){send, recv, t, t, count, 0};
        return request_submit(s, &rq, req);
    } else {
        rc = exact_all_reduce(s, send, recv, t, count, &rq.sent_bytes);
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
    if ((rc = check_mpi_count(s, op, (size_t)s->size * count)) != 0)
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
        rc = shm_all_gather_equal(s, send, recv, t, count);
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
    if ((rc = check_mpi_count(s, op, count)) != 0)
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

/* On the communication thread: the same operations as at issue, on its copy s. */
int cpu_coll_run_job(struct cpu_state *s, struct zero_request *rq)
{
    const struct cpu_job *j = &rq->job;
    MPI_Datatype type = cpu_mpi_type(j->wire_type);
    const char *op = zero_coll_kind_name(rq->kind);
    MPI_Request r = MPI_REQUEST_NULL;
    int err = MPI_SUCCESS;
    switch (rq->kind) {
    case ZERO_COLL_REDUCE_SCATTER:
        return exact_reduce_scatter_equal(s, j->send, j->wire_type, j->recv, j->recv_type, j->count,
                                          &rq->sent_bytes);
    case ZERO_COLL_ALL_REDUCE:
        return exact_all_reduce(s, j->send, j->recv, j->wire_type, j->count, &rq->sent_bytes);
    case ZERO_COLL_ALL_GATHER: {
        if (cpu_shm_all_gather_wanted(s, j->count * zero_dtype_size(j->wire_type)))
            return shm_all_gather_equal(s, j->send, j->recv, j->wire_type, j->count);
        size_t esize = zero_dtype_size(j->wire_type);
        int in_place = j->send == (const char *)j->recv + (size_t)s->rank * j->count * esize;
        err = MPI_Iallgather(in_place ? MPI_IN_PLACE : j->send, (int)j->count, type, j->recv,
                             (int)j->count, type, s->comm, &r);
        break;
    }
    case ZERO_COLL_BROADCAST:
        err = MPI_Ibcast(j->recv, (int)j->count, type, j->root, s->comm, &r);
        break;
    default:
        return cpu_fail(s, ZERO_EINVAL, "%s: not a queued collective", op);
    }
    if (err == MPI_SUCCESS)
        err = cpu_mpi_complete(s, &r);
    return err == MPI_SUCCESS ? 0 : cpu_mpi_fail(s, op, err);
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
        rc = check_mpi_count(s, op, (size_t)s->size * bytes);
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

/* ---- lifetime ---- */

static void coll_free(struct cpu_shm *m)
{
    free(m->node_rank_of);
    free(m->seg);
    free(m->staging);
    free(m->scratch);
    free(m->piece);
    free(m->split_count);
    free(m->split_displ);
    free(m->send_counts);
    free(m->send_displs);
    free(m->recv_counts);
    free(m->recv_displs);
    free(m);
}

/* Shared memory unless the ranks span nodes or ZERO_CPU_NO_SHM is set (to anything but
 * "0"); decided together, so that a variable set on some ranks only cannot split them
 * onto different paths. */
static int choose_path(struct cpu_state *s)
{
    const char *no_shm = zero_knob(ZERO_KNOB_CPU_NO_SHM);
    int want = s->single_node && s->size > 1 && !(no_shm && *no_shm && strcmp(no_shm, "0"));
    int all = 0;
    int err = MPI_Allreduce(&want, &all, 1, MPI_INT, MPI_MIN, s->comm);
    if (err != MPI_SUCCESS)
        return cpu_mpi_fail(s, "collectives init: MPI_Allreduce", err);
    s->shm->use_shm = all;
    if (!all)
        return 0;

    MPI_Group group, node_group;
    MPI_Comm_group(s->comm, &group);
    MPI_Comm_group(s->node_comm, &node_group);
    for (int r = 0; r < s->size; r++)
        s->shm->recv_counts[r] = r;
    MPI_Group_translate_ranks(group, s->size, s->shm->recv_counts, node_group,
                              s->shm->node_rank_of);
    MPI_Group_free(&group);
    MPI_Group_free(&node_group);
    return 0;
}

int cpu_shm_in_use(const struct cpu_state *s)
{
    return s->shm != NULL && s->shm->use_shm;
}

int cpu_coll_init(struct cpu_state *s)
{
    size_t n = (size_t)s->size;
    struct cpu_shm *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return cpu_fail(s, ZERO_ENOMEM, "collectives init: out of memory");
    m->win = MPI_WIN_NULL;
    m->op_sum_f16 = MPI_OP_NULL;
    m->op_sum_bf16 = MPI_OP_NULL;
    m->node_rank_of = calloc(n, sizeof(int));
    m->seg = calloc(n, sizeof(char *));
    m->scratch = malloc(cpu_combine_scratch_floats(s->size) * sizeof(float));
    m->piece = calloc(n, sizeof(void *));
    m->split_count = calloc(n, sizeof(size_t));
    m->split_displ = calloc(n, sizeof(size_t));
    m->send_counts = calloc(n, sizeof(int));
    m->send_displs = calloc(n, sizeof(int));
    m->recv_counts = calloc(n, sizeof(int));
    m->recv_displs = calloc(n, sizeof(int));
    if (!m->node_rank_of || !m->seg || !m->scratch || !m->piece || !m->split_count ||
        !m->split_displ || !m->send_counts || !m->send_displs || !m->recv_counts ||
        !m->recv_displs) {
        coll_free(m);
        return cpu_fail(s, ZERO_ENOMEM, "collectives init: out of memory for %d ranks", s->size);
    }
    s->shm = m;
    int rc = choose_path(s);
    if (rc == 0)
        rc = cpu_native_ops_create(s);
    if (rc != 0) {
        cpu_native_ops_free(s);
        coll_free(m);
        s->shm = NULL;
    }
    return rc;
}

void cpu_coll_fini(struct cpu_state *s)
{
    if (s->shm == NULL)
        return;
    cpu_shm_release(s);
    cpu_native_ops_free(s);
    zero_ledger_add(s->ledger, ZERO_TAG_COMM, -(int64_t)s->shm->staging_bytes);
    coll_free(s->shm);
    s->shm = NULL;
}

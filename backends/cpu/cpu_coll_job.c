/* Exact mode's collectives as one call each (equal pieces for reduce-scatter and
 * all-gather, nearly equal ones for all-reduce), run by the caller's thread when the
 * operation completes at issue (cpu_coll.c) and by the communication thread for a queued
 * job (cpu_progress.c): one body for both, so the bits cannot differ. A floor below both
 * callers; it calls the data movement (cpu_coll_exact.c, cpu_coll_gather.c) and MPI. */
#include <stdint.h>

#include "cpu_coll.h"

/* rank r's piece of `total` elements split as evenly as possible: the first total % N
 * ranks get one more */
struct cpu_split cpu_split_even(struct cpu_state *s, size_t total)
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
int cpu_exact_reduce_scatter_equal(struct cpu_state *s, const void *send, enum zero_dtype wire_type,
                                   void *recv, enum zero_dtype recv_type, size_t count,
                                   int64_t *sent)
{
    struct cpu_split split = split_equal(s, count);
    return cpu_exact_reduce_scatter(s, send, wire_type, recv, recv_type, &split, sent);
}

/* Exact mode's all-gather on one node: through the window (cpu_coll_gather.c). */
int cpu_shm_all_gather_equal(struct cpu_state *s, const void *send, void *recv, enum zero_dtype t,
                             size_t count)
{
    struct cpu_split split = split_equal(s, count);
    return cpu_shm_all_gather(s, send, recv, zero_dtype_size(t), &split);
}

/* Exact all-reduce = exact reduce-scatter of nearly equal pieces + all-gather (on one
 * node both through the window, cpu_coll_exact.c). */
int cpu_exact_all_reduce(struct cpu_state *s, const void *send, void *recv, enum zero_dtype t,
                         size_t count, int64_t *sent)
{
    struct cpu_split split = cpu_split_even(s, count);
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
    rc = cpu_mpi_check_count(s, "all_reduce", count);
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
        return cpu_exact_reduce_scatter_equal(s, j->send, j->wire_type, j->recv, j->recv_type,
                                              j->count, &rq->sent_bytes);
    case ZERO_COLL_ALL_REDUCE:
        return cpu_exact_all_reduce(s, j->send, j->recv, j->wire_type, j->count, &rq->sent_bytes);
    case ZERO_COLL_ALL_GATHER: {
        if (cpu_shm_all_gather_wanted(s, j->count * zero_dtype_size(j->wire_type)))
            return cpu_shm_all_gather_equal(s, j->send, j->recv, j->wire_type, j->count);
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

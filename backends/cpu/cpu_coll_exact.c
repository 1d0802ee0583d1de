/* Exact reduce-scatter: each piece's owner combines every rank's contribution along the
 * canonical tree (tree.h), in fp32, rounding once. Bit-reproducible by construction.
 *
 * Volume: each rank gives away the N-1 pieces it does not own, once: the same bytes as a
 * ring reduce-scatter. Two ways to move them:
 *   - shared memory (all ranks on one node): a rank copies its N-1 foreign pieces into its
 *     window segment; after a fence each owner reads its pieces straight from the peers'
 *     segments while combining, and a second fence frees the segments for reuse.
 *   - MPI (several nodes, or ZERO_CPU_NO_SHM=1): MPI_Alltoallv delivers the peers' pieces
 *     of our shard into a staging buffer, then the same combine. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_coll.h"

/* Element offset of owner's piece inside holder's segment: the segment holds the holder's
 * foreign pieces in rank order, its own piece left out. */
static size_t seg_offset(const struct cpu_split *sp, int holder, int owner)
{
    return sp->displ[owner] - (owner > holder ? sp->count[holder] : 0);
}

static size_t smallest_piece(const struct cpu_split *sp, int n)
{
    size_t min = sp->count[0];
    for (int r = 1; r < n; r++)
        if (sp->count[r] < min)
            min = sp->count[r];
    return min;
}

static int reduce_scatter_shm(struct cpu_state *s, const char *send, enum zero_dtype wire_type,
                              void *recv, enum zero_dtype recv_type, const struct cpu_split *sp)
{
    struct cpu_shm *m = s->shm;
    int n = s->size, me = s->rank;
    size_t esize = zero_dtype_size(wire_type);
    size_t before = sp->displ[me], mine = sp->count[me], after = sp->total - before - mine;

    /* every rank sizes for the largest segment, so all agree on when to grow */
    int rc = cpu_shm_reserve(s, (sp->total - smallest_piece(sp, n)) * esize);
    if (rc != 0)
        return rc;
    memcpy(m->seg[me], send, before * esize);
    memcpy(m->seg[me] + before * esize, send + (before + mine) * esize, after * esize);
    rc = cpu_shm_fence(s);
    if (rc != 0)
        return rc;

    for (int r = 0; r < n; r++)
        m->piece[r] = r == me ? send + before * esize : m->seg[r] + seg_offset(sp, r, me) * esize;
    cpu_combine(recv, recv_type, m->piece, n, wire_type, mine, m->scratch);

    return cpu_shm_fence(s); /* peers are done reading our segment */
}

/* All-reduce on one node: the reduce-scatter above, then the owners' sums through the
 * same window (cpu_coll_gather.c). The reduce-scatter sized the window for the N - 1
 * foreign pieces, which hold at least the largest sum: the all-reduce needs no more
 * memory than before. */
static int all_reduce_shm(struct cpu_state *s, const char *send, char *recv, enum zero_dtype t,
                          const struct cpu_split *sp)
{
    size_t esize = zero_dtype_size(t), before = sp->displ[s->rank];
    int rc = reduce_scatter_shm(s, send, t, recv + before * esize, t, sp);
    return rc != 0 ? rc : cpu_shm_all_gather(s, recv + before * esize, recv, esize, sp);
}

static int grow_staging(struct cpu_state *s, size_t bytes)
{
    struct cpu_shm *m = s->shm;
    if (bytes <= m->staging_bytes)
        return 0;
    void *p = malloc(bytes);
    if (p == NULL)
        return cpu_fail(s, ZERO_ENOMEM, "reduce_scatter: no memory for a %zu-byte staging buffer",
                        bytes);
    free(m->staging);
    zero_ledger_add(s->ledger, ZERO_TAG_COMM, (int64_t)bytes - (int64_t)m->staging_bytes);
    m->staging = p;
    m->staging_bytes = bytes;
    return 0;
}

static int reduce_scatter_mpi(struct cpu_state *s, const char *send, enum zero_dtype wire_type,
                              void *recv, enum zero_dtype recv_type, const struct cpu_split *sp)
{
    struct cpu_shm *m = s->shm;
    int n = s->size, me = s->rank;
    size_t esize = zero_dtype_size(wire_type), mine = sp->count[me];
    MPI_Datatype type = cpu_mpi_type(wire_type);
    if (sp->total > INT_MAX)
        return cpu_fail(s, ZERO_ENOTSUP,
                        "reduce_scatter: %zu elements exceed the MPI path's limit of INT_MAX",
                        sp->total);
    int rc = grow_staging(s, (size_t)(n - 1) * mine * esize);
    if (rc != 0)
        return rc;

    /* staging (n - 1, mine): the peers' pieces of our shard in rank order, ours left out */
    for (int r = 0; r < n; r++) {
        m->send_counts[r] = r == me ? 0 : (int)sp->count[r];
        m->send_displs[r] = (int)sp->displ[r];
        m->recv_counts[r] = r == me ? 0 : (int)mine;
        m->recv_displs[r] = (int)((size_t)(r < me ? r : r - 1) * mine);
    }
    MPI_Request r;
    int err = MPI_Ialltoallv(send, m->send_counts, m->send_displs, type, m->staging, m->recv_counts,
                             m->recv_displs, type, s->comm, &r);
    if (err == MPI_SUCCESS)
        err = cpu_mpi_complete(s, &r);
    if (err != MPI_SUCCESS)
        return cpu_mpi_fail(s, "reduce_scatter: MPI_Alltoallv", err);

    for (int r = 0; r < n; r++)
        m->piece[r] = r == me ? send + sp->displ[me] * esize
                              : (char *)m->staging + (size_t)m->recv_displs[r] * esize;
    cpu_combine(recv, recv_type, m->piece, n, wire_type, mine, m->scratch);
    return 0;
}

int cpu_exact_all_reduce_shm(struct cpu_state *s, const void *send, void *recv, enum zero_dtype t,
                             const struct cpu_split *split)
{
    if (split->total == 0)
        return 0;
    return all_reduce_shm(s, send, recv, t, split);
}

int cpu_exact_reduce_scatter(struct cpu_state *s, const void *send, enum zero_dtype wire_type,
                             void *recv, enum zero_dtype recv_type, const struct cpu_split *split,
                             int64_t *sent)
{
    int me = s->rank;
    size_t esize = zero_dtype_size(wire_type);
    *sent = (int64_t)((split->total - split->count[me]) * esize);
    if (split->total == 0)
        return 0; /* every rank sees the same total: nobody communicates */
    if (s->size == 1) {
        s->shm->piece[0] = send;
        cpu_combine(recv, recv_type, s->shm->piece, 1, wire_type, split->total, s->shm->scratch);
        return 0;
    }
    if (s->shm->use_shm)
        return reduce_scatter_shm(s, send, wire_type, recv, recv_type, split);
    return reduce_scatter_mpi(s, send, wire_type, recv, recv_type, split);
}

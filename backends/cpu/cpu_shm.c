/* The shared-memory window through which owners read their peers' pieces directly.
 *
 * Every rank of the node has one segment of the same size in an MPI-3 shared window
 * (MPI_Win_allocate_shared on s->node_comm). The window lives as long as the instance
 * and only grows: when a collective needs more, all ranks free it and allocate a larger
 * one together (they see the same arguments, so they agree without talking). Memory is
 * synchronized the "unified model" way: a passive-target epoch (lock_all) stays open,
 * and MPI_Win_sync + MPI_Barrier order the writes of one phase before the reads of the
 * next. The barrier blocks inside MPI rather than spinning on flags in the window, which
 * matters when ranks outnumber cores; on the communication thread it is a polled
 * MPI_Ibarrier with short sleeps between tests (cpu_mpi_complete), so a waiting thread
 * leaves its core to the compute threads. */
#include "cpu_coll.h"

enum { SEG_ROUND = 64 * 1024 }; /* segments grow in whole 64 KiB steps */

void cpu_shm_release(struct cpu_state *s)
{
    struct cpu_shm *m = s->shm;
    if (m->win == MPI_WIN_NULL)
        return;
    MPI_Win_unlock_all(m->win);
    MPI_Win_free(&m->win);
    zero_ledger_add(s->ledger, ZERO_TAG_COMM, -(int64_t)m->seg_bytes);
    m->win = MPI_WIN_NULL;
    m->seg_bytes = 0;
}

int cpu_shm_reserve(struct cpu_state *s, size_t bytes)
{
    struct cpu_shm *m = s->shm;
    if (m->win != MPI_WIN_NULL && bytes <= m->seg_bytes)
        return 0;
    size_t want = (bytes + SEG_ROUND - 1) / SEG_ROUND * SEG_ROUND;
    if (want == 0)
        want = SEG_ROUND;
    cpu_shm_release(s);

    /* noncontig: each segment starts on its own pages, first touched by its owner */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    void *base;
    int err = MPI_Win_allocate_shared((MPI_Aint)want, 1, info, s->node_comm, &base, &m->win);
    MPI_Info_free(&info);
    if (err != MPI_SUCCESS) {
        m->win = MPI_WIN_NULL;
        return cpu_mpi_fail(s, "shared-memory window: MPI_Win_allocate_shared", err);
    }
    for (int r = 0; r < s->size; r++) {
        MPI_Aint size;
        int disp_unit;
        void *seg;
        err = MPI_Win_shared_query(m->win, m->node_rank_of[r], &size, &disp_unit, &seg);
        if (err != MPI_SUCCESS) {
            MPI_Win_free(&m->win);
            m->win = MPI_WIN_NULL;
            return cpu_mpi_fail(s, "shared-memory window: MPI_Win_shared_query", err);
        }
        m->seg[r] = seg;
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, m->win);
    m->seg_bytes = want;
    zero_ledger_add(s->ledger, ZERO_TAG_COMM, (int64_t)want);
    return 0;
}

int cpu_shm_fence(struct cpu_state *s)
{
    struct cpu_shm *m = s->shm;
    MPI_Win_sync(m->win);
    MPI_Request r;
    int err = MPI_Ibarrier(s->node_comm, &r);
    if (err == MPI_SUCCESS)
        err = cpu_mpi_complete(s, &r);
    if (err != MPI_SUCCESS)
        return cpu_mpi_fail(s, "shared-memory fence: MPI_Barrier", err);
    MPI_Win_sync(m->win);
    return 0;
}

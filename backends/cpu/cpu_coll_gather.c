/* Exact mode's all-gather on one node: the pieces travel through the shared-memory window
 * (cpu_shm.c), as the reduce-scatter's do, instead of through MPI's messages.
 *
 * Why: Open MPI's all-gather between the processes of one node (vader, single copy via
 * CMA, progressed only inside MPI_Test on the communication thread) ran 4-15x slower than
 * a memcpy of the same piece in bench/roofline (a unit of the toy MLP, 16 MB per rank:
 * 13-58 ms against 3 ms); it was most of the exact all-reduce's time and all of stages
 * 1-2's parameter gather. Here each rank copies its piece into its segment; after a fence
 * every rank copies each peer's piece straight out of the peer's segment into recv; a
 * second fence frees the segments for reuse. A copy: the bits are the pieces' bits.
 *
 * Small pieces keep MPI's all-gather: below vader's rendezvous limit (32 KiB) it copies
 * eagerly through its own buffers, with none of the two fences' round trips. And an
 * all-gather only uses a window the reduce-scatters already grew (the N - 1 foreign
 * pieces of a unit hold at least one piece of it): it never allocates one, so memory and
 * the ledger stay as they were (the first gathers of stage 3 and init, eval's, and the
 * main thread's blocking ones before any reduction take MPI's all-gather). */
#include <string.h>

#include "cpu_coll.h"

int cpu_shm_all_gather_wanted(const struct cpu_state *s, size_t largest_piece_bytes)
{
    const struct cpu_shm *m = s->shm;
    return m->use_shm && largest_piece_bytes >= CPU_SHM_GATHER_MIN_BYTES &&
           m->win != MPI_WIN_NULL && largest_piece_bytes <= m->seg_bytes;
}

int cpu_shm_all_gather(struct cpu_state *s, const void *mine, void *recv, size_t esize,
                       const struct cpu_split *sp)
{
    struct cpu_shm *m = s->shm;
    int n = s->size, me = s->rank;
    if (sp->total == 0)
        return 0; /* every rank sees the same total: nobody communicates */
    size_t largest = 0;
    for (int r = 0; r < n; r++)
        if (sp->count[r] > largest)
            largest = sp->count[r];
    /* every rank sizes for the largest piece, so all agree on when to grow (an all-reduce
     * finds the window its reduce-scatter grew; an all-gather checked it fits) */
    int rc = cpu_shm_reserve(s, largest * esize);
    if (rc != 0)
        return rc;
    char *out = recv;
    memcpy(m->seg[me], mine, sp->count[me] * esize);
    if ((rc = cpu_shm_fence(s)) != 0)
        return rc;
    for (int r = 0; r < n; r++) {
        char *dst = out + sp->displ[r] * esize;
        const char *src = r == me ? mine : m->seg[r];
        if (dst != src) /* not this rank's piece in place */
            memcpy(dst, src, sp->count[r] * esize);
    }
    return cpu_shm_fence(s); /* peers are done reading our segment */
}

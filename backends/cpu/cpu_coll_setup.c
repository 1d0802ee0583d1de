/* The collective resources of one backend instance (struct cpu_shm): allocated and
 * the path chosen at open, freed at close, for the instance and for the communication
 * thread's copy of it (cpu_progress.c). Below cpu_coll.c and cpu_progress.c, which call
 * it; it calls the window (cpu_shm.c) and native mode's MPI_Ops (cpu_coll_native.c). */
#include <stdlib.h>
#include <string.h>

#include "cpu_coll.h"
#include "zero/knobs.h"

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

/* See example_mpi.h. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "example_mpi.h"

/* name_rank0: a message of rank 0 is prefixed "rank 0: " too (when world > 1) */
static int agree(int rc, struct zero_error *err, MPI_Comm comm, int name_rank0)
{
    int rank, world;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &world);
    int mine = rc ? rank : world, first = world;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == world)
        return ZERO_OK;
    struct zero_error shared = {0};
    if (rank == first) {
        shared.code = err->code ? err->code : rc;
        if ((rank != 0 || (name_rank0 && world > 1)) && strncmp(err->msg, "rank ", 5) != 0)
            snprintf(shared.msg, sizeof shared.msg, "rank %d: %.1000s", rank, err->msg);
        else
            memcpy(shared.msg, err->msg, sizeof shared.msg);
        if (!shared.msg[0])
            snprintf(shared.msg, sizeof shared.msg, "rank %d: %s", rank,
                     zero_status_name(shared.code));
    }
    MPI_Bcast(&shared, (int)sizeof shared, MPI_BYTE, first, comm);
    *err = shared;
    return shared.code;
}

int example_agree(int rc, struct zero_error *err, MPI_Comm comm)
{
    return agree(rc, err, comm, 0);
}

int example_agree_naming_ranks(int rc, struct zero_error *err, MPI_Comm comm)
{
    return agree(rc, err, comm, 1);
}

void example_bcast(void *buf, size_t n, int root, MPI_Comm comm)
{
    const size_t piece = (size_t)INT_MAX / 2;
    for (size_t at = 0; at < n; at += piece) {
        size_t len = n - at < piece ? n - at : piece;
        MPI_Bcast((char *)buf + at, (int)len, MPI_BYTE, root, comm);
    }
}

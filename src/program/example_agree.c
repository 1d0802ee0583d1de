/* See example_agree.h. */
#include <stdio.h>
#include <string.h>

#include "example_agree.h"

/* name_rank0: a message of rank 0 is prefixed "rank 0: " too (when world > 1) */
static int agree(int rc, struct zero_error *err, struct zero_comm *comm, int name_rank0)
{
    const int rank = zero_comm_rank(comm), world = zero_comm_size(comm);
    int first = rc ? rank : world;
    zero_comm_allreduce_int(comm, &first, ZERO_COMM_MIN);
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
    zero_comm_bcast(comm, &shared, sizeof shared, first);
    *err = shared;
    return shared.code;
}

int example_agree(int rc, struct zero_error *err, struct zero_comm *comm)
{
    return agree(rc, err, comm, 0);
}

int example_agree_naming_ranks(int rc, struct zero_error *err, struct zero_comm *comm)
{
    return agree(rc, err, comm, 1);
}

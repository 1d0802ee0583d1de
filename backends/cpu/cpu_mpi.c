/* MPI as every file of the cpu backend's collectives calls it: the error text of a failed
 * call, the datatype of a dtype, MPI's int counts, and the wait that polls politely on the
 * communication thread. The lowest floor of the collectives: it calls nothing of theirs. */
#include <limits.h>
#include <sched.h>
#include <time.h>

#include "cpu_coll.h"

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

/* MPI counts are ints. */
int cpu_mpi_check_count(struct cpu_state *s, const char *op, size_t elements)
{
    if (elements > INT_MAX)
        return cpu_fail(s, ZERO_ENOTSUP, "%s: %zu elements exceed MPI's int count", op, elements);
    return 0;
}

int cpu_mpi_complete(struct cpu_state *s, MPI_Request *r)
{
    if (!s->polite)
        return MPI_Wait(r, MPI_STATUS_IGNORE);
    for (int tries = 0;; tries++) {
        int flag = 0;
        int err = MPI_Test(r, &flag, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS || flag)
            return err;
        if (tries < 32) {
            sched_yield();
        } else {
            struct timespec nap = {0, 20000}; /* 20 us: far below a bucket's combine */
            nanosleep(&nap, NULL);
        }
    }
}

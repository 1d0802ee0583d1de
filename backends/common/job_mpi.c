/* The job of zero/job.h over MPI: the one place a program's MPI calls live (the programs
 * themselves include no MPI header). A communicator is an MPI_Comm in a small box, so that
 * zero_comm_device_handle can hand the backends the MPI_Comm * they take. */
#include <limits.h>
#include <stdlib.h>
#include <time.h>

#include <mpi.h>

#include "zero/error.h"
#include "zero/job.h"

struct zero_comm {
    MPI_Comm comm;
};

static struct zero_comm world;

int zero_job_init(int *argc, char ***argv, int *owned, struct zero_error *err)
{
    *owned = 0;
    if (zero_job_initialized())
        return ZERO_OK;
    int provided; /* MULTIPLE: the cpu backend's communication thread (overlap) */
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        return zero_fail(err, ZERO_ECOMM, "MPI_Init_thread failed");
    *owned = 1;
    return ZERO_OK;
}

int zero_job_initialized(void)
{
    int initialized = 0;
    MPI_Initialized(&initialized);
    return initialized != 0;
}

int zero_job_finalize(void)
{
    return MPI_Finalize() == MPI_SUCCESS ? ZERO_OK : ZERO_ECOMM;
}

_Noreturn void zero_job_abort(int code)
{
    MPI_Abort(MPI_COMM_WORLD, code);
    abort(); /* not reached: MPI_Abort does not return */
}

struct zero_comm *zero_comm_world(void)
{
    world.comm = MPI_COMM_WORLD;
    return &world;
}

int zero_comm_rank(const struct zero_comm *c)
{
    int rank = 0;
    MPI_Comm_rank(c->comm, &rank);
    return rank;
}

int zero_comm_size(const struct zero_comm *c)
{
    int size = 1;
    MPI_Comm_size(c->comm, &size);
    return size;
}

/* *out = a box around comm, or comm freed and ZERO_ENOMEM. Its errors come back as codes
 * (MPI_ERRORS_RETURN), as the header promises: a peer's death must not end this process
 * inside an exchange, before the program removed its files. */
static int box(MPI_Comm comm, struct zero_comm **out, struct zero_error *err)
{
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    *out = malloc(sizeof **out);
    if (*out == NULL) {
        MPI_Comm_free(&comm);
        return zero_fail(err, ZERO_ENOMEM, "a communicator");
    }
    (*out)->comm = comm;
    return ZERO_OK;
}

int zero_comm_dup(const struct zero_comm *c, struct zero_comm **out, struct zero_error *err)
{
    MPI_Comm comm;
    *out = NULL;
    if (MPI_Comm_dup(c->comm, &comm) != MPI_SUCCESS)
        return zero_fail(err, ZERO_ECOMM, "MPI_Comm_dup failed");
    return box(comm, out, err);
}

int zero_comm_split(const struct zero_comm *c, int color, int key, struct zero_comm **out,
                    struct zero_error *err)
{
    MPI_Comm comm;
    *out = NULL;
    if (MPI_Comm_split(c->comm, color < 0 ? MPI_UNDEFINED : color, key, &comm) != MPI_SUCCESS)
        return zero_fail(err, ZERO_ECOMM, "MPI_Comm_split failed");
    if (comm == MPI_COMM_NULL)
        return ZERO_OK;
    return box(comm, out, err);
}

void zero_comm_free(struct zero_comm **c)
{
    if (*c == NULL || *c == &world)
        return;
    MPI_Comm_free(&(*c)->comm);
    free(*c);
    *c = NULL;
}

void *zero_comm_device_handle(struct zero_comm *c)
{
    return &c->comm;
}

static MPI_Op mpi_op(enum zero_comm_op op)
{
    return op == ZERO_COMM_MIN ? MPI_MIN : op == ZERO_COMM_MAX ? MPI_MAX : MPI_SUM;
}

/* values[0 .. n - 1] reduced in place, in pieces that fit MPI's int counts */
static int allreduce(struct zero_comm *c, void *values, size_t n, size_t size, MPI_Datatype type,
                     enum zero_comm_op op)
{
    const size_t piece = (size_t)INT_MAX / 2;
    for (size_t at = 0; at < n; at += piece) {
        size_t len = n - at < piece ? n - at : piece;
        if (MPI_Allreduce(MPI_IN_PLACE, (char *)values + at * size, (int)len, type, mpi_op(op),
                          c->comm) != MPI_SUCCESS)
            return ZERO_ECOMM;
    }
    return ZERO_OK;
}

int zero_comm_allreduce_int(struct zero_comm *c, int *value, enum zero_comm_op op)
{
    return allreduce(c, value, 1, sizeof *value, MPI_INT, op);
}

int zero_comm_allreduce_int64(struct zero_comm *c, int64_t *values, size_t n, enum zero_comm_op op)
{
    return allreduce(c, values, n, sizeof *values, MPI_INT64_T, op);
}

int zero_comm_allreduce_double(struct zero_comm *c, double *values, size_t n, enum zero_comm_op op)
{
    return allreduce(c, values, n, sizeof *values, MPI_DOUBLE, op);
}

int zero_comm_bcast(struct zero_comm *c, void *buf, size_t n, int root)
{
    const size_t piece = (size_t)INT_MAX / 2;
    for (size_t at = 0; at < n; at += piece) {
        size_t len = n - at < piece ? n - at : piece;
        if (MPI_Bcast((char *)buf + at, (int)len, MPI_BYTE, root, c->comm) != MPI_SUCCESS)
            return ZERO_ECOMM;
    }
    return ZERO_OK;
}

int zero_comm_gather(struct zero_comm *c, const void *mine, size_t n, int root, void **all,
                     size_t **counts)
{
    const int rank = zero_comm_rank(c), size = zero_comm_size(c);
    int status = n > INT_MAX ? ZERO_EINVAL : ZERO_OK, sent = n > INT_MAX ? 0 : (int)n;
    *all = NULL;
    *counts = NULL;
    /* root's counts and offsets, and whether root has them: the first exchange, so that a
     * root without room fails alone instead of receiving into nothing */
    int *got = NULL, *offsets = NULL;
    if (rank == root) {
        got = calloc(2 * (size_t)size, sizeof *got);
        *counts = calloc((size_t)size, sizeof **counts);
    }
    int room = rank != root || (got && *counts);
    MPI_Bcast(&room, 1, MPI_INT, root, c->comm);
    if (!room) {
        free(got);
        free(*counts);
        *counts = NULL;
        return rank == root ? ZERO_ENOMEM : status;
    }
    MPI_Gather(&sent, 1, MPI_INT, got, 1, MPI_INT, root, c->comm);
    char *buf = NULL;
    if (rank == root) {
        offsets = got + size;
        long long sum = 0;
        for (int r = 0; r < size; r++) {
            offsets[r] = (int)sum;
            sum += got[r];
        }
        buf = sum <= INT_MAX ? malloc(sum ? (size_t)sum : 1) : NULL;
        if (!buf) /* receive nothing; the records are lost */
            for (int r = 0; r < size; r++)
                got[r] = offsets[r] = 0;
    }
    MPI_Gatherv(mine, sent, MPI_BYTE, buf, got, offsets, MPI_BYTE, root, c->comm);
    if (rank == root) {
        for (int r = 0; r < size; r++)
            (*counts)[r] = (size_t)got[r];
        free(got);
        if (!buf) {
            free(*counts);
            *counts = NULL;
            return ZERO_ENOMEM;
        }
        *all = buf;
    }
    return status;
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int zero_comm_all_arrive(struct zero_comm *c, double seconds)
{
    int one = 1, all = 0, done = 0;
    MPI_Request req;
    if (MPI_Iallreduce(&one, &all, 1, MPI_INT, MPI_SUM, c->comm, &req) != MPI_SUCCESS)
        return 0;
    double until = seconds_now() + seconds;
    while (!done && seconds_now() < until) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (!done)
            nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
    return done;
}

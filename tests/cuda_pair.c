/* See cuda_pair.h. */
#include "cuda_pair.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpi_check.h"
#include "zero/error.h"

int cuda_pair_open(const char *test, struct zero_device **cpu, struct zero_device **gpu)
{
    *cpu = *gpu = NULL;
    const struct zero_backend *be = zero_backend_find("cuda");
    char why[ZERO_ERRMSG_LEN] = "cuda backend not built in";
    int usable = be != NULL && be->probe(why, sizeof(why)) == ZERO_OK;
    if (!mpi_check_all(usable)) {
        if (mpi_check_rank() == 0)
            printf("SKIP: %s: %s\n", test, why);
        return 77;
    }
    setenv("ZERO_CUDA_COMM", "auto", 0);
    struct zero_error err = {0};
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    MPI_Comm world = MPI_COMM_WORLD;
    if (zero_device_open(cpu, "cpu", &world, &opt, &err) == ZERO_OK &&
        zero_device_open(gpu, "cuda", &world, &opt, &err) == ZERO_OK)
        return 0;
    fprintf(stderr, "rank %d: %s: %s\n", mpi_check_rank(), test, err.msg);
    zero_device_close(*cpu);
    *cpu = NULL;
    return EXIT_FAILURE;
}

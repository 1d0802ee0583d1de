/* The backends' MPI set-up and tear-down (backend_mpi.h). */
#include <stdio.h>

#include "common/backend_mpi.h"
#include "zero/error.h"

int backend_mpi_ready(const char *name, char *why, size_t why_len)
{
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
        snprintf(why, why_len, "%s backend: MPI_Init has not been called", name);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

int backend_mpi_dup(const char *name, MPI_Comm user, MPI_Comm *comm, int *rank, int *size,
                    char *why, size_t why_len)
{
    if (MPI_Comm_dup(user, comm) != MPI_SUCCESS) {
        *comm = MPI_COMM_NULL;
        snprintf(why, why_len, "%s backend: MPI_Comm_dup failed", name);
        return ZERO_ECOMM;
    }
    MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(*comm, rank);
    MPI_Comm_size(*comm, size);
    return ZERO_OK;
}

int backend_mpi_split_node(const char *name, MPI_Comm comm, int rank, MPI_Comm *node_comm,
                           int *node_rank, int *node_size, char *why, size_t why_len)
{
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, node_comm) !=
        MPI_SUCCESS) {
        *node_comm = MPI_COMM_NULL;
        snprintf(why, why_len, "%s backend: rank %d: MPI_Comm_split_type(SHARED) failed", name,
                 rank);
        return ZERO_ECOMM;
    }
    MPI_Comm_rank(*node_comm, node_rank);
    MPI_Comm_size(*node_comm, node_size);
    return ZERO_OK;
}

int backend_mpi_all(MPI_Comm comm, int ok)
{
    int mine = ok != 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}

void backend_mpi_free(MPI_Comm *node_comm, MPI_Comm *comm)
{
    if (*node_comm != MPI_COMM_NULL)
        MPI_Comm_free(node_comm);
    if (*comm != MPI_COMM_NULL)
        MPI_Comm_free(comm);
}

int backend_mpi_node_group_size(MPI_Comm comm, int rank, int size, int node_rank, int node_size)
{
    /* consecutive: node k holds ranks k g .. k g + g - 1, so our place in it is rank % g */
    int mine[3] = {node_size, -node_size,
                   node_size > 0 && size % node_size == 0 && rank % node_size == node_rank},
        all[3];
    if (MPI_Allreduce(mine, all, 3, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        return 0;
    return all[0] == -all[1] && all[2] ? all[0] : 0;
}

int backend_mpi_split_group(const char *name, MPI_Comm comm, int rank, int color, MPI_Comm *group,
                            char *why, size_t why_len)
{
    if (color < 0) {
        snprintf(why, why_len, "%s backend: rank %d: group color %d is negative", name, rank,
                 color);
        return ZERO_EINVAL;
    }
    if (MPI_Comm_split(comm, color, rank, group) != MPI_SUCCESS) {
        *group = MPI_COMM_NULL;
        snprintf(why, why_len, "%s backend: rank %d: MPI_Comm_split(color %d) failed", name, rank,
                 color);
        return ZERO_ECOMM;
    }
    MPI_Comm_set_errhandler(*group, MPI_ERRORS_RETURN);
    return ZERO_OK;
}

/* What every MPI-bootstrapped backend does with MPI at open and close, written once:
 * the probe's "is MPI up?", our own duplicate of the user's communicator, the split
 * into the ranks that share this node, and the freeing of both. name is the
 * backend's ("cpu"): messages start "<name> backend: ". Backends only (not the core). */
#ifndef ZERO_BACKEND_MPI_H
#define ZERO_BACKEND_MPI_H

#include <stddef.h>

#include <mpi.h>

/* ZERO_OK when MPI_Init has been called, else ZERO_EINVAL with why filled. */
int backend_mpi_ready(const char *name, char *why, size_t why_len);

/* *comm = a duplicate of user whose errors come back as codes (MPI_ERRORS_RETURN) and
 * whose messages never match the user's; rank and size in it. */
int backend_mpi_dup(const char *name, MPI_Comm user, MPI_Comm *comm, int *rank, int *size,
                    char *why, size_t why_len);

/* *node_comm = the ranks of comm that share our memory (MPI_COMM_TYPE_SHARED), ordered
 * as in comm; our rank and their count in it. rank is ours in comm (for the message). */
int backend_mpi_split_node(const char *name, MPI_Comm comm, int rank, MPI_Comm *node_comm,
                           int *node_rank, int *node_size, char *why, size_t why_len);

/* 1 on every rank of comm when ok is nonzero on all of them: one rank's failure
 * reaches the others before they wait for it in a later collective. */
int backend_mpi_all(MPI_Comm comm, int ok);

/* The node split as groups (zero/backend_groups.h, node_group_size): node_size when
 * every rank's node holds node_size ranks, consecutive in comm, on every rank; else 0.
 * Collective over comm. */
int backend_mpi_node_group_size(MPI_Comm comm, int rank, int size, int node_rank, int node_size);

/* *group = the ranks of comm that pass the same color (>= 0), ordered as in comm, with
 * MPI_ERRORS_RETURN; collective over comm. */
int backend_mpi_split_group(const char *name, MPI_Comm comm, int rank, int color, MPI_Comm *group,
                            char *why, size_t why_len);

/* Frees the communicators that are not MPI_COMM_NULL and sets them to it. */
void backend_mpi_free(MPI_Comm *node_comm, MPI_Comm *comm);

#endif

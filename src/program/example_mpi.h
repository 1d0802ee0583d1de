/* MPI glue the example programs share: agreeing on a status, and broadcasting
 * buffers of any size. The library itself never calls MPI; programs may. */
#ifndef ZERO_PROGRAM_EXAMPLE_MPI_H
#define ZERO_PROGRAM_EXAMPLE_MPI_H

#include <stddef.h>

#include <mpi.h>

#include "zero/error.h"

/* Collective. Every rank passes its own status rc (its message in err when
 * rc != 0). Returns the status of the lowest failing rank, or 0, on every
 * rank, and copies that rank's message into every rank's err, prefixed with
 * "rank R: " when R != 0 and the message does not already name a rank. */
int example_agree(int rc, struct zero_error *err, MPI_Comm comm);

/* The same, naming rank 0 as well when there are several ranks (the zero tool's runs:
 * their messages always say which rank failed). */
int example_agree_naming_ranks(int rc, struct zero_error *err, MPI_Comm comm);

/* MPI_Bcast of n bytes from root, in pieces that fit MPI's int counts. */
void example_bcast(void *buf, size_t n, int root, MPI_Comm comm);

#endif

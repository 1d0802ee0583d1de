/* What the example programs agree on over a communicator of the job (zero/job.h): a
 * status, with the message of the rank that failed first. */
#ifndef ZERO_PROGRAM_EXAMPLE_AGREE_H
#define ZERO_PROGRAM_EXAMPLE_AGREE_H

#include "zero/error.h"
#include "zero/job.h"

/* Collective. Every rank passes its own status rc (its message in err when
 * rc != 0). Returns the status of the lowest failing rank, or 0, on every
 * rank, and copies that rank's message into every rank's err, prefixed with
 * "rank R: " when R != 0 and the message does not already name a rank. */
int example_agree(int rc, struct zero_error *err, struct zero_comm *comm);

/* The same, naming rank 0 as well when there are several ranks (the zero tool's runs:
 * their messages always say which rank failed). */
int example_agree_naming_ranks(int rc, struct zero_error *err, struct zero_comm *comm);

#endif

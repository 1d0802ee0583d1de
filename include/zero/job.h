/* The job a program runs in: its start and end, its communicators, and the few exchanges
 * a program makes over them (a status agreed on, a file one rank read handed to the others,
 * every rank's start-up record gathered, "do all ranks get here in time?").
 *
 * For programs only (src/program, src/cli, examples, tests, bench): the library never calls
 * these functions, nor does it start or end the job; its own collectives are the backends'
 * (zero/backend.h), on the communicator a program hands zero_device_open
 * (zero_comm_device_handle). Implemented over MPI in backends/common/job_mpi.c, so that no
 * program code outside backends/ includes <mpi.h>.
 *
 * The exchanges are collective over their communicator: every rank of it makes the same call
 * in the same order. They return ZERO_OK or a ZERO_* status; none exits. */
#ifndef ZERO_JOB_H
#define ZERO_JOB_H

#include <stddef.h>
#include <stdint.h>

struct zero_error;

/* A communicator of the job (an MPI communicator): zero_comm_world's, or one of
 * zero_comm_dup's and zero_comm_split's, which the caller frees. */
struct zero_comm;

/* ---- the job ---- */

/* Starts the job with threads allowed everywhere (the cpu backend's communication thread)
 * unless it was started already; *owned = 1 when this call started it, so the caller ends it.
 * argc and argv may be NULL. */
int zero_job_init(int *argc, char ***argv, int *owned, struct zero_error *err);

/* 1 once the job was started (by zero_job_init or by the program itself), else 0. */
int zero_job_initialized(void);

/* Ends the job (collective over the world); ZERO_OK or ZERO_ECOMM. */
int zero_job_finalize(void);

/* Ends every rank of the job at once with exit status code. Only for a program whose peers
 * may be waiting in a collective they can never finish (one rank failed alone); the library
 * never calls it. */
_Noreturn void zero_job_abort(int code);

/* ---- communicators ---- */

/* Every rank of the job (a handle that needs no freeing). */
struct zero_comm *zero_comm_world(void);

/* This rank's number in c (0 .. size - 1), and c's number of ranks. */
int zero_comm_rank(const struct zero_comm *c);
int zero_comm_size(const struct zero_comm *c);

/* *out = a communicator of c's ranks whose messages never meet c's (its own exchanges,
 * which never match another collective). Collective over c. */
int zero_comm_dup(const struct zero_comm *c, struct zero_comm **out, struct zero_error *err);

/* *out = the ranks of c that pass the same color, ordered by key (then by their rank in c);
 * a rank passing color < 0 is in none of them and gets *out = NULL. Collective over c. */
int zero_comm_split(const struct zero_comm *c, int color, int key, struct zero_comm **out,
                    struct zero_error *err);

/* Frees *c (NULL, and the world's handle, are left alone) and sets *c to NULL. Collective over
 * *c. */
void zero_comm_free(struct zero_comm **c);

/* What zero_device_open's comm argument takes for the cpu and cuda backends (an MPI_Comm *),
 * valid while c is. */
void *zero_comm_device_handle(struct zero_comm *c);

/* ---- exchanges (collective over c) ---- */

enum zero_comm_op { ZERO_COMM_MIN = 0, ZERO_COMM_MAX, ZERO_COMM_SUM };

/* *value = op over every rank's *value, on every rank. */
int zero_comm_allreduce_int(struct zero_comm *c, int *value, enum zero_comm_op op);

/* values[0 .. n - 1] = op over every rank's, element by element, on every rank. */
int zero_comm_allreduce_int64(struct zero_comm *c, int64_t *values, size_t n, enum zero_comm_op op);
int zero_comm_allreduce_double(struct zero_comm *c, double *values, size_t n, enum zero_comm_op op);

/* root's n bytes at buf into every rank's buf, any n (sent in pieces). */
int zero_comm_bcast(struct zero_comm *c, void *buf, size_t n, int root);

/* Every rank's n bytes at mine reach root, in rank order. At root, *all holds them end to end
 * and (*counts)[r] is rank r's number of bytes, zero_comm_size(c) of them (both malloc'd; the
 * caller frees them); elsewhere *all and *counts are NULL. A rank whose n is over INT_MAX sends
 * nothing (its count is 0) and gets ZERO_EINVAL. At root, ZERO_ENOMEM when the counts or the
 * records do not fit in memory, or the records together pass INT_MAX bytes: then *all and
 * *counts are NULL. */
int zero_comm_gather(struct zero_comm *c, const void *mine, size_t n, int root, void **all,
                     size_t **counts);

/* 1 when every rank of c makes this call within `seconds` of this rank's, else 0 (a rank that
 * never comes: the wait ends). c takes no other exchange after a 0. */
int zero_comm_all_arrive(struct zero_comm *c, double seconds);

#endif

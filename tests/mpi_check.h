/* Running a Check suite on every rank of MPI_COMM_WORLD (tests/test_*.npN).
 *
 *     static Suite *make_suite(void) { ... }
 *     int main(int argc, char **argv) { return mpi_check_main(&argc, &argv, make_suite); }
 *
 * or, with setup that must happen between MPI_Init and MPI_Finalize (opening devices):
 * MPI_Init, setup, status = mpi_check_run(make_suite), teardown, MPI_Finalize.
 *
 * Every rank runs every test in the same order, in process (CK_NOFORK: an MPI process
 * cannot fork a child that talks to the other ranks). Rank 0 prints Check's normal
 * output (CK_VERBOSE if CK_VERBOSITY=verbose); the other ranks stay silent except for
 * their own failures, which they print with their rank. The exit status is 0 only if no
 * rank failed.
 *
 * A failed ck_assert leaves the test at once, so an assertion that fails on some ranks
 * only would let the others run ahead into the next collective and hang. Assert on
 * values every rank agrees on: combine local verdicts with mpi_check_all() first. */
#ifndef ZERO_TESTS_MPI_CHECK_H
#define ZERO_TESTS_MPI_CHECK_H

#include <check.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int mpi_check_rank(void)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

static inline int mpi_check_size(void)
{
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
}

/* 1 on every rank if ok is nonzero on every rank, else 0 on every rank. */
static inline int mpi_check_all(int ok)
{
    int local = ok != 0, all = 0;
    MPI_Allreduce(&local, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* The largest of every rank's value, on every rank. */
static inline long mpi_check_max(long value)
{
    long max = 0;
    MPI_Allreduce(&value, &max, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    return max;
}

static inline enum print_output mpi_check_verbosity(void)
{
    const char *v = getenv("CK_VERBOSITY");
    return v != NULL && strcmp(v, "verbose") == 0 ? CK_VERBOSE : CK_NORMAL;
}

static inline void mpi_check_print_failures(SRunner *sr, int rank)
{
    int n = srunner_ntests_failed(sr);
    TestResult **failures = srunner_failures(sr);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "rank %d: %s:%d: %s: %s\n", rank, tr_lfile(failures[i]),
                tr_lno(failures[i]), tr_tcname(failures[i]), tr_msg(failures[i]));
    free(failures);
}

/* Runs the suite on every rank (MPI already initialized); returns the exit status. */
static inline int mpi_check_run(Suite *(*make_suite)(void))
{
    int rank = mpi_check_rank();
    SRunner *sr = srunner_create(make_suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, rank == 0 ? mpi_check_verbosity() : CK_SILENT);
    int failed = srunner_ntests_failed(sr);
    if (rank != 0 && failed > 0)
        mpi_check_print_failures(sr, rank);
    srunner_free(sr);

    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && any > 0 && failed == 0)
        fprintf(stderr, "rank 0 passed, but other ranks failed (see above)\n");
    return any == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* The whole main of a test that needs no setup outside its fixtures. */
static inline int mpi_check_main(int *argc, char ***argv, Suite *(*make_suite)(void))
{
    int provided; /* MULTIPLE: the cpu backend's communication thread is exercised */
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    int status = mpi_check_run(make_suite);
    MPI_Finalize();
    return status;
}

#endif

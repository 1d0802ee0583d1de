/* See program_signal.h. A signal's default action killed the ranks mid-step: the
 * swap files stayed, and mpirun killed the rest. Here the handler sets a flag and
 * nothing else (async-signal-safe); one MPI_Allreduce of an int per step, on a
 * communicator of its own so that it never meets another collective, makes every
 * rank stop after the same step. */
#include <signal.h>

#include <mpi.h>

#include "program_signal.h"

static volatile sig_atomic_t received;
static MPI_Comm signal_comm = MPI_COMM_NULL;

static void record(int sig)
{
    received = sig;
}

void program_signals_install(void)
{
    if (signal_comm != MPI_COMM_NULL)
        return;
    MPI_Comm_dup(MPI_COMM_WORLD, &signal_comm);
    struct sigaction sa = {0}, old;
    sa.sa_handler = record;
    sa.sa_flags = SA_RESTART; /* a read or write the signal interrupts goes on */
    sigemptyset(&sa.sa_mask);
    const int sigs[] = {SIGTERM, SIGINT};
    for (int i = 0; i < 2; i++)
        /* a signal ignored at start stays ignored (a shell's background job ignores SIGINT) */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
}

int program_signals_agree(void)
{
    int mine = received, any = 0;
    if (signal_comm == MPI_COMM_NULL)
        return mine;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, signal_comm);
    return any;
}

/* See program_signal.h. A signal's default action killed the ranks mid-step: the
 * swap files stayed, and mpirun killed the rest. Here the handler sets a flag and
 * nothing else (async-signal-safe); one all-reduce of an int per step, on a
 * communicator of its own so that it never meets another collective, makes every
 * rank stop after the same step. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "program_signal.h"
#include "zero/engine.h"
#include "zero/error.h"
#include "zero/job.h"

static volatile sig_atomic_t received;
static struct zero_comm *signal_comm;

/* the swap files' paths (an engine has two at most: optimizer and parameters) */
enum { MAX_FILES = 4, PATH_CAP = 512 };
static char files[MAX_FILES][PATH_CAP];
static volatile sig_atomic_t nfiles;

static void record(int sig)
{
    received = sig;
    for (int i = 0; i < nfiles; i++)
        unlink(files[i]);
    nfiles = 0;
}

void program_signals_own_files(const struct zero_engine *e)
{
    nfiles = 0; /* first: the handler never reads a path being written */
    const char *paths[MAX_FILES];
    size_t n = e ? zero_engine_swap_paths(e, paths, MAX_FILES) : 0;
    int kept = 0;
    for (size_t i = 0; i < n && i < MAX_FILES; i++)
        if (strlen(paths[i]) < PATH_CAP)
            memcpy(files[kept++], paths[i], strlen(paths[i]) + 1);
    nfiles = kept;
}

void program_signals_install(void)
{
    if (signal_comm != NULL)
        return;
    struct zero_error err = {0}; /* none: each rank stops for its own signal only */
    zero_comm_dup(zero_comm_world(), &signal_comm, &err);
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
    int any = received;
    if (signal_comm == NULL)
        return any;
    zero_comm_allreduce_int(signal_comm, &any, ZERO_COMM_MAX);
    return any;
}

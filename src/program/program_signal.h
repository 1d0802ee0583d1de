/* SIGTERM and SIGINT end a training run at a step boundary, on every rank at the
 * same step, through the program's own end (the engine destroyed, nothing saved): the
 * handler records the signal, and the loop asks the ranks before each step and after
 * the last (program_stopped). The handler also removes the engine's swap files at once
 * (their data stays readable through the open files until destroy): a rank waiting in
 * a collective that a failed peer left (mpirun's SIGTERM after the abort, then its
 * SIGKILL) would otherwise leave them on disk. */
#ifndef ZERO_PROGRAM_PROGRAM_SIGNAL_H
#define ZERO_PROGRAM_PROGRAM_SIGNAL_H

/* Installs the handler for SIGTERM and SIGINT and makes the communicator the ranks
 * agree over (a duplicate of the world, zero_comm_dup). Collective; once per process. */
void program_signals_install(void);

/* Collective: the signal some rank received since the start (the largest number when
 * they differ), the same on every rank; 0 if none. */
int program_signals_agree(void);

struct zero_engine;
/* The swap files the handler removes: a copy of e's (zero_engine_swap_paths), so that
 * the handler reads nothing the engine frees; NULL: none (before e is destroyed). */
void program_signals_own_files(const struct zero_engine *e);

#endif

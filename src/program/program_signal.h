/* SIGTERM and SIGINT end a training run at a step boundary, on every rank at the
 * same step, through the program's own end (the engine destroyed, its swap files
 * removed, nothing saved): the handler only records the signal, and the loop asks
 * the ranks before each step and after the last (program_stopped). */
#ifndef ZERO_PROGRAM_PROGRAM_SIGNAL_H
#define ZERO_PROGRAM_PROGRAM_SIGNAL_H

/* Installs the handler for SIGTERM and SIGINT and makes the communicator the ranks
 * agree over (a duplicate of the world, zero_comm_dup). Collective; once per process. */
void program_signals_install(void);

/* Collective: the signal some rank received since the start (the largest number when
 * they differ), the same on every rank; 0 if none. */
int program_signals_agree(void);

#endif

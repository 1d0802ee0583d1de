/* Fault injection: make any fallible point fail on chosen ranks, to prove that a
 * failure on some ranks stops every rank with the failing rank's message.
 *
 *   ZERO_FAULT=SITE:RANKS[:NTH]   SITE's NTH passage (1-based, default 1) fails
 *                                 on RANKS: "all", "last" or a list "0,2"
 *   ZERO_FAULT_LOG=FILE           "SITE RANK" is appended to FILE at a site's first
 *                                 passage in a process (how a test enumerates the
 *                                 sites of a run and the ranks that pass each)
 *
 * A site is one call, `if (zero_fault("nvme.reserve") || real_call_failed)`: when it
 * fires it prints "libzero: rank R: ZERO_FAULT: SITE fails here" on stderr, sets
 * errno to EIO and returns 1, and the caller takes its own error path (the
 * message a real failure would give). Unset, a site costs one load and a branch.
 * docs/faults.md lists the sites. */
#ifndef ZERO_FAULT_H
#define ZERO_FAULT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The process's rank and world size, for RANKS (set by the backends at open and
 * by programs after MPI_Init; before either, the process counts as rank 0 of 1). */
void zero_fault_set_rank(int rank, int world);

/* 1 when SITE fails on this passage on this rank, else 0. */
int zero_fault(const char *site);

/* For sites whose error is a text: fills why with "WHO: rank R: injected fault at
 * SITE (ZERO_FAULT)" and returns ZERO_EIO. */
int zero_fault_fail_text(char *why, size_t why_len, const char *who, const char *site);

struct zero_error;
/* ZERO_OK, or ZERO_EINVAL naming ZERO_FAULT when it is set but not SITE:RANKS[:NTH]
 * (the engine checks at creation, and the ranks agree on the outcome). */
int zero_fault_check(struct zero_error *err);

#ifdef __cplusplus
}
#endif

#endif

/* A fork-join loop over the host's cores (not installed). The offloaded
 * optimizer's only parallelism: element-wise work, so any split of the range
 * gives the same bits. */
#ifndef ZERO_HOST_PARALLEL_H
#define ZERO_HOST_PARALLEL_H

#include <stddef.h>

/* Runs fn(arg, begin, end) over [0, n) split into at most `threads` contiguous
 * ranges whose starts are multiples of grain; the calling thread takes the first
 * range. A thread that cannot be created leaves its range to the caller, so the
 * work is always done. */
void host_parallel_for(size_t n, size_t grain, int threads,
                       void (*fn)(void *arg, size_t begin, size_t end), void *arg);

/* The host's online processors (at least 1). */
int host_processors(void);

#endif

/* What the single-process benchmarks share: a monotonic clock and an ascending
 * comparison of doubles for qsort (medians). Header-only: these programs do not
 * link bench/rig.c, which starts MPI. */
#ifndef ZERO_BENCH_CLOCK_H
#define ZERO_BENCH_CLOCK_H

#include <time.h>

/* seconds on the monotonic clock */
static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif

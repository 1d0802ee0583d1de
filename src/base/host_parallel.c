/* See host_parallel.h. Threads are created per call: a step makes one call per
 * unit, tens of them, each worth milliseconds of memory-bound work, so a pool
 * would save little and add state to tear down. */
#include "host_parallel.h"

#include <pthread.h>
#include <unistd.h>

#define MAX_THREADS 256

struct range {
    void (*fn)(void *arg, size_t begin, size_t end);
    void *arg;
    size_t begin, end;
};

static void *run_range(void *p)
{
    struct range *r = p;
    r->fn(r->arg, r->begin, r->end);
    return NULL;
}

void host_parallel_for(size_t n, size_t grain, int threads,
                       void (*fn)(void *arg, size_t begin, size_t end), void *arg)
{
    if (grain == 0)
        grain = 1;
    size_t grains = (n + grain - 1) / grain;
    size_t t = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : (size_t)threads;
    if (t > grains)
        t = grains > 0 ? grains : 1;
    struct range r[MAX_THREADS];
    pthread_t id[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (size_t i = 0; i < t; i++) { /* grains spread evenly, the first ranges one larger */
        size_t g0 = i * (grains / t) + (i < grains % t ? i : grains % t);
        size_t g1 = g0 + grains / t + (i < grains % t);
        size_t end = g1 * grain < n ? g1 * grain : n;
        r[i] = (struct range){fn, arg, g0 * grain, end};
    }
    for (size_t i = 1; i < t; i++)
        started[i] = pthread_create(&id[i], NULL, run_range, &r[i]) == 0;
    run_range(&r[0]);
    for (size_t i = 1; i < t; i++) {
        if (started[i])
            pthread_join(id[i], NULL);
        else
            run_range(&r[i]);
    }
}

int host_processors(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

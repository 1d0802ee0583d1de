/* The device time of completed collectives (comm stats' seconds): each collective's start
 * and done events wait here until done has completed, and are read without blocking then,
 * or at the next synchronize (cuda_coll_drain_timing), so a collective never makes the
 * host wait for its own timing. A floor below cuda_coll.c, which adds to it, and
 * cuda_memory.c, whose synchronize drains it. */
#include <stdlib.h>

#include "cuda_ops.h"

struct cuda_timing {
    struct pending {
        cudaEvent_t start, done;
        struct zero_coll_counter *counter; /* where its seconds go */
    } * item;
    size_t n, cap;
};

static void timing_release(struct pending *p)
{
    cudaEventDestroy(p->start);
    cudaEventDestroy(p->done);
}

int cuda_coll_timing_harvest(struct cuda_state *s, int block)
{
    struct cuda_timing *t = s->timing;
    if (t == NULL)
        return ZERO_OK;
    size_t kept = 0;
    cudaError_t err = cudaSuccess;
    for (size_t i = 0; i < t->n; i++) {
        struct pending *p = &t->item[i];
        cudaError_t e = block ? cudaEventSynchronize(p->done) : cudaEventQuery(p->done);
        if (e == cudaErrorNotReady) {
            t->item[kept++] = *p;
            continue;
        }
        float ms = 0.0f;
        if (e == cudaSuccess)
            e = cudaEventElapsedTime(&ms, p->start, p->done);
        if (e == cudaSuccess)
            p->counter->seconds += (double)ms * 1e-3;
        else if (err == cudaSuccess)
            err = e;
        timing_release(p);
    }
    t->n = kept;
    return cuda_check(s, err, "collective timing");
}

int cuda_coll_drain_timing(struct cuda_state *s)
{
    return cuda_coll_timing_harvest(s, 1);
}

void cuda_coll_timing_add(struct cuda_state *s, cudaEvent_t start, cudaEvent_t done,
                          struct zero_coll_counter *counter)
{
    struct cuda_timing *t = s->timing;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct pending *a = realloc(t->item, cap * sizeof(*a));
        if (a == NULL) { /* no room to wait: time it now */
            struct pending p = {start, done, counter};
            float ms = 0.0f;
            if (cudaEventSynchronize(p.done) == cudaSuccess &&
                cudaEventElapsedTime(&ms, p.start, p.done) == cudaSuccess)
                p.counter->seconds += (double)ms * 1e-3;
            timing_release(&p);
            return;
        }
        t->item = a;
        t->cap = cap;
    }
    t->item[t->n++] = (struct pending){start, done, counter};
}

int cuda_coll_timing_open(struct cuda_state *s)
{
    s->timing = calloc(1, sizeof(*s->timing));
    return s->timing != NULL ? 0 : -1;
}

void cuda_coll_timing_close(struct cuda_state *s)
{
    if (s->timing == NULL)
        return;
    for (size_t i = 0; i < s->timing->n; i++)
        timing_release(&s->timing->item[i]);
    free(s->timing->item);
    free(s->timing);
    s->timing = NULL;
}

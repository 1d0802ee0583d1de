/* The binary counter of partial gradient sums (exactness contract): slot[k]
 * holds the sum of 2^k consecutive micro-step sums. grad_counter.c owns it. */
#ifndef ZERO_ENGINE_GRAD_COUNTER_H
#define ZERO_ENGINE_GRAD_COUNTER_H

#include <stdint.h>

#include "zero/dtype.h"

#define ZERO_MAX_LEVELS 40 /* gradient-accumulation counter levels: 2^40 micro-steps */

struct zero_engine;
struct zero_error;

struct grad_counter {
    int64_t len;                  /* elements per slot */
    float *slot[ZERO_MAX_LEVELS]; /* occupied levels */
    float *pool[ZERO_MAX_LEVELS + 1];
    int npool;
    int64_t pushed;
    float *sum; /* the finished sum, until counter_release */
};

/* Buffers (of len fp32) a counter allocates over `accum` pushes, its peak:
 * floor(log2(accum)) + 1. */
int counter_peak_slots(int64_t accum);
/* slots are fp32 whatever the compute dtype */
int counter_push(struct zero_engine *e, struct grad_counter *c, const void *src, enum zero_dtype t,
                 struct zero_error *err);
/* A free slot buffer (len fp32) to reduce into, then pushed without a copy. */
int counter_take(struct zero_engine *e, struct grad_counter *c, float **out,
                 struct zero_error *err);
int counter_push_taken(struct zero_engine *e, struct grad_counter *c, float *buf,
                       struct zero_error *err);
/* Combines the slots; *sum (fp32, len) stays valid until counter_release. */
int counter_finish(struct zero_engine *e, struct grad_counter *c, float **sum,
                   struct zero_error *err);
void counter_release(struct grad_counter *c);
void counter_destroy(struct zero_engine *e, struct grad_counter *c);

#endif

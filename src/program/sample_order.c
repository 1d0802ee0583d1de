/* See sample_order.h. */
#include <stdlib.h>

#include "sample_order.h"
#include "zero/size.h"

int sample_order_init(struct sample_order *o, uint64_t seed, int64_t n, struct zero_error *err)
{
    *o = (struct sample_order){.seed = seed, .step = -1, .n = n};
    if (seed == 0)
        return ZERO_OK;
    o->perm = zero_size_alloc(n, sizeof *o->perm, "--order-seed: the global batch's order", err);
    return o->perm ? ZERO_OK : err->code;
}

void sample_order_free(struct sample_order *o)
{
    free(o->perm);
    o->perm = NULL;
}

/* splitmix64: a counter-based generator, the same numbers on every machine */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Fisher-Yates over the step's positions, keyed by (seed, step) */
static void draw(struct sample_order *o, int64_t step)
{
    uint64_t state = o->seed * 0xd1b54a32d192ed03ull ^ (uint64_t)step;
    for (int64_t i = 0; i < o->n; i++)
        o->perm[i] = i;
    for (int64_t i = o->n - 1; i > 0; i--) {
        int64_t j = (int64_t)(splitmix64(&state) % (uint64_t)(i + 1));
        int64_t t = o->perm[i];
        o->perm[i] = o->perm[j];
        o->perm[j] = t;
    }
    o->step = step;
}

int64_t sample_order_at(struct sample_order *o, int64_t q)
{
    if (o == NULL || o->seed == 0)
        return q;
    int64_t step = q / o->n;
    if (step != o->step)
        draw(o, step);
    return step * o->n + o->perm[q % o->n];
}

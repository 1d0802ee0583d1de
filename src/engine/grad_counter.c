/* The binary counter of partial gradient sums.
 *
 * The exactness contract sums the micro-step gradients of one optimizer step
 * along a fixed binary tree: slot k holds the sum of 2^k consecutive
 * micro-steps, and pushing micro-step i merges equal-sized neighbours like a
 * carry propagating through a binary counter. At the boundary the occupied
 * slots are combined from the lowest level up. For A micro-steps this yields
 * tree(0, A) = tree(0, p) + tree(p, A - p), p the largest power of two below A
 * — the same tree the exact collectives use over ranks, so with N a power of
 * two the whole sum is one tree over atoms whatever N and accumulation are.
 *
 * Memory: floor(log2(A)) + 1 fp32 buffers of `len` elements, tagged accum (the
 * paper's per-parameter bytes count no accumulation buffer): pushing micro-step
 * k + 1 holds the slots of k's set bits (at most floor(log2(A)) for k < A) and
 * the carry; merged buffers go back to the pool and are reused, never freed
 * before the counter is destroyed. counter_peak_slots says how many. */
#include "engine_internal.h"
#include "grad_counter.h"

int counter_peak_slots(int64_t accum)
{
    int slots = 1; /* floor(log2(accum)) + 1 */
    while (slots < ZERO_MAX_LEVELS && ((int64_t)1 << slots) <= accum)
        slots++;
    return slots;
}

int counter_take(struct zero_engine *e, struct grad_counter *c, float **out, struct zero_error *err)
{
    if (c->npool > 0) {
        *out = c->pool[--c->npool];
        return ZERO_OK;
    }
    return engine_alloc(e, (size_t)c->len * sizeof(float), ZERO_TAG_ACCUM, (void **)out,
                        "gradient accumulation slot", err);
}

static void give_buffer(struct grad_counter *c, float *buf)
{
    c->pool[c->npool++] = buf;
}

int counter_push(struct zero_engine *e, struct grad_counter *c, const void *src, enum zero_dtype t,
                 struct zero_error *err)
{
    float *carry;
    int rc = counter_take(e, c, &carry, err);
    if (rc)
        return rc;
    rc = t == ZERO_F32 ? e->be->copy(e->bself, carry, src, (size_t)c->len * sizeof(float))
                       : e->be->cast(e->bself, carry, ZERO_F32, src, t, (size_t)c->len);
    if (rc)
        return engine_backend_error(e, rc, err, "gradient accumulation copy");
    return counter_push_taken(e, c, carry, err);
}

int counter_push_taken(struct zero_engine *e, struct grad_counter *c, float *carry,
                       struct zero_error *err)
{
    int rc, level = 0;
    while (level < ZERO_MAX_LEVELS && c->slot[level]) {
        /* older + newer: IEEE addition is commutative, the tree shape is what counts */
        if ((rc = e->be->add(e->bself, c->slot[level], c->slot[level], carry, (size_t)c->len)))
            return engine_backend_error(e, rc, err, "gradient accumulation add");
        give_buffer(c, carry);
        carry = c->slot[level];
        c->slot[level] = NULL;
        level++;
    }
    if (level == ZERO_MAX_LEVELS)
        return zero_fail(err, ZERO_EINVAL, "gradient accumulation counter overflow");
    c->slot[level] = carry;
    c->pushed++;
    return ZERO_OK;
}

int counter_finish(struct zero_engine *e, struct grad_counter *c, float **sum,
                   struct zero_error *err)
{
    float *acc = NULL;
    int rc;
    for (int level = 0; level < ZERO_MAX_LEVELS; level++) {
        if (!c->slot[level])
            continue;
        if (acc) {
            if ((rc = e->be->add(e->bself, c->slot[level], c->slot[level], acc, (size_t)c->len)))
                return engine_backend_error(e, rc, err, "gradient accumulation add");
            give_buffer(c, acc);
        }
        acc = c->slot[level];
        c->slot[level] = NULL;
    }
    if (!acc)
        return zero_fail(err, ZERO_EINVAL, "gradient accumulation: no micro-step to finish");
    c->pushed = 0;
    c->sum = acc;
    *sum = acc;
    return ZERO_OK;
}

void counter_release(struct grad_counter *c)
{
    if (c->sum)
        give_buffer(c, c->sum);
    c->sum = NULL;
}

void counter_destroy(struct zero_engine *e, struct grad_counter *c)
{
    counter_release(c);
    for (int level = 0; level < ZERO_MAX_LEVELS; level++)
        engine_free(e, c->slot[level]);
    for (int i = 0; i < c->npool; i++)
        engine_free(e, c->pool[i]);
    c->npool = 0;
}

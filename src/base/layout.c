/* Partition math for unit flat buffers; see include/zero/layout.h. */
#include "zero/layout.h"

int64_t zero_round_up(int64_t x, int64_t multiple)
{
    return multiple <= 1 ? x : (x + multiple - 1) / multiple * multiple;
}

int zero_layout_unit(struct zero_unit_layout *l, const int64_t *numel, int nparams, int world,
                     int64_t align, struct zero_error *err)
{
    if (nparams < 0 || nparams > (int)(sizeof l->offset / sizeof l->offset[0]))
        return zero_fail(err, ZERO_EINVAL, "layout: %d parameters (at most %d per unit)", nparams,
                         (int)(sizeof l->offset / sizeof l->offset[0]));
    if (world < 1 || align < 1)
        return zero_fail(err, ZERO_EINVAL, "layout: world %d and align %lld must be positive",
                         world, (long long)align);
    int64_t at = 0;
    for (int i = 0; i < nparams; i++) {
        if (numel[i] < 0)
            return zero_fail(err, ZERO_EINVAL, "layout: parameter %d has %lld elements", i,
                             (long long)numel[i]);
        at = zero_round_up(at, ZERO_PARAM_ALIGN);
        l->offset[i] = at;
        l->numel[i] = numel[i];
        at += numel[i];
    }
    l->nparams = nparams;
    l->used = at;
    l->world = world;
    l->align = align;
    /* A unit without parameters (an activation) has an empty buffer: it takes
     * part in no collective. */
    l->padded = zero_round_up(at, (int64_t)world * align);
    l->shard = l->padded / world;
    return ZERO_OK;
}

void zero_layout_shard(const struct zero_unit_layout *l, int rank, int64_t *begin, int64_t *end)
{
    *begin = (int64_t)rank * l->shard;
    *end = *begin + l->shard;
}

void zero_layout_param_in_shard(const struct zero_unit_layout *l, int p, int rank, int64_t *begin,
                                int64_t *end)
{
    int64_t s0, s1;
    zero_layout_shard(l, rank, &s0, &s1);
    int64_t p0 = l->offset[p], p1 = l->offset[p] + l->numel[p];
    *begin = p0 > s0 ? p0 : s0;
    *end = p1 < s1 ? p1 : s1;
    if (*end < *begin)
        *end = *begin;
}

int zero_plan_buckets(const int64_t *size, int n, int64_t limit, int *first)
{
    int count = 0;
    int64_t fill = 0;
    for (int i = 0; i < n; i++) {
        if (i == 0 || fill + size[i] > limit) {
            first[count++] = i;
            fill = 0;
        }
        fill += size[i];
    }
    first[count] = n;
    return count;
}

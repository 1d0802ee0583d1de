/* Partition math: how a unit's parameters lie in its flat buffer and how that
 * buffer splits into N shards. Pure arithmetic: no I/O, no backend.
 *
 *   unit flat buffer (padded elements)
 *   | p0 | pad | p1 | pad | ... | p_k | zero padding to a multiple of N * align |
 *   |<- shard 0 ->|<- shard 1 ->| ...                         |<- shard N-1 ->|
 *
 * Parameter offsets are rounded up to param_align elements (so every tensor
 * starts on a cache line); the total is rounded up to N * align, so every shard
 * is a whole number of align-sized norm blocks and shard boundaries are
 * block-aligned. Padding is always zero. */
#ifndef ZERO_LAYOUT_H
#define ZERO_LAYOUT_H

#include <stdint.h>

#include "zero/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_PARAM_ALIGN 16 /* elements: 64 bytes of fp32 */

struct zero_unit_layout {
    int nparams;
    int64_t offset[32]; /* element offset of each parameter in the flat buffer */
    int64_t numel[32];  /* elements of each parameter */
    int64_t used;       /* end of the last parameter */
    int64_t padded;     /* flat buffer length: multiple of world * align */
    int64_t shard;      /* padded / world */
    int world;
    int64_t align;
};

int64_t zero_round_up(int64_t x, int64_t multiple);

/* Lays out nparams tensors of the given sizes for `world` ranks. */
int zero_layout_unit(struct zero_unit_layout *l, const int64_t *numel, int nparams, int world,
                     int64_t align, struct zero_error *err);

/* [begin, end) of rank's shard in the flat buffer. */
void zero_layout_shard(const struct zero_unit_layout *l, int rank, int64_t *begin, int64_t *end);

/* The part of parameter p that lies in rank's shard, as flat offsets [begin, end)
 * (empty when begin == end). */
void zero_layout_param_in_shard(const struct zero_unit_layout *l, int p, int rank, int64_t *begin,
                                int64_t *end);

/* Groups consecutive items (in the given order) into buckets of at most `limit`
 * elements; an item larger than the limit is a bucket of its own. first[b] is
 * the position in `order` where bucket b starts; returns the bucket count.
 * first must have room for n + 1 entries (first[count] = n). */
int zero_plan_buckets(const int64_t *size, int n, int64_t limit, int *first);

#ifdef __cplusplus
}
#endif

#endif

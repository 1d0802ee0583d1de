/* ZeRO++ qgZ (qgz.c): stage 3's gradient reduce-scatter as an all-to-all of quantized codes.
 *
 * With zero_optimization.zero_quantized_gradients each rank cuts its local gradient
 * (N pieces of s shard elements, piece k owned by rank k) and quantizes every piece on
 * its own into a slot: ceil(s / B) fp32 scales, then the codes (libzero.qgz_bits 4: two
 * to a byte; 8: one), padded to a multiple of 4 bytes (B = ZERO_QWZ_BLOCK; the format
 * is zero/backend_quant.h's). Ranks r = p g + l sit in groups of g (hpZ's groups when
 * zero_hpz_partition_size is set, else the nodes the backend found; P = N/g groups):
 *
 *   hop 1 (g > 1), inside the group: member l' gets the P pieces of the ranks q g + l';
 *         each rank dequantizes the g slots of every piece and sums them in fp32 along
 *         the canonical tree over the members (src/base/tree.h)
 *   hop 2 (P > 1), across the groups: the P group sums, quantized again, go to the ranks
 *         q g + l, which dequantize the P slots and sum them along the tree over groups
 *
 * and the sum is rounded once into the landing dtype. One hop where g is 1 or N (then
 * the tree over all N ranks). Every sum has a fixed order, so the same run twice gives
 * the same bits. The bytes: hop 1 (g-1) P slots per rank, counted in the group's
 * all_to_all; hop 2 (P-1) slots, counted in the world's (only to ranks of other groups). */
#ifndef ZERO_ENGINE_QGZ_H
#define ZERO_ENGINE_QGZ_H

#include <stddef.h>
#include <stdint.h>

#include "zero/config.h"
#include "zero/error.h"

struct zero_engine;
struct zero_group;

struct qgz_plan {
    int bits;                 /* 4 or 8; 0 = qgZ off */
    int size, rank;           /* g and this rank's place in its group (l) */
    int node_group;           /* the backend's node split as groups (0: irregular) */
    struct zero_group *group; /* hop 1's (NULL where g = 1) */
    int owns_group;           /* opened here (else hpZ's) */
    size_t *bytes;            /* (2 N) host: the all-to-all's send and recv bytes per peer */
    int *piece;               /* (N) host: which piece of the local gradient each slot holds */
};

/* The bytes of one slot for a piece of `piece` elements in `bits`-bit codes. */
size_t qgz_slot_bytes(int bits, int64_t piece);
int qgz_on(const struct zero_engine *e);
/* Opens hop 1's group (after hpz_open); refuses the key where the backend has no
 * quant group. */
int qgz_open(struct zero_engine *e, struct zero_error *err);
void qgz_close(struct zero_engine *e);
/* send (N shard,) st = unit's local gradient on this rank; recv (shard,) rt = the sum of
 * this rank's shard over all ranks. Blocking; reports each hop as a reduction event in
 * the group it spans. Backend status. */
int qgz_reduce_scatter(struct zero_engine *e, int unit, const void *send, enum zero_dtype st,
                       void *recv, enum zero_dtype rt, size_t shard);
/* Per rank and reduction of a shard of s elements: the bytes hop 1 and hop 2 send. */
void qgz_reduction_bytes(const struct zero_engine *e, int64_t shard, int64_t *intra,
                         int64_t *inter);

#endif

/* ZeRO++ qwZ (qwz.c): stage 3's parameter all-gathers in block-wise int8.
 *
 * With zero_optimization.zero_quantized_weights each rank quantizes its own parameter
 * shard (s shard elements, compute dtype) into one packed slot: ceil(s / B) fp32
 * scales, then s int8 codes, padded to a multiple of 4 bytes (B = ZERO_QWZ_BLOCK,
 * zero/backend_quant.h states the format). The world all-gathers the N slots, and
 * every rank dequantizes all of them into the whole buffer in the compute dtype.
 * The owner alone quantizes its shard, so every rank holds the same dequantized bits,
 * and the same run twice gives the same bits. The shards themselves (and the fp32
 * master) are never quantized: only what the gather delivers for compute is. */
#ifndef ZERO_ENGINE_QWZ_H
#define ZERO_ENGINE_QWZ_H

#include <stddef.h>
#include <stdint.h>

#include "zero/config.h"
#include "zero/error.h"

struct zero_engine;
struct zero_request;

/* One unit's part (qwz.c alone writes it) */
struct unit_qwz {
    void *packed; /* (N, slot bytes) the gathered slots until they are dequantized */
};

/* The bytes of one rank's slot for a shard of `shard` elements. */
size_t qwz_slot_bytes(int64_t shard);
int qwz_on(const struct zero_engine *e);
/* Refuses the key where the backend has no quant group (zero/backend_quant.h). */
int qwz_open(struct zero_engine *e, struct zero_error *err);
/* Quantizes send (cdt, the unit's shard) and all-gathers the slots (req: NULL blocks;
 * a blocking or completed gather is dequantized at once). Backend status. */
int qwz_all_gather(struct zero_engine *e, int u, const void *send, struct zero_request **req);
/* After the gather's wait: the slots, dequantized into the unit's whole buffer. */
int qwz_finish(struct zero_engine *e, int u);
void qwz_unit_destroy(struct zero_engine *e, int u);

#endif

/* ZeRO++ qwZ: int8 parameter all-gathers (qwz.h). */
#include "qwz.h"

#include "engine_internal.h"
#include "zero/backend_quant.h"

static size_t blocks(int64_t shard)
{
    return ((size_t)shard + ZERO_QWZ_BLOCK - 1) / ZERO_QWZ_BLOCK;
}

size_t qwz_slot_bytes(int64_t shard)
{
    /* scales first (4-byte aligned in every slot), then the codes */
    return 4 * blocks(shard) + ((size_t)shard + 3) / 4 * 4;
}

int qwz_on(const struct zero_engine *e)
{
    return e->cfg.zero_optimization.zero_quantized_weights && e->stage_def->shards_params;
}

int qwz_open(struct zero_engine *e, struct zero_error *err)
{
    if (qwz_on(e) && e->be->quant == NULL)
        return zero_fail(err, ZERO_ENOTSUP,
                         "zero_optimization.zero_quantized_weights = true: backend '%s' has no "
                         "quant group (zero/backend_quant.h), which qwZ's int8 gathers need",
                         e->be->name);
    return ZERO_OK;
}

int qwz_all_gather(struct zero_engine *e, int u, const void *send, struct zero_request **req)
{
    struct unit_states *s = &e->us[u];
    int64_t shard = s->layout.shard;
    size_t slot = qwz_slot_bytes(shard);
    if (req != NULL)
        *req = NULL;
    int rc = s->qwz.packed == NULL
                 ? e->be->alloc(e->bself, (size_t)e->world * slot, ZERO_TAG_GATHER, &s->qwz.packed)
                 : ZERO_OK;
    char *mine = (char *)s->qwz.packed + (size_t)e->rank * slot;
    if (!rc)
        rc = e->be->quant->quantize_int8(e->bself, send, e->cdt, (size_t)shard, ZERO_QWZ_BLOCK,
                                         (float *)(void *)mine,
                                         (int8_t *)(mine + 4 * blocks(shard)));
    /* in place: the slots travel as fp32 words (slot is a multiple of 4 bytes) */
    if (!rc)
        rc = e->be->all_gather(e->bself, mine, s->qwz.packed, ZERO_F32, slot / 4, req);
    if (!rc && (req == NULL || *req == NULL))
        rc = qwz_finish(e, u);
    return rc;
}

int qwz_finish(struct zero_engine *e, int u)
{
    struct unit_states *s = &e->us[u];
    if (s->qwz.packed == NULL)
        return ZERO_OK;
    int64_t shard = s->layout.shard;
    size_t slot = qwz_slot_bytes(shard);
    int rc = ZERO_OK;
    for (int r = 0; r < e->world && !rc; r++) {
        const char *at = (const char *)s->qwz.packed + (size_t)r * slot;
        rc = e->be->quant->dequantize_int8(
            e->bself, (const float *)(const void *)at, (const int8_t *)(at + 4 * blocks(shard)),
            (size_t)shard, ZERO_QWZ_BLOCK, engine_at(e, s->stage3.gathered, (int64_t)r * shard),
            e->cdt);
    }
    qwz_unit_destroy(e, u);
    return rc;
}

void qwz_unit_destroy(struct zero_engine *e, int u)
{
    e->be->free(e->bself, e->us[u].qwz.packed);
    e->us[u].qwz.packed = NULL;
}

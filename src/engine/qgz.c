/* ZeRO++ qgZ: quantized gradient exchange by all-to-all (qgz.h). */
#include "qgz.h"

#include <stdlib.h>

#include "engine_internal.h"
#include "base/tree.h"
#include "zero/backend_groups.h"
#include "zero/backend_quant.h"

static size_t blocks(int64_t piece)
{
    return ((size_t)piece + ZERO_QWZ_BLOCK - 1) / ZERO_QWZ_BLOCK;
}

size_t qgz_slot_bytes(int bits, int64_t piece)
{
    size_t codes = bits == 4 ? ((size_t)piece + 1) / 2 : (size_t)piece;
    return 4 * blocks(piece) + (codes + 3) / 4 * 4;
}

int qgz_on(const struct zero_engine *e)
{
    return e->qgz.bits != 0;
}

int qgz_open(struct zero_engine *e, struct zero_error *err)
{
    struct qgz_plan *q = &e->qgz;
    *q = (struct qgz_plan){.size = 1};
    if (!e->cfg.zero_optimization.zero_quantized_gradients || !e->stage_def->shards_params)
        return ZERO_OK;
    if (e->be->quant == NULL)
        return zero_fail(err, ZERO_ENOTSUP,
                         "zero_optimization.zero_quantized_gradients = true: backend '%s' has no "
                         "quant group (zero/backend_quant.h), which qgZ's all-to-alls need",
                         e->be->name);
    q->bits = e->cfg.libzero.qgz_bits;
    q->bytes = calloc(2 * (size_t)e->world, sizeof *q->bytes);
    q->piece = calloc((size_t)e->world, sizeof *q->piece);
    if (q->bytes == NULL || q->piece == NULL)
        return zero_fail(err, ZERO_ENOMEM, "rank %d: qgZ's all-to-all counts", e->rank);
    if (e->hpz.size > 1) { /* hpZ's groups are the hierarchy's */
        q->size = e->hpz.size;
        q->rank = e->hpz.rank;
        q->group = e->hpz.group;
        q->node_group = e->hpz.node_group;
        return ZERO_OK;
    }
    if (e->be->groups == NULL)
        return ZERO_OK; /* one hop over the world */
    /* the nodes, where they are regular: g consecutive ranks each */
    int g = q->node_group = e->be->groups->node_group_size(e->bself);
    if (g <= 1 || e->world % g != 0)
        return ZERO_OK;
    int rc = e->be->groups->group_open(e->bself, e->rank / g, &q->group);
    if (rc)
        return engine_backend_error(e, rc, err, "opening qgZ's node group of %d ranks", g);
    q->owns_group = 1;
    q->size = g;
    q->rank = e->be->groups->group_rank(e->bself, q->group);
    return ZERO_OK;
}

void qgz_close(struct zero_engine *e)
{
    struct qgz_plan *q = &e->qgz;
    if (q->owns_group && q->group != NULL)
        e->be->groups->group_close(e->bself, q->group);
    free(q->bytes);
    free(q->piece);
    *q = (struct qgz_plan){.size = 1};
}

void qgz_reduction_bytes(const struct zero_engine *e, int64_t shard, int64_t *intra, int64_t *inter)
{
    int64_t g = e->qgz.size, p = e->world / g, slot = (int64_t)qgz_slot_bytes(e->qgz.bits, shard);
    *intra = (g - 1) * p * slot;
    *inter = (p - 1) * slot;
}

/* Quantizes k pieces of s elements of x (type t), piece i at element offset at[i] * s,
 * into k slots back to back from out. */
static int quantize_pieces(struct zero_engine *e, const void *x, enum zero_dtype t, size_t s,
                           const int *at, int k, char *out)
{
    const struct zero_quant_ops *qo = e->be->quant;
    size_t slot = qgz_slot_bytes(e->qgz.bits, (int64_t)s), tsize = zero_dtype_size(t);
    int rc = ZERO_OK;
    for (int i = 0; i < k && !rc; i++) {
        const char *piece = (const char *)x + (size_t)at[i] * s * tsize;
        float *scales = (float *)(void *)(out + (size_t)i * slot);
        void *codes = out + (size_t)i * slot + 4 * blocks((int64_t)s);
        rc =
            e->qgz.bits == 4
                ? qo->quantize_int4(e->bself, piece, t, s, ZERO_QWZ_BLOCK, scales, (uint8_t *)codes)
                : qo->quantize_int8(e->bself, piece, t, s, ZERO_QWZ_BLOCK, scales, (int8_t *)codes);
    }
    return rc;
}

/* Dequantizes k slots into y (k, s) fp32. */
static int dequantize_slots(struct zero_engine *e, const char *in, size_t s, int k, float *y)
{
    const struct zero_quant_ops *qo = e->be->quant;
    size_t slot = qgz_slot_bytes(e->qgz.bits, (int64_t)s);
    int rc = ZERO_OK;
    for (int i = 0; i < k && !rc; i++) {
        const float *scales = (const float *)(const void *)(in + (size_t)i * slot);
        const void *codes = in + (size_t)i * slot + 4 * blocks((int64_t)s);
        rc = e->qgz.bits == 4 ? qo->dequantize_int4(e->bself, scales, (const uint8_t *)codes, s,
                                                    ZERO_QWZ_BLOCK, y + (size_t)i * s, ZERO_F32)
                              : qo->dequantize_int8(e->bself, scales, (const int8_t *)codes, s,
                                                    ZERO_QWZ_BLOCK, y + (size_t)i * s, ZERO_F32);
    }
    return rc;
}

/* x (n, stride) fp32, rows lo .. lo + n - 1 summed along the canonical tree into row lo:
 * tree(lo, n) = tree(lo, p) + tree(lo + p, n - p). */
static int tree_rows(struct zero_engine *e, float *x, size_t stride, size_t len, size_t lo,
                     size_t n)
{
    if (n < 2)
        return ZERO_OK;
    size_t p = zero_tree_split(n);
    int rc = tree_rows(e, x, stride, len, lo, p);
    if (!rc)
        rc = tree_rows(e, x, stride, len, lo + p, n - p);
    return rc ? rc
              : e->be->add(e->bself, x + lo * stride, x + lo * stride, x + (lo + p) * stride, len);
}

/* One all-to-all over the n members of group: `bytes` to and from each member
 * first, first + every, ... (nothing to the others), back to back in member order. */
static int exchange(struct zero_engine *e, struct zero_group *group, int n, int every, int first,
                    size_t bytes, const void *send, void *recv)
{
    size_t *b = e->qgz.bytes;
    for (int j = 0; j < n; j++)
        b[j] = b[n + j] = j >= first && (j - first) % every == 0 ? bytes : 0;
    return e->be->quant->all_to_all(e->bself, group, send, b, recv, b + n);
}

/* A hop's reduction event: `elements` of the gradient whose codes it exchanges over
 * group (the trace's sent elements: (S-1)/S of them over its S ranks) */
static void hop_event(struct zero_engine *e, int unit, int64_t elements,
                      enum zero_event_group group, double t0)
{
    engine_group_event(e, ZERO_EV_REDUCE, unit, e->reduce.bucket_of_unit[unit], "all_to_all",
                       elements, (int)e->csize, group, t0);
}

int qgz_reduce_scatter(struct zero_engine *e, int unit, const void *send, enum zero_dtype st,
                       void *recv, enum zero_dtype rt, size_t shard)
{
    const struct qgz_plan *q = &e->qgz;
    double t0 = engine_now();
    int g = q->size, p = e->world / g, l = q->rank;
    size_t slot = qgz_slot_bytes(q->bits, (int64_t)shard);
    int *at = q->piece;
    char *out = NULL, *in = NULL; /* (N, slot) bytes each way, at most */
    float *sums = NULL;           /* (N, shard) fp32: hop 1's g P slots, hop 2's P */
    int rc = e->be->alloc(e->bself, (size_t)e->world * slot, ZERO_TAG_BUCKETS, (void **)&out);
    if (!rc)
        rc = e->be->alloc(e->bself, (size_t)e->world * slot, ZERO_TAG_BUCKETS, (void **)&in);
    if (!rc)
        rc = e->be->alloc(e->bself, (size_t)e->world * shard * 4, ZERO_TAG_BUCKETS, (void **)&sums);
    /* hop 1: member j gets the pieces q g + j of the P groups, (j, q) in send order */
    const void *mine = send; /* after hop 1: (P, shard) fp32 group sums of pieces q g + l */
    enum zero_dtype mt = st;
    int from_send = 1; /* no hop 1: hop 2 reads the local gradient's pieces q g + l */
    if (!rc && g > 1) {
        for (int j = 0; j < g; j++)
            for (int k = 0; k < p; k++)
                at[j * p + k] = k * g + j;
        rc = quantize_pieces(e, send, st, shard, at, e->world, out);
        if (!rc)
            rc = exchange(e, q->group, g, 1, 0, (size_t)p * slot, out, in);
        if (!rc) /* (g, P, shard): member j's pieces q g + l */
            rc = dequantize_slots(e, in, shard, e->world, sums);
        /* per piece k: the tree over the g members (rows j P + k), into row k */
        for (int k = 0; k < p && !rc; k++)
            rc = tree_rows(e, sums + (size_t)k * shard, (size_t)p * shard, shard, 0, (size_t)g);
        if (!rc) /* the N pieces over the g members */
            hop_event(e, unit, (int64_t)e->world * (int64_t)shard,
                      e->hpz.size > 1 ? ZERO_EVG_HPZ : ZERO_EVG_QGZ, t0);
        t0 = engine_now();
        mine = sums;
        mt = ZERO_F32;
        from_send = 0;
    }
    /* hop 2: the group sum of piece q g + l goes to rank q g + l */
    if (!rc && p > 1) {
        for (int k = 0; k < p; k++)
            at[k] = from_send ? k * g + l : k;
        rc = quantize_pieces(e, mine, mt, shard, at, p, out);
        /* world peers k g + l: slot k in both directions, nothing to the others */
        if (!rc)
            rc = exchange(e, NULL, e->world, g, l, slot, out, in);
        if (!rc)
            rc = dequantize_slots(e, in, shard, p, sums);
        if (!rc)
            rc = tree_rows(e, sums, shard, shard, 0, (size_t)p);
        if (!rc) /* the P group sums over the P ranks q g + l (the world where g = 1) */
            hop_event(e, unit, (int64_t)p * (int64_t)shard,
                      g > 1 ? ZERO_EVG_QGZ_ACROSS : ZERO_EVG_WORLD, t0);
        mine = sums;
        mt = ZERO_F32;
    }
    if (!rc && e->world == 1) /* nothing travels: still a reduction of the schedule */
        hop_event(e, unit, (int64_t)shard, ZERO_EVG_WORLD, t0);
    if (!rc && mt == rt) /* fp32 into fp32; or N = 1, where nothing travelled */
        rc = e->be->copy(e->bself, recv, mine, shard * zero_dtype_size(rt));
    else if (!rc)
        rc = e->be->cast(e->bself, recv, rt, mine, mt, shard);
    e->be->free(e->bself, sums);
    e->be->free(e->bself, in);
    e->be->free(e->bself, out);
    return rc;
}

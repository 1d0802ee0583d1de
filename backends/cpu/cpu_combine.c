/* The owner's combine: N pieces in, one shard out, summed along the canonical tree.
 *
 * The shard is processed in blocks of CPU_COMBINE_CHUNK elements so that the N input
 * blocks and the few fp32 accumulators stay in L1/L2: every input byte is read once from
 * memory and every output byte written once. Within a block the tree is evaluated
 * recursively, one accumulator per level still waiting for its right subtree.
 * fp16/bf16 pieces are widened and the result narrowed with dtype_convert.h's inline
 * conversions (the same bits as zero_f16_to_f32 and friends), so the loops vectorize.
 * The loops are compiled for each host instruction set (host_isa.h's variants, picked
 * by zero_host_isa_best): a 16-bit combine is bound by its conversions, which SSE2 runs
 * four at a time, so it took as long as an fp32 combine of twice the bytes. Each
 * variant does the same float additions in the same order (there is nothing to fuse),
 * so they agree to the bit. */
#include <string.h>

#include "cpu_coll.h"
#include "base/dtype_convert.h"
#include "base/host_isa.h"
#include "base/tree.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

static unsigned ceil_log2(int n)
{
    unsigned d = 0;
    while ((1 << d) < n)
        d++;
    return d;
}

size_t cpu_combine_scratch_floats(int n)
{
    return (size_t)CPU_COMBINE_CHUNK * (ceil_log2(n) + 1);
}

/* acc (len) = piece (len) widened to fp32 */
ALWAYS_INLINE void load(float *acc, const void *piece, enum zero_dtype t, size_t len)
{
    if (t == ZERO_F32) {
        memcpy(acc, piece, len * sizeof(float));
    } else if (t == ZERO_F16) {
        const uint16_t *h = piece;
        for (size_t i = 0; i < len; i++)
            acc[i] = dtype_f16_to_f32(h[i]);
    } else {
        const uint16_t *b = piece;
        for (size_t i = 0; i < len; i++)
            acc[i] = dtype_bf16_to_f32(b[i]);
    }
}

/* acc (len) = a + b: the leaves of a pair, added without a round trip through acc */
ALWAYS_INLINE void load_pair(float *acc, const void *a, const void *b, enum zero_dtype t,
                             size_t len)
{
    if (t == ZERO_F32) {
        const float *x = a, *y = b;
        for (size_t i = 0; i < len; i++)
            acc[i] = x[i] + y[i];
    } else if (t == ZERO_F16) {
        const uint16_t *x = a, *y = b;
        for (size_t i = 0; i < len; i++)
            acc[i] = dtype_f16_to_f32(x[i]) + dtype_f16_to_f32(y[i]);
    } else {
        const uint16_t *x = a, *y = b;
        for (size_t i = 0; i < len; i++)
            acc[i] = dtype_bf16_to_f32(x[i]) + dtype_bf16_to_f32(y[i]);
    }
}

/* dst (len, t) = acc (len) rounded once */
ALWAYS_INLINE void store(void *dst, enum zero_dtype t, const float *acc, size_t len)
{
    if (t == ZERO_F32) {
        memcpy(dst, acc, len * sizeof(float));
    } else if (t == ZERO_F16) {
        uint16_t *h = dst;
        for (size_t i = 0; i < len; i++)
            h[i] = dtype_f32_to_f16(acc[i]);
    } else {
        uint16_t *b = dst;
        for (size_t i = 0; i < len; i++)
            b[i] = dtype_f32_to_bf16(acc[i]);
    }
}

/* acc (len) += b (len) */
ALWAYS_INLINE void add_into(float *restrict acc, const float *restrict b, size_t len)
{
    for (size_t i = 0; i < len; i++)
        acc[i] = acc[i] + b[i];
}

/* One variant of the combine, compiled with `attr`:
 *   tree_block: acc (len) = tree(lo, n) of the pieces at element offset off; deeper
 *               levels use scratch
 *   combine:    out (len, out_type), a block at a time */
#define COMBINE_VARIANT(attr, suffix)                                                              \
    attr static void tree_block_##suffix(float *acc, float *scratch, const void *const *piece,     \
                                         int lo, int n, enum zero_dtype t, size_t off, size_t len) \
    {                                                                                              \
        size_t esize = zero_dtype_size(t);                                                         \
        if (n == 1) {                                                                              \
            load(acc, (const char *)piece[lo] + off * esize, t, len);                              \
            return;                                                                                \
        }                                                                                          \
        if (n == 2) {                                                                              \
            load_pair(acc, (const char *)piece[lo] + off * esize,                                  \
                      (const char *)piece[lo + 1] + off * esize, t, len);                          \
            return;                                                                                \
        }                                                                                          \
        int p = (int)zero_tree_split((size_t)n);                                                   \
        tree_block_##suffix(acc, scratch, piece, lo, p, t, off, len);                              \
        tree_block_##suffix(scratch, scratch + CPU_COMBINE_CHUNK, piece, lo + p, n - p, t, off,    \
                            len);                                                                  \
        add_into(acc, scratch, len);                                                               \
    }                                                                                              \
    attr static void combine_##suffix(void *out, enum zero_dtype out_type,                         \
                                      const void *const *piece, int n, enum zero_dtype wire_type,  \
                                      size_t len, float *scratch)                                  \
    {                                                                                              \
        size_t out_size = zero_dtype_size(out_type);                                               \
        float *acc = scratch;                                                                      \
        for (size_t off = 0; off < len; off += CPU_COMBINE_CHUNK) {                                \
            size_t block = len - off < CPU_COMBINE_CHUNK ? len - off : CPU_COMBINE_CHUNK;          \
            tree_block_##suffix(acc, scratch + CPU_COMBINE_CHUNK, piece, 0, n, wire_type, off,     \
                                block);                                                            \
            store((char *)out + off * out_size, out_type, acc, block);                             \
        }                                                                                          \
    }

ZERO_HOST_VARIANTS(COMBINE_VARIANT)

void cpu_combine_isa(enum zero_host_isa isa, void *out, enum zero_dtype out_type,
                     const void *const *piece, int n, enum zero_dtype wire_type, size_t len,
                     float *scratch)
{
    const enum zero_host_isa use = zero_host_isa_usable(isa);
    ZERO_HOST_PICK(use, combine)(out, out_type, piece, n, wire_type, len, scratch);
}

void cpu_combine(void *out, enum zero_dtype out_type, const void *const *piece, int n,
                 enum zero_dtype wire_type, size_t len, float *scratch)
{
    cpu_combine_isa(zero_host_isa_best(), out, out_type, piece, n, wire_type, len, scratch);
}

static float load_one(const void *src, enum zero_dtype t, size_t i)
{
    if (t == ZERO_F32)
        return ((const float *)src)[i];
    if (t == ZERO_F16)
        return dtype_f16_to_f32(((const uint16_t *)src)[i]);
    return dtype_bf16_to_f32(((const uint16_t *)src)[i]);
}

static void store_one(void *dst, enum zero_dtype t, size_t i, float v)
{
    if (t == ZERO_F32)
        ((float *)dst)[i] = v;
    else if (t == ZERO_F16)
        ((uint16_t *)dst)[i] = dtype_f32_to_f16(v);
    else
        ((uint16_t *)dst)[i] = dtype_f32_to_bf16(v);
}

void cpu_convert(void *dst, enum zero_dtype dst_type, const void *src, enum zero_dtype src_type,
                 size_t n)
{
    if (dst_type == src_type) {
        memmove(dst, src, n * zero_dtype_size(src_type));
        return;
    }
    if (zero_dtype_size(dst_type) > zero_dtype_size(src_type)) {
        for (size_t i = n; i > 0; i--) /* widening in place: the last element first */
            store_one(dst, dst_type, i - 1, load_one(src, src_type, i - 1));
        return;
    }
    for (size_t i = 0; i < n; i++)
        store_one(dst, dst_type, i, load_one(src, src_type, i));
}

/* safetensors: dtype tags, tensor sizes and element conversion, shared by the reader
 * (safetensors_read.c) and the writer (safetensors_write.c). */
#include "safetensors_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every dtype the format defines, so that a file with, say, U8 tensors gets "not
 * supported" rather than "unknown". handled is -1 for the ones libzero cannot hold. */
static const struct {
    const char *tag;
    int handled;
} st_dtypes[] = {
    {"F32", ZERO_F32}, {"F16", ZERO_F16}, {"BF16", ZERO_BF16}, {"F64", ZERO_F64}, {"I32", ZERO_I32},
    {"I64", ZERO_I64}, {"BOOL", -1},      {"U8", -1},          {"I8", -1},        {"I16", -1},
    {"U16", -1},       {"U32", -1},       {"U64", -1},         {"F8_E5M2", -1},   {"F8_E4M3", -1},
    {"F8_E8M0", -1},   {"F4", -1},        {"F6_E2M3", -1},     {"F6_E3M2", -1},   {"C64", -1},
};

int zero_st_dtype_valid(enum zero_dtype t)
{
    return (int)t >= 0 && t < ZERO_DTYPE_COUNT;
}

const char *zero_st_dtype_tag(enum zero_dtype t)
{
    for (size_t i = 0; i < sizeof(st_dtypes) / sizeof(st_dtypes[0]); i++)
        if (st_dtypes[i].handled >= 0 && st_dtypes[i].handled == (int)t)
            return st_dtypes[i].tag;
    return "?";
}

int zero_st_dtype_from_tag(const char *tag, enum zero_dtype *t)
{
    for (size_t i = 0; i < sizeof(st_dtypes) / sizeof(st_dtypes[0]); i++) {
        if (strcmp(tag, st_dtypes[i].tag) != 0)
            continue;
        if (st_dtypes[i].handled < 0)
            return 1;
        *t = (enum zero_dtype)st_dtypes[i].handled;
        return 0;
    }
    return -1;
}

size_t zero_st_numel(const struct zero_st_tensor_desc *d)
{
    size_t n = 1;
    for (int k = 0; k < d->ndim; k++)
        n *= (size_t)d->shape[k];
    return n;
}

int zero_st_entry_init(struct zero_st_entry *e, const char *name, enum zero_dtype dtype, int ndim)
{
    memset(e, 0, sizeof(*e));
    char *name_copy = strdup(name);
    /* calloc(0) may return NULL: ask for at least one element */
    int64_t *shape = calloc(ndim > 0 ? (size_t)ndim : 1, sizeof(int64_t));
    if (name_copy == NULL || shape == NULL) {
        free(name_copy);
        free(shape);
        return -1;
    }
    e->desc.name = name_copy;
    e->desc.dtype = dtype;
    e->desc.ndim = ndim;
    e->desc.shape = shape;
    return 0;
}

void zero_st_entry_free(struct zero_st_entry *e)
{
    free((char *)e->desc.name);
    free((int64_t *)e->desc.shape);
    e->desc.name = NULL;
    e->desc.shape = NULL;
}

int zero_st_entry_size(struct zero_st_entry *e)
{
    /* Keep byte counts below 2^63 so they fit off_t and JSON integers. */
    const uint64_t limit = (uint64_t)INT64_MAX;
    uint64_t numel = 1;
    int empty = 0;
    for (int k = 0; k < e->desc.ndim; k++) {
        uint64_t dim = (uint64_t)e->desc.shape[k];
        if (dim == 0)
            empty = 1;
        else if (!empty && numel > limit / dim)
            return -1;
        else if (!empty)
            numel *= dim;
    }
    if (empty)
        numel = 0;
    uint64_t size = zero_dtype_size(e->desc.dtype);
    if (numel > limit / size || numel > SIZE_MAX / size)
        return -1;
    e->numel = numel;
    e->nbytes = numel * size;
    return 0;
}

/* Floating and integer types form two families; conversion stays inside one. */
static int is_float(enum zero_dtype t)
{
    return t == ZERO_F32 || t == ZERO_F16 || t == ZERO_BF16 || t == ZERO_F64;
}

static int is_int(enum zero_dtype t)
{
    return t == ZERO_I32 || t == ZERO_I64;
}

int zero_st_can_convert(enum zero_dtype from, enum zero_dtype to)
{
    return (is_float(from) && is_float(to)) || (is_int(from) && is_int(to));
}

/* Every F16, BF16 and F32 value is exact as a double, so a double carries any float. */
static double load_float(const void *src, enum zero_dtype t, size_t i)
{
    switch (t) {
    case ZERO_F32:
        return ((const float *)src)[i];
    case ZERO_F16:
        return zero_f16_to_f32(((const uint16_t *)src)[i]);
    case ZERO_BF16:
        return zero_bf16_to_f32(((const uint16_t *)src)[i]);
    default:
        return ((const double *)src)[i];
    }
}

/* Narrowing from F64 to F16/BF16 rounds twice (to F32, then to 16 bits); from F32 the
 * one rounding is zero_f32_to_f16's round-to-nearest-even. */
static void store_float(void *dst, enum zero_dtype t, size_t i, double v)
{
    switch (t) {
    case ZERO_F32:
        ((float *)dst)[i] = (float)v;
        break;
    case ZERO_F16:
        ((uint16_t *)dst)[i] = zero_f32_to_f16((float)v);
        break;
    case ZERO_BF16:
        ((uint16_t *)dst)[i] = zero_f32_to_bf16((float)v);
        break;
    default:
        ((double *)dst)[i] = v;
        break;
    }
}

int zero_st_convert(void *dst, enum zero_dtype to, const void *src, enum zero_dtype from, size_t n,
                    size_t *bad)
{
    if (from == to) {
        memcpy(dst, src, n * zero_dtype_size(to));
        return 0;
    }
    if (from == ZERO_I32) { /* to I64: widening is exact */
        for (size_t i = 0; i < n; i++)
            ((int64_t *)dst)[i] = ((const int32_t *)src)[i];
        return 0;
    }
    if (from == ZERO_I64) { /* to I32 */
        for (size_t i = 0; i < n; i++) {
            int64_t v = ((const int64_t *)src)[i];
            if (v < INT32_MIN || v > INT32_MAX) {
                *bad = i;
                return -1;
            }
            ((int32_t *)dst)[i] = (int32_t)v;
        }
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        store_float(dst, to, i, load_float(src, from, i));
    return 0;
}

const char *zero_st_format_shape(char *buf, size_t len, const int64_t *shape, int ndim)
{
    size_t used = 0;
    int w = snprintf(buf, len, "[");
    for (int k = 0; k < ndim && w >= 0 && used + (size_t)w < len; k++) {
        used += (size_t)w;
        w = snprintf(buf + used, len - used, "%s%lld", k ? ", " : "", (long long)shape[k]);
    }
    if (w >= 0 && used + (size_t)w < len) {
        used += (size_t)w;
        snprintf(buf + used, len - used, "]");
    }
    return buf;
}

int zero_st_check_host(const char *path, struct zero_error *err)
{
    const uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    if (first != 1)
        return zero_fail(err, ZERO_ENOTSUP,
                         "%s: safetensors data is little-endian and this host is not", path);
    return ZERO_OK;
}

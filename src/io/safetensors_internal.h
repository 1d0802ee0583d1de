/* What the safetensors reader and writer share: the tensor table entry, dtype tags,
 * checked sizes and element conversion. Private to libzero. */
#ifndef ZERO_SAFETENSORS_INTERNAL_H
#define ZERO_SAFETENSORS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "zero/safetensors.h"

/* The reference implementation refuses larger headers; so do we, before allocating. */
#define ZERO_ST_MAX_HEADER_BYTES 100000000u

/* Conversions go through a scratch buffer of at most this size. */
#define ZERO_ST_CHUNK_BYTES ((size_t)1 << 20)

/* One tensor of a file being read or written. desc.name and desc.shape are owned. */
struct zero_st_entry {
    struct zero_st_tensor_desc desc;
    uint64_t numel;
    uint64_t nbytes;
    uint64_t begin, end; /* byte range in the data section */
};

/* Copies name and allocates a zeroed shape of ndim entries; -1 if out of memory. */
int zero_st_entry_init(struct zero_st_entry *e, const char *name, enum zero_dtype dtype, int ndim);
void zero_st_entry_free(struct zero_st_entry *e);

/* Sets e->numel and e->nbytes from its shape and dtype; -1 if they overflow 63 bits. */
int zero_st_entry_size(struct zero_st_entry *e);

/* Header tag -> dtype. 0: handled, *t set. 1: a real safetensors dtype libzero does not
 * handle (U8, BOOL, ...). -1: not a safetensors dtype. */
int zero_st_dtype_from_tag(const char *tag, enum zero_dtype *t);

int zero_st_dtype_valid(enum zero_dtype t);

/* Whether zero_st_convert handles from -> to (same type included). */
int zero_st_can_convert(enum zero_dtype from, enum zero_dtype to);

/* Converts n elements from src to dst (distinct buffers). Returns 0, or -1 with *bad set
 * to the index of the first I64 value that does not fit I32. */
int zero_st_convert(void *dst, enum zero_dtype to, const void *src, enum zero_dtype from, size_t n,
                    size_t *bad);

/* Writes "[4, 8]" into buf (truncated to len) and returns buf, for messages. */
const char *zero_st_format_shape(char *buf, size_t len, const int64_t *shape, int ndim);

/* ZERO_ENOTSUP with a message unless this host stores integers little-endian. */
int zero_st_check_host(const char *path, struct zero_error *err);

#endif

/* Hugging Face safetensors files: read and write, one tensor at a time.
 *
 * Layout: an 8-byte little-endian u64 N, then N bytes of UTF-8 JSON mapping each tensor
 * name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the first
 * byte after the header) plus an optional "__metadata__" object of string -> string, then
 * the tensors' little-endian, tightly packed, row-major bytes.
 *
 * Reading keeps only the header in memory; each tensor is read on request straight into
 * the caller's buffer (a conversion goes through a small bounded scratch buffer).
 * Writing puts the header first, then streams the tensors in descriptor order into a
 * temporary file that replaces the target only when complete, so a failed write never
 * damages an existing file.
 *
 * Tensor dtypes handled: F32, F16, BF16, F64, I32, I64. Conversions on read and write go
 * between any two floating types (F64 -> F16/BF16 rounds through F32) and between I32 and
 * I64 (narrowing is range-checked); never between integer and floating types.
 * Little-endian hosts only (others get ZERO_ENOTSUP). */
#ifndef ZERO_SAFETENSORS_H
#define ZERO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "zero/dtype.h"
#include "zero/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One tensor as stored in a file. When reading, the pointers belong to the open file and
 * stay valid until zero_st_close; when writing, they belong to the caller and are copied. */
struct zero_st_tensor_desc {
    const char *name;
    enum zero_dtype dtype; /* the element type in the file */
    int ndim;              /* 0 is a scalar (one element) */
    const int64_t *shape;  /* ndim entries, each >= 0 */
};

/* One "__metadata__" entry. */
struct zero_st_kv {
    const char *key;
    const char *value;
};

/* "F32", "F16", ... as spelled in the header; "?" for a value outside the enum. */
const char *zero_st_dtype_tag(enum zero_dtype t);

/* Product of the shape (1 for a scalar). The shape must already be known to fit. */
size_t zero_st_numel(const struct zero_st_tensor_desc *d);

/* ---- reading ---- */

struct zero_st_file;

/* Opens path and validates the whole header: the length fits the file, the JSON is an
 * object, every entry has a handled dtype, a shape of non-negative integers and
 * data_offsets inside the data section that span exactly numel * dtype size bytes, and
 * no two tensors overlap or share a name. Tensors are indexed in file (offset) order. */
int zero_st_open(struct zero_st_file **out, const char *path, struct zero_error *err);
void zero_st_close(struct zero_st_file *f);

int zero_st_count(const struct zero_st_file *f);
/* Index of the tensor called name, or -1. */
int zero_st_find(const struct zero_st_file *f, const char *name);
/* Description of tensor i, or NULL if i is out of range. */
const struct zero_st_tensor_desc *zero_st_tensor(const struct zero_st_file *f, int i);

/* Reads tensor i into dst (numel elements of type want; numel must equal the tensor's
 * element count), converting from the stored dtype when want differs. */
int zero_st_read(struct zero_st_file *f, int i, void *dst, enum zero_dtype want, size_t numel,
                 struct zero_error *err);

/* The "__metadata__" value for key, or NULL. */
const char *zero_st_metadata(const struct zero_st_file *f, const char *key);
int zero_st_metadata_count(const struct zero_st_file *f);
/* Metadata entry i in header order, or NULL if i is out of range. */
const struct zero_st_kv *zero_st_metadata_at(const struct zero_st_file *f, int i);

/* ---- writing ---- */

struct zero_st_writer;

/* Validates the descriptors (unique names other than "__metadata__"; handled dtypes;
 * non-negative shapes), lays the tensors out back to back in the given order, and writes
 * the header to "<path>.tmp.<pid>". The header is compact JSON with "__metadata__" first,
 * space-padded to a multiple of 8 bytes, as the reference implementation writes it. */
int zero_st_writer_begin(struct zero_st_writer **out, const char *path,
                         const struct zero_st_tensor_desc *descs, int n,
                         const struct zero_st_kv *metadata, int n_metadata, struct zero_error *err);

/* Appends tensor i (numel elements of src_type at src), converting to its file dtype.
 * Tensors must be put in descriptor order, each exactly once. An argument error leaves
 * the writer usable; a failure after bytes were written leaves it failed (finish will
 * refuse; call abort). */
int zero_st_writer_put(struct zero_st_writer *w, int i, const void *src, enum zero_dtype src_type,
                       size_t numel, struct zero_error *err);
/* The same, naming the tensor. */
int zero_st_writer_put_named(struct zero_st_writer *w, const char *name, const void *src,
                             enum zero_dtype src_type, size_t numel, struct zero_error *err);

/* Checks every tensor was put, fsyncs, renames the temporary file onto path and fsyncs
 * the directory. Always frees w; on failure the temporary file is removed and whatever
 * was at path before is untouched. */
int zero_st_writer_finish(struct zero_st_writer *w, struct zero_error *err);

/* Removes the temporary file and frees w (NULL is fine). */
void zero_st_writer_abort(struct zero_st_writer *w);

#ifdef __cplusplus
}
#endif

#endif

/* safetensors reader: validate the whole header on open, then read one tensor at a time.
 *
 * Only the header and the tensor table stay in memory. A tensor read in its stored dtype
 * goes straight into the caller's buffer; a converting read goes through a scratch buffer
 * of at most ZERO_ST_CHUNK_BYTES. */
#include "base/file_replace.h"
#include "safetensors_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct zero_st_file {
    char *path;
    int fd;
    uint64_t data_start; /* 8 + header length: file offset of data byte 0 */
    uint64_t data_size;
    int n_tensors;
    struct zero_st_entry *tensors;  /* in file (offset) order */
    struct zero_st_entry **by_name; /* sorted by name, for zero_st_find */
    int n_meta;
    struct zero_st_kv *meta;
};

/* pread until n bytes or end of file; returns the count read, -1 on error (errno). */
static ssize_t read_at(int fd, void *buf, size_t n, uint64_t offset)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(offset + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static int read_exact(const struct zero_st_file *f, void *buf, size_t n, uint64_t offset,
                      const char *what, struct zero_error *err)
{
    ssize_t got = read_at(f->fd, buf, n, offset);
    if (got < 0)
        return zero_fail(err, ZERO_EIO, "%s: reading %s: %s", f->path, what, strerror(errno));
    if ((size_t)got < n)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s: reading %s: file ends at byte %" PRIu64 ", %zu bytes short", f->path,
                         what, offset + (uint64_t)got, n - (size_t)got);
    return ZERO_OK;
}

static int json_nonneg_int(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int parse_shape(const struct zero_st_file *f, const char *name, const json_t *shape,
                       struct zero_st_entry *e, struct zero_error *err)
{
    int64_t *dims = (int64_t *)e->desc.shape;
    for (int k = 0; k < e->desc.ndim; k++) {
        uint64_t d;
        if (json_nonneg_int(json_array_get(shape, (size_t)k), &d) != 0)
            return zero_fail(err, ZERO_EFORMAT,
                             "%s: tensor '%s': shape[%d] is not a non-negative integer", f->path,
                             name, k);
        dims[k] = (int64_t)d;
    }
    if (zero_st_entry_size(e) != 0) {
        char s[256];
        return zero_fail(err, ZERO_EFORMAT, "%s: tensor '%s': shape %s of %s overflows 2^63 bytes",
                         f->path, name,
                         zero_st_format_shape(s, sizeof(s), e->desc.shape, e->desc.ndim),
                         zero_st_dtype_tag(e->desc.dtype));
    }
    return ZERO_OK;
}

static int parse_offsets(const struct zero_st_file *f, const char *name, const json_t *offsets,
                         struct zero_st_entry *e, struct zero_error *err)
{
    if (!json_is_array(offsets) || json_array_size(offsets) != 2 ||
        json_nonneg_int(json_array_get(offsets, 0), &e->begin) != 0 ||
        json_nonneg_int(json_array_get(offsets, 1), &e->end) != 0)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s: tensor '%s': \"data_offsets\" is not two non-negative integers",
                         f->path, name);
    if (e->end < e->begin)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] end before "
                         "they begin",
                         f->path, name, e->begin, e->end);
    if (e->end > f->data_size)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] lie outside "
                         "the data section of %" PRIu64 " bytes (file truncated?)",
                         f->path, name, e->begin, e->end, f->data_size);
    if (e->end - e->begin != e->nbytes) {
        char s[256];
        return zero_fail(err, ZERO_EFORMAT,
                         "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] span %" PRIu64
                         " bytes but shape %s of %s needs %" PRIu64,
                         f->path, name, e->begin, e->end, e->end - e->begin,
                         zero_st_format_shape(s, sizeof(s), e->desc.shape, e->desc.ndim),
                         zero_st_dtype_tag(e->desc.dtype), e->nbytes);
    }
    return ZERO_OK;
}

/* Fills e (already zeroed) from the header entry name -> value. */
static int parse_tensor(const struct zero_st_file *f, const char *name, const json_t *value,
                        struct zero_st_entry *e, struct zero_error *err)
{
    if (!json_is_object(value))
        return zero_fail(err, ZERO_EFORMAT, "%s: tensor '%s': entry is not a JSON object", f->path,
                         name);
    const json_t *dtype = json_object_get(value, "dtype");
    const json_t *shape = json_object_get(value, "shape");
    const json_t *offsets = json_object_get(value, "data_offsets");
    const char *missing = !dtype ? "dtype" : !shape ? "shape" : !offsets ? "data_offsets" : NULL;
    if (missing != NULL)
        return zero_fail(err, ZERO_EFORMAT, "%s: tensor '%s': missing \"%s\"", f->path, name,
                         missing);
    if (!json_is_string(dtype))
        return zero_fail(err, ZERO_EFORMAT, "%s: tensor '%s': \"dtype\" is not a string", f->path,
                         name);
    enum zero_dtype t = ZERO_F32;
    int known = zero_st_dtype_from_tag(json_string_value(dtype), &t);
    if (known < 0)
        return zero_fail(err, ZERO_EFORMAT, "%s: tensor '%s': unknown dtype '%s'", f->path, name,
                         json_string_value(dtype));
    if (known > 0)
        return zero_fail(err, ZERO_ENOTSUP,
                         "%s: tensor '%s': dtype %s is not supported (libzero reads F32, F16, "
                         "BF16, F64, I32, I64)",
                         f->path, name, json_string_value(dtype));
    if (!json_is_array(shape) || json_array_size(shape) > INT32_MAX)
        return zero_fail(err, ZERO_EFORMAT, "%s: tensor '%s': \"shape\" is not an array", f->path,
                         name);
    if (zero_st_entry_init(e, name, t, (int)json_array_size(shape)) != 0)
        return zero_fail(err, ZERO_ENOMEM, "%s: tensor '%s': out of memory", f->path, name);
    int rc = parse_shape(f, name, shape, e, err);
    if (rc == ZERO_OK)
        rc = parse_offsets(f, name, offsets, e, err);
    return rc;
}

static int parse_metadata(struct zero_st_file *f, const json_t *meta, struct zero_error *err)
{
    if (!json_is_object(meta))
        return zero_fail(err, ZERO_EFORMAT, "%s: \"__metadata__\" is not a JSON object", f->path);
    f->meta = calloc(json_object_size(meta) + 1, sizeof(*f->meta));
    if (f->meta == NULL)
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory for __metadata__", f->path);
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)meta, key, value)
    {
        if (!json_is_string(value))
            return zero_fail(err, ZERO_EFORMAT, "%s: __metadata__ key '%s': value is not a string",
                             f->path, key);
        struct zero_st_kv *kv = &f->meta[f->n_meta];
        kv->key = strdup(key);
        kv->value = strdup(json_string_value(value));
        f->n_meta++;
        if (kv->key == NULL || kv->value == NULL)
            return zero_fail(err, ZERO_ENOMEM, "%s: out of memory for __metadata__", f->path);
    }
    return ZERO_OK;
}

static int by_offset(const void *a, const void *b)
{
    const struct zero_st_entry *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

static int by_name(const void *a, const void *b)
{
    const struct zero_st_entry *const *x = a, *const *y = b;
    return strcmp((*x)->desc.name, (*y)->desc.name);
}

/* Sorted by offset, a tensor overlaps another exactly when it begins before the furthest
 * end seen so far. Empty tensors hold no bytes and cannot overlap anything. */
static int check_overlaps(const struct zero_st_file *f, struct zero_error *err)
{
    const struct zero_st_entry *furthest = NULL;
    for (int i = 0; i < f->n_tensors; i++) {
        const struct zero_st_entry *t = &f->tensors[i];
        if (t->nbytes == 0)
            continue;
        if (furthest != NULL && t->begin < furthest->end)
            return zero_fail(err, ZERO_EFORMAT,
                             "%s: tensors '%s' [%" PRIu64 ", %" PRIu64 "] and '%s' [%" PRIu64
                             ", %" PRIu64 "] overlap",
                             f->path, furthest->desc.name, furthest->begin, furthest->end,
                             t->desc.name, t->begin, t->end);
        if (furthest == NULL || t->end > furthest->end)
            furthest = t;
    }
    return ZERO_OK;
}

static int parse_header(struct zero_st_file *f, const char *text, size_t len,
                        struct zero_error *err)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL)
        return zero_fail(err, ZERO_EFORMAT, "%s: header is not valid JSON: %s (line %d, column %d)",
                         f->path, jerr.text, jerr.line, jerr.column);
    int rc = ZERO_OK;
    if (!json_is_object(root)) {
        rc = zero_fail(err, ZERO_EFORMAT, "%s: header is not a JSON object", f->path);
        goto out;
    }
    f->tensors = calloc(json_object_size(root) + 1, sizeof(*f->tensors));
    if (f->tensors == NULL) {
        rc = zero_fail(err, ZERO_ENOMEM, "%s: out of memory for the tensor table", f->path);
        goto out;
    }
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value)
    {
        if (strcmp(key, "__metadata__") == 0) {
            rc = parse_metadata(f, value, err);
        } else {
            /* count first: a half-parsed entry still owns memory that close must free */
            struct zero_st_entry *e = &f->tensors[f->n_tensors++];
            rc = parse_tensor(f, key, value, e, err);
        }
        if (rc != ZERO_OK)
            goto out;
    }
    qsort(f->tensors, (size_t)f->n_tensors, sizeof(*f->tensors), by_offset);
    rc = check_overlaps(f, err);
    if (rc != ZERO_OK)
        goto out;
    f->by_name = calloc((size_t)f->n_tensors + 1, sizeof(*f->by_name));
    if (f->by_name == NULL) {
        rc = zero_fail(err, ZERO_ENOMEM, "%s: out of memory for the name index", f->path);
        goto out;
    }
    for (int i = 0; i < f->n_tensors; i++)
        f->by_name[i] = &f->tensors[i];
    qsort(f->by_name, (size_t)f->n_tensors, sizeof(*f->by_name), by_name);
out:
    json_decref(root);
    return rc;
}

/* Reads the length field and the header text, checking each against the file size. */
static int load_header(struct zero_st_file *f, struct zero_error *err)
{
    struct stat st;
    if (fstat(f->fd, &st) != 0)
        return zero_fail(err, ZERO_EIO, "%s: %s", f->path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return zero_fail(err, ZERO_EINVAL, "%s: not a regular file", f->path);
    uint64_t file_size = (uint64_t)st.st_size;
    if (file_size < 8)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s: file is %" PRIu64 " bytes, too short for the 8-byte header length",
                         f->path, file_size);
    unsigned char len_bytes[8];
    int rc = read_exact(f, len_bytes, 8, 0, "the header length", err);
    if (rc != ZERO_OK)
        return rc;
    uint64_t n = 0;
    for (int k = 7; k >= 0; k--)
        n = (n << 8) | len_bytes[k];
    if (n > file_size - 8)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s: header length %" PRIu64 " exceeds the %" PRIu64
                         " bytes that follow it (truncated or not a safetensors file?)",
                         f->path, n, file_size - 8);
    if (n > ZERO_ST_MAX_HEADER_BYTES)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s: header length %" PRIu64 " exceeds the limit of "
                         "%u bytes",
                         f->path, n, ZERO_ST_MAX_HEADER_BYTES);
    f->data_start = 8 + n;
    f->data_size = file_size - f->data_start;

    char *text = malloc(n + 1);
    if (text == NULL)
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory for a %" PRIu64 "-byte header",
                         f->path, n);
    rc = read_exact(f, text, (size_t)n, 8, "the header", err);
    if (rc == ZERO_OK)
        rc = parse_header(f, text, (size_t)n, err);
    free(text);
    return rc;
}

int zero_st_open(struct zero_st_file **out, const char *path, struct zero_error *err)
{
    if (out == NULL || path == NULL)
        return zero_fail(err, ZERO_EINVAL, "zero_st_open: NULL argument");
    *out = NULL;
    int rc = zero_st_check_host(path, err);
    if (rc != ZERO_OK)
        return rc;
    struct zero_st_file *f = calloc(1, sizeof(*f));
    if (f == NULL || (f->path = strdup(path)) == NULL) {
        free(f);
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", path);
    }
    f->fd = zero_input_open(path, err); /* a directory or FIFO is refused, not waited on */
    if (f->fd < 0) {
        rc = err->code;
        zero_st_close(f);
        return rc;
    }
    rc = load_header(f, err);
    if (rc != ZERO_OK) {
        zero_st_close(f);
        return rc;
    }
    *out = f;
    return ZERO_OK;
}

void zero_st_close(struct zero_st_file *f)
{
    if (f == NULL)
        return;
    if (f->fd >= 0)
        close(f->fd);
    for (int i = 0; i < f->n_tensors; i++)
        zero_st_entry_free(&f->tensors[i]);
    for (int i = 0; i < f->n_meta; i++) {
        free((char *)f->meta[i].key);
        free((char *)f->meta[i].value);
    }
    free(f->tensors);
    free(f->by_name);
    free(f->meta);
    free(f->path);
    free(f);
}

int zero_st_count(const struct zero_st_file *f)
{
    return f != NULL ? f->n_tensors : 0;
}

static int name_matches(const void *key, const void *elem)
{
    const struct zero_st_entry *const *e = elem;
    return strcmp(key, (*e)->desc.name);
}

int zero_st_find(const struct zero_st_file *f, const char *name)
{
    if (f == NULL || name == NULL || f->n_tensors == 0)
        return -1;
    struct zero_st_entry **hit =
        bsearch(name, f->by_name, (size_t)f->n_tensors, sizeof(*f->by_name), name_matches);
    return hit != NULL ? (int)(*hit - f->tensors) : -1;
}

const struct zero_st_tensor_desc *zero_st_tensor(const struct zero_st_file *f, int i)
{
    if (f == NULL || i < 0 || i >= f->n_tensors)
        return NULL;
    return &f->tensors[i].desc;
}

const char *zero_st_metadata(const struct zero_st_file *f, const char *key)
{
    if (f == NULL || key == NULL)
        return NULL;
    for (int i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta[i].key, key) == 0)
            return f->meta[i].value;
    return NULL;
}

int zero_st_metadata_count(const struct zero_st_file *f)
{
    return f != NULL ? f->n_meta : 0;
}

const struct zero_st_kv *zero_st_metadata_at(const struct zero_st_file *f, int i)
{
    if (f == NULL || i < 0 || i >= f->n_meta)
        return NULL;
    return &f->meta[i];
}

/* Streams the tensor through a bounded scratch buffer, converting each chunk. */
static int read_converting(const struct zero_st_file *f, const struct zero_st_entry *e, void *dst,
                           enum zero_dtype want, struct zero_error *err)
{
    size_t in_size = zero_dtype_size(e->desc.dtype);
    size_t out_size = zero_dtype_size(want);
    size_t chunk = ZERO_ST_CHUNK_BYTES / in_size;
    if (chunk > e->numel)
        chunk = (size_t)e->numel;
    void *scratch = malloc(chunk * in_size); /* (chunk,) of the stored dtype */
    if (scratch == NULL)
        return zero_fail(err, ZERO_ENOMEM, "%s: tensor '%s': out of memory for conversion", f->path,
                         e->desc.name);
    char what[512];
    snprintf(what, sizeof(what), "tensor '%s'", e->desc.name);
    int rc = ZERO_OK;
    for (size_t done = 0; done < e->numel && rc == ZERO_OK; done += chunk) {
        size_t n = (size_t)e->numel - done < chunk ? (size_t)e->numel - done : chunk;
        rc = read_exact(f, scratch, n * in_size, f->data_start + e->begin + done * in_size, what,
                        err);
        size_t bad = 0;
        if (rc == ZERO_OK && zero_st_convert((char *)dst + done * out_size, want, scratch,
                                             e->desc.dtype, n, &bad) != 0)
            rc = zero_fail(err, ZERO_EINVAL,
                           "%s: tensor '%s': element %zu = %" PRId64 " does not fit in %s", f->path,
                           e->desc.name, done + bad, ((const int64_t *)scratch)[bad],
                           zero_st_dtype_tag(want));
    }
    free(scratch);
    return rc;
}

int zero_st_read(struct zero_st_file *f, int i, void *dst, enum zero_dtype want, size_t numel,
                 struct zero_error *err)
{
    if (f == NULL)
        return zero_fail(err, ZERO_EINVAL, "zero_st_read: NULL file");
    if (i < 0 || i >= f->n_tensors)
        return zero_fail(err, ZERO_EINVAL, "%s: tensor index %d out of range (%d tensors)", f->path,
                         i, f->n_tensors);
    const struct zero_st_entry *e = &f->tensors[i];
    if (!zero_st_dtype_valid(want))
        return zero_fail(err, ZERO_EINVAL, "%s: tensor '%s': invalid destination dtype %d", f->path,
                         e->desc.name, (int)want);
    if (numel != e->numel) {
        char s[256];
        return zero_fail(
            err, ZERO_EINVAL,
            "%s: tensor '%s': destination holds %zu elements but shape %s has %" PRIu64, f->path,
            e->desc.name, numel, zero_st_format_shape(s, sizeof(s), e->desc.shape, e->desc.ndim),
            e->numel);
    }
    if (!zero_st_can_convert(e->desc.dtype, want))
        return zero_fail(err, ZERO_ENOTSUP, "%s: tensor '%s': cannot convert %s to %s", f->path,
                         e->desc.name, zero_st_dtype_tag(e->desc.dtype), zero_st_dtype_tag(want));
    if (numel == 0)
        return ZERO_OK;
    if (dst == NULL)
        return zero_fail(err, ZERO_EINVAL, "%s: tensor '%s': NULL destination", f->path,
                         e->desc.name);
    if (want != e->desc.dtype)
        return read_converting(f, e, dst, want, err);
    char what[512];
    snprintf(what, sizeof(what), "tensor '%s'", e->desc.name);
    return read_exact(f, dst, (size_t)e->nbytes, f->data_start + e->begin, what, err);
}

/* safetensors writer: header first, then one tensor at a time, into a temporary
 * next to path, which replaces path only after every byte is on disk
 * (file_replace.h: fsync, rename, fsync of the directory; never over a device,
 * FIFO or directory). Until then whatever was at path stays as it was. */
#include "base/file_replace.h"
#include "safetensors_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct zero_st_writer {
    char *path;
    struct zero_replace out; /* the temporary; out.fd < 0 until created */
    int n_tensors;
    struct zero_st_entry *tensors; /* in descriptor order, which is file order */
    int next;                      /* the tensor the next put must supply */
    int failed;                    /* a put failed midway: the file is inconsistent */
};

static int write_all(int fd, const void *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, (const char *)buf + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        done += (size_t)w;
    }
    return 0;
}

static void writer_free(struct zero_st_writer *w)
{
    zero_replace_abort(&w->out);
    for (int i = 0; i < w->n_tensors; i++)
        zero_st_entry_free(&w->tensors[i]);
    free(w->tensors);
    free(w->path);
    free(w);
}

/* Copies descriptor i into the writer's table, checking it. */
static int add_tensor(struct zero_st_writer *w, const struct zero_st_tensor_desc *d, int i,
                      struct zero_error *err)
{
    if (d->name == NULL)
        return zero_fail(err, ZERO_EINVAL, "%s: descriptor %d has no name", w->path, i);
    if (strcmp(d->name, "__metadata__") == 0)
        return zero_fail(err, ZERO_EINVAL,
                         "%s: descriptor %d: tensor name '__metadata__' is "
                         "reserved",
                         w->path, i);
    if (!zero_st_dtype_valid(d->dtype))
        return zero_fail(err, ZERO_EINVAL, "%s: tensor '%s': invalid dtype %d", w->path, d->name,
                         (int)d->dtype);
    if (d->ndim < 0 || (d->ndim > 0 && d->shape == NULL))
        return zero_fail(err, ZERO_EINVAL, "%s: tensor '%s': bad shape (ndim %d%s)", w->path,
                         d->name, d->ndim, d->ndim > 0 ? ", NULL shape" : "");
    struct zero_st_entry *e = &w->tensors[w->n_tensors];
    if (zero_st_entry_init(e, d->name, d->dtype, d->ndim) != 0)
        return zero_fail(err, ZERO_ENOMEM, "%s: tensor '%s': out of memory", w->path, d->name);
    w->n_tensors++;
    for (int k = 0; k < d->ndim; k++) {
        if (d->shape[k] < 0)
            return zero_fail(err, ZERO_EINVAL, "%s: tensor '%s': shape[%d] is %" PRId64, w->path,
                             d->name, k, d->shape[k]);
        ((int64_t *)e->desc.shape)[k] = d->shape[k];
    }
    if (zero_st_entry_size(e) != 0)
        return zero_fail(err, ZERO_EINVAL, "%s: tensor '%s': shape overflows 2^63 bytes", w->path,
                         d->name);
    e->begin = i > 0 ? w->tensors[i - 1].end : 0;
    if (e->nbytes > (uint64_t)INT64_MAX - e->begin)
        return zero_fail(err, ZERO_EINVAL, "%s: tensor '%s': file would exceed 2^63 bytes", w->path,
                         d->name);
    e->end = e->begin + e->nbytes;
    return ZERO_OK;
}

/* {"dtype":"F32","shape":[4,8],"data_offsets":[0,128]}: the field order of the reference
 * writer, so that our headers match its bytes. */
static json_t *tensor_json(const struct zero_st_entry *e)
{
    json_t *obj = json_object();
    json_t *shape = json_array();
    json_t *offsets = json_array();
    int bad = obj == NULL || shape == NULL || offsets == NULL;
    for (int k = 0; !bad && k < e->desc.ndim; k++)
        bad = json_array_append_new(shape, json_integer(e->desc.shape[k])) != 0;
    bad = bad || json_array_append_new(offsets, json_integer((json_int_t)e->begin)) != 0 ||
          json_array_append_new(offsets, json_integer((json_int_t)e->end)) != 0;
    bad = bad || json_object_set_new(obj, "dtype", json_string(zero_st_dtype_tag(e->desc.dtype)));
    bad = bad || json_object_set(obj, "shape", shape) != 0;
    bad = bad || json_object_set(obj, "data_offsets", offsets) != 0;
    json_decref(shape);
    json_decref(offsets);
    if (bad) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

static int add_metadata(json_t *root, const char *path, const struct zero_st_kv *kv, int n,
                        struct zero_error *err)
{
    if (n == 0)
        return ZERO_OK; /* the reference writer omits an absent __metadata__ */
    json_t *meta = json_object();
    if (meta == NULL || json_object_set_new(root, "__metadata__", meta) != 0)
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory for __metadata__", path);
    for (int i = 0; i < n; i++) {
        if (kv == NULL || kv[i].key == NULL || kv[i].value == NULL)
            return zero_fail(err, ZERO_EINVAL,
                             "%s: __metadata__ entry %d has a NULL key or "
                             "value",
                             path, i);
        if (json_object_get(meta, kv[i].key) != NULL)
            return zero_fail(err, ZERO_EINVAL, "%s: __metadata__ key '%s' appears twice", path,
                             kv[i].key);
        json_t *value = json_string(kv[i].value);
        if (value == NULL || json_object_set_new(meta, kv[i].key, value) != 0)
            return zero_fail(err, ZERO_EINVAL,
                             "%s: __metadata__ key '%s': key or value is "
                             "not valid UTF-8",
                             path, kv[i].key);
    }
    return ZERO_OK;
}

/* The header text, space-padded to a multiple of 8 bytes; *len excludes the NUL. */
static int build_header(struct zero_st_writer *w, const struct zero_st_kv *kv, int n_kv,
                        char **text, size_t *len, struct zero_error *err)
{
    json_t *root = json_object();
    if (root == NULL)
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory for the header", w->path);
    int rc = add_metadata(root, w->path, kv, n_kv, err);
    for (int i = 0; rc == ZERO_OK && i < w->n_tensors; i++) {
        const struct zero_st_entry *e = &w->tensors[i];
        if (json_object_get(root, e->desc.name) != NULL) {
            rc = zero_fail(err, ZERO_EINVAL, "%s: tensor '%s' appears twice in the descriptors",
                           w->path, e->desc.name);
            break;
        }
        json_t *t = tensor_json(e);
        if (t == NULL)
            rc = zero_fail(err, ZERO_ENOMEM, "%s: out of memory for the header", w->path);
        else if (json_object_set_new(root, e->desc.name, t) != 0)
            rc = zero_fail(err, ZERO_EINVAL, "%s: tensor name '%s' is not valid UTF-8", w->path,
                           e->desc.name);
    }
    char *json = rc == ZERO_OK ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (rc != ZERO_OK)
        return rc;
    if (json == NULL)
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory for the header", w->path);
    size_t n = strlen(json);
    size_t padded = (n + 7) / 8 * 8;
    *text = malloc(padded + 1);
    if (*text != NULL)
        memcpy(*text, json, n);
    free(json); /* json_dumps output is released with free() */
    if (*text == NULL)
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory for the header", w->path);
    memset(*text + n, ' ', padded - n);
    (*text)[padded] = '\0';
    *len = padded;
    return ZERO_OK;
}

static int write_header(struct zero_st_writer *w, const char *text, size_t len,
                        struct zero_error *err)
{
    unsigned char len_bytes[8];
    for (int k = 0; k < 8; k++)
        len_bytes[k] = (unsigned char)((uint64_t)len >> (8 * k));
    if (write_all(w->out.fd, len_bytes, 8) != 0 || write_all(w->out.fd, text, len) != 0)
        return zero_fail(err, ZERO_EIO, "%s: writing the header: %s", w->out.tmp, strerror(errno));
    return ZERO_OK;
}

static int writer_setup(struct zero_st_writer *w, const struct zero_st_tensor_desc *descs, int n,
                        const struct zero_st_kv *kv, int n_kv, struct zero_error *err)
{
    if (n < 0 || (n > 0 && descs == NULL) || n_kv < 0)
        return zero_fail(err, ZERO_EINVAL, "%s: bad tensor or metadata count (%d, %d)", w->path, n,
                         n_kv);
    w->tensors = calloc((size_t)n + 1, sizeof(*w->tensors));
    if (w->tensors == NULL)
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", w->path);
    for (int i = 0; i < n; i++) {
        int rc = add_tensor(w, &descs[i], i, err);
        if (rc != ZERO_OK)
            return rc;
    }
    char *text = NULL;
    size_t len = 0;
    int rc = build_header(w, kv, n_kv, &text, &len, err);
    if (rc != ZERO_OK)
        return rc;
    rc = zero_replace_begin(&w->out, w->path, err);
    if (rc == ZERO_OK)
        rc = write_header(w, text, len, err);
    free(text);
    return rc;
}

int zero_st_writer_begin(struct zero_st_writer **out, const char *path,
                         const struct zero_st_tensor_desc *descs, int n,
                         const struct zero_st_kv *metadata, int n_metadata, struct zero_error *err)
{
    if (out == NULL || path == NULL)
        return zero_fail(err, ZERO_EINVAL, "zero_st_writer_begin: NULL argument");
    *out = NULL;
    int rc = zero_st_check_host(path, err);
    if (rc != ZERO_OK)
        return rc;
    if ((rc = zero_replace_check(path, err)) != ZERO_OK)
        return rc;
    struct zero_st_writer *w = calloc(1, sizeof(*w));
    if (w == NULL || (w->path = strdup(path)) == NULL) {
        free(w);
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", path);
    }
    w->out.fd = -1;
    rc = writer_setup(w, descs, n, metadata, n_metadata, err);
    if (rc != ZERO_OK) {
        zero_st_writer_abort(w);
        return rc;
    }
    *out = w;
    return ZERO_OK;
}

int zero_st_writer_put_named(struct zero_st_writer *w, const char *name, const void *src,
                             enum zero_dtype src_type, size_t numel, struct zero_error *err)
{
    if (w == NULL || name == NULL)
        return zero_fail(err, ZERO_EINVAL, "zero_st_writer_put_named: NULL argument");
    for (int i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].desc.name, name) == 0)
            return zero_st_writer_put(w, i, src, src_type, numel, err);
    return zero_fail(err, ZERO_EINVAL, "%s: put of tensor '%s', which is not in the header",
                     w->path, name);
}

static int check_put(const struct zero_st_writer *w, int i, const void *src,
                     enum zero_dtype src_type, size_t numel, struct zero_error *err)
{
    if (w->failed)
        return zero_fail(err, ZERO_EINVAL, "%s: an earlier put failed; abort this writer", w->path);
    if (i < 0 || i >= w->n_tensors)
        return zero_fail(err, ZERO_EINVAL, "%s: tensor index %d out of range (%d tensors)", w->path,
                         i, w->n_tensors);
    const struct zero_st_entry *e = &w->tensors[i];
    if (i < w->next)
        return zero_fail(err, ZERO_EINVAL, "%s: tensor '%s' was already put", w->path,
                         e->desc.name);
    if (i > w->next)
        return zero_fail(err, ZERO_EINVAL,
                         "%s: tensor '%s' (index %d) put out of order: "
                         "tensor '%s' (index %d) comes first",
                         w->path, e->desc.name, i, w->tensors[w->next].desc.name, w->next);
    if (!zero_st_dtype_valid(src_type))
        return zero_fail(err, ZERO_EINVAL, "%s: tensor '%s': invalid source dtype %d", w->path,
                         e->desc.name, (int)src_type);
    if (numel != e->numel) {
        char s[256];
        return zero_fail(err, ZERO_EINVAL,
                         "%s: tensor '%s': put of %zu elements but shape %s "
                         "has %" PRIu64,
                         w->path, e->desc.name, numel,
                         zero_st_format_shape(s, sizeof(s), e->desc.shape, e->desc.ndim), e->numel);
    }
    if (!zero_st_can_convert(src_type, e->desc.dtype))
        return zero_fail(err, ZERO_ENOTSUP, "%s: tensor '%s': cannot convert %s to %s", w->path,
                         e->desc.name, zero_st_dtype_tag(src_type),
                         zero_st_dtype_tag(e->desc.dtype));
    if (src == NULL && numel > 0)
        return zero_fail(err, ZERO_EINVAL, "%s: tensor '%s': NULL source", w->path, e->desc.name);
    return ZERO_OK;
}

/* Converts and writes through a bounded scratch buffer; *written counts bytes on disk. */
static int put_converting(struct zero_st_writer *w, const struct zero_st_entry *e, const void *src,
                          enum zero_dtype src_type, uint64_t *written, struct zero_error *err)
{
    size_t in_size = zero_dtype_size(src_type);
    size_t out_size = zero_dtype_size(e->desc.dtype);
    size_t chunk = ZERO_ST_CHUNK_BYTES / out_size;
    if (chunk > e->numel)
        chunk = (size_t)e->numel;
    void *scratch = malloc(chunk * out_size); /* (chunk,) of the file dtype */
    if (scratch == NULL)
        return zero_fail(err, ZERO_ENOMEM, "%s: tensor '%s': out of memory for conversion", w->path,
                         e->desc.name);
    int rc = ZERO_OK;
    for (size_t done = 0; done < e->numel && rc == ZERO_OK; done += chunk) {
        size_t n = (size_t)e->numel - done < chunk ? (size_t)e->numel - done : chunk;
        const char *from = (const char *)src + done * in_size;
        size_t bad = 0;
        if (zero_st_convert(scratch, e->desc.dtype, from, src_type, n, &bad) != 0)
            rc = zero_fail(err, ZERO_EINVAL,
                           "%s: tensor '%s': element %zu = %" PRId64 " does not fit in %s", w->path,
                           e->desc.name, done + bad, ((const int64_t *)from)[bad],
                           zero_st_dtype_tag(e->desc.dtype));
        else if (write_all(w->out.fd, scratch, n * out_size) != 0)
            rc = zero_fail(err, ZERO_EIO, "%s: writing tensor '%s': %s", w->out.tmp, e->desc.name,
                           strerror(errno));
        else
            *written += n * out_size;
    }
    free(scratch);
    return rc;
}

int zero_st_writer_put(struct zero_st_writer *w, int i, const void *src, enum zero_dtype src_type,
                       size_t numel, struct zero_error *err)
{
    if (w == NULL)
        return zero_fail(err, ZERO_EINVAL, "zero_st_writer_put: NULL writer");
    int rc = check_put(w, i, src, src_type, numel, err);
    if (rc != ZERO_OK)
        return rc;
    const struct zero_st_entry *e = &w->tensors[i];
    uint64_t written = 0;
    if (e->nbytes == 0) {
        /* nothing to write */
    } else if (src_type != e->desc.dtype) {
        rc = put_converting(w, e, src, src_type, &written, err);
    } else if (write_all(w->out.fd, src, (size_t)e->nbytes) != 0) {
        written = 1; /* part of it may have reached the file */
        rc = zero_fail(err, ZERO_EIO, "%s: writing tensor '%s': %s", w->out.tmp, e->desc.name,
                       strerror(errno));
    }
    if (rc != ZERO_OK) {
        w->failed = written > 0;
        return rc;
    }
    w->next++;
    return ZERO_OK;
}

int zero_st_writer_finish(struct zero_st_writer *w, struct zero_error *err)
{
    if (w == NULL)
        return zero_fail(err, ZERO_EINVAL, "zero_st_writer_finish: NULL writer");
    int rc = ZERO_OK;
    if (w->failed)
        rc = zero_fail(err, ZERO_EINVAL, "%s: an earlier put failed; nothing was written", w->path);
    else if (w->next < w->n_tensors)
        rc = zero_fail(err, ZERO_EINVAL,
                       "%s: tensor '%s' (index %d of %d) was never put; "
                       "nothing was written",
                       w->path, w->tensors[w->next].desc.name, w->next, w->n_tensors);
    else
        rc = zero_replace_commit(&w->out, err);
    writer_free(w); /* after a failed commit the temporary is gone, path untouched */
    return rc;
}

void zero_st_writer_abort(struct zero_st_writer *w)
{
    if (w == NULL)
        return;
    writer_free(w);
}

/* Writing a Hugging Face model directory: config.json, then the tensors in shards of
 * at most a size (one model.safetensors when they all fit), then the index; see
 * zero/hf_model.h. Each shard is an ordinary safetensors file (zero_st_writer),
 * begun at its first tensor and finished at its last. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/file_replace.h"
#include "zero/hf_model.h"
#include "zero/llama.h"

struct zero_hf_writer {
    char *dir;
    struct zero_llama_config c;
    enum zero_dtype dtype;
    int n;                       /* tensors */
    struct zero_llama_tensor *t; /* (n) */
    int *shard_of;               /* (n) */
    int nshards;
    int64_t total_bytes;         /* the index's metadata.total_size */
    struct zero_st_writer *open; /* the shard being written */
    int next;                    /* the tensor put expects */
};

static void shard_name(const struct zero_hf_writer *w, int s, char *out, size_t len)
{
    if (w->nshards == 1)
        snprintf(out, len, "model.safetensors");
    else /* transformers' naming */
        snprintf(out, len, "model-%05d-of-%05d.safetensors", s + 1, w->nshards);
}

static char *shard_path(const struct zero_hf_writer *w, int s)
{
    char name[64];
    shard_name(w, s, name, sizeof name);
    size_t n = strlen(w->dir) + sizeof name + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", w->dir, name);
    return p;
}

static int64_t tensor_bytes(const struct zero_hf_writer *w, int i)
{
    int64_t n = w->t[i].shape[0] * (w->t[i].ndim == 2 ? w->t[i].shape[1] : 1);
    return n * (int64_t)zero_dtype_size(w->dtype);
}

int zero_hf_writer_shards(const struct zero_hf_writer *w)
{
    return w ? w->nshards : 0;
}

void zero_hf_writer_abort(struct zero_hf_writer *w)
{
    if (!w)
        return;
    zero_st_writer_abort(w->open);
    free(w->dir);
    free(w->t);
    free(w->shard_of);
    free(w);
}

int zero_hf_writer_begin(struct zero_hf_writer **out, const char *dir,
                         const struct zero_llama_config *c, enum zero_dtype dtype,
                         int64_t max_shard_bytes, struct zero_error *err)
{
    if (!out || !dir || !c)
        return zero_fail(err, ZERO_EINVAL, "zero_hf_writer_begin: NULL argument");
    *out = NULL;
    if (dtype != ZERO_F32 && dtype != ZERO_BF16 && dtype != ZERO_F16)
        return zero_fail(err, ZERO_EINVAL, "%s: weights are written as F32, BF16 or F16, not %s",
                         dir, zero_dtype_name(dtype));
    int rc = zero_llama_config_check(c, err);
    if (rc)
        return rc;
    if (mkdir(dir, 0777) && errno != EEXIST)
        return zero_fail(err, ZERO_EIO, "%s: cannot create the directory: %s", dir,
                         strerror(errno));
    struct zero_hf_writer *w = calloc(1, sizeof *w);
    int n = zero_llama_tensor_count(c);
    if (w) {
        w->dir = strdup(dir);
        w->t = calloc((size_t)n, sizeof *w->t);
        w->shard_of = calloc((size_t)n, sizeof *w->shard_of);
    }
    if (!w || !w->dir || !w->t || !w->shard_of) {
        zero_hf_writer_abort(w);
        return zero_fail(err, ZERO_ENOMEM, "%s: writer", dir);
    }
    w->c = *c, w->dtype = dtype, w->n = n;
    /* greedy, in order, as transformers' save_pretrained shards */
    int64_t in_shard = 0;
    for (int i = 0; i < n && !rc; i++) {
        rc = zero_llama_tensor(c, i, &w->t[i], err);
        int64_t b = rc ? 0 : tensor_bytes(w, i);
        if (max_shard_bytes > 0 && in_shard > 0 && in_shard + b > max_shard_bytes)
            w->nshards++, in_shard = 0;
        w->shard_of[i] = w->nshards;
        in_shard += b, w->total_bytes += b;
    }
    w->nshards++;
    char *config = NULL;
    if (!rc) {
        size_t len = strlen(dir) + sizeof "/config.json";
        if (!(config = malloc(len)))
            rc = zero_fail(err, ZERO_ENOMEM, "%s: writer", dir);
        else {
            snprintf(config, len, "%s/config.json", dir);
            rc = zero_hf_config_write(c, dtype, config, err);
        }
    }
    free(config);
    if (rc)
        zero_hf_writer_abort(w);
    else
        *out = w;
    return rc;
}

/* Begins shard s: its tensors' descriptors, in order. */
static int open_shard(struct zero_hf_writer *w, int s, struct zero_error *err)
{
    struct zero_st_tensor_desc *d = calloc((size_t)w->n, sizeof *d);
    char *path = shard_path(w, s);
    int nd = 0, rc = d && path ? ZERO_OK : zero_fail(err, ZERO_ENOMEM, "%s: shard", w->dir);
    for (int i = 0; !rc && i < w->n; i++)
        if (w->shard_of[i] == s)
            d[nd++] = (struct zero_st_tensor_desc){.name = w->t[i].name,
                                                   .dtype = w->dtype,
                                                   .ndim = w->t[i].ndim,
                                                   .shape = w->t[i].shape};
    /* transformers' save_pretrained marks its files this way */
    static const struct zero_st_kv metadata[] = {{"format", "pt"}};
    if (!rc)
        rc = zero_st_writer_begin(&w->open, path, d, nd, metadata, 1, err);
    free(d);
    free(path);
    return rc;
}

int zero_hf_writer_put(struct zero_hf_writer *w, int i, const float *src, size_t numel,
                       struct zero_error *err)
{
    if (!w || !src)
        return zero_fail(err, ZERO_EINVAL, "zero_hf_writer_put: NULL argument");
    if (i != w->next)
        return zero_fail(err, ZERO_EINVAL, "%s: tensor %d put out of order (expected %d)", w->dir,
                         i, w->next);
    int s = w->shard_of[i];
    int rc = w->open ? ZERO_OK : open_shard(w, s, err);
    if (!rc)
        rc = zero_st_writer_put_named(w->open, w->t[i].name, src, ZERO_F32, numel, err);
    if (rc)
        return rc;
    w->next++;
    if (w->next == w->n || w->shard_of[w->next] != s) {
        rc = zero_st_writer_finish(w->open, err);
        w->open = NULL;
    }
    return rc;
}

static int write_index(const struct zero_hf_writer *w, struct zero_error *err)
{
    json_t *map = json_object();
    char name[64];
    for (int i = 0; map && i < w->n; i++) {
        shard_name(w, w->shard_of[i], name, sizeof name);
        json_object_set_new(map, w->t[i].name, json_string(name));
    }
    json_t *root = json_pack("{s:{s:I}, s:o}", "metadata", "total_size", (json_int_t)w->total_bytes,
                             "weight_map", map);
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    size_t len = strlen(w->dir) + sizeof "/model.safetensors.index.json";
    char *path = malloc(len);
    if (!text || !path) {
        free(text);
        free(path);
        return zero_fail(err, ZERO_ENOMEM, "%s: index", w->dir);
    }
    snprintf(path, len, "%s/model.safetensors.index.json", w->dir);
    struct zero_replace r;
    int rc = zero_replace_begin(&r, path, err);
    if (!rc) {
        FILE *f = zero_replace_stream(&r, err);
        rc = !f                             ? err->code
             : fprintf(f, "%s\n", text) < 0 ? zero_fail(err, ZERO_EIO, "%s: write failed", path)
                                            : ZERO_OK;
        if (rc)
            zero_replace_abort(&r);
        else
            rc = zero_replace_commit(&r, err);
    }
    free(text);
    free(path);
    return rc;
}

int zero_hf_writer_finish(struct zero_hf_writer *w, struct zero_error *err)
{
    if (!w)
        return zero_fail(err, ZERO_EINVAL, "zero_hf_writer_finish: NULL writer");
    int rc = w->next == w->n ? ZERO_OK
                             : zero_fail(err, ZERO_EINVAL, "%s: tensor %s was never put", w->dir,
                                         w->t[w->next].name);
    if (!rc && w->nshards > 1)
        rc = write_index(w, err);
    zero_hf_writer_abort(w);
    return rc;
}

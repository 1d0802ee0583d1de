/* The weights of a Hugging Face model directory, one file or sharded; see zero/hf_model.h.
 * Each shard is an ordinary safetensors file (zero_st_open validates it); this file
 * only joins them under one tensor numbering and checks the index against them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hf_index.h"
#include "safetensors_internal.h"
#include "zero/hf_model.h"
#include "zero/llama.h"

struct hf_tensor {
    int file, index; /* files[file], tensor index inside it */
};

struct zero_hf_weights {
    int nfiles;
    struct zero_st_file **files; /* (nfiles) */
    char **paths;                /* (nfiles) */
    int ntensors;
    struct hf_tensor *tensors; /* (ntensors): file by file, in file order */
};

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static int read_text(const char *path, char **text, size_t *len, struct zero_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return zero_fail(err, ZERO_EIO, "%s: cannot open", path);
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    int rc = n < 0 || n > (1L << 28) ? zero_fail(err, ZERO_EFORMAT, "%s: unreadable size", path)
                                     : ZERO_OK;
    *text = rc ? NULL : malloc((size_t)n + 1);
    if (!rc && !*text)
        rc = zero_fail(err, ZERO_ENOMEM, "%s: reading", path);
    if (!rc && (fseek(f, 0, SEEK_SET) || fread(*text, 1, (size_t)n, f) != (size_t)n))
        rc = zero_fail(err, ZERO_EIO, "%s: read error", path);
    fclose(f);
    *len = (size_t)n;
    if (rc) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

static int add_file(struct zero_hf_weights *w, char *path, struct zero_error *err)
{
    w->paths[w->nfiles] = path;
    int rc = zero_st_open(&w->files[w->nfiles], path, err);
    if (rc)
        return rc;
    int n = zero_st_count(w->files[w->nfiles]);
    struct hf_tensor *more = realloc(w->tensors, (size_t)(w->ntensors + n + 1) * sizeof *more);
    if (!more)
        return zero_fail(err, ZERO_ENOMEM, "%s: tensor table", path);
    w->tensors = more;
    for (int i = 0; i < n; i++)
        w->tensors[w->ntensors++] = (struct hf_tensor){.file = w->nfiles, .index = i};
    w->nfiles++;
    return ZERO_OK;
}

/* The index and the shards agree: every mapped tensor is in its shard, every tensor of
 * a shard is mapped to that shard, and no name is in two shards. */
static int check_index(const struct zero_hf_weights *w, const struct zero_hf_index *x,
                       const char *index_path, struct zero_error *err)
{
    for (int t = 0; t < x->ntensors; t++)
        if (zero_st_find(w->files[x->shard_of[t]], x->names[t]) < 0)
            return zero_fail(err, ZERO_EFORMAT, "%s: tensor %s: not in its shard %s", index_path,
                             x->names[t], w->paths[x->shard_of[t]]);
    for (int f = 0; f < w->nfiles; f++)
        for (int i = 0; i < zero_st_count(w->files[f]); i++) {
            const char *name = zero_st_tensor(w->files[f], i)->name;
            int t = 0;
            while (t < x->ntensors && strcmp(x->names[t], name))
                t++;
            if (t == x->ntensors || x->shard_of[t] != f)
                return zero_fail(err, ZERO_EFORMAT, "%s: tensor %s: %s", w->paths[f], name,
                                 t == x->ntensors ? "not in the index's weight_map"
                                                  : "the index maps it to another shard");
        }
    return ZERO_OK;
}

int zero_hf_weights_open(struct zero_hf_weights **out, const char *dir, struct zero_error *err)
{
    if (!out || !dir)
        return zero_fail(err, ZERO_EINVAL, "zero_hf_weights_open: NULL argument");
    *out = NULL;
    struct zero_hf_weights *w = calloc(1, sizeof *w);
    char *index_path = join(dir, "model.safetensors.index.json");
    if (!w || !index_path) {
        free(w);
        free(index_path);
        return zero_fail(err, ZERO_ENOMEM, "%s: weights", dir);
    }
    struct zero_hf_index x = {0};
    char *text = NULL;
    size_t len = 0;
    int rc = ZERO_OK;
    if (exists(index_path)) {
        if (!(rc = read_text(index_path, &text, &len, err)))
            rc = zero_hf_index_parse(&x, text, len, index_path, err);
        if (!rc && !x.nshards)
            rc = zero_fail(err, ZERO_EFORMAT, "%s: weight_map is empty", index_path);
        if (!rc) {
            w->files = calloc((size_t)x.nshards, sizeof *w->files);
            w->paths = calloc((size_t)x.nshards + 1, sizeof *w->paths); /* NULL-ended */
            if (!w->files || !w->paths)
                rc = zero_fail(err, ZERO_ENOMEM, "%s: shards", index_path);
        }
        for (int s = 0; !rc && s < x.nshards; s++) {
            char *path = join(dir, x.shards[s]);
            if (!path)
                rc = zero_fail(err, ZERO_ENOMEM, "%s: shards", index_path);
            else if (!exists(path)) {
                rc = zero_fail(err, ZERO_EIO, "%s: shard %s (holding %s, ...) is missing",
                               index_path, path, x.names[0]);
                for (int t = 0; t < x.ntensors; t++)
                    if (x.shard_of[t] == s) {
                        rc =
                            zero_fail(err, ZERO_EIO, "%s: shard %s is missing (it holds tensor %s)",
                                      index_path, path, x.names[t]);
                        break;
                    }
                free(path);
            } else
                rc = add_file(w, path, err);
        }
        if (!rc)
            rc = check_index(w, &x, index_path, err);
    } else {
        w->files = calloc(1, sizeof *w->files);
        w->paths = calloc(2, sizeof *w->paths); /* NULL-ended */
        char *path = join(dir, "model.safetensors");
        if (!w->files || !w->paths || !path) {
            free(path);
            rc = zero_fail(err, ZERO_ENOMEM, "%s: weights", dir);
        } else if (!exists(path)) {
            rc = zero_fail(err, ZERO_EIO,
                           "%s: neither model.safetensors nor model.safetensors.index.json", dir);
            free(path);
        } else
            rc = add_file(w, path, err);
    }
    free(text);
    free(index_path);
    zero_hf_index_free(&x);
    if (rc)
        zero_hf_weights_close(w);
    else
        *out = w;
    return rc;
}

void zero_hf_weights_close(struct zero_hf_weights *w)
{
    if (!w)
        return;
    for (int f = 0; f < w->nfiles; f++)
        zero_st_close(w->files[f]);
    for (int f = 0; w->paths && w->paths[f]; f++)
        free(w->paths[f]);
    free(w->files);
    free(w->paths);
    free(w->tensors);
    free(w);
}

int zero_hf_weights_count(const struct zero_hf_weights *w)
{
    return w ? w->ntensors : 0;
}

int zero_hf_weights_find(const struct zero_hf_weights *w, const char *name)
{
    for (int i = 0; w && i < w->ntensors; i++)
        if (!strcmp(zero_st_tensor(w->files[w->tensors[i].file], w->tensors[i].index)->name, name))
            return i;
    return -1;
}

const struct zero_st_tensor_desc *zero_hf_weights_tensor(const struct zero_hf_weights *w, int i,
                                                         const char **file)
{
    if (!w || i < 0 || i >= w->ntensors)
        return NULL;
    if (file)
        *file = w->paths[w->tensors[i].file];
    return zero_st_tensor(w->files[w->tensors[i].file], w->tensors[i].index);
}

int zero_hf_weights_read(struct zero_hf_weights *w, int i, void *dst, enum zero_dtype want,
                         size_t numel, struct zero_error *err)
{
    if (!w || i < 0 || i >= w->ntensors)
        return zero_fail(err, ZERO_EINVAL, "zero_hf_weights_read: tensor %d out of range", i);
    int rc = zero_st_read(w->files[w->tensors[i].file], w->tensors[i].index, dst, want, numel, err);
    if (rc)
        zero_error_wrap(err, "%s: ", w->paths[w->tensors[i].file]);
    return rc;
}

/* Tensors transformers' LlamaForCausalLM drops on load without a word. */
static int droppable(const struct zero_llama_config *c, const char *name)
{
    static const char buffer[] = "rotary_emb.inv_freq";
    size_t n = strlen(name), b = sizeof buffer - 1;
    return (n >= b && !strcmp(name + n - b, buffer)) ||
           (c->tie_word_embeddings && !strcmp(name, "lm_head.weight"));
}

int zero_hf_weights_check_llama(const struct zero_hf_weights *w, const struct zero_llama_config *c,
                                struct zero_error *err)
{
    if (!w || !c)
        return zero_fail(err, ZERO_EINVAL, "zero_hf_weights_check_llama: NULL argument");
    int n = zero_llama_tensor_count(c);
    char want[64], got[64];
    for (int k = 0; k < n; k++) {
        struct zero_llama_tensor t;
        int rc = zero_llama_tensor(c, k, &t, err);
        if (rc)
            return rc;
        int i = zero_hf_weights_find(w, t.name);
        zero_st_format_shape(want, sizeof want, t.shape, t.ndim);
        if (i < 0)
            return zero_fail(err, ZERO_EFORMAT, "%s: tensor %s %s is missing", w->paths[0], t.name,
                             want);
        const char *file;
        const struct zero_st_tensor_desc *d = zero_hf_weights_tensor(w, i, &file);
        if (d->ndim != t.ndim || memcmp(d->shape, t.shape, (size_t)t.ndim * sizeof *t.shape))
            return zero_fail(err, ZERO_EFORMAT, "%s: tensor %s has shape %s, the config's is %s",
                             file, t.name, zero_st_format_shape(got, sizeof got, d->shape, d->ndim),
                             want);
        if (d->dtype != ZERO_F32 && d->dtype != ZERO_BF16 && d->dtype != ZERO_F16)
            return zero_fail(err, ZERO_EFORMAT, "%s: tensor %s is %s, not F32, BF16 or F16", file,
                             t.name, zero_st_dtype_tag(d->dtype));
    }
    for (int i = 0; i < w->ntensors; i++) {
        const char *file;
        const struct zero_st_tensor_desc *d = zero_hf_weights_tensor(w, i, &file);
        int known = droppable(c, d->name);
        for (int k = 0; k < n && !known; k++) {
            struct zero_llama_tensor t;
            known = zero_llama_tensor(c, k, &t, err) == 0 && !strcmp(t.name, d->name);
        }
        if (!known)
            return zero_fail(err, ZERO_EFORMAT,
                             "%s: tensor %s %s is not a parameter of the config's model", file,
                             d->name, zero_st_format_shape(got, sizeof got, d->shape, d->ndim));
    }
    return ZERO_OK;
}

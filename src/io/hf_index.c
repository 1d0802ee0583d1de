/* model.safetensors.index.json parsing; see hf_index.h. */
#include "hf_index.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static int plain_shard_name(const char *s)
{
    size_t n = strlen(s), ext = strlen(".safetensors");
    return n > ext && !strchr(s, '/') && !strchr(s, '\\') && s[0] != '.' &&
           strcmp(s + n - ext, ".safetensors") == 0;
}

static int shard_index(struct zero_hf_index *x, const char *name)
{
    for (int i = 0; i < x->nshards; i++)
        if (!strcmp(x->shards[i], name))
            return i;
    char *copy = strdup(name);
    if (!copy)
        return -1;
    x->shards[x->nshards] = copy;
    return x->nshards++;
}

int zero_hf_index_parse(struct zero_hf_index *x, const char *text, size_t len, const char *where,
                        struct zero_error *err)
{
    memset(x, 0, sizeof *x);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return zero_fail(err, ZERO_EFORMAT, "%s: line %d: %s", where, jerr.line, jerr.text);
    json_t *map = json_object_get(root, "weight_map");
    int rc = json_is_object(map) ? ZERO_OK
                                 : zero_fail(err, ZERO_EFORMAT,
                                             "%s: weight_map: expected an object of tensor "
                                             "names to shard files",
                                             where);
    size_t n = rc ? 0 : json_object_size(map);
    if (!rc && n > (1u << 24))
        rc = zero_fail(err, ZERO_EFORMAT, "%s: weight_map: %zu tensors is too many", where, n);
    if (!rc && n) {
        x->names = calloc(n, sizeof *x->names);
        x->shard_of = calloc(n, sizeof *x->shard_of);
        x->shards = calloc(n, sizeof *x->shards);
        if (!x->names || !x->shard_of || !x->shards)
            rc = zero_fail(err, ZERO_ENOMEM, "%s: index tables", where);
    }
    const char *name;
    json_t *v;
    if (!rc)
        json_object_foreach(map, name, v)
        {
            const char *shard = json_string_value(v);
            if (!shard || !plain_shard_name(shard)) {
                rc = zero_fail(err, ZERO_EFORMAT,
                               "%s: weight_map.%s: expected a .safetensors file name in the "
                               "model directory",
                               where, name);
                break;
            }
            int s = shard_index(x, shard);
            if (s < 0 || !(x->names[x->ntensors] = strdup(name))) {
                rc = zero_fail(err, ZERO_ENOMEM, "%s: index tables", where);
                break;
            }
            x->shard_of[x->ntensors++] = s;
        }
    json_decref(root);
    if (rc)
        zero_hf_index_free(x);
    return rc;
}

void zero_hf_index_free(struct zero_hf_index *x)
{
    for (int i = 0; x->names && i < x->ntensors; i++)
        free(x->names[i]);
    for (int i = 0; x->shards && i < x->nshards; i++)
        free(x->shards[i]);
    free(x->names);
    free(x->shard_of);
    free(x->shards);
    memset(x, 0, sizeof *x);
}

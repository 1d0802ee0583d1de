/* Whole weights to and from .safetensors by PyTorch state_dict name; see weights_io.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_agree.h"
#include "weights_io.h"
#include "zero/safetensors.h"

/* "<unit>.<param>": PyTorch's state_dict key for the parameter. */
static void full_name(const struct zero_model *m, int u, int p, char *out, size_t len)
{
    snprintf(out, len, "%s.%s", m->units[u]->name, m->units[u]->params[p].name);
}

/* "[4, 5]" */
static const char *shape_text(int ndim, const int64_t *shape, char *out, size_t len)
{
    size_t at = (size_t)snprintf(out, len, "[");
    for (int d = 0; d < ndim && at < len; d++)
        at += (size_t)snprintf(out + at, len - at, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (at < len)
        snprintf(out + at, len - at, "]");
    return out;
}

static int64_t largest_param(const struct zero_model *m)
{
    int64_t most = 0;
    for (int u = 0; u < m->nunits; u++)
        for (int p = 0; p < m->units[u]->nparams; p++) {
            int64_t n = zero_param_numel(&m->units[u]->params[p]);
            most = n > most ? n : most;
        }
    return most;
}

/* The file's index of the model's parameter `name`: as it is, or under the
 * map's prefix ("transformer.h.0.ln_1.weight"); -1 if neither. */
static int find_tensor(const struct zero_st_file *f, const struct weights_map *map,
                       const char *name)
{
    int i = zero_st_find(f, name);
    if (i >= 0 || !map || !map->prefix)
        return i;
    char prefixed[2 * ZERO_NAME_LEN + 64];
    snprintf(prefixed, sizeof prefixed, "%s%s", map->prefix, name);
    return zero_st_find(f, prefixed);
}

/* 1 if the map says tensor `name` of the file is not a parameter (a buffer). */
static int ignored(const struct weights_map *map, const char *name)
{
    size_t n = strlen(name);
    for (int k = 0; map && map->ignore && map->ignore[k]; k++) {
        size_t s = strlen(map->ignore[k]);
        if (n >= s && strcmp(name + n - s, map->ignore[k]) == 0)
            return 1;
    }
    return 0;
}

/* The model's parameter a tensor of the file stands for, or -1. */
static int model_param(const struct zero_model *m, const struct weights_map *map, const char *name,
                       int *u, int *p)
{
    if (zero_model_find_param(m, name, u, p) == 0)
        return 0;
    size_t k = map && map->prefix ? strlen(map->prefix) : 0;
    if (k && strncmp(name, map->prefix, k) == 0 && zero_model_find_param(m, name + k, u, p) == 0)
        return 0;
    return -1;
}

/* Every parameter is in the file with the model's shape, and nothing else is
 * (but the tensors the map ignores). */
static int check_tensors(const struct zero_st_file *f, const struct zero_model *m,
                         const struct weights_map *map, const char *path, struct zero_error *err)
{
    char name[2 * ZERO_NAME_LEN + 2], want[128], got[128];
    for (int u = 0; u < m->nunits; u++)
        for (int p = 0; p < m->units[u]->nparams; p++) {
            const struct zero_param_spec *spec = &m->units[u]->params[p];
            full_name(m, u, p, name, sizeof name);
            shape_text(spec->ndim, spec->shape, want, sizeof want);
            int i = find_tensor(f, map, name);
            if (i < 0)
                return zero_fail(err, ZERO_EFORMAT,
                                 "%s: tensor %s is missing (the model's "
                                 "shape is %s)",
                                 path, name, want);
            const struct zero_st_tensor_desc *d = zero_st_tensor(f, i);
            if (d->ndim != spec->ndim ||
                memcmp(d->shape, spec->shape, (size_t)spec->ndim * sizeof *d->shape) != 0)
                return zero_fail(err, ZERO_EFORMAT,
                                 "%s: tensor %s has shape %s, the model's "
                                 "is %s",
                                 path, name, shape_text(d->ndim, d->shape, got, sizeof got), want);
        }
    for (int i = 0; i < zero_st_count(f); i++) {
        const struct zero_st_tensor_desc *d = zero_st_tensor(f, i);
        int u, p;
        if (model_param(m, map, d->name, &u, &p) != 0 && !ignored(map, d->name))
            return zero_fail(err, ZERO_EFORMAT,
                             "%s: tensor %s %s is not a parameter of the "
                             "model",
                             path, d->name, shape_text(d->ndim, d->shape, got, sizeof got));
    }
    return ZERO_OK;
}

int weights_load(struct zero_engine *e, const struct zero_model *m, const char *path,
                 struct zero_comm *comm, struct zero_error *err)
{
    return weights_load_mapped(e, m, path, NULL, comm, err);
}

int weights_load_mapped(struct zero_engine *e, const struct zero_model *m, const char *path,
                        const struct weights_map *map, struct zero_comm *comm,
                        struct zero_error *err)
{
    int rank = zero_comm_rank(comm);
    struct zero_st_file *f = NULL;
    float *host = malloc((size_t)largest_param(m) * sizeof *host + 1); /* (numel) */
    int rc = host ? ZERO_OK : zero_fail(err, ZERO_ENOMEM, "%s: weight buffer", path);
    if (!rc && rank == 0 && !(rc = zero_st_open(&f, path, err)))
        rc = check_tensors(f, m, map, path, err);
    rc = example_agree(rc, err, comm);
    char name[2 * ZERO_NAME_LEN + 2];
    for (int u = 0; u < m->nunits && !rc; u++)
        for (int p = 0; p < m->units[u]->nparams && !rc; p++) {
            size_t numel = (size_t)zero_param_numel(&m->units[u]->params[p]);
            full_name(m, u, p, name, sizeof name);
            if (rank == 0 &&
                (rc = zero_st_read(f, find_tensor(f, map, name), host, ZERO_F32, numel, err)))
                zero_error_wrap(err, "%s: tensor %s: ", path, name);
            if ((rc = example_agree(rc, err, comm)))
                break;
            zero_comm_bcast(comm, host, numel * sizeof *host, 0);
            rc = zero_engine_write_param(e, u, p, host, err);
            rc = example_agree(rc, err, comm);
        }
    zero_st_close(f);
    free(host);
    return rc;
}

/* The descriptors of every parameter, fp32, in model order; names in names. */
static int describe(const struct zero_model *m, enum zero_dtype dtype,
                    struct zero_st_tensor_desc **descs, char (**names)[2 * ZERO_NAME_LEN + 2],
                    int *n, struct zero_error *err)
{
    int count = 0;
    for (int u = 0; u < m->nunits; u++)
        count += m->units[u]->nparams;
    *descs = calloc((size_t)count + 1, sizeof **descs);
    *names = calloc((size_t)count + 1, sizeof **names);
    if (!*descs || !*names)
        return zero_fail(err, ZERO_ENOMEM, "weight descriptors");
    int i = 0;
    for (int u = 0; u < m->nunits; u++)
        for (int p = 0; p < m->units[u]->nparams; p++, i++) {
            const struct zero_param_spec *spec = &m->units[u]->params[p];
            full_name(m, u, p, (*names)[i], sizeof(*names)[i]);
            (*descs)[i] = (struct zero_st_tensor_desc){
                .name = (*names)[i], .dtype = dtype, .ndim = spec->ndim, .shape = spec->shape};
        }
    *n = count;
    return ZERO_OK;
}

int weights_save(struct zero_engine *e, const struct zero_model *m, const char *path,
                 struct zero_comm *comm, struct zero_error *err)
{
    return weights_save_as(e, m, path, ZERO_F32, comm, err);
}

int weights_save_as(struct zero_engine *e, const struct zero_model *m, const char *path,
                    enum zero_dtype dtype, struct zero_comm *comm, struct zero_error *err)
{
    if (dtype != ZERO_F32 && dtype != ZERO_F16 && dtype != ZERO_BF16)
        return zero_fail(err, ZERO_EINVAL,
                         "%s: weights can be written as fp32, fp16 or bf16, "
                         "not %s",
                         path, zero_dtype_name(dtype));
    int rank = zero_comm_rank(comm);
    /* safetensors' own save_file() from torch marks its files this way */
    static const struct zero_st_kv metadata[] = {{"format", "pt"}};
    struct zero_st_tensor_desc *descs = NULL;
    char(*names)[2 * ZERO_NAME_LEN + 2] = NULL;
    struct zero_st_writer *w = NULL;
    int n = 0;
    float *host = malloc((size_t)largest_param(m) * sizeof *host + 1); /* (numel) */
    int rc = host ? ZERO_OK : zero_fail(err, ZERO_ENOMEM, "%s: weight buffer", path);
    if (!rc && rank == 0 && !(rc = describe(m, dtype, &descs, &names, &n, err)))
        rc = zero_st_writer_begin(&w, path, descs, n, metadata, 1, err);
    rc = example_agree(rc, err, comm);
    int i = 0;
    for (int u = 0; u < m->nunits && !rc; u++)
        for (int p = 0; p < m->units[u]->nparams && !rc; p++, i++) {
            size_t numel = (size_t)zero_param_numel(&m->units[u]->params[p]);
            rc = example_agree(zero_engine_read_param(e, u, p, host, err), err, comm);
            if (!rc && rank == 0)
                rc = zero_st_writer_put(w, i, host, ZERO_F32, numel, err);
            rc = example_agree(rc, err, comm);
        }
    if (rank == 0) {
        if (!rc)
            rc = zero_st_writer_finish(w, err);
        else
            zero_st_writer_abort(w);
    }
    rc = example_agree(rc, err, comm);
    free(descs);
    free(names);
    free(host);
    return rc;
}

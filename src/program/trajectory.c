/* See trajectory.h. */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file_replace.h"
#include "example_agree.h"
#include "trajectory.h"
#include "zero/safetensors.h"

struct trajectory {
    char *path;
    int64_t weights_every;
    int rank;
    struct zero_replace out; /* rank 0 */
    FILE *f;
    float *host; /* (the largest parameter's numel) */
};

static uint64_t fnv1a64(const float *x, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        for (int b = 0; b < 4; b++) { /* little-endian bytes, whatever the host */
            h ^= (u >> (8 * b)) & 0xff;
            h *= 0x100000001b3ull;
        }
    }
    return h;
}

static int64_t params_count(const struct zero_model *m, int64_t *largest)
{
    int64_t n = 0;
    *largest = 1;
    for (int u = 0; u < m->nunits; u++)
        for (int p = 0; p < m->units[u]->nparams; p++, n++) {
            int64_t k = zero_param_numel(&m->units[u]->params[p]);
            *largest = k > *largest ? k : *largest;
        }
    return n;
}

static void param_name(const struct zero_model *m, int u, int p, char *out, size_t len)
{
    snprintf(out, len, "%s.%s", m->units[u]->name, m->units[u]->params[p].name);
}

/* a finite number, or null */
static json_t *number(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static int write_line(struct trajectory *t, json_t *o, struct zero_error *err)
{
    int rc = ZERO_OK;
    if (json_dumpf(o, t->f, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17)) ||
        fputc('\n', t->f) == EOF || fflush(t->f))
        rc = zero_fail(err, ZERO_EIO, "%s: cannot write the trajectory", t->path);
    json_decref(o);
    return rc;
}

/* "run.jsonl.step000003.safetensors" and its path next to t->path */
static void weights_names(const struct trajectory *t, int64_t step, char *path, size_t len,
                          const char **base)
{
    snprintf(path, len, "%s.step%06" PRId64 ".safetensors", t->path, step);
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
}

/* Rank 0: the writer of every parameter's fp32 values, with "step" in its metadata */
static int weights_begin(struct zero_st_writer **w, const char *path, const struct zero_model *m,
                         int64_t step, struct zero_error *err)
{
    int64_t largest, n = params_count(m, &largest);
    struct zero_st_tensor_desc *d = calloc((size_t)n + 1, sizeof *d);
    char(*names)[2 * ZERO_NAME_LEN + 2] = calloc((size_t)n + 1, sizeof *names);
    int rc = d && names ? ZERO_OK : zero_fail(err, ZERO_ENOMEM, "%s: descriptors", path);
    int i = 0;
    for (int u = 0; !rc && u < m->nunits; u++)
        for (int p = 0; p < m->units[u]->nparams; p++, i++) {
            const struct zero_param_spec *s = &m->units[u]->params[p];
            param_name(m, u, p, names[i], sizeof names[i]);
            d[i] = (struct zero_st_tensor_desc){
                .name = names[i], .dtype = ZERO_F32, .ndim = s->ndim, .shape = s->shape};
        }
    char step_text[32];
    snprintf(step_text, sizeof step_text, "%" PRId64, step);
    const struct zero_st_kv meta[] = {{"format", "pt"}, {"step", step_text}};
    if (!rc)
        rc = zero_st_writer_begin(w, path, d, (int)n, meta, 2, err);
    free(d);
    free(names);
    return rc;
}

/* One line: the step's numbers (unless it is the start), every tensor's hash, and the
 * weights when due. Every rank gathers every parameter; rank 0 writes. */
static int write_step(struct trajectory *t, struct zero_engine *e, const struct zero_model *m,
                      int start, struct zero_comm *comm, struct zero_error *err)
{
    int64_t step = zero_engine_global_steps(e);
    int weights = start || (t->weights_every > 0 && step % t->weights_every == 0);
    char wpath[4096];
    const char *wbase = NULL;
    struct zero_st_writer *w = NULL;
    json_t *o = NULL, *hashes = NULL;
    int rc = ZERO_OK;
    if (t->rank == 0) {
        o = json_object();
        hashes = json_object();
        json_object_set_new(o, "step", json_integer(step));
        if (!start) {
            const struct zero_step_info *s = zero_engine_last_step(e);
            json_object_set_new(o, "loss", number(s->loss));
            json_object_set_new(o, "grad_norm", number(s->grad_norm));
            json_object_set_new(o, "lr", number(s->lr));
            json_object_set_new(o, "loss_scale", number(s->loss_scale));
            json_object_set_new(o, "skipped", json_boolean(s->skipped));
        }
        if (weights) {
            weights_names(t, step, wpath, sizeof wpath, &wbase);
            rc = weights_begin(&w, wpath, m, step, err);
        }
    }
    rc = example_agree(rc, err, comm);
    int i = 0;
    for (int u = 0; !rc && u < m->nunits; u++)
        for (int p = 0; !rc && p < m->units[u]->nparams; p++, i++) {
            size_t n = (size_t)zero_param_numel(&m->units[u]->params[p]);
            rc = example_agree(zero_engine_read_param(e, u, p, t->host, err), err, comm);
            if (!rc && t->rank == 0) {
                char name[2 * ZERO_NAME_LEN + 2], hex[17];
                param_name(m, u, p, name, sizeof name);
                snprintf(hex, sizeof hex, "%016" PRIx64, fnv1a64(t->host, n));
                json_object_set_new(hashes, name, json_string(hex));
                if (w)
                    rc = zero_st_writer_put(w, i, t->host, ZERO_F32, n, err);
            }
            rc = example_agree(rc, err, comm);
        }
    if (t->rank == 0) {
        if (w && !rc)
            rc = zero_st_writer_finish(w, err);
        else if (w)
            zero_st_writer_abort(w);
        json_object_set_new(o, "hashes", hashes);
        if (wbase)
            json_object_set_new(o, "weights", json_string(wbase));
        if (!rc)
            rc = write_line(t, o, err);
        else
            json_decref(o);
    }
    return example_agree(rc, err, comm);
}

static json_t *header(const struct trajectory_run *run, struct zero_engine *e,
                      const struct zero_model *m)
{
    const struct zero_config *c = zero_engine_config(e);
    json_t *o = json_object(), *tensors = json_array();
    json_object_set_new(o, "trajectory", json_integer(1));
    json_object_set_new(o, "program", json_string(run->prog));
    json_object_set_new(o, "world", json_integer(run->world));
    json_object_set_new(o, "stage", json_integer(c->zero_optimization.stage));
    json_object_set_new(o, "compute_dtype",
                        json_string(zero_dtype_name(zero_engine_compute_dtype(e))));
    json_object_set_new(o, "atom_order",
                        json_string(c->libzero.atom_order == ZERO_ATOM_RANK_MAJOR
                                        ? "rank_major"
                                        : "micro_step_major"));
    json_object_set_new(o, "order_seed", json_integer((json_int_t)run->order_seed));
    json_object_set_new(o, "global_batch", json_integer(run->world * run->micro * run->accum));
    json_object_set_new(o, "micro_batch", json_integer(run->micro));
    json_object_set_new(o, "accumulation", json_integer(run->accum));
    json_object_set_new(o, "hash", json_string("fnv1a64-f32le"));
    for (int u = 0; u < m->nunits; u++)
        for (int p = 0; p < m->units[u]->nparams; p++) {
            const struct zero_param_spec *s = &m->units[u]->params[p];
            char name[2 * ZERO_NAME_LEN + 2];
            param_name(m, u, p, name, sizeof name);
            json_t *shape = json_array();
            for (int d = 0; d < s->ndim; d++)
                json_array_append_new(shape, json_integer(s->shape[d]));
            json_t *t = json_object();
            json_object_set_new(t, "name", json_string(name));
            json_object_set_new(t, "shape", shape);
            json_array_append_new(tensors, t);
        }
    json_object_set_new(o, "tensors", tensors);
    return o;
}

static void trajectory_free(struct trajectory *t)
{
    if (t == NULL)
        return;
    zero_replace_abort(&t->out);
    free(t->host);
    free(t->path);
    free(t);
}

int trajectory_open(struct trajectory **out, const char *path, int64_t weights_every,
                    const struct trajectory_run *run, struct zero_engine *e,
                    const struct zero_model *m, struct zero_comm *comm, struct zero_error *err)
{
    *out = NULL;
    int64_t largest;
    params_count(m, &largest);
    struct trajectory *t = calloc(1, sizeof *t);
    int rc = t ? ZERO_OK : zero_fail(err, ZERO_ENOMEM, "--trajectory: out of memory");
    if (!rc) {
        t->rank = zero_comm_rank(comm);
        t->out.fd = -1;
        t->weights_every = weights_every;
        t->path = strdup(path);
        t->host = zero_size_alloc(largest, sizeof(float), "--trajectory: a parameter", err);
        rc = t->path && t->host ? ZERO_OK : zero_fail(err, ZERO_ENOMEM, "--trajectory: memory");
    }
    if (!rc && t->rank == 0 && !(rc = zero_replace_begin(&t->out, path, err)) &&
        !(t->f = zero_replace_stream(&t->out, err)))
        rc = err->code;
    if (!rc && t->rank == 0)
        rc = write_line(t, header(run, e, m), err);
    rc = example_agree(rc, err, comm);
    if (!rc)
        rc = write_step(t, e, m, 1, comm, err);
    if (rc) {
        trajectory_free(t);
        return rc;
    }
    *out = t;
    return ZERO_OK;
}

int trajectory_step(struct trajectory *t, struct zero_engine *e, const struct zero_model *m,
                    struct zero_comm *comm, struct zero_error *err)
{
    return write_step(t, e, m, 0, comm, err);
}

int trajectory_close(struct trajectory *t, struct zero_comm *comm, struct zero_error *err)
{
    if (t == NULL)
        return ZERO_OK;
    int rc = t->rank == 0 ? zero_replace_commit(&t->out, err) : ZERO_OK;
    trajectory_free(t);
    return example_agree(rc, err, comm);
}

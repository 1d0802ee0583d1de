/* Training samples: synthetic or from a .safetensors file; see mlp_data.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "program/example_agree.h"
#include "mlp_data.h"
#include "zero/safetensors.h"
#include "zero/size.h"
#include "zero/synthetic.h"

void mlp_data_synthetic(struct mlp_data *d, int64_t hidden, int64_t classes, uint64_t seed)
{
    memset(d, 0, sizeof *d);
    d->hidden = hidden;
    d->classes = classes;
    d->seed = seed;
}

/* Finds tensor name with ndim dimensions; shape[0] is the sample count. */
static int find(struct zero_st_file *f, const char *path, const char *name, int ndim,
                const struct zero_st_tensor_desc **out, struct zero_error *err)
{
    int i = zero_st_find(f, name);
    if (i < 0)
        return zero_fail(err, ZERO_EFORMAT, "%s: no tensor '%s'", path, name);
    *out = zero_st_tensor(f, i);
    if ((*out)->ndim != ndim)
        return zero_fail(err, ZERO_EFORMAT, "%s: tensor '%s' has %d dimensions; expected %d", path,
                         name, (*out)->ndim, ndim);
    return ZERO_OK;
}

/* inputs (S, hidden) and labels (S) for d->samples; *n = S * hidden. */
static int alloc_samples(struct mlp_data *d, int64_t *n, struct zero_error *err)
{
    int rc = zero_size_mul(n, d->samples, d->hidden, "samples * --hidden", err);
    if (!rc && !(d->inputs = zero_size_alloc(*n, sizeof *d->inputs, "sample inputs", err)))
        rc = err->code;
    if (!rc && !(d->labels = zero_size_alloc(d->samples, sizeof *d->labels, "sample labels", err)))
        rc = err->code;
    return rc;
}

/* Rank 0: reads inputs and labels and checks shapes and label range. */
static int read_file(struct mlp_data *d, const char *path, struct zero_error *err)
{
    struct zero_st_file *f;
    int rc = zero_st_open(&f, path, err);
    if (rc)
        return rc;
    const struct zero_st_tensor_desc *x = NULL, *y = NULL;
    if ((rc = find(f, path, "inputs", 2, &x, err)) || (rc = find(f, path, "labels", 1, &y, err)))
        goto out;
    int64_t s = x->shape[0];
    if (x->shape[1] != d->hidden || y->shape[0] != s || s < 1) {
        rc = zero_fail(err, ZERO_EFORMAT,
                       "%s: inputs [%lld, %lld] and labels [%lld] do not "
                       "fit: expected inputs [S, %lld] (--hidden) and labels [S], S >= 1",
                       path, (long long)x->shape[0], (long long)x->shape[1], (long long)y->shape[0],
                       (long long)d->hidden);
        goto out;
    }
    d->samples = s;
    int64_t n = 0;
    if ((rc = alloc_samples(d, &n, err))) {
        zero_error_wrap(err, "%s: ", path);
        goto out;
    }
    if ((rc = zero_st_read(f, zero_st_find(f, "inputs"), d->inputs, ZERO_F32, (size_t)n, err)) ||
        (rc = zero_st_read(f, zero_st_find(f, "labels"), d->labels, ZERO_I32, (size_t)s, err))) {
        zero_error_wrap(err, "%s: ", path);
        goto out;
    }
    /* found here, not as "the training diverged" steps later with no file or row */
    for (int64_t i = 0; i < n && !rc; i++)
        if (!isfinite(d->inputs[i]))
            rc = zero_fail(err, ZERO_EFORMAT, "%s: inputs[%lld][%lld] = %g is not a finite number",
                           path, (long long)(i / d->hidden), (long long)(i % d->hidden),
                           (double)d->inputs[i]);
    for (int64_t i = 0; i < s && !rc; i++)
        if (d->labels[i] < 0 || d->labels[i] >= d->classes)
            rc = zero_fail(err, ZERO_EFORMAT,
                           "%s: labels[%lld] = %d is outside 0 .. %lld "
                           "(--classes %lld)",
                           path, (long long)i, d->labels[i], (long long)d->classes - 1,
                           (long long)d->classes);
out:
    zero_st_close(f);
    return rc;
}

int mlp_data_load(struct mlp_data *d, const char *path, int64_t hidden, int64_t classes,
                  struct zero_comm *comm, struct zero_error *err)
{
    int rank = zero_comm_rank(comm);
    mlp_data_synthetic(d, hidden, classes, 0);
    int rc = rank == 0 ? read_file(d, path, err) : ZERO_OK;
    if ((rc = example_agree(rc, err, comm)))
        goto fail;
    int64_t s = d->samples;
    zero_comm_bcast(comm, &s, sizeof s, 0);
    d->samples = s;
    int64_t n = s * hidden; /* rank 0 checked it */
    if (rank != 0 && (rc = alloc_samples(d, &n, err)))
        zero_error_wrap(err, "%s: ", path);
    if ((rc = example_agree(rc, err, comm)))
        goto fail;
    zero_comm_bcast(comm, d->inputs, (size_t)n * sizeof *d->inputs, 0);
    zero_comm_bcast(comm, d->labels, (size_t)s * sizeof *d->labels, 0);
    return ZERO_OK;
fail:
    mlp_data_free(d);
    return rc;
}

void mlp_data_free(struct mlp_data *d)
{
    free(d->inputs);
    free(d->labels);
    d->inputs = NULL;
    d->labels = NULL;
}

void mlp_data_fill(const struct mlp_data *d, int64_t first, int64_t n, float *inputs,
                   int32_t *labels)
{
    if (d->samples == 0) {
        zero_synthetic_samples(d->seed, d->hidden, d->classes, first, n, inputs, labels);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t s = (first + i) % d->samples; /* epochs wrap; a negative first too */
        s += s < 0 ? d->samples : 0;
        memcpy(inputs + i * d->hidden, d->inputs + s * d->hidden,
               (size_t)d->hidden * sizeof *inputs);
        labels[i] = d->labels[s];
    }
}

int mlp_data_write_synthetic(const char *path, uint64_t seed, int64_t hidden, int64_t classes,
                             int64_t samples, struct zero_error *err)
{
    struct mlp_data d = {.hidden = hidden, .samples = samples};
    int64_t n;
    int rc = alloc_samples(&d, &n, err);
    if (rc) {
        mlp_data_free(&d);
        return zero_error_wrap(err, "%s: --samples %lld: ", path, (long long)samples);
    }
    float *x = d.inputs;   /* (samples, hidden) */
    int32_t *y = d.labels; /* (samples) */
    zero_synthetic_samples(seed, hidden, classes, 0, samples, x, y);
    const int64_t xshape[2] = {samples, hidden}, yshape[1] = {samples};
    const struct zero_st_tensor_desc descs[2] = {
        {.name = "inputs", .dtype = ZERO_F32, .ndim = 2, .shape = xshape},
        {.name = "labels", .dtype = ZERO_I64, .ndim = 1, .shape = yshape},
    };
    struct zero_st_writer *w;
    rc = zero_st_writer_begin(&w, path, descs, 2, NULL, 0, err);
    if (!rc) {
        if ((rc = zero_st_writer_put(w, 0, x, ZERO_F32, (size_t)n, err)) ||
            (rc = zero_st_writer_put(w, 1, y, ZERO_I32, (size_t)samples, err)))
            zero_st_writer_abort(w);
        else
            rc = zero_st_writer_finish(w, err);
    }
    free(x);
    free(y);
    return rc;
}

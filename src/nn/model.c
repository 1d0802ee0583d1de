/* The model container: an ordered list of units, validated as they are added so
 * that the engine can trust widths, names and references without checking them
 * again. */
#include "zero/model.h"
#include "zero/size.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_internal.h"

int zero_model_create(struct zero_model **m, struct zero_error *err)
{
    *m = calloc(1, sizeof(**m));
    if (*m == NULL)
        return zero_fail(err, ZERO_ENOMEM, "model: out of memory");
    return ZERO_OK;
}

void zero_unit_destroy(struct zero_unit *u)
{
    if (u == NULL)
        return;
    if (u->ops != NULL && u->ops->destroy != NULL)
        u->ops->destroy(u);
    free(u);
}

void zero_model_destroy(struct zero_model *m)
{
    if (m == NULL)
        return;
    for (int i = 0; i < m->nunits; i++)
        zero_unit_destroy(m->units[i]);
    free(m->units);
    free(m);
}

static int find_unit(const struct zero_model *m, const char *name)
{
    for (int i = 0; i < m->nunits; i++)
        if (strcmp(m->units[i]->name, name) == 0)
            return i;
    return -1;
}

/* Everything that can be wrong with u as the next unit of m. */
static int check_next_unit(const struct zero_model *m, const struct zero_unit *u,
                           struct zero_error *err)
{
    if (m->nunits >= ZERO_MAX_UNITS)
        return zero_fail(err, ZERO_EINVAL, "unit %s: a model holds at most %d units", u->name,
                         ZERO_MAX_UNITS);
    if (u->nparams < 0 || u->nparams > ZERO_UNIT_MAX_PARAMS)
        return zero_fail(err, ZERO_EINVAL, "unit %s: %d parameters (at most %d)", u->name,
                         u->nparams, ZERO_UNIT_MAX_PARAMS);
    if (u->nexternal < 0 || u->nexternal > ZERO_UNIT_MAX_EXTERNAL)
        return zero_fail(err, ZERO_EINVAL, "unit %s: %d external parameters (at most %d)", u->name,
                         u->nexternal, ZERO_UNIT_MAX_EXTERNAL);
    if (find_unit(m, u->name) >= 0)
        return zero_fail(err, ZERO_EINVAL, "unit %s: name already used by unit %d", u->name,
                         find_unit(m, u->name));
    if (u->is_loss && u->out_width != 1)
        return zero_fail(err, ZERO_EINVAL,
                         "unit %s: a loss unit writes one loss per row (out_width 1), not %lld",
                         u->name, (long long)u->out_width);
    if (m->nunits > 0) {
        const struct zero_unit *prev = m->units[m->nunits - 1];
        if (prev->is_loss)
            return zero_fail(err, ZERO_EINVAL,
                             "unit %s: cannot follow loss unit %s (the loss unit must be last)",
                             u->name, prev->name);
        if (u->in_width != prev->out_width)
            return zero_fail(
                err, ZERO_EINVAL, "unit %s: in_width %lld does not match out_width %lld of unit %s",
                u->name, (long long)u->in_width, (long long)prev->out_width, prev->name);
    }
    for (int e = 0; e < u->nexternal; e++) {
        const struct zero_external_ref *r = &u->external[e];
        if (r->unit < 0 || r->unit >= m->nunits)
            return zero_fail(err, ZERO_EINVAL,
                             "unit %s: external %d refers to unit %d, not an earlier unit "
                             "(0..%d)",
                             u->name, e, r->unit, m->nunits - 1);
        const struct zero_unit *owner = m->units[r->unit];
        if (r->param < 0 || r->param >= owner->nparams)
            return zero_fail(err, ZERO_EINVAL,
                             "unit %s: external %d refers to parameter %d of unit %s, which has "
                             "%d",
                             u->name, e, r->param, owner->name, owner->nparams);
    }
    return ZERO_OK;
}

int zero_model_add(struct zero_model *m, struct zero_unit *u, struct zero_error *err)
{
    if (u == NULL)
        return zero_fail(err, ZERO_EINVAL, "model: unit %d is NULL", m->nunits);
    int rc = check_next_unit(m, u, err);
    int64_t total = zero_model_numel(m); /* each unit is at most 2^56: this cannot overflow */
    for (int p = 0; p < u->nparams && rc == ZERO_OK; p++)
        total += zero_param_numel(&u->params[p]);
    if (rc == ZERO_OK && total > ZERO_MAX_NUMEL)
        rc = zero_fail(err, ZERO_EINVAL,
                       "unit %s: the model would hold %lld elements, more than 2^56", u->name,
                       (long long)total);
    if (rc != ZERO_OK) {
        zero_unit_destroy(u);
        return rc;
    }
    struct zero_unit **units = realloc(m->units, (size_t)(m->nunits + 1) * sizeof(*units));
    if (units == NULL) {
        zero_unit_destroy(u);
        return zero_fail(err, ZERO_ENOMEM, "unit %s: out of memory adding it to the model",
                         u->name);
    }
    units[m->nunits++] = u;
    m->units = units;
    return ZERO_OK;
}

int64_t zero_param_numel(const struct zero_param_spec *p)
{
    int64_t n = 1;
    for (int d = 0; d < p->ndim; d++)
        n *= p->shape[d];
    return n;
}

int zero_unit_new(struct zero_unit **u, const char *name, const struct zero_unit_ops *ops,
                  void *impl, int64_t in_width, int64_t out_width, struct zero_error *err)
{
    *u = NULL;
    if (name == NULL || name[0] == '\0')
        return zero_fail(err, ZERO_EINVAL, "unit: empty name");
    if (strlen(name) >= ZERO_NAME_LEN)
        return zero_fail(err, ZERO_EINVAL, "unit %.40s...: name longer than %d characters", name,
                         ZERO_NAME_LEN - 1);
    if (ops == NULL || ops->forward == NULL || ops->backward == NULL || ops->saved_bytes == NULL ||
        ops->scratch_bytes == NULL)
        return zero_fail(err, ZERO_EINVAL,
                         "unit %s: ops table lacks forward, backward, "
                         "saved_bytes or scratch_bytes",
                         name);
    if (in_width < 0 || out_width <= 0)
        return zero_fail(err, ZERO_EINVAL, "unit %s: bad widths in %lld, out %lld", name,
                         (long long)in_width, (long long)out_width);
    *u = calloc(1, sizeof(**u));
    if (*u == NULL)
        return zero_fail(err, ZERO_ENOMEM, "unit %s: out of memory", name);
    strcpy((*u)->name, name);
    (*u)->ops = ops;
    (*u)->impl = impl;
    (*u)->in_width = in_width;
    (*u)->out_width = out_width;
    return ZERO_OK;
}

int zero_unit_add_param(struct zero_unit *u, const char *name, int ndim, const int64_t *shape,
                        enum zero_init_kind init, float init_a, struct zero_error *err)
{
    if (name == NULL || name[0] == '\0') {
        zero_fail(err, ZERO_EINVAL, "unit %s: parameter with an empty name", u->name);
        return -1;
    }
    /* The full name "<unit>.<param>" must fit where checkpoints and logs keep it. */
    if (strlen(u->name) + 1 + strlen(name) >= ZERO_NAME_LEN) {
        zero_fail(err, ZERO_EINVAL, "unit %s: parameter %s: full name longer than %d characters",
                  u->name, name, ZERO_NAME_LEN - 1);
        return -1;
    }
    if (u->nparams >= ZERO_UNIT_MAX_PARAMS) {
        zero_fail(err, ZERO_EINVAL, "unit %s: parameter %s: more than %d parameters", u->name, name,
                  ZERO_UNIT_MAX_PARAMS);
        return -1;
    }
    if (ndim < 1 || ndim > ZERO_MAX_DIMS) {
        zero_fail(err, ZERO_EINVAL, "unit %s: parameter %s: ndim %d not in 1..%d", u->name, name,
                  ndim, ZERO_MAX_DIMS);
        return -1;
    }
    for (int d = 0; d < ndim; d++) {
        if (shape[d] <= 0) {
            zero_fail(err, ZERO_EINVAL, "unit %s: parameter %s: dimension %d is %lld", u->name,
                      name, d, (long long)shape[d]);
            return -1;
        }
    }
    /* sizes from flags and files: the unit's elements must leave room for its
     * padding and the byte counts of every model state (include/zero/size.h) */
    int64_t numel = 1, total = 0;
    char what[2 * ZERO_NAME_LEN + 32];
    snprintf(what, sizeof what, "unit %s: parameter %s", u->name, name);
    for (int d = 0; d < ndim; d++)
        if (zero_size_mul(&numel, numel, shape[d], what, err))
            return -1;
    for (int i = 0; i < u->nparams; i++)
        total += zero_param_numel(&u->params[i]);
    if (zero_size_add(&total, total, numel, what, err))
        return -1;
    if (total > ZERO_MAX_NUMEL) {
        zero_fail(err, ZERO_EINVAL, "%s: the unit would hold %lld elements, more than 2^56", what,
                  (long long)total);
        return -1;
    }
    for (int i = 0; i < u->nparams; i++) {
        if (strcmp(u->params[i].name, name) == 0) {
            zero_fail(err, ZERO_EINVAL, "unit %s: parameter %s declared twice", u->name, name);
            return -1;
        }
    }
    struct zero_param_spec *p = &u->params[u->nparams];
    memset(p, 0, sizeof(*p));
    strcpy(p->name, name);
    p->ndim = ndim;
    memcpy(p->shape, shape, (size_t)ndim * sizeof(shape[0]));
    p->init = init;
    p->init_a = init_a;
    return u->nparams++;
}

int64_t zero_model_numel(const struct zero_model *m)
{
    int64_t n = 0;
    for (int i = 0; i < m->nunits; i++)
        for (int p = 0; p < m->units[i]->nparams; p++)
            n += zero_param_numel(&m->units[i]->params[p]);
    return n;
}

int zero_model_find_param(const struct zero_model *m, const char *full_name, int *unit, int *param)
{
    /* Unit names may contain dots ("layers.3"), so match each unit's name as a prefix. */
    for (int i = 0; i < m->nunits; i++) {
        const struct zero_unit *u = m->units[i];
        size_t len = strlen(u->name);
        if (strncmp(full_name, u->name, len) != 0 || full_name[len] != '.')
            continue;
        for (int p = 0; p < u->nparams; p++) {
            if (strcmp(full_name + len + 1, u->params[p].name) == 0) {
                *unit = i;
                *param = p;
                return 0;
            }
        }
    }
    return -1;
}

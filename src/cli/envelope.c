/* See envelope.h: reading an envelope file. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envelope.h"

void envelope_free(struct envelope *e)
{
    for (int s = 0; s < e->nsteps; s++) {
        for (int i = 0; i < e->steps[s].ntensors; i++)
            free(e->steps[s].tensor[i].name);
        free(e->steps[s].tensor);
    }
    free(e->steps);
    memset(e, 0, sizeof *e);
}

/* A non-negative number under key, or -1 (with msg) */
static int number_at(json_t *o, const char *key, double *out, const char *where, char *msg,
                     size_t len)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v) || json_number_value(v) < 0) {
        snprintf(msg, len, "%s: \"%s\" must be a non-negative number", where, key);
        return -1;
    }
    *out = json_number_value(v);
    return 0;
}

static int read_tensors(struct envelope_step *s, json_t *tensors, const char *where, char *msg,
                        size_t len)
{
    if (tensors == NULL)
        return 0;
    if (!json_is_object(tensors)) {
        snprintf(msg, len, "%s: \"tensors\" must be an object", where);
        return -1;
    }
    size_t n = json_object_size(tensors);
    s->tensor = calloc(n ? n : 1, sizeof *s->tensor);
    if (s->tensor == NULL) {
        snprintf(msg, len, "%s: out of memory", where);
        return -1;
    }
    const char *name;
    json_t *t;
    json_object_foreach(tensors, name, t)
    {
        char at[600];
        snprintf(at, sizeof at, "%s: tensor %s", where, name);
        struct envelope_tensor *et = &s->tensor[s->ntensors];
        if (!json_is_object(t)) {
            snprintf(msg, len, "%s: must be an object", at);
            return -1;
        }
        if (number_at(t, "max_abs", &et->max_abs, at, msg, len) ||
            number_at(t, "rel_l2", &et->rel_l2, at, msg, len))
            return -1;
        if ((et->name = strdup(name)) == NULL) {
            snprintf(msg, len, "%s: out of memory", at);
            return -1;
        }
        s->ntensors++;
    }
    return 0;
}

static int read_line(struct envelope *e, json_t *o, const char *where, char *msg, size_t len)
{
    json_t *step = json_object_get(o, "step");
    if (!json_is_integer(step) || json_integer_value(step) < 0) {
        snprintf(msg, len, "%s: \"step\" must be a non-negative integer", where);
        return -1;
    }
    if (envelope_step_at(e, json_integer_value(step))) {
        snprintf(msg, len, "%s: step %lld appears twice", where,
                 (long long)json_integer_value(step));
        return -1;
    }
    struct envelope_step *grown = realloc(e->steps, (size_t)(e->nsteps + 1) * sizeof *grown);
    if (grown == NULL) {
        snprintf(msg, len, "%s: out of memory", where);
        return -1;
    }
    e->steps = grown;
    struct envelope_step *s = &e->steps[e->nsteps++];
    memset(s, 0, sizeof *s);
    s->step = json_integer_value(step);
    if (number_at(o, "loss", &s->loss, where, msg, len) ||
        number_at(o, "grad_norm", &s->grad_norm, where, msg, len))
        return -1;
    return read_tensors(s, json_object_get(o, "tensors"), where, msg, len);
}

int envelope_load(struct envelope *e, const char *path, char *msg, size_t len)
{
    memset(e, 0, sizeof *e);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(msg, len, "%s: cannot open the envelope file", path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int rc = 0, lineno = 0;
    while (rc == 0 && getline(&line, &cap, f) > 0) {
        char where[300];
        snprintf(where, sizeof where, "%s:%d", path, ++lineno);
        json_error_t jerr;
        json_t *o = json_loads(line, 0, &jerr);
        if (!json_is_object(o)) {
            snprintf(msg, len, "%s: not a JSON object (%s)", where,
                     o ? "another value" : jerr.text);
            rc = -1;
        } else if (lineno == 1) {
            json_t *v = json_object_get(o, "envelope"), *runs = json_object_get(o, "runs");
            if (!json_is_integer(v) || json_integer_value(v) != 1 || !json_is_integer(runs) ||
                json_integer_value(runs) < 2) {
                snprintf(msg, len,
                         "%s: not an envelope file (its first line must be {\"envelope\": 1, "
                         "\"runs\": K >= 2, ...})",
                         where);
                rc = -1;
            } else {
                e->runs = (int)json_integer_value(runs);
            }
        } else {
            rc = read_line(e, o, where, msg, len);
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    if (rc == 0 && lineno == 0) {
        snprintf(msg, len, "%s: empty envelope file", path);
        rc = -1;
    }
    if (rc)
        envelope_free(e);
    return rc;
}

const struct envelope_step *envelope_step_at(const struct envelope *e, int64_t step)
{
    for (int s = 0; s < e->nsteps; s++)
        if (e->steps[s].step == step)
            return &e->steps[s];
    return NULL;
}

const struct envelope_tensor *envelope_tensor_at(const struct envelope_step *s,
                                                 const char *canonical)
{
    for (int i = 0; s && i < s->ntensors; i++)
        if (strcmp(s->tensor[i].name, canonical) == 0)
            return &s->tensor[i];
    return NULL;
}

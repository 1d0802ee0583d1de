/* See trajectory_read.h. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trajectory_read.h"
#include "weight_names.h"

void trajectory_free_file(struct trajectory_file *t)
{
    for (int s = 0; s < t->nsteps; s++) {
        for (int i = 0; i < t->steps[s].nhashes; i++)
            free(t->steps[s].hash[i].name);
        free(t->steps[s].hash);
        free(t->steps[s].weights);
    }
    free(t->steps);
    free(t->path);
    memset(t, 0, sizeof *t);
}

int trajectory_sniff(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    char head[32] = {0};
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    return n > 0 && strncmp(head, "{\"trajectory\":", 14) == 0;
}

/* null -> NAN; a number -> itself; else -1 */
static int number_or_null(json_t *o, const char *key, double *out)
{
    json_t *v = json_object_get(o, key);
    if (json_is_null(v)) {
        *out = NAN;
        return 0;
    }
    if (!json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return 0;
}

static void copy_string(json_t *o, const char *key, char *out, size_t len)
{
    const char *v = json_string_value(json_object_get(o, key));
    snprintf(out, len, "%s", v ? v : "?");
}

static int read_header(struct trajectory_file *t, json_t *o, const char *where, char *msg,
                       size_t len)
{
    json_t *v = json_object_get(o, "trajectory");
    if (!json_is_integer(v) || json_integer_value(v) != 1) {
        snprintf(msg, len,
                 "%s: not a trajectory file (its first line must be {\"trajectory\": 1, "
                 "...}, as --trajectory writes)",
                 where);
        return 2;
    }
    copy_string(o, "program", t->program, sizeof t->program);
    copy_string(o, "compute_dtype", t->compute_dtype, sizeof t->compute_dtype);
    copy_string(o, "atom_order", t->atom_order, sizeof t->atom_order);
    t->world = json_integer_value(json_object_get(o, "world"));
    t->stage = json_integer_value(json_object_get(o, "stage"));
    t->order_seed = json_integer_value(json_object_get(o, "order_seed"));
    t->global_batch = json_integer_value(json_object_get(o, "global_batch"));
    return 0;
}

static int read_hashes(struct traj_step *s, json_t *hashes, const char *where, char *msg,
                       size_t len)
{
    if (!json_is_object(hashes)) {
        snprintf(msg, len, "%s: \"hashes\" must be an object of tensor name -> 16 hex digits",
                 where);
        return 2;
    }
    s->hash = calloc(json_object_size(hashes) + 1, sizeof *s->hash);
    if (s->hash == NULL) {
        snprintf(msg, len, "%s: out of memory", where);
        return 2;
    }
    const char *name;
    json_t *h;
    json_object_foreach(hashes, name, h)
    {
        const char *hex = json_string_value(h);
        if (hex == NULL || strlen(hex) != 16 || strspn(hex, "0123456789abcdef") != 16) {
            snprintf(msg, len, "%s: the hash of %s is not 16 hex digits", where, name);
            return 2;
        }
        struct traj_hash *th = &s->hash[s->nhashes++];
        th->name = strdup(weight_name_canonical(name));
        memcpy(th->hex, hex, 17);
        if (th->name == NULL) {
            snprintf(msg, len, "%s: out of memory", where);
            return 2;
        }
    }
    return 0;
}

/* the weights' file next to the trajectory */
static char *resolve(const char *traj_path, const char *name)
{
    const char *slash = strrchr(traj_path, '/');
    size_t dir = name[0] == '/' || !slash ? 0 : (size_t)(slash - traj_path) + 1;
    char *p = malloc(dir + strlen(name) + 1);
    if (p) {
        memcpy(p, traj_path, dir);
        strcpy(p + dir, name);
    }
    return p;
}

static int read_step(struct trajectory_file *t, json_t *o, const char *where, char *msg, size_t len)
{
    json_t *step = json_object_get(o, "step");
    if (!json_is_integer(step) || json_integer_value(step) < 0) {
        snprintf(msg, len, "%s: \"step\" must be a non-negative integer", where);
        return 2;
    }
    if (trajectory_step_at(t, json_integer_value(step))) {
        snprintf(msg, len, "%s: step %lld appears twice", where,
                 (long long)json_integer_value(step));
        return 2;
    }
    struct traj_step *grown = realloc(t->steps, (size_t)(t->nsteps + 1) * sizeof *grown);
    if (grown == NULL) {
        snprintf(msg, len, "%s: out of memory", where);
        return 2;
    }
    t->steps = grown;
    struct traj_step *s = &t->steps[t->nsteps++];
    memset(s, 0, sizeof *s);
    s->step = json_integer_value(step);
    s->start = json_object_get(o, "loss") == NULL;
    s->loss = s->grad_norm = s->lr = s->loss_scale = NAN;
    if (!s->start) {
        static const char *const keys[] = {"loss", "grad_norm", "lr", "loss_scale"};
        double *out[] = {&s->loss, &s->grad_norm, &s->lr, &s->loss_scale};
        for (int k = 0; k < 4; k++)
            if (number_or_null(o, keys[k], out[k])) {
                snprintf(msg, len, "%s: \"%s\" must be a number or null", where, keys[k]);
                return 2;
            }
        json_t *sk = json_object_get(o, "skipped");
        if (!json_is_boolean(sk)) {
            snprintf(msg, len, "%s: \"skipped\" must be true or false", where);
            return 2;
        }
        s->skipped = json_is_true(sk);
    }
    json_t *w = json_object_get(o, "weights");
    if (w && !json_is_string(w)) {
        snprintf(msg, len, "%s: \"weights\" must be a file name", where);
        return 2;
    }
    if (w && (s->weights = resolve(t->path, json_string_value(w))) == NULL) {
        snprintf(msg, len, "%s: out of memory", where);
        return 2;
    }
    return read_hashes(s, json_object_get(o, "hashes"), where, msg, len);
}

int trajectory_load(struct trajectory_file *t, const char *path, char *msg, size_t len)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    if (f == NULL || (t->path = strdup(path)) == NULL) {
        snprintf(msg, len, "%s: cannot open the trajectory file", path);
        if (f)
            fclose(f);
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    int rc = 0, lineno = 0;
    while (rc == 0 && getline(&line, &cap, f) > 0) {
        char where[600];
        snprintf(where, sizeof where, "%s:%d", path, ++lineno);
        json_error_t jerr;
        json_t *o = json_loads(line, 0, &jerr);
        if (!json_is_object(o)) {
            snprintf(msg, len, "%s: not a JSON object (%s)", where,
                     o ? "another value" : jerr.text);
            rc = 2;
        } else {
            rc =
                lineno == 1 ? read_header(t, o, where, msg, len) : read_step(t, o, where, msg, len);
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    if (rc == 0 && lineno < 2) {
        snprintf(msg, len, "%s: %s", path, lineno ? "a header and no step" : "empty");
        rc = 2;
    }
    if (rc)
        trajectory_free_file(t);
    return rc;
}

const struct traj_step *trajectory_step_at(const struct trajectory_file *t, int64_t step)
{
    for (int s = 0; s < t->nsteps; s++)
        if (t->steps[s].step == step)
            return &t->steps[s];
    return NULL;
}

const char *trajectory_hash(const struct traj_step *s, const char *canonical)
{
    for (int i = 0; s && i < s->nhashes; i++)
        if (strcmp(s->hash[i].name, canonical) == 0)
            return s->hash[i].hex;
    return NULL;
}

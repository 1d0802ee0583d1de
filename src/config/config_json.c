/* The ds_config.json loader: jansson parses, the key table (config_keys.c)
 * says what each key means, and every mistake is an error naming its key path.
 *
 * Three passes over the parsed document:
 *   1. names: every member must be a key of the table, an alias, or a key
 *      DeepSpeed knows that this build lacks (config_unsupported.c) given with a
 *      value that asks for nothing; unknown names get the nearest valid key;
 *   2. values, in table order (optimizer.type before optimizer.params, so a
 *      parameter can be checked against its optimizer);
 *   3. DeepSpeed's derived values (overlap_comm, the fp16 scaler, AdamW), the
 *      unimplemented features, and the batch rule when the world size is known. */
#include "zero/config_json.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_auto.h"
#include "config_keys.h"
#include "config_unsupported.h"
#include "config_validate.h"
#include "base/file_replace.h"

#define PATH_LEN 256

struct loader {
    struct zero_config *c;
    struct zero_config_origins *o;
    struct zero_config ds;      /* DeepSpeed's defaults, for "auto" */
    struct zero_config program; /* ZERO_CONFIG_KEEP: the caller's values, for "auto" */
    const char *where;          /* file name or "config" */
    const json_t *root;
    unsigned flags;
    short given_as[ZERO_CONFIG_MAX_KEYS]; /* canonical key -> 1 + the key (alias) that set it */
    struct zero_error *err;
};

/* The value as JSON text for messages, cut at 64 bytes. */
static void show(const json_t *v, char *buf, size_t len)
{
    char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));
    snprintf(buf, len, "%.64s%s", text ? text : "?", text && strlen(text) > 64 ? "..." : "");
    free(text);
}

static int fail_key(struct loader *l, int code, const char *path, const json_t *v,
                    const char *expected)
{
    char got[80];
    show(v, got, sizeof got);
    return zero_fail(l->err, code, "%s: %s: expected %s, got %s", l->where, path, expected, got);
}

/* ---- pass 1: names ---- */

static int check_names(struct loader *l, const json_t *obj, const char *prefix)
{
    const char *name;
    const json_t *v;
    json_object_foreach((json_t *)obj, name, v)
    {
        char path[PATH_LEN];
        int n = snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", name);
        if (n < 0 || (size_t)n >= sizeof path)
            return zero_fail(l->err, ZERO_EINVAL, "%s: %.64s...: unknown key (too long)", l->where,
                             path);
        if (strchr(name, '.'))
            return zero_fail(l->err, ZERO_EINVAL,
                             "%s: \"%s\": unknown key; sections are nested objects "
                             "({\"zero_optimization\": {\"stage\": 3}}), not dotted names",
                             l->where, path);
        int k = config_key_find(path);
        if (k >= 0) {
            if (config_keys[k].type != KEY_SECTION || json_is_null(v))
                continue;
            if (!json_is_object(v))
                return fail_key(l, ZERO_EINVAL, path, v, "an object");
            int rc = check_names(l, v, path);
            if (rc)
                return rc;
            continue;
        }
        const struct config_unsupported *u = config_unsupported_find(path);
        if (u) {
            char what[128];
            if (!config_unsupported_inert(u, v, what, sizeof what))
                return zero_fail(l->err, ZERO_ENOTSUP, "%s: %s%s: %s", l->where, path, what,
                                 u->feature);
            continue;
        }
        const char *near = config_key_suggest(path);
        if (near)
            return zero_fail(l->err, ZERO_EINVAL, "%s: %s: unknown key; did you mean %s?", l->where,
                             path, near);
        return zero_fail(l->err, ZERO_EINVAL, "%s: %s: unknown key", l->where, path);
    }
    return ZERO_OK;
}

/* ---- pass 2: values ---- */

/* The member at a dotted path, NULL when absent (or below a null section). */
static const json_t *lookup(const json_t *root, const char *path)
{
    char buf[PATH_LEN];
    snprintf(buf, sizeof buf, "%s", path);
    const json_t *v = root;
    for (char *save, *part = strtok_r(buf, ".", &save); part; part = strtok_r(NULL, ".", &save)) {
        if (!json_is_object(v))
            return NULL;
        v = json_object_get(v, part);
    }
    return v;
}

/* "an integer >= 1", "an integer from 0 to 3", "a number from 0 to 1" */
static void expectation(const struct config_key *k, const char *what, char *buf, size_t len)
{
    if (k->max >= 9.2e18 || isinf(k->max))
        snprintf(buf, len, "%s >= %.17g", what, k->min);
    else
        snprintf(buf, len, "%s from %.17g to %.17g", what, k->min, k->max);
}

/* An integer key: JSON integers, and reals with an integral value (5e8). */
static int parse_integer(struct loader *l, const struct config_key *k, const json_t *v)
{
    char expected[96];
    expectation(k, "an integer", expected, sizeof expected);
    double d;
    long long i = 0;
    int exact = 0;
    if (json_is_integer(v)) {
        i = json_integer_value(v);
        d = (double)i;
        exact = 1;
    } else if (json_is_real(v)) {
        d = json_real_value(v);
        if (!isfinite(d) || d != floor(d))
            return fail_key(l, ZERO_EINVAL, k->path, v, expected);
    } else {
        return fail_key(l, ZERO_EINVAL, k->path, v, expected);
    }
    if (d < k->min || d > k->max)
        return fail_key(l, ZERO_EINVAL, k->path, v, expected);
    void *f = config_key_field(k, l->c);
    switch (k->type) {
    case KEY_INT:
        *(int *)f = exact ? (int)i : (int)d;
        break;
    case KEY_I64:
        if (!exact && d >= 9223372036854775807.0) /* 2^63 */
            return fail_key(l, ZERO_EINVAL, k->path, v, expected);
        *(int64_t *)f = exact ? (int64_t)i : (int64_t)d;
        break;
    default:                                       /* KEY_U64 */
        if (!exact && d >= 18446744073709551615.0) /* 2^64 */
            return fail_key(l, ZERO_EINVAL, k->path, v, expected);
        *(uint64_t *)f = exact ? (uint64_t)i : (uint64_t)d;
        break;
    }
    return ZERO_OK;
}

static int parse_real(struct loader *l, const struct config_key *k, const json_t *v, double *out)
{
    char expected[96];
    expectation(k, "a number", expected, sizeof expected);
    if (!json_is_number(v))
        return fail_key(l, ZERO_EINVAL, k->path, v, expected);
    double d = json_number_value(v);
    if (!(d >= k->min && d <= k->max))
        return fail_key(l, ZERO_EINVAL, k->path, v, expected);
    *out = d;
    return ZERO_OK;
}

/* "Adam, AdamW, SGD" */
static void list_names(const char *const *names, char *buf, size_t len)
{
    buf[0] = '\0';
    size_t used = 0;
    for (int i = 0; names && names[i]; i++) {
        if (!names[i][0])
            continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", names[i]);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
}

static int find_name(const char *const *names, const char *s, int nocase)
{
    for (int i = 0; names && names[i]; i++)
        if (names[i][0] && (nocase ? strcasecmp(names[i], s) : strcmp(names[i], s)) == 0)
            return i;
    return -1;
}

static int parse_name(struct loader *l, const struct config_key *k, const json_t *v)
{
    char choices[160], expected[200];
    list_names(k->names, choices, sizeof choices);
    snprintf(expected, sizeof expected, "one of %s", choices);
    if (!json_is_string(v))
        return fail_key(l, ZERO_EINVAL, k->path, v, k->names ? expected : "a string");
    const char *s = json_string_value(v);
    void *f = config_key_field(k, l->c);
    if (k->type == KEY_STRING) {
        if (k->names && find_name(k->names, s, 0) < 0)
            return fail_key(l, ZERO_EINVAL, k->path, v, expected);
        if (strlen(s) >= k->size || json_string_length(v) != strlen(s)) {
            char what[64];
            snprintf(what, sizeof what, "a string of at most %zu bytes", k->size - 1);
            return fail_key(l, ZERO_EINVAL, k->path, v, what);
        }
        memcpy(f, s, strlen(s) + 1);
        return ZERO_OK;
    }
    int i = find_name(k->names, s, (k->flags & KEY_NOCASE) != 0);
    if (i >= 0) {
        *(int *)f = i;
        return ZERO_OK;
    }
    if (find_name(k->known, s, (k->flags & KEY_NOCASE) != 0) >= 0)
        return zero_fail(l->err, ZERO_ENOTSUP,
                         "%s: %s=%s: DeepSpeed's %s is not implemented yet in this build "
                         "(implemented: %s)",
                         l->where, k->path, s, s, choices);
    return fail_key(l, ZERO_EINVAL, k->path, v, expected);
}

static int parse_pair(struct loader *l, const struct config_key *k, const json_t *v)
{
    char expected[96];
    snprintf(expected, sizeof expected, "two numbers from %g to %g", k->min, k->max);
    if (!json_is_array(v) || json_array_size(v) != 2)
        return fail_key(l, ZERO_EINVAL, k->path, v, expected);
    double pair[2];
    for (size_t i = 0; i < 2; i++) {
        const json_t *x = json_array_get(v, i);
        if (!json_is_number(x) || !(json_number_value(x) >= k->min) ||
            !(json_number_value(x) <= k->max))
            return fail_key(l, ZERO_EINVAL, k->path, v, expected);
        pair[i] = json_number_value(x);
    }
    memcpy(config_key_field(k, l->c), pair, sizeof pair);
    return ZERO_OK;
}

static int parse_value(struct loader *l, const struct config_key *k, const json_t *v)
{
    switch (k->type) {
    case KEY_BOOL:
        if (!json_is_boolean(v))
            return fail_key(l, ZERO_EINVAL, k->path, v, "true or false");
        *(int *)config_key_field(k, l->c) = json_is_true(v);
        return ZERO_OK;
    case KEY_INT:
    case KEY_I64:
    case KEY_U64:
        return parse_integer(l, k, v);
    case KEY_REAL:
        return parse_real(l, k, v, (double *)config_key_field(k, l->c));
    case KEY_PAIR:
        return parse_pair(l, k, v);
    case KEY_STRING:
    case KEY_ENUM:
        return parse_name(l, k, v);
    default:
        return ZERO_OK;
    }
}

/* "SGD takes lr, weight_decay, momentum, dampening, nesterov" */
/* 1: "auto" is one of k's own values (libzero.matmul's default), not the
 * Hugging Face integration's placeholder */
static int enum_names_auto(const struct config_key *k)
{
    for (const char *const *n = k->type == KEY_ENUM ? k->names : NULL; n && *n; n++)
        if (strcmp(*n, "auto") == 0)
            return 1;
    return 0;
}

static int not_a_parameter(struct loader *l, const struct config_key *k)
{
    const struct zero_config *c = l->c;
    int is_optim = strncmp(k->path, "optimizer.", 10) == 0;
    int t = config_key_find(is_optim ? "optimizer.type" : "scheduler.type");
    const char *owner =
        config_keys[t].names[is_optim ? (int)c->optimizer.type : (int)c->scheduler.type];
    char takes[400] = "";
    size_t plen = (size_t)(config_key_leaf(k->path) - k->path), used = 0;
    for (int i = 0; i < config_nkeys; i++) {
        const struct config_key *o = &config_keys[i];
        if ((o->flags & KEY_ALIAS) || strncmp(o->path, k->path, plen) != 0 ||
            strchr(o->path + plen, '.') || !config_key_applies(o, c))
            continue;
        int n =
            snprintf(takes + used, sizeof takes - used, "%s%s", used ? ", " : "", o->path + plen);
        if (n > 0 && (size_t)n < sizeof takes - used)
            used += (size_t)n;
    }
    return zero_fail(l->err, ZERO_EINVAL, "%s: %s: not a parameter of %s (it takes %s)", l->where,
                     k->path, owner, takes);
}

/* Without a type, DeepSpeed ignores the params; here that is an error, not a surprise. */
static int check_typed(struct loader *l, const char *section)
{
    char params[32], type[32];
    snprintf(params, sizeof params, "%s.params", section);
    snprintf(type, sizeof type, "%s.type", section);
    const json_t *p = lookup(l->root, params), *t = lookup(l->root, type);
    if (p && !json_is_null(p) && (!t || json_is_null(t)))
        return zero_fail(l->err, ZERO_EINVAL, "%s: %s: given without %s", l->where, params, type);
    /* With ZERO_CONFIG_KEEP a given type starts from DeepSpeed's defaults for its params. */
    if (t && (l->flags & ZERO_CONFIG_KEEP)) {
        if (section[0] == 'o')
            l->c->optimizer = l->ds.optimizer;
        else
            l->c->scheduler = l->ds.scheduler;
    }
    return ZERO_OK;
}

static int load_values(struct loader *l)
{
    int rc;
    if ((rc = check_typed(l, "optimizer")) || (rc = check_typed(l, "scheduler")))
        return rc;
    for (int i = 0; i < config_nkeys; i++) {
        const struct config_key *k = &config_keys[i];
        if (k->type == KEY_SECTION)
            continue;
        const json_t *v = lookup(l->root, k->path);
        if (!v)
            continue;
        int canon = config_key_canonical(i);
        if (l->given_as[canon])
            return zero_fail(l->err, ZERO_EINVAL, "%s: %s and %s are the same key; give one",
                             l->where, config_keys[l->given_as[canon] - 1].path, k->path);
        l->given_as[canon] = (short)(i + 1);
        if (!config_key_applies(k, l->c))
            return not_a_parameter(l, k);
        void *f = config_key_field(k, l->c);
        const void *def = config_key_cfield(k, &l->ds);
        if (json_is_string(v) && strcmp(json_string_value(v), "auto") == 0 && !enum_names_auto(k)) {
            /* only where DeepSpeed's Hugging Face integration fills the key; the
             * program resolves it (zero_config_resolve_auto), from its own value
             * here (ZERO_CONFIG_KEEP) or DeepSpeed's default */
            if (!config_auto_allowed(i))
                return zero_fail(l->err, ZERO_EINVAL,
                                 "%s: %s: \"auto\" is resolved only for the keys DeepSpeed's "
                                 "Hugging Face integration fills, and it does not fill %s; "
                                 "give a value",
                                 l->where, k->path, config_key_leaf(k->path));
            memcpy(f, config_key_cfield(k, l->flags & ZERO_CONFIG_KEEP ? &l->program : &l->ds),
                   k->size);
            config_auto_mark(l->c, i);
            l->o->of[canon] = ZERO_ORIGIN_AUTO;
            continue;
        }
        if (json_is_null(v) && (k->flags & KEY_NULLABLE)) {
            memcpy(f, def, k->size);
        } else if ((rc = parse_value(l, k, v))) {
            return rc;
        }
        l->o->of[canon] = ZERO_ORIGIN_FILE;
    }
    return ZERO_OK;
}

/* ---- pass 3: derived values, features, batch ---- */

static int origin(const struct loader *l, const char *path)
{
    return zero_config_origin_of(l->o, path);
}

static void set_origin(struct loader *l, const char *path, int o)
{
    int k = config_key_find(path);
    if (k >= 0)
        l->o->of[config_key_canonical(k)] = (unsigned char)o;
}

static void derive(struct loader *l)
{
    struct zero_config *c = l->c;
    /* DeepSpeed's overlap_comm is None by default: on for stage 3 */
    const char *ov = "zero_optimization.overlap_comm";
    if (origin(l, ov) == ZERO_ORIGIN_DEFAULT || origin(l, ov) == ZERO_ORIGIN_AUTO) {
        c->zero_optimization.overlap_comm = c->zero_optimization.stage == 3;
        if (origin(l, ov) == ZERO_ORIGIN_DEFAULT)
            set_origin(l, ov, ZERO_ORIGIN_DERIVED);
    }

    /* the fp16 scaler: 2^32 and hysteresis 1 unless a dynamic key is given (config.h) */
    static const char *const dynamic[] = {"fp16.initial_scale_power", "fp16.loss_scale_window",
                                          "fp16.min_loss_scale", "fp16.hysteresis",
                                          "fp16.consecutive_hysteresis"};
    int any = 0;
    for (size_t i = 0; i < sizeof dynamic / sizeof dynamic[0]; i++)
        any |= origin(l, dynamic[i]) != ZERO_ORIGIN_DEFAULT;
    const char *power = "fp16.initial_scale_power", *hyst = "fp16.hysteresis";
    if (origin(l, power) != ZERO_ORIGIN_FILE)
        c->fp16.initial_scale_power = any ? 16 : 32;
    if (origin(l, hyst) != ZERO_ORIGIN_FILE)
        c->fp16.hysteresis = any ? 2 : 1;
    if (!any) {
        set_origin(l, power, ZERO_ORIGIN_DERIVED);
        set_origin(l, hyst, ZERO_ORIGIN_DERIVED);
    }

    /* DeepSpeed: adam_w_mode = (type == AdamW) or adam_w_mode */
    if (c->optimizer.type == ZERO_OPTIM_ADAMW && !c->optimizer.adam_w_mode) {
        c->optimizer.adam_w_mode = 1;
        set_origin(l, "optimizer.params.adam_w_mode", ZERO_ORIGIN_DERIVED);
    }
}

/* zero_config_validate: all of it for a file on its own (zero config), the
 * part a file decides when a program's flags follow (ZERO_CONFIG_KEEP); the
 * engine runs all of it again on what the program made of both. */
static int check_combinations(struct loader *l)
{
    struct zero_error e = {0};
    int rc = l->flags & ZERO_CONFIG_KEEP ? config_validate_given(l->c, &e)
                                         : zero_config_validate(l->c, &e);
    return rc ? zero_fail(l->err, rc, "%s: %s", l->where, e.msg) : ZERO_OK;
}

static int resolve_batch(struct loader *l, int world)
{
    static const char *const keys[] = {"train_batch_size", "train_micro_batch_size_per_gpu",
                                       "gradient_accumulation_steps"};
    struct zero_config *c = l->c;
    int autos = 0; /* "auto" batch sizes: the program fills them from its flags */
    for (int i = 0; i < 3; i++)
        autos |= config_auto_is_pending(c, keys[i]);
    if (autos && c->train_batch_size == 0 && c->train_micro_batch_size_per_gpu == 0)
        return ZERO_OK;
    if (world == 0) {
        if (!(l->flags & ZERO_CONFIG_KEEP) && c->train_batch_size == 0 &&
            c->train_micro_batch_size_per_gpu == 0)
            return zero_fail(l->err, ZERO_EINVAL,
                             "%s: either train_batch_size or train_micro_batch_size_per_gpu "
                             "needs to be provided",
                             l->where);
        return ZERO_OK;
    }
    int64_t before[3] = {c->train_batch_size, c->train_micro_batch_size_per_gpu,
                         c->gradient_accumulation_steps};
    struct zero_error e = {0};
    if (zero_config_resolve_batch(c, world, &e)) {
        const char *msg = strncmp(e.msg, "config: ", 8) == 0 ? e.msg + 8 : e.msg;
        return zero_fail(l->err, e.code, "%s: %s", l->where, msg);
    }
    int64_t after[3] = {c->train_batch_size, c->train_micro_batch_size_per_gpu,
                        c->gradient_accumulation_steps};
    for (int i = 0; i < 3; i++)
        if (before[i] == 0 && after[i] != 0 && origin(l, keys[i]) != ZERO_ORIGIN_AUTO)
            set_origin(l, keys[i], ZERO_ORIGIN_DERIVED);
    return ZERO_OK;
}

static int load_document(struct zero_config *c, struct zero_config_origins *origins,
                         const json_t *root, const char *where, int world, unsigned flags,
                         struct zero_error *err)
{
    if (world < 0)
        return zero_fail(err, ZERO_EINVAL, "%s: world size %d is negative", where, world);
    if (!json_is_object(root)) {
        char got[80];
        show(root, got, sizeof got);
        return zero_fail(err, ZERO_EFORMAT, "%s: expected a JSON object at the top, got %s", where,
                         got);
    }
    struct zero_config_origins local;
    struct loader *l = calloc(1, sizeof *l);
    if (!l)
        return zero_fail(err, ZERO_ENOMEM, "%s: loading the config", where);
    struct zero_config work = *c; /* *c changes only on success */
    l->c = &work;
    l->o = origins ? origins : &local;
    memset(l->o, 0, sizeof *l->o);
    zero_config_defaults(&l->ds);
    l->program = *c;
    if (!(flags & ZERO_CONFIG_KEEP))
        work = l->ds;
    l->where = where;
    l->root = root;
    l->flags = flags;
    l->err = err;
    int rc = check_names(l, root, "");
    if (!rc)
        rc = load_values(l);
    if (!rc) {
        derive(l);
        rc = check_combinations(l);
    }
    if (!rc)
        rc = resolve_batch(l, world);
    if (!rc && (rc = zero_config_check_groups(&work, world, err)))
        zero_error_wrap(err, "%s: ", where);
    if (!rc)
        *c = work;
    free(l);
    return rc;
}

int zero_config_load_string(struct zero_config *c, struct zero_config_origins *origins,
                            const char *text, size_t len, int world, unsigned flags,
                            struct zero_error *err)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return zero_fail(err, ZERO_EFORMAT, "config:%d:%d: invalid JSON: %s", je.line, je.column,
                         je.text);
    int rc = load_document(c, origins, root, "config", world, flags, err);
    json_decref(root);
    return rc;
}

int zero_config_load_file(struct zero_config *c, struct zero_config_origins *origins,
                          const char *path, int world, unsigned flags, struct zero_error *err)
{
    if (zero_input_check(path, err)) /* a directory would read as an empty document */
        return err->code;
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root && je.line < 1) /* jansson could not read it: "unable to open ...: why" */
        return zero_fail(err, ZERO_EIO, "%s: %s", path, je.text);
    if (!root)
        return zero_fail(err, ZERO_EFORMAT, "%s:%d:%d: invalid JSON: %s", path, je.line, je.column,
                         je.text);
    int rc = load_document(c, origins, root, path, world, flags, err);
    json_decref(root);
    return rc;
}

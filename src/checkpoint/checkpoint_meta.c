/* meta.json: what a checkpoint holds, written by rank 0 and read by every
 * reader. Parsing trusts nothing: every key is type- and range-checked and
 * the layout is checked for consistency (offsets inside the unit, shards that
 * tile the padded buffer), so a reader computes file positions only from
 * validated numbers. Errors name the file and the key. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "checkpoint_internal.h"

static const char *const kind_names[CKPT_NKINDS] = {"master", "optim.exp_avg", "optim.exp_avg_sq",
                                                    "optim.momentum"};

const char *ckpt_kind_name(int kind)
{
    return kind >= 0 && kind < CKPT_NKINDS ? kind_names[kind] : "?";
}

int ckpt_kind_parse(const char *name)
{
    for (int k = 0; k < CKPT_NKINDS; k++)
        if (strcmp(name, kind_names[k]) == 0)
            return k;
    return -1;
}

static const char *const optimizer_names[] = {"adam", "adamw", "sgd"};
static const char *const scheduler_names[] = {"none", "WarmupLR", "WarmupDecayLR",
                                              "WarmupCosineLR"};
static const char *const warmup_names[] = {"log", "linear"};
/* enum zero_atom_order; a meta.json without config.libzero.atom_order was written
 * before rank-major atoms existed: micro_step_major */
static const char *const atom_order_names[] = {"micro_step_major", "rank_major"};

const char *ckpt_atom_order_name(enum zero_atom_order order)
{
    return atom_order_names[order == ZERO_ATOM_RANK_MAJOR];
}

int64_t ckpt_section_bytes(int64_t count, int64_t chunk)
{
    int64_t chunks = (count + chunk - 1) / chunk;
    return CKPT_HEADER_BYTES + count * 4 + chunks * 4;
}

int64_t ckpt_rank_file_bytes(const struct ckpt_meta *m)
{
    int64_t bytes = CKPT_HEADER_BYTES;
    for (int u = 0; u < m->nunits; u++)
        bytes += m->nkinds * ckpt_section_bytes(m->units[u].shard, m->chunk);
    return bytes;
}

void ckpt_describe_range(const struct ckpt_meta *m, int u, int64_t begin, int64_t end, char *out,
                         size_t len)
{
    const struct ckpt_unit *unit = &m->units[u];
    int first = -1, count = 0;
    for (int p = 0; p < unit->nparams; p++) {
        const struct ckpt_param *q = &unit->params[p];
        if (q->offset < end && q->offset + q->numel > begin && q->numel > 0) {
            if (first < 0)
                first = p;
            count++;
        }
    }
    if (first < 0)
        snprintf(out, len, "padding");
    else
        snprintf(out, len, "%s %s.%s%s", count > 1 ? "tensors" : "tensor", unit->name,
                 unit->params[first].name, count > 1 ? " and following" : "");
}

/* ---- writing ---- */

static json_t *shape_json(int ndim, const int64_t *shape)
{
    json_t *a = json_array();
    for (int d = 0; d < ndim; d++)
        json_array_append_new(a, json_integer(shape[d]));
    return a;
}

static json_t *config_json(const struct zero_config *c)
{
    const struct zero_optimizer_config *o = &c->optimizer;
    const struct zero_scheduler_config *s = &c->scheduler;
    const struct zero_fp16_config *h = &c->fp16;
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, c->libzero.seed);
    return json_pack(
        "{s:I, s:I, s:I, s:f, s:{s:i}, "
        "s:{s:s, s:f, s:[f, f], s:f, s:f, s:i, s:i, s:f, s:f, s:i}, "
        "s:{s:s, s:f, s:f, s:I, s:s, s:I, s:f, s:f}, "
        "s:{s:i, s:f, s:i, s:i, s:i, s:i, s:f}, s:{s:i}, "
        "s:{s:I, s:s, s:s, s:s}}",
        "train_batch_size", (json_int_t)c->train_batch_size, "train_micro_batch_size_per_gpu",
        (json_int_t)c->train_micro_batch_size_per_gpu, "gradient_accumulation_steps",
        (json_int_t)c->gradient_accumulation_steps, "gradient_clipping", c->gradient_clipping,
        "zero_optimization", "stage", c->zero_optimization.stage, "optimizer", "type",
        optimizer_names[o->type], "lr", o->lr, "betas", o->betas[0], o->betas[1], "eps", o->eps,
        "weight_decay", o->weight_decay, "adam_w_mode", o->adam_w_mode, "bias_correction",
        o->bias_correction, "momentum", o->momentum, "dampening", o->dampening, "nesterov",
        o->nesterov, "scheduler", "type", scheduler_names[s->type], "warmup_min_lr",
        s->warmup_min_lr, "warmup_max_lr", s->warmup_max_lr, "warmup_num_steps",
        (json_int_t)s->warmup_num_steps, "warmup_type", warmup_names[s->warmup_type],
        "total_num_steps", (json_int_t)s->total_num_steps, "warmup_min_ratio", s->warmup_min_ratio,
        "cos_min_ratio", s->cos_min_ratio, "fp16", "enabled", h->enabled, "loss_scale",
        h->loss_scale, "initial_scale_power", h->initial_scale_power, "loss_scale_window",
        h->loss_scale_window, "hysteresis", h->hysteresis, "consecutive_hysteresis",
        h->consecutive_hysteresis, "min_loss_scale", h->min_loss_scale, "bf16", "enabled",
        c->bf16.enabled, "libzero", "align", (json_int_t)c->libzero.align, "coll_mode",
        c->libzero.coll_mode == ZERO_COLL_EXACT ? "exact" : "native", "seed", seed, "atom_order",
        ckpt_atom_order_name(c->libzero.atom_order));
}

static json_t *scaler_json(const struct zero_loss_scaler *s)
{
    return json_pack("{s:i, s:f, s:f, s:I, s:f, s:i, s:i, s:i, s:I, s:I}", "dynamic", s->dynamic,
                     "scale", s->scale, "factor", s->factor, "window", (json_int_t)s->window,
                     "min_scale", s->min_scale, "delayed_shift", s->delayed_shift, "cur_hysteresis",
                     s->cur_hysteresis, "consecutive_hysteresis", s->consecutive_hysteresis,
                     "cur_iter", (json_int_t)s->cur_iter, "last_overflow_iter",
                     (json_int_t)s->last_overflow_iter);
}

static json_t *units_json(const struct ckpt_meta *m)
{
    json_t *units = json_array();
    for (int u = 0; u < m->nunits; u++) {
        const struct ckpt_unit *unit = &m->units[u];
        json_t *params = json_array();
        for (int p = 0; p < unit->nparams; p++) {
            const struct ckpt_param *q = &unit->params[p];
            json_array_append_new(params, json_pack("{s:s, s:o, s:s, s:I, s:I}", "name", q->name,
                                                    "shape", shape_json(q->ndim, q->shape), "dtype",
                                                    "fp32", "offset", (json_int_t)q->offset,
                                                    "numel", (json_int_t)q->numel));
        }
        json_array_append_new(units,
                              json_pack("{s:s, s:I, s:I, s:I, s:o}", "name", unit->name, "used",
                                        (json_int_t)unit->used, "padded", (json_int_t)unit->padded,
                                        "shard", (json_int_t)unit->shard, "params", params));
    }
    return units;
}

int ckpt_check_user_json(const char *text, struct zero_error *err)
{
    json_error_t je;
    json_t *v = text ? json_loads(text, JSON_DECODE_ANY, &je) : NULL;
    if (text && !v)
        return zero_fail(err, ZERO_EINVAL, "user metadata is not JSON: %s (line %d, column %d)",
                         je.text, je.line, je.column);
    json_decref(v);
    return ZERO_OK;
}

int ckpt_meta_write(const struct ckpt_meta *m, char **text, struct zero_error *err)
{
    *text = NULL;
    char id[24], seed[32];
    snprintf(id, sizeof id, "%016" PRIx64, m->id);
    snprintf(seed, sizeof seed, "%" PRIu64, m->cfg.libzero.seed); /* u64: exact as text */
    json_t *sections = json_array();
    for (int k = 0; k < m->nkinds; k++)
        json_array_append_new(sections, json_string(ckpt_kind_name(m->kinds[k])));
    json_t *user = NULL;
    if (m->user_json) {
        json_error_t je;
        user = json_loads(m->user_json, JSON_DECODE_ANY, &je);
        if (!user) {
            json_decref(sections);
            return zero_fail(err, ZERO_EINVAL,
                             "user metadata is not JSON: %s (line %d, column "
                             "%d)",
                             je.text, je.line, je.column);
        }
    }
    json_t *root = json_pack(
        "{s:s, s:i, s:s, s:s, s:i, s:i, s:s, s:s, s:o, s:I, s:o, "
        "s:{s:I, s:I, s:I}, s:{s:I, s:f}, s:o, s:{s:s, s:s}, s:o, s:o}",
        "format", CKPT_FORMAT, "format_version", CKPT_FORMAT_VERSION, "libzero_version",
        m->libzero_version, "checkpoint_id", id, "world_size", m->world, "stage", m->stage,
        "precision", zero_dtype_name(m->precision), "compute_params",
        "not stored: cast from the fp32 master on load", "sections", sections, "chunk_elements",
        (json_int_t)m->chunk, "config", config_json(&m->cfg), "counters", "global_steps",
        (json_int_t)m->global_steps, "applied_steps", (json_int_t)m->applied_steps, "micro_steps",
        (json_int_t)m->micro_steps, "lr_schedule", "applied_steps", (json_int_t)m->applied_steps,
        "next_lr", m->next_lr, "loss_scaler", m->has_scaler ? scaler_json(&m->scaler) : json_null(),
        "rng", "init", "counter-based: value = f(seed, parameter name, element index)", "seed",
        seed, "units", units_json(m), "user", user ? user : json_null());
    if (!root)
        return zero_fail(err, ZERO_ENOMEM, "building meta.json");
    *text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(root);
    return *text ? ZERO_OK : zero_fail(err, ZERO_ENOMEM, "printing meta.json");
}

/* ---- parsing ---- */

struct parser {
    const char *path;
    struct zero_error *err;
    char key[160]; /* the key being read, for messages */
};

static int bad(struct parser *ps, const char *what)
{
    return zero_fail(ps->err, ZERO_EFORMAT, "%s: key %s: %s", ps->path, ps->key, what);
}

static json_t *member(struct parser *ps, json_t *obj, const char *prefix, const char *name)
{
    snprintf(ps->key, sizeof ps->key, "%s%s", prefix, name);
    return json_object_get(obj, name);
}

static int get_int(struct parser *ps, json_t *obj, const char *prefix, const char *name,
                   int64_t min, int64_t max, int64_t *out)
{
    json_t *v = member(ps, obj, prefix, name);
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        char what[96];
        snprintf(what, sizeof what, "expected an integer in [%lld, %lld]", (long long)min,
                 (long long)max);
        return bad(ps, v ? what : "missing");
    }
    *out = json_integer_value(v);
    return ZERO_OK;
}

static int get_int32(struct parser *ps, json_t *obj, const char *prefix, const char *name, int min,
                     int max, int *out)
{
    int64_t v;
    int rc = get_int(ps, obj, prefix, name, min, max, &v);
    if (!rc)
        *out = (int)v;
    return rc;
}

static int get_real(struct parser *ps, json_t *obj, const char *prefix, const char *name,
                    double *out)
{
    json_t *v = member(ps, obj, prefix, name);
    if (!json_is_number(v))
        return bad(ps, v ? "expected a number" : "missing");
    *out = json_number_value(v);
    return ZERO_OK;
}

static int get_str(struct parser *ps, json_t *obj, const char *prefix, const char *name,
                   const char **out)
{
    *out = "";
    json_t *v = member(ps, obj, prefix, name);
    if (!json_is_string(v))
        return bad(ps, v ? "expected a string" : "missing");
    *out = json_string_value(v);
    return ZERO_OK;
}

static int get_name(struct parser *ps, json_t *obj, const char *prefix, const char *name, char *out,
                    size_t len)
{
    const char *s;
    int rc = get_str(ps, obj, prefix, name, &s);
    if (rc)
        return rc;
    if (strlen(s) >= len || strlen(s) != json_string_length(json_object_get(obj, name)))
        return bad(ps, "too long or contains NUL");
    strcpy(out, s);
    return ZERO_OK;
}

static int get_enum(struct parser *ps, json_t *obj, const char *prefix, const char *name,
                    const char *const *names, int n, int *out)
{
    const char *s;
    int rc = get_str(ps, obj, prefix, name, &s);
    if (rc)
        return rc;
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return ZERO_OK;
        }
    return bad(ps, "unknown value");
}

static int get_u64_text(struct parser *ps, json_t *obj, const char *prefix, const char *name,
                        int base, uint64_t *out)
{
    const char *s;
    int rc = get_str(ps, obj, prefix, name, &s);
    if (rc)
        return rc;
    char *end;
    if (!s[0] || s[0] == '-' || s[0] == '+' || s[0] == ' ' || strlen(s) > 20)
        return bad(ps, "expected an unsigned integer as text");
    unsigned long long v = strtoull(s, &end, base);
    if (*end)
        return bad(ps, "expected an unsigned integer as text");
    *out = v;
    return ZERO_OK;
}

static json_t *get_obj(struct parser *ps, json_t *obj, const char *prefix, const char *name,
                       int *rc)
{
    json_t *v = member(ps, obj, prefix, name);
    if (!json_is_object(v))
        *rc = bad(ps, v ? "expected an object" : "missing");
    return v;
}

#define I64MAX INT64_MAX
#define BIG ((int64_t)1 << 50) /* element counts and offsets: far beyond any model */

static int parse_config(struct parser *ps, json_t *root, struct zero_config *c)
{
    int rc = ZERO_OK, t = 0;
    json_t *cj = get_obj(ps, root, "", "config", &rc);
    if (rc)
        return rc;
    json_t *o = get_obj(ps, cj, "config.", "optimizer", &rc);
    json_t *s = rc ? NULL : get_obj(ps, cj, "config.", "scheduler", &rc);
    json_t *h = rc ? NULL : get_obj(ps, cj, "config.", "fp16", &rc);
    json_t *b = rc ? NULL : get_obj(ps, cj, "config.", "bf16", &rc);
    json_t *l = rc ? NULL : get_obj(ps, cj, "config.", "libzero", &rc);
    json_t *z = rc ? NULL : get_obj(ps, cj, "config.", "zero_optimization", &rc);
    if (rc)
        return rc;
    struct zero_optimizer_config *oc = &c->optimizer;
    struct zero_scheduler_config *sc = &c->scheduler;
    struct zero_fp16_config *hc = &c->fp16;
    json_t *betas = member(ps, o, "config.optimizer.", "betas");
    if (!json_is_array(betas) || json_array_size(betas) != 2 ||
        !json_is_number(json_array_get(betas, 0)) || !json_is_number(json_array_get(betas, 1)))
        return bad(ps, "expected two numbers");
    oc->betas[0] = json_number_value(json_array_get(betas, 0));
    oc->betas[1] = json_number_value(json_array_get(betas, 1));
    int mode = 0, warm = 0;
    if ((rc = get_int(ps, cj, "config.", "train_batch_size", 0, I64MAX, &c->train_batch_size)) ||
        (rc = get_int(ps, cj, "config.", "train_micro_batch_size_per_gpu", 0, I64MAX,
                      &c->train_micro_batch_size_per_gpu)) ||
        (rc = get_int(ps, cj, "config.", "gradient_accumulation_steps", 0, I64MAX,
                      &c->gradient_accumulation_steps)) ||
        (rc = get_real(ps, cj, "config.", "gradient_clipping", &c->gradient_clipping)) ||
        (rc = get_int32(ps, z, "config.zero_optimization.", "stage", 0, 3,
                        &c->zero_optimization.stage)) ||
        (rc = get_enum(ps, o, "config.optimizer.", "type", optimizer_names, 3, &t)) ||
        (rc = get_real(ps, o, "config.optimizer.", "lr", &oc->lr)) ||
        (rc = get_real(ps, o, "config.optimizer.", "eps", &oc->eps)) ||
        (rc = get_real(ps, o, "config.optimizer.", "weight_decay", &oc->weight_decay)) ||
        (rc = get_int32(ps, o, "config.optimizer.", "adam_w_mode", 0, 1, &oc->adam_w_mode)) ||
        (rc = get_int32(ps, o, "config.optimizer.", "bias_correction", 0, 1,
                        &oc->bias_correction)) ||
        (rc = get_real(ps, o, "config.optimizer.", "momentum", &oc->momentum)) ||
        (rc = get_real(ps, o, "config.optimizer.", "dampening", &oc->dampening)) ||
        (rc = get_int32(ps, o, "config.optimizer.", "nesterov", 0, 1, &oc->nesterov)))
        return rc;
    oc->type = (enum zero_optim_type)t;
    if ((rc = get_enum(ps, s, "config.scheduler.", "type", scheduler_names, 4, &t)) ||
        (rc = get_real(ps, s, "config.scheduler.", "warmup_min_lr", &sc->warmup_min_lr)) ||
        (rc = get_real(ps, s, "config.scheduler.", "warmup_max_lr", &sc->warmup_max_lr)) ||
        (rc = get_int(ps, s, "config.scheduler.", "warmup_num_steps", 0, I64MAX,
                      &sc->warmup_num_steps)) ||
        (rc = get_enum(ps, s, "config.scheduler.", "warmup_type", warmup_names, 2, &warm)) ||
        (rc = get_int(ps, s, "config.scheduler.", "total_num_steps", 0, I64MAX,
                      &sc->total_num_steps)) ||
        (rc = get_real(ps, s, "config.scheduler.", "warmup_min_ratio", &sc->warmup_min_ratio)) ||
        (rc = get_real(ps, s, "config.scheduler.", "cos_min_ratio", &sc->cos_min_ratio)))
        return rc;
    sc->type = (enum zero_sched_type)t;
    sc->warmup_type = (enum zero_warmup_type)warm;
    if ((rc = get_int32(ps, h, "config.fp16.", "enabled", 0, 1, &hc->enabled)) ||
        (rc = get_real(ps, h, "config.fp16.", "loss_scale", &hc->loss_scale)) ||
        (rc = get_int32(ps, h, "config.fp16.", "initial_scale_power", 0, 1000,
                        &hc->initial_scale_power)) ||
        (rc = get_int32(ps, h, "config.fp16.", "loss_scale_window", 0, 1 << 30,
                        &hc->loss_scale_window)) ||
        (rc = get_int32(ps, h, "config.fp16.", "hysteresis", 0, 1 << 30, &hc->hysteresis)) ||
        (rc = get_int32(ps, h, "config.fp16.", "consecutive_hysteresis", 0, 1,
                        &hc->consecutive_hysteresis)) ||
        (rc = get_real(ps, h, "config.fp16.", "min_loss_scale", &hc->min_loss_scale)) ||
        (rc = get_int32(ps, b, "config.bf16.", "enabled", 0, 1, &c->bf16.enabled)) ||
        (rc = get_int(ps, l, "config.libzero.", "align", 1, BIG, &c->libzero.align)) ||
        (rc = get_enum(ps, l, "config.libzero.", "coll_mode",
                       (const char *const[]){"exact", "native"}, 2, &mode)) ||
        (rc = get_u64_text(ps, l, "config.libzero.", "seed", 10, &c->libzero.seed)))
        return rc;
    c->libzero.coll_mode = (enum zero_coll_mode)mode;
    int order = ZERO_ATOM_MICRO_STEP_MAJOR; /* optional: absent before rank-major atoms */
    if (json_object_get(l, "atom_order") &&
        (rc = get_enum(ps, l, "config.libzero.", "atom_order", atom_order_names, 2, &order)))
        return rc;
    c->libzero.atom_order = order ? ZERO_ATOM_RANK_MAJOR : ZERO_ATOM_MICRO_STEP_MAJOR;
    return ZERO_OK;
}

static int parse_scaler(struct parser *ps, json_t *root, struct ckpt_meta *m)
{
    json_t *s = member(ps, root, "", "loss_scaler");
    if (json_is_null(s))
        return ZERO_OK;
    if (!json_is_object(s))
        return bad(ps, s ? "expected an object or null" : "missing");
    struct zero_loss_scaler *x = &m->scaler;
    const char *p = "loss_scaler.";
    int rc;
    if ((rc = get_int32(ps, s, p, "dynamic", 0, 1, &x->dynamic)) ||
        (rc = get_real(ps, s, p, "scale", &x->scale)) ||
        (rc = get_real(ps, s, p, "factor", &x->factor)) ||
        (rc = get_int(ps, s, p, "window", 0, I64MAX, &x->window)) ||
        (rc = get_real(ps, s, p, "min_scale", &x->min_scale)) ||
        (rc = get_int32(ps, s, p, "delayed_shift", 0, 1 << 30, &x->delayed_shift)) ||
        (rc = get_int32(ps, s, p, "cur_hysteresis", 0, 1 << 30, &x->cur_hysteresis)) ||
        (rc = get_int32(ps, s, p, "consecutive_hysteresis", 0, 1, &x->consecutive_hysteresis)) ||
        (rc = get_int(ps, s, p, "cur_iter", -1, I64MAX, &x->cur_iter)) ||
        (rc = get_int(ps, s, p, "last_overflow_iter", -1, I64MAX, &x->last_overflow_iter)))
        return rc;
    if (!(x->scale > 0.0) || x->scale > 1e300) {
        snprintf(ps->key, sizeof ps->key, "loss_scaler.scale");
        return bad(ps, "expected a positive finite number");
    }
    m->has_scaler = 1;
    return ZERO_OK;
}

static int parse_sections(struct parser *ps, json_t *root, struct ckpt_meta *m)
{
    json_t *a = member(ps, root, "", "sections");
    if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > 3)
        return bad(ps, "expected an array of 1 to 3 state names");
    m->nkinds = (int)json_array_size(a);
    int seen = 0;
    for (int k = 0; k < m->nkinds; k++) {
        json_t *v = json_array_get(a, (size_t)k);
        int kind = json_is_string(v) ? ckpt_kind_parse(json_string_value(v)) : -1;
        if (kind < 0 || (seen & (1 << kind)) || (k == 0) != (kind == CKPT_MASTER))
            return bad(ps, "expected \"master\" then distinct optimizer states");
        seen |= 1 << kind;
        m->kinds[k] = kind;
    }
    if ((seen & (1 << CKPT_MOMENTUM)) && (seen & ((1 << CKPT_EXP_AVG) | (1 << CKPT_EXP_AVG_SQ))))
        return bad(ps, "momentum and Adam states exclude each other");
    return ZERO_OK;
}

static int parse_param(struct parser *ps, json_t *pj, const char *prefix, struct ckpt_param *q)
{
    if (!json_is_object(pj)) {
        snprintf(ps->key, sizeof ps->key, "%s", prefix);
        return bad(ps, "expected an object");
    }
    int rc;
    const char *dtype;
    if ((rc = get_name(ps, pj, prefix, "name", q->name, sizeof q->name)) ||
        (rc = get_str(ps, pj, prefix, "dtype", &dtype)) ||
        (rc = get_int(ps, pj, prefix, "offset", 0, BIG, &q->offset)) ||
        (rc = get_int(ps, pj, prefix, "numel", 0, BIG, &q->numel)))
        return rc;
    if (strcmp(dtype, "fp32") != 0) {
        snprintf(ps->key, sizeof ps->key, "%sdtype", prefix);
        return bad(ps, "expected \"fp32\"");
    }
    json_t *shape = member(ps, pj, prefix, "shape");
    if (!json_is_array(shape) || json_array_size(shape) > ZERO_MAX_DIMS)
        return bad(ps, "expected an array of at most 4 dimensions");
    q->ndim = (int)json_array_size(shape);
    int64_t numel = 1;
    for (int d = 0; d < q->ndim; d++) {
        json_t *v = json_array_get(shape, (size_t)d);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > BIG)
            return bad(ps, "expected non-negative integer dimensions");
        q->shape[d] = json_integer_value(v);
        numel = q->shape[d] == 0 || numel <= BIG / q->shape[d] ? numel * q->shape[d] : BIG + 1;
    }
    if (numel != q->numel) {
        snprintf(ps->key, sizeof ps->key, "%snumel", prefix);
        return bad(ps, "is not the product of the shape");
    }
    return ZERO_OK;
}

static int parse_unit(struct parser *ps, json_t *uj, int u, const struct ckpt_meta *m,
                      struct ckpt_unit *unit)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "units[%d].", u);
    if (!json_is_object(uj)) {
        snprintf(ps->key, sizeof ps->key, "units[%d]", u);
        return bad(ps, "expected an object");
    }
    int rc;
    if ((rc = get_name(ps, uj, prefix, "name", unit->name, sizeof unit->name)) ||
        (rc = get_int(ps, uj, prefix, "used", 0, BIG, &unit->used)) ||
        (rc = get_int(ps, uj, prefix, "padded", 0, BIG, &unit->padded)) ||
        (rc = get_int(ps, uj, prefix, "shard", 0, BIG / m->world, &unit->shard)))
        return rc;
    if (unit->padded != unit->shard * m->world || unit->used > unit->padded)
        return bad(ps, "inconsistent: need used <= padded = shard * world_size");
    json_t *params = member(ps, uj, prefix, "params");
    if (!json_is_array(params) || json_array_size(params) > ZERO_UNIT_MAX_PARAMS)
        return bad(ps, "expected an array of at most 16 parameters");
    unit->nparams = (int)json_array_size(params);
    int64_t end = 0;
    for (int p = 0; p < unit->nparams; p++) {
        char pp[96];
        snprintf(pp, sizeof pp, "%sparams[%d].", prefix, p);
        struct ckpt_param *q = &unit->params[p];
        if ((rc = parse_param(ps, json_array_get(params, (size_t)p), pp, q)))
            return rc;
        if (q->offset < end || q->offset + q->numel > unit->used) {
            snprintf(ps->key, sizeof ps->key, "%soffset", pp);
            return bad(ps, "overlaps the previous parameter or ends beyond 'used'");
        }
        end = q->offset + q->numel;
        for (int o = 0; o < p; o++)
            if (strcmp(unit->params[o].name, q->name) == 0) {
                snprintf(ps->key, sizeof ps->key, "%sname", pp);
                return bad(ps, "duplicate parameter name");
            }
    }
    return ZERO_OK;
}

static int parse_units(struct parser *ps, json_t *root, struct ckpt_meta *m)
{
    json_t *a = member(ps, root, "", "units");
    if (!json_is_array(a) || json_array_size(a) > 1000000)
        return bad(ps, "expected an array of units");
    m->nunits = (int)json_array_size(a);
    m->units = calloc((size_t)(m->nunits ? m->nunits : 1), sizeof *m->units);
    if (!m->units)
        return zero_fail(ps->err, ZERO_ENOMEM, "%s: %d units", ps->path, m->nunits);
    int rc;
    for (int u = 0; u < m->nunits; u++)
        if ((rc = parse_unit(ps, json_array_get(a, (size_t)u), u, m, &m->units[u])))
            return rc;
    /* a rank file's size must be representable */
    int64_t total = 0;
    for (int u = 0; u < m->nunits; u++) {
        total += m->units[u].shard;
        if (total > BIG) {
            snprintf(ps->key, sizeof ps->key, "units");
            return bad(ps, "shards too large");
        }
    }
    return ZERO_OK;
}

static int parse_root(struct parser *ps, json_t *root, struct ckpt_meta *m)
{
    if (!json_is_object(root))
        return zero_fail(ps->err, ZERO_EFORMAT, "%s: not a JSON object", ps->path);
    const char *format, *version, *precision;
    int rc;
    if ((rc = get_str(ps, root, "", "format", &format)))
        return rc;
    if (strcmp(format, CKPT_FORMAT) != 0)
        return bad(ps, "not \"" CKPT_FORMAT "\": not a libzero checkpoint");
    if ((rc = get_int32(ps, root, "", "format_version", 0, INT32_MAX, &m->format_version)))
        return rc;
    if (m->format_version != CKPT_FORMAT_VERSION)
        return zero_fail(ps->err, ZERO_ENOTSUP,
                         "%s: format version %d; this libzero reads "
                         "version %d",
                         ps->path, m->format_version, CKPT_FORMAT_VERSION);
    int64_t scratch;
    json_t *counters = NULL, *lr = NULL, *rng = NULL;
    if ((rc = get_str(ps, root, "", "libzero_version", &version)) ||
        (rc = get_u64_text(ps, root, "", "checkpoint_id", 16, &m->id)) ||
        (rc = get_int32(ps, root, "", "world_size", 1, CKPT_MAX_WORLD, &m->world)) ||
        (rc = get_int32(ps, root, "", "stage", 0, 3, &m->stage)) ||
        (rc = get_str(ps, root, "", "precision", &precision)) ||
        (rc = parse_sections(ps, root, m)) ||
        (rc = get_int(ps, root, "", "chunk_elements", 1, CKPT_MAX_CHUNK, &m->chunk)) ||
        (rc = parse_config(ps, root, &m->cfg)) ||
        !(counters = get_obj(ps, root, "", "counters", &rc)) || rc ||
        (rc = get_int(ps, counters, "counters.", "global_steps", 0, BIG, &m->global_steps)) ||
        (rc = get_int(ps, counters, "counters.", "applied_steps", 0, m->global_steps,
                      &m->applied_steps)) ||
        (rc = get_int(ps, counters, "counters.", "micro_steps", 0, I64MAX, &m->micro_steps)) ||
        !(lr = get_obj(ps, root, "", "lr_schedule", &rc)) || rc ||
        (rc = get_int(ps, lr, "lr_schedule.", "applied_steps", m->applied_steps, m->applied_steps,
                      &scratch)) ||
        (rc = get_real(ps, lr, "lr_schedule.", "next_lr", &m->next_lr)) ||
        (rc = parse_scaler(ps, root, m)) || !(rng = get_obj(ps, root, "", "rng", &rc)) || rc ||
        (rc = parse_units(ps, root, m)))
        return rc ? rc : bad(ps, "missing");
    snprintf(m->libzero_version, sizeof m->libzero_version, "%s", version);
    int p = zero_dtype_parse(precision);
    if (p != ZERO_F32 && p != ZERO_F16 && p != ZERO_BF16) {
        snprintf(ps->key, sizeof ps->key, "precision");
        return bad(ps, "expected fp32, fp16 or bf16");
    }
    m->precision = (enum zero_dtype)p;
    if (m->has_scaler != (m->precision == ZERO_F16)) {
        snprintf(ps->key, sizeof ps->key, "loss_scaler");
        return bad(ps, "present exactly when the precision is fp16");
    }
    json_t *user = json_object_get(root, "user");
    if (user && !json_is_null(user)) {
        m->user_json = json_dumps(user, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
        if (!m->user_json)
            return zero_fail(ps->err, ZERO_ENOMEM, "%s: user metadata", ps->path);
    }
    return ZERO_OK;
}

int ckpt_meta_parse(struct ckpt_meta *m, const char *text, size_t len, const char *path,
                    struct zero_error *err)
{
    memset(m, 0, sizeof *m);
    zero_config_defaults(&m->cfg);
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return zero_fail(err, ZERO_EFORMAT, "%s: not valid JSON: %s (line %d, column %d)", path,
                         je.text, je.line, je.column);
    struct parser ps = {.path = path, .err = err};
    int rc = parse_root(&ps, root, m);
    json_decref(root);
    if (rc)
        ckpt_meta_free(m);
    return rc;
}

void ckpt_meta_free(struct ckpt_meta *m)
{
    free(m->units);
    free(m->user_json);
    m->units = NULL;
    m->user_json = NULL;
    m->nunits = 0;
}

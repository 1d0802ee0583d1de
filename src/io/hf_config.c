/* config.json of a LlamaForCausalLM, read and written; see zero/hf_model.h.
 *
 * Every top-level key falls in one of three tables: the shape (read into struct
 * zero_llama_config), keys LlamaForCausalLM reads whose non-default values change the
 * math libzero does not compute (refused), and everything else (ignored, listed). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file_replace.h"
#include "zero/hf_model.h"
#include "zero/llama.h"

struct reader {
    struct zero_llama_config *c;
    const char *where;
    struct zero_error *err;
};

static int bad_code(struct reader *r, int code, const char *key, const json_t *v,
                    const char *expected)
{
    char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    int rc = zero_fail(r->err, code, "%s: %s: expected %s, got %.64s", r->where, key, expected,
                       text ? text : "?");
    free(text);
    return rc;
}

static int bad(struct reader *r, const char *key, const json_t *v, const char *expected)
{
    return bad_code(r, ZERO_EINVAL, key, v, expected);
}

static int get_int(struct reader *r, const char *key, const json_t *v, int64_t lo, int64_t hi,
                   int64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return bad(r, key, v, "an integer in range");
    *out = json_integer_value(v);
    return ZERO_OK;
}

static int get_int32(struct reader *r, const char *key, const json_t *v, int *out)
{
    int64_t x = 0;
    int rc = get_int(r, key, v, 1, 1 << 30, &x);
    if (!rc)
        *out = (int)x;
    return rc;
}

static int get_number(struct reader *r, const char *key, const json_t *v, double *out)
{
    if (!json_is_number(v))
        return bad(r, key, v, "a number");
    *out = json_number_value(v);
    return ZERO_OK;
}

static int get_bool(struct reader *r, const char *key, const json_t *v, int *out)
{
    if (!json_is_boolean(v))
        return bad(r, key, v, "true or false");
    *out = json_is_true(v);
    return ZERO_OK;
}

/* rope_scaling (or transformers 5's rope_parameters): null, {"rope_type": "default"},
 * or {"rope_type" (or "type"): "llama3", factor, low_freq_factor, high_freq_factor,
 * original_max_position_embeddings}; a rope_parameters object may carry rope_theta. */
static int get_rope(struct reader *r, const char *key, const json_t *v)
{
    if (json_is_null(v))
        return ZERO_OK;
    if (!json_is_object(v))
        return bad(r, key, v, "an object or null");
    const json_t *type = json_object_get(v, "rope_type");
    if (!type)
        type = json_object_get(v, "type");
    const char *name = json_string_value(type);
    char path[96];
    snprintf(path, sizeof path, "%s.rope_type", key);
    if (!name)
        return bad(r, path, type ? type : json_null(), "a string");
    if (strcmp(name, "default") && strcmp(name, "llama3"))
        return zero_fail(r->err, ZERO_ENOTSUP,
                         "%s: %s: rope type \"%s\" is not supported (\"llama3\" or \"default\")",
                         r->where, path, name);
    int llama3 = strcmp(name, "llama3") == 0;
    r->c->rope_scaling.type = llama3 ? ZERO_ROPE_SCALING_LLAMA3 : ZERO_ROPE_SCALING_NONE;
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)v, k, x)
    {
        snprintf(path, sizeof path, "%s.%s", key, k);
        int rc = ZERO_OK;
        if (!strcmp(k, "rope_type") || !strcmp(k, "type"))
            continue;
        else if (!strcmp(k, "rope_theta"))
            rc = get_number(r, path, x, &r->c->rope_theta);
        else if (llama3 && !strcmp(k, "factor"))
            rc = get_number(r, path, x, &r->c->rope_scaling.factor);
        else if (llama3 && !strcmp(k, "low_freq_factor"))
            rc = get_number(r, path, x, &r->c->rope_scaling.low_freq_factor);
        else if (llama3 && !strcmp(k, "high_freq_factor"))
            rc = get_number(r, path, x, &r->c->rope_scaling.high_freq_factor);
        else if (llama3 && !strcmp(k, "original_max_position_embeddings"))
            rc = get_int(r, path, x, 1, INT64_MAX,
                         &r->c->rope_scaling.original_max_position_embeddings);
        else
            /* a rope parameter we would not apply changes the frequencies */
            rc = zero_fail(r->err, ZERO_ENOTSUP, "%s: %s: not supported for rope type \"%s\"",
                           r->where, path, name);
        if (rc)
            return rc;
    }
    if (llama3 && (!json_object_get(v, "factor") || !json_object_get(v, "low_freq_factor") ||
                   !json_object_get(v, "high_freq_factor") ||
                   !json_object_get(v, "original_max_position_embeddings")))
        return zero_fail(r->err, ZERO_EINVAL,
                         "%s: %s: llama3 needs factor, low_freq_factor, high_freq_factor and "
                         "original_max_position_embeddings",
                         r->where, key);
    return ZERO_OK;
}

/* One key of the shape: 1 if key is not one, else 0 or an error. */
static int shape_key(struct reader *r, const char *key, const json_t *v, int *rc)
{
    struct zero_llama_config *c = r->c;
    if (!strcmp(key, "vocab_size"))
        *rc = get_int(r, key, v, 1, INT64_MAX, &c->vocab_size);
    else if (!strcmp(key, "hidden_size"))
        *rc = get_int(r, key, v, 1, INT64_MAX, &c->hidden_size);
    else if (!strcmp(key, "intermediate_size"))
        *rc = get_int(r, key, v, 1, INT64_MAX, &c->intermediate_size);
    else if (!strcmp(key, "num_hidden_layers"))
        *rc = get_int32(r, key, v, &c->num_hidden_layers);
    else if (!strcmp(key, "num_attention_heads"))
        *rc = get_int32(r, key, v, &c->num_attention_heads);
    else if (!strcmp(key, "num_key_value_heads"))
        *rc = json_is_null(v) ? ZERO_OK : get_int32(r, key, v, &c->num_key_value_heads);
    else if (!strcmp(key, "head_dim"))
        *rc = json_is_null(v) ? ZERO_OK : get_int(r, key, v, 1, INT64_MAX, &c->head_dim);
    else if (!strcmp(key, "max_position_embeddings"))
        *rc = get_int(r, key, v, 1, INT64_MAX, &c->max_position_embeddings);
    else if (!strcmp(key, "rms_norm_eps"))
        *rc = get_number(r, key, v, &c->rms_norm_eps);
    else if (!strcmp(key, "rope_theta"))
        *rc = get_number(r, key, v, &c->rope_theta);
    else if (!strcmp(key, "rope_scaling") || !strcmp(key, "rope_parameters"))
        *rc = get_rope(r, key, v);
    else if (!strcmp(key, "attention_bias"))
        *rc = get_bool(r, key, v, &c->attention_bias);
    else if (!strcmp(key, "mlp_bias"))
        *rc = get_bool(r, key, v, &c->mlp_bias);
    else if (!strcmp(key, "tie_word_embeddings"))
        *rc = get_bool(r, key, v, &c->tie_word_embeddings);
    else
        return 1;
    return 0;
}

/* Keys LlamaForCausalLM reads that change the math unless at these values. */
static int math_key(struct reader *r, const char *key, const json_t *v, int *rc)
{
    const char *want;
    int ok;
    if (!strcmp(key, "hidden_act"))
        want = "\"silu\"", ok = json_is_string(v) && !strcmp(json_string_value(v), "silu");
    else if (!strcmp(key, "attention_dropout"))
        want = "0 (libzero trains without dropout)",
        ok = json_is_number(v) && json_number_value(v) == 0;
    else if (!strcmp(key, "pretraining_tp"))
        want = "1", ok = json_is_integer(v) && json_integer_value(v) == 1;
    else if (!strcmp(key, "partial_rotary_factor"))
        want = "1", ok = json_is_number(v) && json_number_value(v) == 1;
    else if (!strcmp(key, "sliding_window"))
        want = "null", ok = json_is_null(v);
    else if (!strcmp(key, "architectures")) {
        want = "a list holding \"LlamaForCausalLM\"", ok = 0;
        for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++)
            ok |= json_is_string(json_array_get(v, i)) &&
                  !strcmp(json_string_value(json_array_get(v, i)), "LlamaForCausalLM");
    } else if (!strcmp(key, "model_type"))
        want = "\"llama\"", ok = json_is_string(v) && !strcmp(json_string_value(v), "llama");
    else
        return 1;
    *rc = ok ? ZERO_OK : bad_code(r, ZERO_ENOTSUP, key, v, want);
    return 0;
}

static void list_ignored(char *out, size_t len, const char *key)
{
    if (!out || !len)
        return;
    size_t at = strlen(out);
    if (at + 1 < len)
        snprintf(out + at, len - at, "%s%s", at ? ", " : "", key);
}

/* Every size fits the int64 arithmetic that counts and lays out the tensors: the
 * count in double (no overflow) must stay below 2^50 (Llama 3.1 405B is 2^39). */
static int check_size(const struct zero_llama_config *c, const char *where, struct zero_error *err)
{
    double C = (double)c->hidden_size, q = (double)c->num_attention_heads * (double)c->head_dim,
           kv = (double)c->num_key_value_heads * (double)c->head_dim,
           I = (double)c->intermediate_size, V = (double)c->vocab_size;
    double layer = 2 * C * q + 2 * C * kv + 3 * C * I + 2 * q + 2 * kv + 3 * I + 3 * C;
    double psi = V * C * 2 + (double)c->num_hidden_layers * layer + C;
    if (psi >= 0x1p50 || (double)c->max_position_embeddings >= 0x1p40 || q >= 0x1p40)
        return zero_fail(err, ZERO_EINVAL,
                         "%s: the sizes (vocab_size %lld, hidden_size %lld, intermediate_size "
                         "%lld, num_hidden_layers %d, heads x head_dim %.0f, "
                         "max_position_embeddings %lld) make a model past 2^50 parameters",
                         where, (long long)c->vocab_size, (long long)c->hidden_size,
                         (long long)c->intermediate_size, c->num_hidden_layers, q,
                         (long long)c->max_position_embeddings);
    return ZERO_OK;
}

int zero_hf_config_parse(struct zero_llama_config *c, const char *text, size_t len,
                         const char *where, char *ignored, size_t ignored_len,
                         struct zero_error *err)
{
    if (!c || !text || !where)
        return zero_fail(err, ZERO_EINVAL, "zero_hf_config_parse: NULL argument");
    if (ignored && ignored_len)
        ignored[0] = '\0';
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return zero_fail(err, ZERO_EFORMAT, "%s: line %d: %s", where, jerr.line, jerr.text);
    struct reader r = {.c = c, .where = where, .err = err};
    zero_llama_config_default(c);
    c->num_key_value_heads = 0, c->head_dim = 0; /* derived below unless given */
    int rc = json_is_object(root)
                 ? ZERO_OK
                 : zero_fail(err, ZERO_EFORMAT, "%s: expected a JSON object", where);
    static const char *const required[] = {"vocab_size", "hidden_size", "intermediate_size",
                                           "num_hidden_layers", "num_attention_heads"};
    for (size_t i = 0; !rc && i < sizeof required / sizeof *required; i++)
        if (!json_object_get(root, required[i]))
            rc = zero_fail(err, ZERO_EINVAL, "%s: %s: missing", where, required[i]);
    /* rope_theta inside rope_parameters wins over a top-level one: read that last */
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        if (rc)
            break;
        if (!strcmp(key, "rope_parameters"))
            continue;
        if (shape_key(&r, key, v, &rc) && math_key(&r, key, v, &rc))
            list_ignored(ignored, ignored_len, key);
    }
    if (!rc && (v = json_object_get(root, "rope_parameters")))
        rc = get_rope(&r, "rope_parameters", v);
    if (!rc && !c->num_key_value_heads)
        c->num_key_value_heads = c->num_attention_heads;
    if (!rc && !c->head_dim)
        c->head_dim = c->hidden_size / c->num_attention_heads;
    json_decref(root);
    if (!rc)
        rc = check_size(c, where, err);
    if (!rc && (rc = zero_llama_config_check(c, err)))
        zero_error_wrap(err, "%s: ", where);
    return rc;
}

int zero_hf_config_read(struct zero_llama_config *c, const char *path, char *ignored,
                        size_t ignored_len, struct zero_error *err)
{
    if (!path)
        return zero_fail(err, ZERO_EINVAL, "zero_hf_config_read: NULL path");
    if (zero_input_check(path, err))
        return err->code;
    FILE *f = fopen(path, "rb");
    if (!f)
        return zero_fail(err, ZERO_EIO, "%s: cannot open", path);
    size_t cap = 1 << 16, n = 0;
    char *text = malloc(cap);
    for (size_t got; text && (got = fread(text + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap && n < ((size_t)1 << 24)) {
            char *more = realloc(text, cap * 2);
            if (!more)
                free(text);
            text = more, cap *= 2;
        } else if (n == cap)
            break;
    }
    int failed = ferror(f);
    fclose(f);
    if (!text)
        return zero_fail(err, ZERO_ENOMEM, "%s: reading", path);
    int rc = failed     ? zero_fail(err, ZERO_EIO, "%s: read error", path)
             : n == cap ? zero_fail(err, ZERO_EFORMAT, "%s: larger than 16 MiB", path)
                        : zero_hf_config_parse(c, text, n, path, ignored, ignored_len, err);
    free(text);
    return rc;
}

static const char *torch_dtype(enum zero_dtype t)
{
    return t == ZERO_BF16 ? "bfloat16" : t == ZERO_F16 ? "float16" : "float32";
}

int zero_hf_config_write(const struct zero_llama_config *c, enum zero_dtype weights,
                         const char *path, struct zero_error *err)
{
    if (!c || !path)
        return zero_fail(err, ZERO_EINVAL, "zero_hf_config_write: NULL argument");
    json_t *rope = json_null();
    if (c->rope_scaling.type == ZERO_ROPE_SCALING_LLAMA3)
        rope = json_pack("{s:s, s:f, s:f, s:f, s:I}", "rope_type", "llama3", "factor",
                         c->rope_scaling.factor, "low_freq_factor", c->rope_scaling.low_freq_factor,
                         "high_freq_factor", c->rope_scaling.high_freq_factor,
                         "original_max_position_embeddings",
                         (json_int_t)c->rope_scaling.original_max_position_embeddings);
    json_t *root = json_pack(
        "{s:[s], s:s, s:s, s:s, s:I, s:I, s:I, s:i, s:i, s:i, s:I, s:I, s:f, s:f, s:o, s:b, s:b, "
        "s:b, s:f, s:f}",
        "architectures", "LlamaForCausalLM", "model_type", "llama", "hidden_act", "silu",
        "torch_dtype", torch_dtype(weights), "vocab_size", (json_int_t)c->vocab_size, "hidden_size",
        (json_int_t)c->hidden_size, "intermediate_size", (json_int_t)c->intermediate_size,
        "num_hidden_layers", c->num_hidden_layers, "num_attention_heads", c->num_attention_heads,
        "num_key_value_heads", c->num_key_value_heads, "head_dim", (json_int_t)c->head_dim,
        "max_position_embeddings", (json_int_t)c->max_position_embeddings, "rms_norm_eps",
        c->rms_norm_eps, "rope_theta", c->rope_theta, "rope_scaling", rope, "attention_bias",
        c->attention_bias, "mlp_bias", c->mlp_bias, "tie_word_embeddings", c->tie_word_embeddings,
        "attention_dropout", 0.0, "initializer_range", 0.02);
    char *text =
        root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))
             : NULL;
    json_decref(root);
    if (!text)
        return zero_fail(err, ZERO_ENOMEM, "%s: formatting", path);
    struct zero_replace w;
    int rc = zero_replace_begin(&w, path, err);
    if (rc) {
        free(text);
        return rc;
    }
    FILE *f = zero_replace_stream(&w, err);
    rc = !f                             ? err->code
         : fprintf(f, "%s\n", text) < 0 ? zero_fail(err, ZERO_EIO, "%s: write failed", path)
                                        : ZERO_OK;
    if (rc)
        zero_replace_abort(&w);
    else
        rc = zero_replace_commit(&w, err);
    free(text);
    return rc;
}

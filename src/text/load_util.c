/* What every component's loader uses: the JSON path of an error, typed members, and
 * the regexes of Split and Replace compiled by PCRE2 (Unicode properties, lookahead:
 * what HF's Oniguruma patterns need) and run the way HF's find_matches runs them. */
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "text/text_internal.h"

int tk_fail(const struct tk_where *w, struct zero_error *err, int code, const char *fmt, ...)
{
    char what[ZERO_ERRMSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return zero_fail(err, code, "%s: %s: %s", w->file, w->path[0] ? w->path : "(top level)", what);
}

struct tk_where tk_where_key(const struct tk_where *w, const char *key)
{
    struct tk_where out = *w;
    if (snprintf(out.path, sizeof out.path, "%s%s%s", w->path, w->path[0] ? "." : "", key) >=
        (int)sizeof out.path)
        memcpy(out.path + sizeof out.path - 4, "...", 4); /* a path that deep is cut short */
    return out;
}

struct tk_where tk_where_index(const struct tk_where *w, size_t i)
{
    struct tk_where out = *w;
    if (snprintf(out.path, sizeof out.path, "%s[%zu]", w->path, i) >= (int)sizeof out.path)
        memcpy(out.path + sizeof out.path - 4, "...", 4);
    return out;
}

int tk_get_bool(const struct tk_where *w, json_t *obj, const char *key, int dflt, int *out,
                struct zero_error *err)
{
    json_t *v = json_object_get(obj, key);
    *out = dflt;
    if (!v || json_is_null(v))
        return ZERO_OK;
    if (!json_is_boolean(v)) {
        struct tk_where k = tk_where_key(w, key);
        return tk_fail(&k, err, ZERO_EFORMAT, "expected true or false");
    }
    *out = json_is_true(v);
    return ZERO_OK;
}

int tk_get_string(const struct tk_where *w, json_t *obj, const char *key, const char **out,
                  struct zero_error *err)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return ZERO_OK;
    if (!json_is_string(v)) {
        struct tk_where k = tk_where_key(w, key);
        return tk_fail(&k, err, ZERO_EFORMAT, "expected a string");
    }
    *out = json_string_value(v);
    return ZERO_OK;
}

int tk_get_type(const struct tk_where *w, json_t *obj, const char **type, struct zero_error *err)
{
    if (!json_is_object(obj))
        return tk_fail(w, err, ZERO_EFORMAT, "expected an object with a \"type\"");
    if (tk_get_string(w, obj, "type", type, err))
        return err->code;
    if (!*type)
        return tk_fail(w, err, ZERO_EFORMAT, "no \"type\"");
    return ZERO_OK;
}

int tk_component_load(const struct tk_component *c, const struct tk_where *w, json_t *j, void **out,
                      struct zero_error *err)
{
    *out = NULL;
    if (!j || json_is_null(j))
        return ZERO_OK;
    const char *type;
    if (tk_get_type(w, j, &type, err))
        return err->code;
    void *obj = calloc(1, c->size);
    if (!obj)
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", w->file);
    if (c->load_one(w, j, type, obj, err)) {
        c->free(obj);
        return err->code;
    }
    *out = obj;
    return ZERO_OK;
}

int tk_load_items(const struct tk_component *c, const struct tk_where *w, json_t *j,
                  const char *key, void ***items, size_t *n, struct zero_error *err)
{
    struct tk_where k = tk_where_key(w, key);
    json_t *arr = json_object_get(j, key);
    if (!json_is_array(arr))
        return tk_fail(&k, err, ZERO_EFORMAT, "expected an array");
    if (!(*items = calloc(json_array_size(arr) + 1, sizeof **items)))
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", w->file);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        struct tk_where wi = tk_where_index(&k, i);
        if (tk_component_load(c, &wi, json_array_get(arr, i), &(*items)[*n], err))
            return err->code;
        *n += (*items)[*n] != NULL;
    }
    return ZERO_OK;
}

int tk_compile_regex(const struct tk_where *w, const char *pattern, size_t len, pcre2_code **re,
                     struct zero_error *err)
{
    int code;
    PCRE2_SIZE at;
    *re = pcre2_compile((PCRE2_SPTR)pattern, len, PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
    if (!*re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return tk_fail(w, err, ZERO_EFORMAT, "regex /%.*s/ does not compile at offset %zu: %s",
                       (int)(len > 200 ? 200 : len), pattern, (size_t)at, (const char *)msg);
    }
    pcre2_jit_compile(*re, PCRE2_JIT_COMPLETE); /* the interpreter runs it where JIT cannot */
    return ZERO_OK;
}

/* A literal's regex: \Q...\E with any \E inside spelled out. */
static int quote_literal(const char *s, size_t n, struct tk_buf *out)
{
    if (tk_buf_put(out, "\\Q", 2))
        return ZERO_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n && s[i + 1] == 'E') {
            if (tk_buf_put(out, "\\E\\\\\\Q", 6))
                return ZERO_ENOMEM;
            continue;
        }
        if (tk_buf_put(out, s + i, 1))
            return ZERO_ENOMEM;
    }
    return tk_buf_put(out, "\\E", 2);
}

int tk_get_pattern(const struct tk_where *w, json_t *obj, const char *key, pcre2_code **re,
                   struct zero_error *err)
{
    struct tk_where k = tk_where_key(w, key);
    json_t *p = json_object_get(obj, key);
    json_t *s = json_object_get(p, "String"), *r = json_object_get(p, "Regex");
    if (!json_is_object(p) || json_object_size(p) != 1 || !(json_is_string(s) || json_is_string(r)))
        return tk_fail(&k, err, ZERO_EFORMAT, "expected {\"String\": ...} or {\"Regex\": ...}");
    if (r)
        return tk_compile_regex(&k, json_string_value(r), json_string_length(r), re, err);
    struct tk_buf q = {0};
    if (quote_literal(json_string_value(s), json_string_length(s), &q)) {
        tk_buf_free(&q);
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", w->file);
    }
    int rc = tk_compile_regex(&k, q.p, q.n, re, err);
    tk_buf_free(&q);
    return rc;
}

static int push_span(size_t **spans, size_t *n, size_t *cap, size_t a, size_t b)
{
    if (*n + 2 > *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        size_t *v = realloc(*spans, c * sizeof *v);
        if (!v)
            return ZERO_ENOMEM;
        *spans = v;
        *cap = c;
    }
    (*spans)[(*n)++] = a;
    (*spans)[(*n)++] = b;
    return ZERO_OK;
}

int tk_regex_matches(const pcre2_code *re, pcre2_match_data *md, const char *text, size_t n,
                     size_t **spans, size_t *n_spans, size_t *cap)
{
    *n_spans = 0;
    if (!text)
        text = "";
    size_t start = 0, last_end = 0;
    int any = 0;
    while (start <= n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)text, n, start, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH)
            break;
        if (rc < 0)
            return ZERO_EINVAL; /* a match limit: the pattern backtracks without end */
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        const size_t s = ov[0], e = ov[1];
        if (s == e && any && e == last_end) {
            /* no empty match right after the last match (Rust's regex rule): one
             * character further */
            if (start >= n)
                break;
            start++;
            while (start < n && ((unsigned char)text[start] & 0xC0) == 0x80)
                start++;
            continue;
        }
        if (push_span(spans, n_spans, cap, s, e))
            return ZERO_ENOMEM;
        any = 1;
        last_end = e;
        start = e;
    }
    return ZERO_OK;
}

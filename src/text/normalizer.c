/* Normalizers: the text before it is cut. Unicode forms by utf8proc; Replace, Prepend,
 * Strip and Sequence as HF's normalizers do them. A type not here is refused by name. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text/text_internal.h"

enum norm_kind { NORM_UNICODE, NORM_REPLACE, NORM_PREPEND, NORM_STRIP, NORM_SEQUENCE };

struct tk_normalizer {
    enum norm_kind kind;
    utf8proc_option_t form; /* NORM_UNICODE: the utf8proc options of NFC, NFKC, ... */
    pcre2_code *pattern;    /* NORM_REPLACE */
    char *text;             /* NORM_REPLACE: the content; NORM_PREPEND: what is prepended */
    size_t text_len;
    int left, right; /* NORM_STRIP */
    void **items;    /* NORM_SEQUENCE (n_items): struct tk_normalizer * */
    size_t n_items;
};

static const struct {
    const char *type;
    utf8proc_option_t form;
} unicode_forms[] = {
    {"NFC", UTF8PROC_STABLE | UTF8PROC_COMPOSE},
    {"NFKC", UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT},
    {"NFD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE},
    {"NFKD", UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT},
};

static int copy_string(const char *s, char **out, size_t *len)
{
    *len = strlen(s);
    *out = malloc(*len + 1);
    if (!*out)
        return ZERO_ENOMEM;
    memcpy(*out, s, *len + 1);
    return ZERO_OK;
}

static const struct tk_component normalizers; /* below: a Sequence holds more of them */

static int load_one(const struct tk_where *w, json_t *j, const char *type, void *obj,
                    struct zero_error *err)
{
    struct tk_normalizer *nz = obj;
    for (size_t i = 0; i < sizeof unicode_forms / sizeof *unicode_forms; i++)
        if (strcmp(type, unicode_forms[i].type) == 0) {
            nz->kind = NORM_UNICODE;
            nz->form = unicode_forms[i].form;
            return ZERO_OK;
        }
    const char *s = NULL;
    if (strcmp(type, "Replace") == 0) {
        nz->kind = NORM_REPLACE;
        if (tk_get_pattern(w, j, "pattern", &nz->pattern, err) ||
            tk_get_string(w, j, "content", &s, err))
            return err->code;
        if (!s) {
            struct tk_where k = tk_where_key(w, "content");
            return tk_fail(&k, err, ZERO_EFORMAT, "missing");
        }
    } else if (strcmp(type, "Prepend") == 0) {
        nz->kind = NORM_PREPEND;
        if (tk_get_string(w, j, "prepend", &s, err))
            return err->code;
        if (!s) {
            struct tk_where k = tk_where_key(w, "prepend");
            return tk_fail(&k, err, ZERO_EFORMAT, "missing");
        }
    } else if (strcmp(type, "Strip") == 0) {
        nz->kind = NORM_STRIP;
        if (tk_get_bool(w, j, "strip_left", 1, &nz->left, err) ||
            tk_get_bool(w, j, "strip_right", 1, &nz->right, err))
            return err->code;
    } else if (strcmp(type, "Sequence") == 0) {
        nz->kind = NORM_SEQUENCE;
        return tk_load_items(&normalizers, w, j, "normalizers", &nz->items, &nz->n_items, err);
    } else {
        return tk_fail(w, err, ZERO_ENOTSUP,
                       "normalizer \"%s\" is not supported (NFC, NFKC, NFD, NFKD, Replace, "
                       "Prepend, Strip, Sequence are)",
                       type);
    }
    if (s && copy_string(s, &nz->text, &nz->text_len))
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", w->file);
    return ZERO_OK;
}

static void free_one(void *obj)
{
    tk_normalizer_free(obj);
}

static const struct tk_component normalizers = {sizeof(struct tk_normalizer), load_one, free_one};

int tk_normalizer_load(const struct tk_where *w, json_t *j, struct tk_normalizer **out,
                       struct zero_error *err)
{
    void *obj;
    const int rc = tk_component_load(&normalizers, w, j, &obj, err);
    *out = obj;
    return rc;
}

static int unicode_form(const struct tk_normalizer *nz, const char *text, size_t n,
                        struct tk_buf *out)
{
    if (n == 0)
        return ZERO_OK;
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t len =
        utf8proc_map((const utf8proc_uint8_t *)text, (utf8proc_ssize_t)n, &dst, nz->form);
    if (len < 0)
        return ZERO_ENOMEM; /* the text is valid UTF-8 (repaired first): only memory fails */
    int rc = tk_buf_put(out, dst, (size_t)len);
    free(dst);
    return rc;
}

static int replace(const struct tk_normalizer *nz, const char *text, size_t n, struct tk_buf *out)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(nz->pattern, NULL);
    size_t *spans = NULL, n_spans = 0, cap = 0, at = 0;
    int rc = md ? tk_regex_matches(nz->pattern, md, text, n, &spans, &n_spans, &cap) : ZERO_ENOMEM;
    for (size_t k = 0; rc == ZERO_OK && k < n_spans; k += 2) {
        rc = tk_buf_put(out, text + at, spans[k] - at);
        if (rc == ZERO_OK)
            rc = tk_buf_put(out, nz->text, nz->text_len);
        at = spans[k + 1];
    }
    if (rc == ZERO_OK)
        rc = tk_buf_put(out, text + at, n - at);
    free(spans);
    pcre2_match_data_free(md);
    return rc;
}

/* The bytes of text without whitespace at the ends nz strips. */
static int strip(const struct tk_normalizer *nz, const char *text, size_t n, struct tk_buf *out)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t a = 0, b = n;
    while (nz->left && a < b) {
        size_t k = tk_utf8_valid_len(p + a, b - a);
        if (!k || !tk_is_whitespace(tk_utf8_decode(p + a, k)))
            break;
        a += k;
    }
    while (nz->right && b > a) {
        size_t s = b - 1;
        while (s > a && (p[s] & 0xC0) == 0x80)
            s--;
        if (!tk_is_whitespace(tk_utf8_decode(p + s, b - s)))
            break;
        b = s;
    }
    return tk_buf_put(out, text + a, b - a);
}

int tk_normalize(const struct tk_normalizer *nz, const char *text, size_t n, struct tk_buf *out)
{
    out->n = 0;
    switch (nz->kind) {
    case NORM_UNICODE:
        return unicode_form(nz, text, n, out);
    case NORM_REPLACE:
        return replace(nz, text, n, out);
    case NORM_PREPEND:
        if (n && tk_buf_put(out, nz->text, nz->text_len))
            return ZERO_ENOMEM;
        return tk_buf_put(out, text, n);
    case NORM_STRIP:
        return strip(nz, text, n, out);
    case NORM_SEQUENCE:
        break;
    }
    /* each step reads the last one's output */
    struct tk_buf cur = {0}, next = {0};
    int rc = tk_buf_put(&cur, text, n);
    for (size_t i = 0; rc == ZERO_OK && i < nz->n_items; i++) {
        rc = tk_normalize(nz->items[i], cur.p, cur.n, &next);
        struct tk_buf t = cur;
        cur = next;
        next = t;
    }
    if (rc == ZERO_OK)
        rc = tk_buf_put(out, cur.p, cur.n);
    tk_buf_free(&cur);
    tk_buf_free(&next);
    return rc;
}

void tk_normalizer_free(struct tk_normalizer *nz)
{
    if (!nz)
        return;
    for (size_t i = 0; i < nz->n_items; i++)
        tk_normalizer_free(nz->items[i]);
    free(nz->items);
    pcre2_code_free(nz->pattern);
    free(nz->text);
    free(nz);
}

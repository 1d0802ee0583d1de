/* Decoders: the tokens' strings back to text, each step a list of strings to a list of
 * strings as HF's decode_chain, the result joined. ByteLevel (GPT-2's alphabet back to
 * bytes, then lossy UTF-8), ByteFallback (<0xNN> runs to their characters, or U+FFFD a
 * byte when they are not UTF-8), Fuse, Strip, Replace, Metaspace, Sequence. */
#include <stdlib.h>
#include <string.h>

#include "text/text_internal.h"

enum dec_kind {
    D_BYTE_LEVEL,
    D_BYTE_FALLBACK,
    D_FUSE,
    D_STRIP,
    D_REPLACE,
    D_METASPACE,
    D_SEQUENCE
};

struct tk_decoder {
    enum dec_kind kind;
    uint32_t ch;         /* D_STRIP: the character stripped; D_METASPACE: the replacement */
    size_t start, stop;  /* D_STRIP: how many at most at each end */
    int prepend;         /* D_METASPACE: a prefix was prepended (scheme not "never") */
    pcre2_code *pattern; /* D_REPLACE */
    char *content;       /* D_REPLACE */
    size_t content_len;
    void **items; /* D_SEQUENCE (n_items): struct tk_decoder * */
    size_t n_items;
};

/* A list of strings: string i is text[off[i], off[i + 1]). */
struct strlist {
    struct tk_buf text;
    size_t *off; /* (n + 1) */
    size_t n, cap;
};

static int list_end_string(struct strlist *l)
{
    if (tk_buf_reserve(&l->text, 0)) /* text.p is never NULL once a string is listed */
        return ZERO_ENOMEM;
    if (l->n + 2 > l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        size_t *o = realloc(l->off, cap * sizeof *o);
        if (!o)
            return ZERO_ENOMEM;
        l->off = o;
        l->cap = cap;
    }
    if (l->n == 0)
        l->off[0] = 0;
    l->off[++l->n] = l->text.n;
    return ZERO_OK;
}

static int list_add(struct strlist *l, const char *p, size_t n)
{
    if (tk_buf_put(&l->text, p, n))
        return ZERO_ENOMEM;
    return list_end_string(l);
}

static void list_reset(struct strlist *l)
{
    l->n = 0;
    l->text.n = 0;
}

static void list_free(struct strlist *l)
{
    tk_buf_free(&l->text);
    free(l->off);
}

/* ---- loading ---- */

static int one_char(const struct tk_where *w, json_t *j, const char *key, uint32_t *c,
                    struct zero_error *err)
{
    const char *s;
    if (tk_get_string(w, j, key, &s, err))
        return err->code;
    const size_t n = s ? strlen(s) : 0;
    if (!n || tk_utf8_valid_len((const unsigned char *)s, n) != n) {
        struct tk_where k = tk_where_key(w, key);
        return tk_fail(&k, err, ZERO_EFORMAT, "expected one character");
    }
    *c = tk_utf8_decode((const unsigned char *)s, n);
    return ZERO_OK;
}

static int count(const struct tk_where *w, json_t *j, const char *key, size_t *out,
                 struct zero_error *err)
{
    json_t *v = json_object_get(j, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        struct tk_where k = tk_where_key(w, key);
        return tk_fail(&k, err, ZERO_EFORMAT, "expected a count >= 0");
    }
    *out = (size_t)json_integer_value(v);
    return ZERO_OK;
}

static const struct tk_component decoders; /* below: a Sequence holds more of them */

static int load_one(const struct tk_where *w, json_t *j, const char *type, void *obj,
                    struct zero_error *err)
{
    struct tk_decoder *d = obj;
    if (strcmp(type, "ByteLevel") == 0) {
        d->kind = D_BYTE_LEVEL;
    } else if (strcmp(type, "ByteFallback") == 0) {
        d->kind = D_BYTE_FALLBACK;
    } else if (strcmp(type, "Fuse") == 0) {
        d->kind = D_FUSE;
    } else if (strcmp(type, "Strip") == 0) {
        d->kind = D_STRIP;
        return one_char(w, j, "content", &d->ch, err) || count(w, j, "start", &d->start, err) ||
                       count(w, j, "stop", &d->stop, err)
                   ? err->code
                   : ZERO_OK;
    } else if (strcmp(type, "Replace") == 0) {
        const char *content;
        d->kind = D_REPLACE;
        if (tk_get_pattern(w, j, "pattern", &d->pattern, err) ||
            tk_get_string(w, j, "content", &content, err))
            return err->code;
        if (!content) {
            struct tk_where k = tk_where_key(w, "content");
            return tk_fail(&k, err, ZERO_EFORMAT, "missing");
        }
        d->content_len = strlen(content);
        if (!(d->content = malloc(d->content_len + 1)))
            return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", w->file);
        memcpy(d->content, content, d->content_len + 1);
    } else if (strcmp(type, "Metaspace") == 0) {
        const char *scheme;
        d->kind = D_METASPACE;
        if (one_char(w, j, "replacement", &d->ch, err) ||
            tk_get_bool(w, j, "add_prefix_space", 1, &d->prepend, err) ||
            tk_get_string(w, j, "prepend_scheme", &scheme, err))
            return err->code;
        if (scheme)
            d->prepend = strcmp(scheme, "never") != 0;
    } else if (strcmp(type, "Sequence") == 0) {
        d->kind = D_SEQUENCE;
        return tk_load_items(&decoders, w, j, "decoders", &d->items, &d->n_items, err);
    } else {
        return tk_fail(w, err, ZERO_ENOTSUP,
                       "decoder \"%s\" is not supported (ByteLevel, ByteFallback, Fuse, Strip, "
                       "Replace, Metaspace, Sequence are)",
                       type);
    }
    return ZERO_OK;
}

static void free_one(void *obj)
{
    tk_decoder_free(obj);
}

static const struct tk_component decoders = {sizeof(struct tk_decoder), load_one, free_one};

int tk_decoder_load(const struct tk_where *w, json_t *j, struct tk_decoder **out,
                    struct zero_error *err)
{
    void *obj;
    const int rc = tk_component_load(&decoders, w, j, &obj, err);
    *out = obj;
    return rc;
}

void tk_decoder_free(struct tk_decoder *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n_items; i++)
        tk_decoder_free(d->items[i]);
    free(d->items);
    pcre2_code_free(d->pattern);
    free(d->content);
    free(d);
}

/* ---- the steps ---- */

/* One string: the bytes GPT-2's alphabet stands for (a token with a character outside
 * it counts as its own bytes), repaired as from_utf8_lossy does. */
static int byte_level(const struct strlist *in, struct strlist *out)
{
    struct tk_buf bytes = {0}, fixed = {0};
    int rc = ZERO_OK;
    for (size_t i = 0; rc == ZERO_OK && i < in->n; i++) {
        const unsigned char *p = (const unsigned char *)in->text.p + in->off[i];
        const size_t n = in->off[i + 1] - in->off[i], mark = bytes.n;
        for (size_t k = 0; rc == ZERO_OK && k < n;) {
            size_t len = tk_utf8_valid_len(p + k, n - k);
            int b = len ? tk_char_byte(tk_utf8_decode(p + k, len)) : -1;
            if (b < 0) {
                bytes.n = mark;
                rc = tk_buf_put(&bytes, p, n);
                break;
            }
            const unsigned char c = (unsigned char)b;
            rc = tk_buf_put(&bytes, &c, 1);
            k += len;
        }
    }
    int64_t replaced = 0;
    if (rc == ZERO_OK)
        rc = tk_utf8_repair(bytes.p ? bytes.p : "", bytes.n, &fixed, &replaced);
    if (rc == ZERO_OK)
        rc = list_add(out, fixed.p, fixed.n);
    tk_buf_free(&bytes);
    tk_buf_free(&fixed);
    return rc;
}

/* The byte of a "<0xNN>" token, or -1. */
static int fallback_byte(const char *p, size_t n)
{
    if (n != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>')
        return -1;
    int v = 0;
    for (int k = 3; k < 5; k++) {
        const char c = p[k];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = 16 * v + d;
    }
    return v;
}

static int flush_bytes(struct tk_buf *run, struct strlist *out)
{
    int rc = ZERO_OK;
    if (!run->n)
        return rc;
    size_t k = 0;
    while (k < run->n) {
        const size_t len = tk_utf8_valid_len((const unsigned char *)run->p + k, run->n - k);
        if (!len)
            break;
        k += len;
    }
    if (k == run->n) {
        rc = list_add(out, run->p, run->n);
    } else {
        for (size_t i = 0; rc == ZERO_OK && i < run->n; i++)
            rc = list_add(out, "\xEF\xBF\xBD", 3);
    }
    run->n = 0;
    return rc;
}

static int byte_fallback(const struct strlist *in, struct strlist *out)
{
    struct tk_buf run = {0};
    int rc = ZERO_OK;
    for (size_t i = 0; rc == ZERO_OK && i < in->n; i++) {
        const char *p = in->text.p + in->off[i];
        const size_t n = in->off[i + 1] - in->off[i];
        const int b = fallback_byte(p, n);
        if (b >= 0) {
            const unsigned char c = (unsigned char)b;
            rc = tk_buf_put(&run, &c, 1);
            continue;
        }
        rc = flush_bytes(&run, out);
        if (rc == ZERO_OK)
            rc = list_add(out, p, n);
    }
    if (rc == ZERO_OK)
        rc = flush_bytes(&run, out);
    tk_buf_free(&run);
    return rc;
}

/* Each string with up to start leading and stop trailing copies of ch removed. */
static int strip(const struct tk_decoder *d, const struct strlist *in, struct strlist *out)
{
    char c[4];
    const size_t cl = tk_utf8_encode(d->ch, c);
    for (size_t i = 0; i < in->n; i++) {
        const char *p = in->text.p + in->off[i];
        size_t a = 0, b = in->off[i + 1] - in->off[i];
        for (size_t k = 0; k < d->start && b - a >= cl && memcmp(p + a, c, cl) == 0; k++)
            a += cl;
        for (size_t k = 0; k < d->stop && b - a >= cl && memcmp(p + b - cl, c, cl) == 0; k++)
            b -= cl;
        if (list_add(out, p + a, b - a))
            return ZERO_ENOMEM;
    }
    return ZERO_OK;
}

static int replace(const struct tk_decoder *d, const struct strlist *in, struct strlist *out)
{
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    size_t *spans = NULL, n_spans = 0, cap = 0;
    int rc = md ? ZERO_OK : ZERO_ENOMEM;
    for (size_t i = 0; rc == ZERO_OK && i < in->n; i++) {
        const char *p = in->text.p + in->off[i];
        const size_t n = in->off[i + 1] - in->off[i];
        size_t at = 0;
        rc = tk_regex_matches(d->pattern, md, p, n, &spans, &n_spans, &cap);
        for (size_t k = 0; rc == ZERO_OK && k < n_spans; k += 2) {
            rc = tk_buf_put(&out->text, p + at, spans[k] - at);
            if (rc == ZERO_OK)
                rc = tk_buf_put(&out->text, d->content, d->content_len);
            at = spans[k + 1];
        }
        if (rc == ZERO_OK)
            rc = tk_buf_put(&out->text, p + at, n - at);
        if (rc == ZERO_OK)
            rc = list_end_string(out);
    }
    free(spans);
    pcre2_match_data_free(md);
    return rc;
}

/* The replacement becomes a space, and in the first token (where a prefix was
 * prepended) it goes altogether, as HF's Metaspace decoder does. */
static int metaspace(const struct tk_decoder *d, const struct strlist *in, struct strlist *out)
{
    char c[4];
    const size_t cl = tk_utf8_encode(d->ch, c);
    for (size_t i = 0; i < in->n; i++) {
        const char *p = in->text.p + in->off[i];
        const size_t n = in->off[i + 1] - in->off[i];
        for (size_t k = 0; k < n;) {
            if (n - k >= cl && memcmp(p + k, c, cl) == 0) {
                if (!(i == 0 && d->prepend) && tk_buf_put(&out->text, " ", 1))
                    return ZERO_ENOMEM;
                k += cl;
            } else if (tk_buf_put(&out->text, p + k++, 1)) {
                return ZERO_ENOMEM;
            }
        }
        if (list_end_string(out))
            return ZERO_ENOMEM;
    }
    return ZERO_OK;
}

static int step(const struct tk_decoder *d, const struct strlist *in, struct strlist *out)
{
    list_reset(out);
    switch (d->kind) {
    case D_BYTE_LEVEL:
        return byte_level(in, out);
    case D_BYTE_FALLBACK:
        return byte_fallback(in, out);
    case D_FUSE:
        return list_add(out, in->text.p, in->text.n);
    case D_STRIP:
        return strip(d, in, out);
    case D_REPLACE:
        return replace(d, in, out);
    case D_METASPACE:
        return metaspace(d, in, out);
    case D_SEQUENCE:
        break;
    }
    return ZERO_EINVAL;
}

/* Applies d to the list in *a (a sequence step by step); the result is left in *a. */
static int run(const struct tk_decoder *d, struct strlist *a, struct strlist *b)
{
    if (d->kind == D_SEQUENCE) {
        for (size_t s = 0; s < d->n_items; s++)
            if (run(d->items[s], a, b))
                return ZERO_ENOMEM;
        return ZERO_OK;
    }
    const int rc = step(d, a, b);
    const struct strlist t = *a;
    *a = *b;
    *b = t;
    return rc;
}

int tk_decode(const struct tk_decoder *d, const char *const *tokens, size_t n, struct tk_buf *out)
{
    struct strlist a = {0}, b = {0};
    int rc = ZERO_OK;
    for (size_t i = 0; rc == ZERO_OK && i < n; i++)
        rc = list_add(&a, tokens[i], strlen(tokens[i]));
    if (rc == ZERO_OK && d)
        rc = run(d, &a, &b);
    out->n = 0;
    for (size_t i = 0; rc == ZERO_OK && i < a.n; i++) {
        /* the strings joined: HF's decode with no decoder joins them with spaces */
        if (i && !d)
            rc = tk_buf_put(out, " ", 1);
        if (rc == ZERO_OK)
            rc = tk_buf_put(out, a.text.p + a.off[i], a.off[i + 1] - a.off[i]);
    }
    if (rc == ZERO_OK)
        rc = tk_buf_nul(out);
    list_free(&a);
    list_free(&b);
    return rc;
}

/* Added tokens (special or not): found in the text before it is normalized or cut, the
 * leftmost match first and of those the longest (HF matches them with a leftmost-longest
 * Aho-Corasick automaton; a table of candidates by first byte finds the same matches). */
#include <stdlib.h>
#include <string.h>

#include "text/text_internal.h"

static int load_token(const struct tk_where *w, json_t *j, struct tk_added_token *t,
                      struct zero_error *err)
{
    const char *content;
    json_t *id = json_object_get(j, "id");
    if (!json_is_object(j))
        return tk_fail(w, err, ZERO_EFORMAT, "expected an object");
    if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= INT32_MAX) {
        struct tk_where k = tk_where_key(w, "id");
        return tk_fail(&k, err, ZERO_EFORMAT, "expected an id in 0..%d", INT32_MAX - 1);
    }
    t->id = (int32_t)json_integer_value(id);
    if (tk_get_string(w, j, "content", &content, err) ||
        tk_get_bool(w, j, "special", 0, &t->special, err) ||
        tk_get_bool(w, j, "lstrip", 0, &t->lstrip, err) ||
        tk_get_bool(w, j, "rstrip", 0, &t->rstrip, err) ||
        tk_get_bool(w, j, "single_word", 0, &t->single_word, err) ||
        tk_get_bool(w, j, "normalized", !t->special, &t->normalized, err))
        return err->code;
    if (!content || !content[0]) {
        struct tk_where k = tk_where_key(w, "content");
        return tk_fail(&k, err, ZERO_EFORMAT, "expected a non-empty string");
    }
    t->len = strlen(content);
    if (!(t->content = malloc(t->len + 1)))
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", w->file);
    memcpy(t->content, content, t->len + 1);
    return ZERO_OK;
}

int tk_added_load(const struct tk_where *w, json_t *arr, struct tk_added *a, struct zero_error *err)
{
    memset(a, 0, sizeof *a);
    if (!arr || json_is_null(arr))
        return ZERO_OK;
    if (!json_is_array(arr))
        return tk_fail(w, err, ZERO_EFORMAT, "expected an array");
    const size_t n = json_array_size(arr);
    a->tok = calloc(n + 1, sizeof *a->tok);
    a->by_byte = calloc(n + 1, sizeof *a->by_byte);
    if (!a->tok || !a->by_byte)
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", w->file);
    for (size_t i = 0; i < n; i++, a->n++) {
        struct tk_where wi = tk_where_index(w, i);
        if (load_token(&wi, json_array_get(arr, i), &a->tok[i], err))
            return err->code;
    }
    /* candidates grouped by first byte (a counting sort), longest first within a group */
    uint32_t count[257] = {0};
    for (size_t i = 0; i < a->n; i++)
        count[(unsigned char)a->tok[i].content[0] + 1]++;
    for (int b = 0; b < 256; b++)
        count[b + 1] += count[b];
    memcpy(a->first, count, sizeof count);
    for (size_t i = 0; i < a->n; i++)
        a->by_byte[count[(unsigned char)a->tok[i].content[0]]++] = (uint32_t)i;
    for (int b = 0; b < 256; b++) /* insertion sort: the groups are small */
        for (uint32_t i = a->first[b] + 1; i < a->first[b + 1]; i++)
            for (uint32_t j = i;
                 j > a->first[b] && a->tok[a->by_byte[j]].len > a->tok[a->by_byte[j - 1]].len;
                 j--) {
                uint32_t t = a->by_byte[j];
                a->by_byte[j] = a->by_byte[j - 1];
                a->by_byte[j - 1] = t;
            }
    return ZERO_OK;
}

/* The last character before end (end > 0). */
static uint32_t char_before(const unsigned char *p, size_t end, size_t *start)
{
    size_t s = end - 1;
    while (s > 0 && (p[s] & 0xC0) == 0x80)
        s--;
    *start = s;
    return tk_utf8_decode(p + s, end - s);
}

static uint32_t char_at(const unsigned char *p, size_t n, size_t *len)
{
    *len = tk_utf8_valid_len(p, n);
    return *len ? tk_utf8_decode(p, *len) : 0;
}

/* Whether a single_word token at [s, e) stands alone: no word character touches it. */
static int stands_alone(const unsigned char *p, size_t n, size_t s, size_t e)
{
    size_t at, len;
    if (s > 0 && tk_is_word_char(char_before(p, s, &at)))
        return 0;
    return e == n || !tk_is_word_char(char_at(p + e, n - e, &len));
}

/* The longest token of the given normalized flag at text + i, or -1. */
static int64_t match_at(const struct tk_added *a, int normalized, const char *text, size_t n,
                        size_t i)
{
    const unsigned char b = (unsigned char)text[i];
    for (uint32_t k = a->first[b]; k < a->first[b + 1]; k++) {
        const struct tk_added_token *t = &a->tok[a->by_byte[k]];
        if (t->normalized == normalized && t->len <= n - i &&
            memcmp(text + i, t->content, t->len) == 0 &&
            (!t->single_word || stands_alone((const unsigned char *)text, n, i, i + t->len)))
            return a->by_byte[k];
    }
    return -1;
}

int tk_added_split(const struct tk_added *a, int normalized, const char *text, size_t n, int first,
                   struct tk_pieces *out)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t done = 0; /* text[0, done) is in out */
    for (size_t i = 0; i < n; i++) {
        if (a->first[p[i]] == a->first[p[i] + 1])
            continue;
        const int64_t k = match_at(a, normalized, text, n, i);
        if (k < 0)
            continue;
        const struct tk_added_token *t = &a->tok[k];
        size_t s = i, e = i + t->len, at, len;
        while (t->lstrip && s > done && tk_is_whitespace(char_before(p, s, &at)))
            s = at;
        while (t->rstrip && e < n && tk_is_whitespace(char_at(p + e, n - e, &len)))
            e += len;
        if (s > done && tk_pieces_add(out, text + done, s - done, -1, first && done == 0))
            return ZERO_ENOMEM;
        if (tk_pieces_add(out, text + s, e - s, t->id, first && s == 0))
            return ZERO_ENOMEM;
        done = e;
        i = e - 1;
    }
    if (n > done && tk_pieces_add(out, text + done, n - done, -1, first && done == 0))
        return ZERO_ENOMEM;
    return ZERO_OK;
}

void tk_added_free(struct tk_added *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->tok[i].content);
    free(a->tok);
    free(a->by_byte);
    memset(a, 0, sizeof *a);
}

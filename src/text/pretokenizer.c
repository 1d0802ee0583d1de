/* Pre-tokenizers: the text cut into the words BPE merges within. ByteLevel (GPT-2's
 * regex, the prefix space, the byte alphabet), Split (the file's own regex, every
 * behavior of HF's SplitDelimiterBehavior), Metaspace, Digits and Sequence. Pieces that
 * are added tokens pass through untouched, as in HF's PreTokenizedString. */
#include <stdlib.h>
#include <string.h>

#include "text/text_internal.h"

/* The regex HF's ByteLevel pre-tokenizer splits with when use_regex is set. */
static const char gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

enum pretok_kind { PT_BYTE_LEVEL, PT_SPLIT, PT_METASPACE, PT_SEQUENCE };
enum behavior { B_REMOVED, B_ISOLATED, B_MERGED_WITH_PREVIOUS, B_MERGED_WITH_NEXT, B_CONTIGUOUS };
enum prepend_scheme { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER };

struct tk_pretokenizer {
    enum pretok_kind kind;
    int add_prefix_space;   /* PT_BYTE_LEVEL */
    int map_bytes;          /* PT_BYTE_LEVEL: write the bytes in GPT-2's alphabet */
    pcre2_code *re;         /* PT_SPLIT, PT_BYTE_LEVEL with use_regex */
    enum behavior behavior; /* PT_SPLIT */
    int invert;             /* PT_SPLIT */
    char replacement[5];    /* PT_METASPACE: one character, UTF-8 */
    size_t replacement_len;
    enum prepend_scheme prepend;
    int split;
    void **items; /* PT_SEQUENCE (n_items): struct tk_pretokenizer * */
    size_t n_items;
};

static const char *const behavior_names[] = {"Removed", "Isolated", "MergedWithPrevious",
                                             "MergedWithNext", "Contiguous"};

static int load_behavior(const struct tk_where *w, json_t *j, enum behavior *b,
                         struct zero_error *err)
{
    const char *s;
    if (tk_get_string(w, j, "behavior", &s, err))
        return err->code;
    for (int k = 0; s && k < 5; k++)
        if (strcmp(s, behavior_names[k]) == 0) {
            *b = (enum behavior)k;
            return ZERO_OK;
        }
    struct tk_where k = tk_where_key(w, "behavior");
    return tk_fail(&k, err, ZERO_EFORMAT,
                   "\"%s\" is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, "
                   "Contiguous",
                   s ? s : "(missing)");
}

static int load_metaspace(const struct tk_where *w, json_t *j, struct tk_pretokenizer *pt,
                          struct zero_error *err)
{
    const char *rep, *scheme;
    int legacy_prefix;
    if (tk_get_string(w, j, "replacement", &rep, err) ||
        tk_get_string(w, j, "prepend_scheme", &scheme, err) ||
        tk_get_bool(w, j, "add_prefix_space", 1, &legacy_prefix, err) ||
        tk_get_bool(w, j, "split", 1, &pt->split, err))
        return err->code;
    const size_t n = rep ? strlen(rep) : 0;
    if (!n || n > 4 || tk_utf8_valid_len((const unsigned char *)rep, n) != n) {
        struct tk_where k = tk_where_key(w, "replacement");
        return tk_fail(&k, err, ZERO_EFORMAT, "expected one character");
    }
    memcpy(pt->replacement, rep, n + 1);
    pt->replacement_len = n;
    /* files older than prepend_scheme say add_prefix_space: true = always */
    pt->prepend = legacy_prefix ? PREPEND_ALWAYS : PREPEND_NEVER;
    if (scheme && strcmp(scheme, "always") == 0)
        pt->prepend = PREPEND_ALWAYS;
    else if (scheme && strcmp(scheme, "first") == 0)
        pt->prepend = PREPEND_FIRST;
    else if (scheme && strcmp(scheme, "never") == 0)
        pt->prepend = PREPEND_NEVER;
    else if (scheme) {
        struct tk_where k = tk_where_key(w, "prepend_scheme");
        return tk_fail(&k, err, ZERO_EFORMAT, "\"%s\" is not always, first or never", scheme);
    }
    return ZERO_OK;
}

static const struct tk_component pretokenizers; /* below: a Sequence holds more of them */

static int load_one(const struct tk_where *w, json_t *j, const char *type, void *obj,
                    struct zero_error *err)
{
    struct tk_pretokenizer *pt = obj;
    if (strcmp(type, "ByteLevel") == 0) {
        int use_regex;
        pt->kind = PT_BYTE_LEVEL;
        pt->map_bytes = 1;
        pt->behavior = B_ISOLATED;
        if (tk_get_bool(w, j, "add_prefix_space", 1, &pt->add_prefix_space, err) ||
            tk_get_bool(w, j, "use_regex", 1, &use_regex, err))
            return err->code;
        return use_regex ? tk_compile_regex(w, gpt2_pattern, sizeof gpt2_pattern - 1, &pt->re, err)
                         : ZERO_OK;
    }
    if (strcmp(type, "Split") == 0) {
        pt->kind = PT_SPLIT;
        if (tk_get_pattern(w, j, "pattern", &pt->re, err) ||
            load_behavior(w, j, &pt->behavior, err) ||
            tk_get_bool(w, j, "invert", 0, &pt->invert, err))
            return err->code;
        return ZERO_OK;
    }
    if (strcmp(type, "Digits") == 0) {
        /* HF splits on char::is_numeric, one match per character: \p{N} */
        int individual;
        pt->kind = PT_SPLIT;
        if (tk_get_bool(w, j, "individual_digits", 0, &individual, err))
            return err->code;
        pt->behavior = individual ? B_ISOLATED : B_CONTIGUOUS;
        return tk_compile_regex(w, "\\p{N}", 5, &pt->re, err);
    }
    if (strcmp(type, "Metaspace") == 0) {
        pt->kind = PT_METASPACE;
        return load_metaspace(w, j, pt, err);
    }
    if (strcmp(type, "Sequence") == 0) {
        pt->kind = PT_SEQUENCE;
        return tk_load_items(&pretokenizers, w, j, "pretokenizers", &pt->items, &pt->n_items, err);
    }
    return tk_fail(w, err, ZERO_ENOTSUP,
                   "pre-tokenizer \"%s\" is not supported (ByteLevel, Split, Metaspace, Digits, "
                   "Sequence are)",
                   type);
}

static void free_one(void *obj)
{
    tk_pretokenizer_free(obj);
}

static const struct tk_component pretokenizers = {sizeof(struct tk_pretokenizer), load_one,
                                                  free_one};

int tk_pretokenizer_load(const struct tk_where *w, json_t *j, struct tk_pretokenizer **out,
                         struct zero_error *err)
{
    void *obj;
    const int rc = tk_component_load(&pretokenizers, w, j, &obj, err);
    *out = obj;
    return rc;
}

/* ---- the passes ---- */

/* Scratch of one pass: the regex's matches, then the ranges kept. */
struct pass_work {
    size_t *spans; /* (n_spans) start, end of each match */
    size_t n_spans, cap;
    size_t *ranges; /* (n_ranges) start, end, is_match of each part */
    size_t n_ranges, ranges_cap;
};

static int push_range(struct pass_work *pw, size_t a, size_t b, size_t is_match)
{
    if (pw->n_ranges + 3 > pw->ranges_cap) {
        size_t cap = pw->ranges_cap ? 2 * pw->ranges_cap : 96;
        size_t *v = realloc(pw->ranges, cap * sizeof *v);
        if (!v)
            return ZERO_ENOMEM;
        pw->ranges = v;
        pw->ranges_cap = cap;
    }
    pw->ranges[pw->n_ranges++] = a;
    pw->ranges[pw->n_ranges++] = b;
    pw->ranges[pw->n_ranges++] = is_match;
    return ZERO_OK;
}

/* The parts of a text of n bytes: the matches and what lies between them (HF's
 * find_matches), each flagged as a match or not (flipped by invert). */
static int parts(struct pass_work *pw, size_t n, int invert)
{
    pw->n_ranges = 0;
    size_t prev = 0;
    if (n == 0)
        return push_range(pw, 0, 0, (size_t)invert);
    for (size_t k = 0; k < pw->n_spans; k += 2) {
        const size_t s = pw->spans[k], e = pw->spans[k + 1];
        if (prev != s && push_range(pw, prev, s, (size_t)invert))
            return ZERO_ENOMEM;
        if (push_range(pw, s, e, (size_t)!invert))
            return ZERO_ENOMEM;
        prev = e;
    }
    if (prev != n && push_range(pw, prev, n, (size_t)invert))
        return ZERO_ENOMEM;
    return ZERO_OK;
}

/* Rewrites pw->ranges as the pieces the behavior makes of the parts (HF's
 * NormalizedString::split); a removed part gets is_match = 2. */
static void apply_behavior(struct pass_work *pw, enum behavior b)
{
    size_t *r = pw->ranges, n = 0;
    int previous_match = 0;
    for (size_t k = 0; k < pw->n_ranges; k += 3) {
        const size_t s = r[k], e = r[k + 1];
        const int is_match = (int)r[k + 2];
        switch (b) {
        case B_REMOVED:
        case B_ISOLATED:
            r[n++] = s, r[n++] = e, r[n++] = (b == B_REMOVED && is_match) ? 2 : 0;
            break;
        case B_MERGED_WITH_PREVIOUS:
            if (is_match && !previous_match && n)
                r[n - 2] = e;
            else
                r[n++] = s, r[n++] = e, r[n++] = 0;
            break;
        case B_CONTIGUOUS:
            if (is_match == previous_match && n)
                r[n - 2] = e;
            else
                r[n++] = s, r[n++] = e, r[n++] = 0;
            break;
        case B_MERGED_WITH_NEXT:
            break;
        }
        previous_match = is_match;
    }
    if (b == B_MERGED_WITH_NEXT) {
        /* from the end: a match joins the piece after it */
        size_t m = pw->n_ranges; /* write pieces at the end, backwards */
        previous_match = 0;
        for (size_t k = pw->n_ranges; k > 0; k -= 3) {
            const size_t s = r[k - 3], e = r[k - 2];
            const int is_match = (int)r[k - 1];
            if (is_match && !previous_match && m < pw->n_ranges)
                r[m] = s;
            else
                m -= 3, r[m] = s, r[m + 1] = e, r[m + 2] = 0;
            previous_match = is_match;
        }
        memmove(r, r + m, (pw->n_ranges - m) * sizeof *r);
        n = pw->n_ranges - m;
    }
    pw->n_ranges = n;
}

/* Adds text[a, b) to out, in GPT-2's byte alphabet when map_bytes. */
static int emit(struct tk_pieces *out, const char *text, size_t a, size_t b, int first,
                int map_bytes)
{
    if (a == b)
        return ZERO_OK;
    if (!map_bytes)
        return tk_pieces_add(out, text + a, b - a, -1, first);
    if (tk_pieces_add(out, "", 0, -1, first))
        return ZERO_ENOMEM;
    struct tk_piece *p = &out->v[out->n - 1];
    if (tk_buf_reserve(&out->text, 2 * (b - a)))
        return ZERO_ENOMEM;
    for (size_t i = a; i < b; i++) {
        size_t len;
        const char *c = tk_byte_char((unsigned char)text[i], &len);
        memcpy(out->text.p + out->text.n, c, len);
        out->text.n += len;
    }
    p->len = out->text.n - p->off;
    return ZERO_OK;
}

/* One piece split by pt's regex and behavior, the parts added to out. */
static int split_piece(const struct tk_pretokenizer *pt, const char *text, size_t n, int first,
                       pcre2_match_data *md, struct pass_work *pw, struct tk_pieces *out)
{
    if (!pt->re)
        return emit(out, text, 0, n, first, pt->map_bytes);
    int rc = tk_regex_matches(pt->re, md, text, n, &pw->spans, &pw->n_spans, &pw->cap);
    if (rc == ZERO_OK)
        rc = parts(pw, n, pt->invert);
    if (rc)
        return rc;
    apply_behavior(pw, pt->behavior);
    for (size_t k = 0; k < pw->n_ranges; k += 3)
        if (pw->ranges[k + 2] != 2 && emit(out, text, pw->ranges[k], pw->ranges[k + 1],
                                           first && pw->ranges[k] == 0, pt->map_bytes))
            return ZERO_ENOMEM;
    return ZERO_OK;
}

/* Metaspace: spaces become the replacement, which may be prepended, and the piece is
 * split before each replacement (MergedWithNext). */
static int metaspace_piece(const struct tk_pretokenizer *pt, const char *text, size_t n, int first,
                           struct tk_buf *tmp, struct tk_pieces *out)
{
    tmp->n = 0;
    const int starts =
        n >= pt->replacement_len && memcmp(text, pt->replacement, pt->replacement_len) == 0;
    const int starts_space = n > 0 && text[0] == ' ';
    if (!(starts || starts_space) &&
        (pt->prepend == PREPEND_ALWAYS || (pt->prepend == PREPEND_FIRST && first)) &&
        tk_buf_put(tmp, pt->replacement, pt->replacement_len))
        return ZERO_ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (tk_buf_put(tmp, text[i] == ' ' ? pt->replacement : text + i,
                       text[i] == ' ' ? pt->replacement_len : 1))
            return ZERO_ENOMEM;
    if (!pt->split)
        return emit(out, tmp->p, 0, tmp->n, first, 0);
    size_t start = 0;
    for (size_t i = 1; i + pt->replacement_len <= tmp->n; i++)
        if (memcmp(tmp->p + i, pt->replacement, pt->replacement_len) == 0) {
            if (emit(out, tmp->p, start, i, first && start == 0, 0))
                return ZERO_ENOMEM;
            start = i;
        }
    return emit(out, tmp->p, start, tmp->n, first && start == 0, 0);
}

static int pass(const struct tk_pretokenizer *pt, const struct tk_pieces *in, struct tk_pieces *out,
                pcre2_match_data *md, struct pass_work *pw, struct tk_buf *tmp)
{
    tk_pieces_reset(out);
    for (size_t i = 0; i < in->n; i++) {
        const struct tk_piece *p = &in->v[i];
        const char *text = in->text.p + p->off;
        int rc;
        if (p->id >= 0) {
            rc = tk_pieces_add(out, text, p->len, p->id, p->first);
        } else if (pt->kind == PT_METASPACE) {
            rc = metaspace_piece(pt, text, p->len, p->first, tmp, out);
        } else if (pt->kind == PT_BYTE_LEVEL && pt->add_prefix_space && text[0] != ' ') {
            tmp->n = 0;
            rc = tk_buf_put(tmp, " ", 1);
            if (rc == ZERO_OK)
                rc = tk_buf_put(tmp, text, p->len);
            if (rc == ZERO_OK)
                rc = split_piece(pt, tmp->p, tmp->n, p->first, md, pw, out);
        } else {
            rc = split_piece(pt, text, p->len, p->first, md, pw, out);
        }
        if (rc)
            return rc;
    }
    return ZERO_OK;
}

int tk_pretokenize(const struct tk_pretokenizer *pt, struct tk_pieces *l, struct tk_pieces *scratch,
                   pcre2_match_data *md)
{
    struct pass_work pw = {0};
    struct tk_buf tmp = {0};
    int rc = ZERO_OK;
    const size_t steps = pt->kind == PT_SEQUENCE ? pt->n_items : 1;
    for (size_t s = 0; rc == ZERO_OK && s < steps; s++) {
        const struct tk_pretokenizer *step = pt->kind == PT_SEQUENCE ? pt->items[s] : pt;
        if (step->kind == PT_SEQUENCE) {
            rc = tk_pretokenize(step, l, scratch, md);
            continue;
        }
        rc = pass(step, l, scratch, md, &pw, &tmp);
        struct tk_pieces t = *l;
        *l = *scratch;
        *scratch = t;
    }
    free(pw.spans);
    free(pw.ranges);
    tk_buf_free(&tmp);
    return rc;
}

void tk_pretokenizer_free(struct tk_pretokenizer *pt)
{
    if (!pt)
        return;
    for (size_t i = 0; i < pt->n_items; i++)
        tk_pretokenizer_free(pt->items[i]);
    free(pt->items);
    pcre2_code_free(pt->re);
    free(pt);
}

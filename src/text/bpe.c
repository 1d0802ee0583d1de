/* The BPE model: a vocabulary, merges by rank, unknown characters as <0xNN> bytes or
 * the unk token. A word's merges come off a priority queue (lowest rank, then leftmost,
 * as HF's Word::merge_all takes them), so a word of n characters costs O(n log n) and
 * one long word (a file with no pre-tokenizer) is no quadratic rescan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/text_internal.h"

struct tk_symbol {
    int32_t id;
    int32_t prev, next; /* neighbours in the word, -1 at the ends */
    uint32_t len;       /* bytes of the word it covers; 0 once merged into its left */
};

struct tk_queued {
    int32_t rank, merged;
    uint32_t pos; /* the left symbol */
};

static int oom(const struct tk_where *w, struct zero_error *err)
{
    return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", w->file);
}

static int load_vocab(const struct tk_where *w, json_t *vocab, struct tk_bpe *bpe,
                      struct zero_error *err)
{
    struct tk_where k = tk_where_key(w, "vocab");
    if (!json_is_object(vocab))
        return tk_fail(&k, err, ZERO_EFORMAT, "expected an object of token: id");
    const char *key;
    json_t *v;
    bpe->max_id = -1;
    json_object_foreach(vocab, key, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= INT32_MAX) {
            struct tk_where t = tk_where_key(&k, key);
            return tk_fail(&t, err, ZERO_EFORMAT, "expected an id in 0..%d", INT32_MAX - 1);
        }
        const int32_t id = (int32_t)json_integer_value(v);
        if (tk_strmap_put(&bpe->vocab, key, strlen(key), id))
            return oom(w, err);
        if (id > bpe->max_id)
            bpe->max_id = id;
    }
    return ZERO_OK;
}

/* A merge's two halves: "a b" (split at the first space) or ["a", "b"]. */
static int merge_halves(const struct tk_where *w, json_t *m, const char **a, size_t *an,
                        const char **b, size_t *bn, struct zero_error *err)
{
    if (json_is_string(m)) {
        const char *s = json_string_value(m), *sp = strchr(s, ' ');
        if (!sp)
            return tk_fail(w, err, ZERO_EFORMAT, "\"%s\" is not two tokens \"a b\"", s);
        *a = s, *an = (size_t)(sp - s), *b = sp + 1, *bn = strlen(sp + 1);
        return ZERO_OK;
    }
    if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
        json_is_string(json_array_get(m, 1))) {
        *a = json_string_value(json_array_get(m, 0)), *an = strlen(*a);
        *b = json_string_value(json_array_get(m, 1)), *bn = strlen(*b);
        return ZERO_OK;
    }
    return tk_fail(w, err, ZERO_EFORMAT, "expected \"a b\" or [\"a\", \"b\"]");
}

static int load_merges(const struct tk_where *w, json_t *merges, struct tk_bpe *bpe,
                       struct zero_error *err)
{
    struct tk_where k = tk_where_key(w, "merges");
    if (!merges || json_is_null(merges))
        return ZERO_OK;
    if (!json_is_array(merges))
        return tk_fail(&k, err, ZERO_EFORMAT, "expected an array");
    if (json_array_size(merges) >= INT32_MAX)
        return tk_fail(&k, err, ZERO_EFORMAT, "too many merges");
    struct tk_buf joined = {0};
    int rc = ZERO_OK;
    for (size_t i = 0; rc == ZERO_OK && i < json_array_size(merges); i++) {
        struct tk_where wi = tk_where_index(&k, i);
        const char *a = NULL, *b = NULL;
        size_t an = 0, bn = 0;
        if ((rc = merge_halves(&wi, json_array_get(merges, i), &a, &an, &b, &bn, err)))
            break;
        joined.n = 0;
        if (tk_buf_put(&joined, a, an) || tk_buf_put(&joined, b, bn)) {
            rc = oom(w, err);
            break;
        }
        const int32_t left = tk_strmap_get(&bpe->vocab, a, an),
                      right = tk_strmap_get(&bpe->vocab, b, bn),
                      merged = tk_strmap_get(&bpe->vocab, joined.p, joined.n);
        const char *missing = left < 0 ? a : right < 0 ? b : merged < 0 ? joined.p : NULL;
        const size_t missing_len = left < 0 ? an : right < 0 ? bn : joined.n;
        if (missing)
            rc = tk_fail(&wi, err, ZERO_EFORMAT, "\"%.*s\" is not in model.vocab", (int)missing_len,
                         missing);
        else if (tk_merges_put(&bpe->merges, left, right, (int32_t)i, merged))
            rc = oom(w, err);
    }
    tk_buf_free(&joined);
    return rc;
}

/* Options HF has that this model does not implement must be off. */
static int check_unsupported(const struct tk_where *w, json_t *model, struct zero_error *err)
{
    json_t *dropout = json_object_get(model, "dropout");
    if (dropout && !json_is_null(dropout) &&
        !(json_is_number(dropout) && json_number_value(dropout) == 0.0)) {
        struct tk_where k = tk_where_key(w, "dropout");
        return tk_fail(&k, err, ZERO_ENOTSUP, "BPE dropout (random merges) is not supported");
    }
    static const char *const affixes[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const char *s;
        if (tk_get_string(w, model, affixes[i], &s, err))
            return err->code;
        if (s && s[0]) {
            struct tk_where k = tk_where_key(w, affixes[i]);
            return tk_fail(&k, err, ZERO_ENOTSUP, "\"%s\" is not supported (only null)", s);
        }
    }
    return ZERO_OK;
}

int tk_bpe_load(const struct tk_where *w, json_t *model, struct tk_bpe *bpe, struct zero_error *err)
{
    memset(bpe, 0, sizeof *bpe);
    bpe->unk = -1;
    const char *type, *unk;
    if (!json_is_object(model))
        return tk_fail(w, err, ZERO_EFORMAT, "expected an object");
    if (tk_get_string(w, model, "type", &type, err))
        return err->code;
    if (type && strcmp(type, "BPE") != 0)
        return tk_fail(w, err, ZERO_ENOTSUP, "model \"%s\" is not supported (BPE is)", type);
    if (check_unsupported(w, model, err) ||
        load_vocab(w, json_object_get(model, "vocab"), bpe, err) ||
        load_merges(w, json_object_get(model, "merges"), bpe, err) ||
        tk_get_bool(w, model, "fuse_unk", 0, &bpe->fuse_unk, err) ||
        tk_get_bool(w, model, "byte_fallback", 0, &bpe->byte_fallback, err) ||
        tk_get_bool(w, model, "ignore_merges", 0, &bpe->ignore_merges, err) ||
        tk_get_string(w, model, "unk_token", &unk, err))
        return err->code;
    if (unk && (bpe->unk = tk_strmap_get(&bpe->vocab, unk, strlen(unk))) < 0) {
        struct tk_where k = tk_where_key(w, "unk_token");
        return tk_fail(&k, err, ZERO_EFORMAT, "\"%s\" is not in model.vocab", unk);
    }
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", (unsigned)b);
        bpe->byte_id[b] = tk_strmap_get(&bpe->vocab, name, 6);
    }
    return ZERO_OK;
}

void tk_bpe_free(struct tk_bpe *bpe)
{
    tk_strmap_free(&bpe->vocab);
    tk_merges_free(&bpe->merges);
}

/* ---- encoding one word ---- */

static int before(const struct tk_queued *x, const struct tk_queued *y)
{
    return x->rank < y->rank || (x->rank == y->rank && x->pos < y->pos);
}

static int heap_push(struct tk_bpe_work *w, size_t *n, struct tk_queued q)
{
    if (*n == w->heap_cap) {
        size_t cap = w->heap_cap ? 2 * w->heap_cap : 64;
        struct tk_queued *h = realloc(w->heap, cap * sizeof *h);
        if (!h)
            return ZERO_ENOMEM;
        w->heap = h;
        w->heap_cap = cap;
    }
    struct tk_queued *h = w->heap;
    size_t i = (*n)++;
    while (i > 0 && before(&q, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = q;
    return ZERO_OK;
}

static struct tk_queued heap_pop(struct tk_queued *h, size_t *n)
{
    struct tk_queued top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && before(&h[c + 1], &h[c]))
            c++;
        if (!before(&h[c], &last))
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = last;
    return top;
}

static int add_symbol(struct tk_bpe_work *w, size_t *n, int32_t id, uint32_t len)
{
    if (*n == w->sym_cap) {
        size_t cap = w->sym_cap ? 2 * w->sym_cap : 64;
        struct tk_symbol *s = realloc(w->sym, cap * sizeof *s);
        if (!s)
            return ZERO_ENOMEM;
        w->sym = s;
        w->sym_cap = cap;
    }
    w->sym[*n] =
        (struct tk_symbol){.id = id, .prev = (int32_t)*n - 1, .next = (int32_t)*n + 1, .len = len};
    ++*n;
    return ZERO_OK;
}

/* The word's characters as symbols (HF's BPE::merge_word before merge_all). */
static int initial_symbols(const struct tk_bpe *bpe, const char *word, size_t len,
                           struct tk_bpe_work *w, size_t *n)
{
    *n = 0;
    int32_t unk_len = 0; /* an unk waiting to be added (fuse_unk grows it) */
    for (size_t i = 0; i < len;) {
        size_t k = tk_utf8_valid_len((const unsigned char *)word + i, len - i);
        if (!k)
            k = 1; /* not reached: the text was repaired */
        const int32_t id = tk_strmap_get(&bpe->vocab, word + i, k);
        if (id >= 0) {
            if (unk_len && add_symbol(w, n, bpe->unk, (uint32_t)unk_len))
                return ZERO_ENOMEM;
            unk_len = 0;
            if (add_symbol(w, n, id, (uint32_t)k))
                return ZERO_ENOMEM;
        } else {
            int all_bytes = bpe->byte_fallback;
            for (size_t b = 0; all_bytes && b < k; b++)
                all_bytes = bpe->byte_id[(unsigned char)word[i + b]] >= 0;
            if (all_bytes) {
                /* HF adds the bytes without adding a waiting unk first */
                for (size_t b = 0; b < k; b++)
                    if (add_symbol(w, n, bpe->byte_id[(unsigned char)word[i + b]], 1))
                        return ZERO_ENOMEM;
            } else if (bpe->unk >= 0) {
                if (unk_len && !bpe->fuse_unk && add_symbol(w, n, bpe->unk, (uint32_t)unk_len))
                    return ZERO_ENOMEM;
                unk_len = (unk_len && bpe->fuse_unk ? unk_len : 0) + (int32_t)k;
            } /* no unk token: HF drops the character */
        }
        i += k;
    }
    if (unk_len && add_symbol(w, n, bpe->unk, (uint32_t)unk_len))
        return ZERO_ENOMEM;
    if (*n)
        w->sym[*n - 1].next = -1;
    return ZERO_OK;
}

static int queue_pair(const struct tk_bpe *bpe, struct tk_bpe_work *w, size_t *nq, int32_t left)
{
    const struct tk_symbol *s = w->sym;
    if (left < 0 || s[left].next < 0)
        return ZERO_OK;
    const struct tk_merge_entry *m = tk_merges_get(&bpe->merges, s[left].id, s[s[left].next].id);
    if (!m)
        return ZERO_OK;
    return heap_push(
        w, nq, (struct tk_queued){.rank = m->rank, .merged = m->merged, .pos = (uint32_t)left});
}

int tk_bpe_encode_word(const struct tk_bpe *bpe, const char *word, size_t len,
                       struct tk_bpe_work *w, struct zero_token_buf *out)
{
    if (bpe->ignore_merges) {
        const int32_t id = tk_strmap_get(&bpe->vocab, word, len);
        if (id >= 0)
            return tk_ids_push(out, id);
    }
    size_t n, nq = 0;
    if (initial_symbols(bpe, word, len, w, &n))
        return ZERO_ENOMEM;
    for (size_t i = 0; i + 1 < n; i++)
        if (queue_pair(bpe, w, &nq, (int32_t)i))
            return ZERO_ENOMEM;
    struct tk_symbol *s = w->sym;
    while (nq) {
        const struct tk_queued top = heap_pop(w->heap, &nq);
        struct tk_symbol *left = &s[top.pos];
        if (left->len == 0 || left->next < 0)
            continue;
        /* an entry made before a neighbour changed no longer names this pair */
        const struct tk_merge_entry *m = tk_merges_get(&bpe->merges, left->id, s[left->next].id);
        if (!m || m->merged != top.merged)
            continue;
        struct tk_symbol *right = &s[left->next];
        left->id = top.merged;
        left->len += right->len;
        left->next = right->next;
        right->len = 0;
        if (left->next >= 0)
            s[left->next].prev = (int32_t)top.pos;
        if (queue_pair(bpe, w, &nq, left->prev) || queue_pair(bpe, w, &nq, (int32_t)top.pos))
            return ZERO_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        if (s[i].len && tk_ids_push(out, s[i].id))
            return ZERO_ENOMEM;
    return ZERO_OK;
}

void tk_bpe_work_free(struct tk_bpe_work *w)
{
    free(w->sym);
    free(w->heap);
    memset(w, 0, sizeof *w);
}

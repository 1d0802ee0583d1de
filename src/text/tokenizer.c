/* A tokenizer.json end to end: loading every component, encode (added tokens, then
 * normalizer, pre-tokenizer, BPE, post-processor, HF's order) and decode. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file_replace.h"
#include "text/text_internal.h"

int zero_text_file_read(const char *path, char **bytes, size_t *len, struct zero_error *err)
{
    *bytes = NULL;
    *len = 0;
    int fd = zero_input_open(path, err);
    if (fd < 0)
        return err->code;
    struct tk_buf b = {0};
    for (;;) {
        if (tk_buf_reserve(&b, 1 << 16)) {
            close(fd);
            tk_buf_free(&b);
            return zero_fail(err, ZERO_ENOMEM, "%s: out of memory reading it", path);
        }
        const ssize_t got = read(fd, b.p + b.n, b.cap - b.n - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            const int e = errno;
            close(fd);
            tk_buf_free(&b);
            return zero_fail(err, ZERO_EIO, "%s: read failed: %s", path, strerror(e));
        }
        if (got == 0)
            break;
        b.n += (size_t)got;
    }
    close(fd);
    b.p[b.n] = '\0';
    *bytes = b.p;
    *len = b.n;
    return ZERO_OK;
}

/* ---- loading ---- */

/* Keys of HF's format that change what encode returns and that this reader does not do. */
static int check_unsupported(const struct tk_where *w, json_t *root, struct zero_error *err)
{
    static const char *const keys[] = {"truncation", "padding"};
    for (size_t i = 0; i < 2; i++) {
        json_t *v = json_object_get(root, keys[i]);
        if (v && !json_is_null(v)) {
            struct tk_where k = tk_where_key(w, keys[i]);
            return tk_fail(&k, err, ZERO_ENOTSUP,
                           "is set; only null is supported (encode neither truncates nor pads)");
        }
    }
    return ZERO_OK;
}

/* The id -> string table of the vocabulary and the added tokens (those win, as in HF). */
static int build_id_table(struct zero_tokenizer *tok)
{
    int32_t max_id = tok->bpe.max_id;
    for (size_t i = 0; i < tok->added.n; i++)
        if (tok->added.tok[i].id > max_id)
            max_id = tok->added.tok[i].id;
    tok->vocab_size = (int64_t)max_id + 1;
    tok->token = calloc((size_t)tok->vocab_size + 1, sizeof *tok->token);
    tok->special = calloc((size_t)tok->vocab_size + 1, 1);
    if (!tok->token || !tok->special)
        return ZERO_ENOMEM;
    const struct tk_strmap *v = &tok->bpe.vocab;
    for (int64_t e = 0; e < v->n; e++)
        tok->token[v->value[e]] = v->keys.p + v->key_off[e];
    for (size_t i = 0; i < tok->added.n; i++) {
        const struct tk_added_token *t = &tok->added.tok[i];
        tok->token[t->id] = t->content;
        tok->special[t->id] = (unsigned char)t->special;
        tok->has_normalized_added |= t->normalized;
    }
    return ZERO_OK;
}

static int load_root(struct zero_tokenizer *tok, json_t *root, struct zero_error *err)
{
    const struct tk_where top = {.file = tok->name, .path = ""};
    if (!json_is_object(root))
        return tk_fail(&top, err, ZERO_EFORMAT, "expected a JSON object");
    const struct tk_where model = tk_where_key(&top, "model"),
                          added = tk_where_key(&top, "added_tokens"),
                          norm = tk_where_key(&top, "normalizer"),
                          pre = tk_where_key(&top, "pre_tokenizer"),
                          post = tk_where_key(&top, "post_processor"),
                          dec = tk_where_key(&top, "decoder");
    if (!json_object_get(root, "model"))
        return tk_fail(&model, err, ZERO_EFORMAT, "missing: not a tokenizer.json");
    if (check_unsupported(&top, root, err) ||
        tk_bpe_load(&model, json_object_get(root, "model"), &tok->bpe, err) ||
        tk_added_load(&added, json_object_get(root, "added_tokens"), &tok->added, err) ||
        tk_normalizer_load(&norm, json_object_get(root, "normalizer"), &tok->normalizer, err) ||
        tk_pretokenizer_load(&pre, json_object_get(root, "pre_tokenizer"), &tok->pretokenizer,
                             err) ||
        tk_post_load(&post, json_object_get(root, "post_processor"), tok, &tok->post, err) ||
        tk_decoder_load(&dec, json_object_get(root, "decoder"), &tok->decoder, err))
        return err->code;
    if (build_id_table(tok))
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", tok->name);
    return ZERO_OK;
}

int zero_tokenizer_load_json(struct zero_tokenizer **out, const char *json, size_t len,
                             const char *name, struct zero_error *err)
{
    *out = NULL;
    struct zero_tokenizer *tok = calloc(1, sizeof *tok);
    if (tok)
        tok->name = strdup(name);
    if (!tok || !tok->name) {
        free(tok);
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", name);
    }
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    int rc = root ? load_root(tok, root, err)
                  : zero_fail(err, ZERO_EFORMAT, "%s: not JSON: line %d column %d: %s", name,
                              jerr.line, jerr.column, jerr.text);
    json_decref(root);
    if (rc) {
        zero_tokenizer_free(tok);
        return rc;
    }
    *out = tok;
    return ZERO_OK;
}

int zero_tokenizer_load(struct zero_tokenizer **tok, const char *path, struct zero_error *err)
{
    char *json;
    size_t len;
    *tok = NULL;
    if (zero_text_file_read(path, &json, &len, err))
        return err->code;
    int rc = zero_tokenizer_load_json(tok, json, len, path, err);
    free(json);
    return rc;
}

void zero_tokenizer_free(struct zero_tokenizer *tok)
{
    if (!tok)
        return;
    tk_bpe_free(&tok->bpe);
    tk_added_free(&tok->added);
    tk_normalizer_free(tok->normalizer);
    tk_pretokenizer_free(tok->pretokenizer);
    tk_post_free(tok->post);
    tk_decoder_free(tok->decoder);
    free(tok->token);
    free(tok->special);
    free(tok->name);
    free(tok);
}

int64_t zero_tokenizer_vocab_size(const struct zero_tokenizer *tok)
{
    return tok->vocab_size;
}

int32_t zero_tokenizer_token_id(const struct zero_tokenizer *tok, const char *token)
{
    for (size_t i = 0; i < tok->added.n; i++)
        if (strcmp(tok->added.tok[i].content, token) == 0)
            return tok->added.tok[i].id;
    return tk_strmap_get(&tok->bpe.vocab, token, strlen(token));
}

const char *zero_tokenizer_token(const struct zero_tokenizer *tok, int32_t id)
{
    return id >= 0 && id < tok->vocab_size ? tok->token[id] : NULL;
}

int32_t zero_tokenizer_eot(const struct zero_tokenizer *tok)
{
    static const char *const names[] = {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        for (size_t i = 0; i < tok->added.n; i++)
            if (tok->added.tok[i].special && strcmp(tok->added.tok[i].content, names[k]) == 0)
                return tok->added.tok[i].id;
    return -1;
}

/* ---- encode ---- */

/* The pieces of text after the added tokens and the normalizer: HF's
 * extract_and_normalize (non-normalized added tokens on the raw text, then the
 * normalizer on each rest, then the normalized added tokens). */
static int added_and_normalized(const struct zero_tokenizer *tok, const char *text, size_t n,
                                struct tk_pieces *out, struct tk_pieces *raw, struct tk_buf *norm)
{
    tk_pieces_reset(raw);
    tk_pieces_reset(out);
    if (tk_added_split(&tok->added, 0, text, n, 1, raw))
        return ZERO_ENOMEM;
    for (size_t i = 0; i < raw->n; i++) {
        const struct tk_piece *p = &raw->v[i];
        const char *s = raw->text.p + p->off;
        size_t len = p->len;
        if (p->id < 0 && tok->normalizer) {
            if (tk_normalize(tok->normalizer, s, len, norm))
                return ZERO_ENOMEM;
            s = norm->p, len = norm->n;
        }
        int rc = p->id >= 0                  ? tk_pieces_add(out, s, len, p->id, p->first)
                 : tok->has_normalized_added ? tk_added_split(&tok->added, 1, s, len, p->first, out)
                 : len                       ? tk_pieces_add(out, s, len, -1, p->first)
                                             : ZERO_OK;
        if (rc)
            return ZERO_ENOMEM;
    }
    return ZERO_OK;
}

int zero_tokenizer_encode(const struct zero_tokenizer *tok, const char *text, size_t len,
                          unsigned flags, struct zero_token_buf *out, int64_t *replaced,
                          struct zero_error *err)
{
    struct tk_buf clean = {0}, norm = {0};
    struct tk_pieces a = {0}, b = {0};
    struct tk_bpe_work work = {0};
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    int64_t bad = 0;
    const int64_t from = out->n;
    int rc = md ? tk_utf8_repair(text ? text : "", len, &clean, &bad) : ZERO_ENOMEM;
    if (rc == ZERO_OK)
        rc = added_and_normalized(tok, clean.p, clean.n, &a, &b, &norm);
    if (rc == ZERO_OK && tok->pretokenizer)
        rc = tk_pretokenize(tok->pretokenizer, &a, &b, md);
    for (size_t i = 0; rc == ZERO_OK && i < a.n; i++)
        rc = a.v[i].id >= 0
                 ? tk_ids_push(out, a.v[i].id)
                 : tk_bpe_encode_word(&tok->bpe, a.text.p + a.v[i].off, a.v[i].len, &work, out);
    if (rc == ZERO_OK && (flags & ZERO_ENCODE_ADD_SPECIAL) && tok->post)
        rc = tk_post_apply(tok->post, out, from);
    tk_buf_free(&clean);
    tk_buf_free(&norm);
    tk_pieces_free(&a);
    tk_pieces_free(&b);
    tk_bpe_work_free(&work);
    pcre2_match_data_free(md);
    if (replaced)
        *replaced = bad;
    if (rc) {
        out->n = from;
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory encoding %zu bytes", tok->name, len);
    }
    return ZERO_OK;
}

int zero_tokenizer_encode_file(const struct zero_tokenizer *tok, const char *path,
                               struct zero_tokens *out, struct zero_error *err)
{
    memset(out, 0, sizeof *out);
    char *text;
    size_t len;
    if (zero_text_file_read(path, &text, &len, err))
        return err->code;
    struct zero_token_buf ids = {0};
    int rc = zero_tokenizer_encode(tok, text, len, 0, &ids, NULL, err);
    free(text);
    if (rc == ZERO_OK && ids.n == 0)
        rc = zero_fail(err, ZERO_EFORMAT, "%s: no tokens (an empty file?)", path);
    else if (rc)
        zero_error_wrap(err, "%s: ", path);
    if (rc) {
        zero_token_buf_free(&ids);
        return rc;
    }
    out->ids = ids.ids;
    out->n = ids.n;
    return ZERO_OK;
}

/* ---- decode ---- */

int zero_tokenizer_decode(const struct zero_tokenizer *tok, const int32_t *ids, int64_t n,
                          unsigned flags, char **text, size_t *len, struct zero_error *err)
{
    *text = NULL;
    *len = 0;
    const char **tokens = malloc(((size_t)(n > 0 ? n : 0) + 1) * sizeof *tokens);
    struct tk_buf out = {0};
    size_t k = 0;
    int rc = tokens ? ZERO_OK : ZERO_ENOMEM;
    for (int64_t i = 0; rc == ZERO_OK && i < n; i++) {
        const char *t = zero_tokenizer_token(tok, ids[i]);
        if (t && !((flags & ZERO_DECODE_SKIP_SPECIAL) && tok->special[ids[i]]))
            tokens[k++] = t;
    }
    if (rc == ZERO_OK)
        rc = tk_decode(tok->decoder, tokens, k, &out);
    free(tokens);
    if (rc) {
        tk_buf_free(&out);
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory decoding %lld ids", tok->name,
                         (long long)n);
    }
    *text = out.p;
    *len = out.n;
    return ZERO_OK;
}

/* What the files of src/text/ share: buffers, the string table, the pieces a text is
 * cut into, and each component of a tokenizer.json as a tagged struct.
 *
 * One file per component family, its loader and its pass side by side (as src/nn
 * keeps forward and backward together):
 *   utf8.c         decoding, the lossy repair of invalid input, character classes
 *   table.c        string -> id and (id, id) -> merge hash tables
 *   byte_level.c   GPT-2's byte <-> character map
 *   normalizer.c   NFC... Replace, Prepend, Strip, Sequence
 *   pretokenizer.c ByteLevel, Split, Metaspace, Digits, Sequence
 *   bpe.c          the BPE model: vocabulary, merges by rank, byte fallback
 *   added_tokens.c the added tokens, matched before everything else
 *   post_processor.c, decoder.c
 *   tokenizer.c    loading tokenizer.json, encode and decode end to end */
#ifndef ZERO_TEXT_INTERNAL_H
#define ZERO_TEXT_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <jansson.h>
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

#include "zero/error.h"
#include "zero/tokenizer.h"

/* ---- a growing byte buffer ---- */
struct tk_buf {
    char *p; /* (n), room for cap; NUL after the n bytes once tk_buf_nul ran */
    size_t n, cap;
};
int tk_buf_reserve(struct tk_buf *b, size_t extra); /* 0 or ZERO_ENOMEM */
int tk_buf_put(struct tk_buf *b, const void *p, size_t n);
int tk_buf_nul(struct tk_buf *b); /* a NUL after the bytes, not counted in n */
void tk_buf_free(struct tk_buf *b);
int tk_ids_push(struct zero_token_buf *b, int32_t id);

/* ---- utf8.c ---- */
/* The length of the valid UTF-8 sequence at p (n bytes left), 0 if it is not one. */
size_t tk_utf8_valid_len(const unsigned char *p, size_t n);
/* The code point at p (a valid sequence of tk_utf8_valid_len bytes). */
uint32_t tk_utf8_decode(const unsigned char *p, size_t len);
/* Writes code point c, returns its length (1..4). */
size_t tk_utf8_encode(uint32_t c, char out[4]);
/* text with each maximal invalid subpart replaced by U+FFFD; *replaced counts them. */
int tk_utf8_repair(const char *text, size_t n, struct tk_buf *out, int64_t *replaced);
/* Unicode's White_Space, as Rust's char::is_whitespace; letters/numbers/'_'. */
int tk_is_whitespace(uint32_t c);
int tk_is_word_char(uint32_t c);

/* ---- table.c: string -> int32 ---- */
struct tk_strmap {
    struct tk_buf keys; /* every key, NUL-terminated, back to back */
    uint32_t *key_off;  /* (n) offset of entry i's key in keys */
    uint32_t *key_len;  /* (n) */
    int32_t *value;     /* (n) */
    int64_t *slot;      /* (slots) entry index or -1; slots a power of two >= 2 n */
    int64_t n, cap, slots;
};
/* Sets key -> value (an existing key gets the new value). */
int tk_strmap_put(struct tk_strmap *m, const char *key, size_t len, int32_t value);
/* The value or -1. */
int32_t tk_strmap_get(const struct tk_strmap *m, const char *key, size_t len);
void tk_strmap_free(struct tk_strmap *m);

/* (left id, right id) -> (rank, merged id) */
struct tk_merge_entry {
    uint64_t key; /* left << 32 | right; UINT64_MAX = empty */
    int32_t rank, merged;
};
struct tk_merges {
    struct tk_merge_entry *slot; /* (slots), a power of two */
    int64_t n, slots;
};
int tk_merges_put(struct tk_merges *m, int32_t left, int32_t right, int32_t rank, int32_t merged);
/* The entry of the pair or NULL. */
const struct tk_merge_entry *tk_merges_get(const struct tk_merges *m, int32_t left, int32_t right);
void tk_merges_free(struct tk_merges *m);

/* ---- byte_level.c ---- */
/* The character GPT-2 writes for byte b, as UTF-8 (1 or 2 bytes). */
const char *tk_byte_char(unsigned char b, size_t *len);
/* The byte of character c, or -1 when c stands for none. */
int tk_char_byte(uint32_t c);

/* ---- the pieces a text is cut into ---- */
struct tk_piece {
    size_t off, len; /* in the owning list's text */
    int32_t id;      /* >= 0: an added token, final; -1: still to tokenize */
    int first;       /* the piece begins at the original text's first byte */
};
struct tk_pieces {
    struct tk_piece *v; /* (n), room for cap */
    size_t n, cap;
    struct tk_buf text;
};
int tk_pieces_add(struct tk_pieces *l, const char *p, size_t len, int32_t id, int first);
void tk_pieces_reset(struct tk_pieces *l);
void tk_pieces_free(struct tk_pieces *l);

/* ---- loading: where in the file we are ---- */
struct tk_where {
    const char *file; /* the file's name */
    char path[256];   /* its JSON path: "pre_tokenizer.pretokenizers[1]" */
};
int tk_fail(const struct tk_where *w, struct zero_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* w extended by ".key" or "[i]". */
struct tk_where tk_where_key(const struct tk_where *w, const char *key);
struct tk_where tk_where_index(const struct tk_where *w, size_t i);
/* Members: a missing key gives the default; a wrong type fails naming path.key. */
int tk_get_bool(const struct tk_where *w, json_t *obj, const char *key, int dflt, int *out,
                struct zero_error *err);
int tk_get_string(const struct tk_where *w, json_t *obj, const char *key, const char **out,
                  struct zero_error *err); /* NULL when missing or null */
int tk_get_type(const struct tk_where *w, json_t *obj, const char **type, struct zero_error *err);
/* A kind of pipeline component (normalizer, pre-tokenizer, decoder): how one is read
 * from its JSON object, whose "type" names the variant, and freed. */
struct tk_component {
    size_t size; /* bytes of one, zeroed before load_one */
    int (*load_one)(const struct tk_where *w, json_t *j, const char *type, void *obj,
                    struct zero_error *err);
    void (*free)(void *obj);
};
/* j as one component of kind c in *out: NULL for a missing or null j. */
int tk_component_load(const struct tk_component *c, const struct tk_where *w, json_t *j, void **out,
                      struct zero_error *err);
/* The items of a Sequence component (j[key], an array), each one of kind c, in *items
 * (n of them; an item that is null is left out). */
int tk_load_items(const struct tk_component *c, const struct tk_where *w, json_t *j,
                  const char *key, void ***items, size_t *n, struct zero_error *err);
/* A "pattern" member: {"String": s} or {"Regex": r}, compiled as a regex either way. */
int tk_get_pattern(const struct tk_where *w, json_t *obj, const char *key, pcre2_code **re,
                   struct zero_error *err);
int tk_compile_regex(const struct tk_where *w, const char *pattern, size_t len, pcre2_code **re,
                     struct zero_error *err);
/* Every match of re in text (n bytes), in order, as [start, end) pairs appended to
 * *spans (2 per match); empty matches are skipped. */
int tk_regex_matches(const pcre2_code *re, pcre2_match_data *md, const char *text, size_t n,
                     size_t **spans, size_t *n_spans, size_t *cap);

/* ---- normalizer.c ---- */
struct tk_normalizer;
int tk_normalizer_load(const struct tk_where *w, json_t *j, struct tk_normalizer **out,
                       struct zero_error *err);
/* out = the normalized text (out is reset first). */
int tk_normalize(const struct tk_normalizer *nz, const char *text, size_t n, struct tk_buf *out);
void tk_normalizer_free(struct tk_normalizer *nz);

/* ---- pretokenizer.c ---- */
struct tk_pretokenizer;
int tk_pretokenizer_load(const struct tk_where *w, json_t *j, struct tk_pretokenizer **out,
                         struct zero_error *err);
/* Splits every piece of *l still to tokenize (added tokens stay as they are); *l and
 * *scratch swap contents as the passes go. */
int tk_pretokenize(const struct tk_pretokenizer *pt, struct tk_pieces *l, struct tk_pieces *scratch,
                   pcre2_match_data *md);
void tk_pretokenizer_free(struct tk_pretokenizer *pt);

/* ---- bpe.c ---- */
struct tk_bpe {
    struct tk_strmap vocab;
    struct tk_merges merges;
    int32_t unk;          /* -1: none */
    int fuse_unk;         /* consecutive unknown characters become one unk */
    int byte_fallback;    /* an unknown character becomes its <0xNN> tokens */
    int ignore_merges;    /* a word that is a token is that token, merges or not */
    int32_t byte_id[256]; /* the <0xNN> tokens, -1 where absent */
    int32_t max_id;       /* the vocabulary's largest id */
};
int tk_bpe_load(const struct tk_where *w, json_t *model, struct tk_bpe *bpe,
                struct zero_error *err);
/* Scratch of one encode call: the word's symbols and the merge queue. */
struct tk_bpe_work {
    struct tk_symbol *sym;
    size_t sym_cap;
    struct tk_queued *heap;
    size_t heap_cap;
};
/* Appends the ids of word (len bytes of UTF-8) to out. */
int tk_bpe_encode_word(const struct tk_bpe *bpe, const char *word, size_t len,
                       struct tk_bpe_work *work, struct zero_token_buf *out);
void tk_bpe_work_free(struct tk_bpe_work *work);
void tk_bpe_free(struct tk_bpe *bpe);

/* ---- added_tokens.c ---- */
struct tk_added_token {
    char *content;
    size_t len;
    int32_t id;
    int special, lstrip, rstrip, single_word, normalized;
};
struct tk_added {
    struct tk_added_token *tok; /* (n) */
    size_t n;
    /* candidates by first byte: tok indices, longest first */
    uint32_t *by_byte;   /* (n) */
    uint32_t first[257]; /* tokens starting with byte b: by_byte[first[b] .. first[b+1]) */
};
int tk_added_load(const struct tk_where *w, json_t *arr, struct tk_added *a,
                  struct zero_error *err);
/* Cuts text into added tokens of the given normalized flag and the rest, appended to *out. */
int tk_added_split(const struct tk_added *a, int normalized, const char *text, size_t n, int first,
                   struct tk_pieces *out);
void tk_added_free(struct tk_added *a);

/* ---- post_processor.c ---- */
struct tk_post;
int tk_post_load(const struct tk_where *w, json_t *j, const struct zero_tokenizer *tok,
                 struct tk_post **out, struct zero_error *err);
/* The single-sequence template around out's ids [from, n). */
int tk_post_apply(const struct tk_post *pp, struct zero_token_buf *out, int64_t from);
void tk_post_free(struct tk_post *pp);

/* ---- decoder.c ---- */
struct tk_decoder;
int tk_decoder_load(const struct tk_where *w, json_t *j, struct tk_decoder **out,
                    struct zero_error *err);
/* The tokens' strings (n of them, each NUL-terminated) decoded to text. */
int tk_decode(const struct tk_decoder *d, const char *const *tokens, size_t n, struct tk_buf *out);
void tk_decoder_free(struct tk_decoder *d);

/* ---- tokenizer.c ---- */
struct zero_tokenizer {
    char *name;
    struct tk_bpe bpe;
    struct tk_added added;
    struct tk_normalizer *normalizer;
    struct tk_pretokenizer *pretokenizer;
    struct tk_post *post;
    struct tk_decoder *decoder;
    char **token;           /* (vocab_size) the string of each id, NULL for a gap */
    unsigned char *special; /* (vocab_size) 1 for a special added token */
    int64_t vocab_size;
    int has_normalized_added; /* an added token to match after normalization */
};

#endif

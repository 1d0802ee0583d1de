/* A model's own tokenizer: Hugging Face's tokenizer.json, encode and decode, in C.
 *
 * What a tokenizer.json may hold (anything else is refused, naming it and its JSON path):
 *   model            BPE: byte-level (GPT-2, Llama 3, SmolLM2, Qwen2) or SentencePiece-style
 *                    with byte_fallback, <0xNN> tokens and an unk token (Llama 2, TinyLlama);
 *                    merges as "a b" strings or ["a", "b"] pairs, ignore_merges
 *   added_tokens     matched in the text before anything else (leftmost, longest), with
 *                    their lstrip / rstrip / single_word / normalized flags
 *   normalizer       NFC, NFKC, NFD, NFKD (utf8proc), Replace, Prepend, Strip, Sequence
 *   pre_tokenizer    ByteLevel (add_prefix_space, use_regex), Split (the file's regex, run
 *                    by PCRE2, every behavior, invert), Metaspace, Digits, Sequence
 *   post_processor   ByteLevel, TemplateProcessing (single sequences), Sequence
 *   decoder          ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace, Sequence
 *
 * Invalid UTF-8 in the text to encode: each maximal invalid subpart becomes U+FFFD, as
 * Python's bytes.decode("utf-8", "replace") and Rust's String::from_utf8_lossy make it
 * (HF tokenizers only ever sees valid strings; this is the string Python would hand it).
 *
 * A loaded tokenizer is never written again: any number of threads may encode and
 * decode with it at once. Encode is O(n log n) in the text's length (the merges of a
 * word come off a priority queue), decode O(n). */
#ifndef ZERO_TOKENIZER_H
#define ZERO_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "zero/error.h"
#include "zero/tokens.h"

#ifdef __cplusplus
extern "C" {
#endif

struct zero_tokenizer;

/* Reads path; errors name the file and the JSON path of what is wrong
 * ("tok.json: pre_tokenizer.pretokenizers[1]: unknown pre-tokenizer type \"Foo\""). */
int zero_tokenizer_load(struct zero_tokenizer **tok, const char *path, struct zero_error *err);
/* The same from JSON text in memory; name stands for the file in messages. */
int zero_tokenizer_load_json(struct zero_tokenizer **tok, const char *json, size_t len,
                             const char *name, struct zero_error *err);
void zero_tokenizer_free(struct zero_tokenizer *tok);

/* One more than the largest id of the vocabulary and the added tokens. */
int64_t zero_tokenizer_vocab_size(const struct zero_tokenizer *tok);
/* The id of a token's string, or -1. */
int32_t zero_tokenizer_token_id(const struct zero_tokenizer *tok, const char *token);
/* The string of an id (NUL-terminated), or NULL where no token has that id. */
const char *zero_tokenizer_token(const struct zero_tokenizer *tok, int32_t id);
/* The document boundary: the first special token named <|endoftext|>, <|end_of_text|>,
 * </s> or <eos>; -1 when there is none. */
int32_t zero_tokenizer_eot(const struct zero_tokenizer *tok);

/* A growing array of ids that encode appends to; zero it before the first use. */
struct zero_token_buf {
    int32_t *ids; /* (n), room for cap */
    int64_t n, cap;
};
/* Appends one id: 0 or ZERO_ENOMEM. */
int zero_token_buf_push(struct zero_token_buf *b, int32_t id);
void zero_token_buf_free(struct zero_token_buf *b);

enum {
    ZERO_ENCODE_ADD_SPECIAL = 1 /* the post-processor's tokens (HF's add_special_tokens) */
};
/* Appends the ids of text (len bytes) to out. replaced (may be NULL) gets how many
 * invalid UTF-8 sequences became U+FFFD. Fails only for memory. */
int zero_tokenizer_encode(const struct zero_tokenizer *tok, const char *text, size_t len,
                          unsigned flags, struct zero_token_buf *out, int64_t *replaced,
                          struct zero_error *err);

enum {
    ZERO_DECODE_SKIP_SPECIAL = 1 /* leave the special added tokens out (HF's skip_special_tokens) */
};
/* The text of ids (n): *text is malloc'ed, NUL-terminated, *len bytes without the NUL.
 * Ids that name no token are skipped, as HF does. */
int zero_tokenizer_decode(const struct zero_tokenizer *tok, const int32_t *ids, int64_t n,
                          unsigned flags, char **text, size_t *len, struct zero_error *err);

/* The text of path encoded (no special tokens added) as a token stream; fails naming
 * the file when it cannot be read or holds no tokens. */
int zero_tokenizer_encode_file(const struct zero_tokenizer *tok, const char *path,
                               struct zero_tokens *out, struct zero_error *err);

/* A whole file's bytes, malloc'ed, NUL after them (not counted in *len): what encode
 * reads. Errors name the file. */
int zero_text_file_read(const char *path, char **bytes, size_t *len, struct zero_error *err);

#ifdef __cplusplus
}
#endif

#endif

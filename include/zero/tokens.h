/* Token streams for language models, and the training sequences cut from them.
 *
 * Two file formats:
 *   - text: any file, byte-level tokens (token = byte value, 0..255), so UTF-8
 *     text is learned as its bytes and needs no tokenizer;
 *   - llm.c shards (.bin): a header of 256 little-endian int32 (header[0] = magic
 *     20240520, header[1] = version 1, header[2] = number of tokens), then that
 *     many uint16 tokens (GPT-2's vocabulary), as written by llm.c's data scripts;
 *   - the same layout with 32-bit tokens, for vocabularies over 65,536 (Llama 3's
 *     128,256): header[0] = magic 20261202, header[1] = version 1, header[2] = number
 *     of tokens, then that many little-endian uint32 tokens. The magic is libzero's
 *     own, not llm.c's, so neither reader takes one kind for the other.
 *
 * A split is a range of the stream; its sequence s (any s >= 0: epochs wrap) is
 * the window of T + 1 tokens starting at begin + (s mod W) * T, W = (end - begin
 * - 1) / T: inputs are its first T tokens and labels its last T. Sequence s is
 * always the same tokens, so runs do not depend on stage or world size when s
 * is the global sample index (zero_atom_first_sample). */
#ifndef ZERO_TOKENS_H
#define ZERO_TOKENS_H

#include <stdint.h>

#include "zero/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_LLMC_MAGIC 20240520
#define ZERO_LLMC_VERSION 1
#define ZERO_LLMC_HEADER_INTS 256
#define ZERO_TOKENS32_MAGIC 20261202 /* 32-bit tokens, version ZERO_TOKENS32_VERSION */
#define ZERO_TOKENS32_VERSION 1

struct zero_tokens {
    int32_t *ids; /* (n) */
    int64_t n;
};

/* The bytes of path as tokens. Fails if it cannot be read or is empty. */
int zero_tokens_read_text(struct zero_tokens *t, const char *path, struct zero_error *err);
/* An llm.c shard (uint16 tokens) or its 32-bit variant. Errors name the file and the
 * problem: wrong magic or version, a header or token count the file's size does not
 * match, a token >= vocab. */
int zero_tokens_read_llmc(struct zero_tokens *t, const char *path, int64_t vocab,
                          struct zero_error *err);
/* By name: "*.bin" is an llm.c shard, anything else text (which needs vocab >= 256). */
int zero_tokens_read(struct zero_tokens *t, const char *path, int64_t vocab,
                     struct zero_error *err);
/* Writes ids (n), each in 0..65535, as an llm.c shard. */
int zero_tokens_write_llmc(const char *path, const int32_t *ids, int64_t n, struct zero_error *err);
/* Writes ids (n), each in 0..vocab-1, as the shard a vocabulary of that size needs: an
 * llm.c shard (uint16) up to 65,536 tokens, the 32-bit variant above that. */
int zero_tokens_write(const char *path, const int32_t *ids, int64_t n, int64_t vocab,
                      struct zero_error *err);
void zero_tokens_free(struct zero_tokens *t);

/* A range [begin, end) of a stream that sequences of T tokens are cut from. */
struct zero_token_split {
    const int32_t *ids; /* the stream's ids; the split does not own them */
    int64_t begin, end;
    int64_t T;
    int64_t windows; /* W = (end - begin - 1) / T, at least 1 */
};

/* The range [begin, end) of t as a split for sequences of T tokens; fails (naming
 * what, the sizes and T) when it holds fewer than T + 1 tokens. */
int zero_token_split_init(struct zero_token_split *s, const struct zero_tokens *t, int64_t begin,
                          int64_t end, int64_t T, const char *what, struct zero_error *err);
/* tokens (n, T) and labels (n, T) of sequences first .. first + n - 1. */
void zero_token_split_fill(const struct zero_token_split *s, int64_t first, int64_t n,
                           int32_t *tokens, int32_t *labels);

#ifdef __cplusplus
}
#endif

#endif

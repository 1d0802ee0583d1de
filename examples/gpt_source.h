/* Where train_gpt's sequences come from: the addition task (generated) or token
 * files (text or llm.c shards) with a validation split. Sequence s is always
 * the same tokens, so the global sample index of an atom fixes a micro-batch. */
#ifndef EXAMPLES_GPT_SOURCE_H
#define EXAMPLES_GPT_SOURCE_H

#include <stdint.h>

#include "gpt_args.h"
#include "zero/addition.h"
#include "zero/tokenizer.h"
#include "zero/tokens.h"

struct gpt_source {
    int addition; /* 1: the addition task, 0: files */
    struct zero_addition task;
    struct zero_tokens train_tokens, val_tokens; /* val_tokens unused without --val-data */
    struct zero_token_split train, val;
    char what[512]; /* one line saying what the data is */
};

/* Reads the files (every rank reads its own copy) or sets up the task; text files are
 * encoded with tok where there is one (NULL: bytes). */
int gpt_source_open(struct gpt_source *s, const struct gpt_args *a,
                    const struct zero_tokenizer *tok, struct zero_error *err);
void gpt_source_close(struct gpt_source *s);

/* tokens (n, T), labels (n, T) of training (val = 0) or validation sequences
 * first .. first + n - 1; the addition task validates on held-out problems. */
void gpt_source_fill(const struct gpt_source *s, int val, int64_t T, int64_t first, int64_t n,
                     int32_t *tokens, int32_t *labels);

#endif

/* What a trained GPT does with its predictions: sampled text, and greedy
 * answers to held-out addition problems. Both run zero_engine_predict on whole
 * sequences of T tokens (the model's positions start at each sequence's first
 * token) and read the logits at the last real position. */
#ifndef EXAMPLES_GPT_GENERATE_H
#define EXAMPLES_GPT_GENERATE_H

#include <stdint.h>

#include "zero/addition.h"
#include "zero/zero.h"

/* The next token from logits (V): the argmax when temperature is 0, else a draw
 * from softmax(logits / temperature) over the top_k likeliest (0: all). */
int32_t gpt_pick_token(const float *logits, int64_t V, double temperature, int64_t top_k,
                       uint64_t *rng);

/* out (plen + n) = prompt (plen >= 1 tokens) continued by n tokens, one predict
 * per token on the last T tokens as context. Collective: every rank gets rank
 * 0's choices. */
int gpt_generate(struct zero_engine *e, int64_t T, int64_t V, const int32_t *prompt, int64_t plen,
                 int64_t n, double temperature, int64_t top_k, uint64_t seed, int32_t *out,
                 struct zero_comm *comm, struct zero_error *err);

#define GPT_SHOW 6

struct gpt_accuracy {
    int64_t correct, total;
    int nshown;
    char shown[GPT_SHOW][64]; /* rank 0's first answers: "482+017=0499 ok" */
};

/* Exact-match accuracy of greedy answers to held-out problems 0 .. problems-1:
 * rank r answers r, r + N, ..., m problems per predict. Collective. */
int gpt_addition_accuracy(struct zero_engine *e, const struct zero_addition *task, int64_t T,
                          int64_t V, int64_t m, int64_t problems, struct zero_comm *comm,
                          struct gpt_accuracy *acc, struct zero_error *err);

#endif

/* Sampling and greedy answers from a trained GPT (see gpt_generate.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program/example_agree.h"
#include "base/exact_math.h" /* libzero's exp: the same samples on every machine */
#include "gpt_generate.h"

/* Uniform in [0, 1) from splitmix64. */
static double next_uniform(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

static int descending(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

static int32_t argmax(const float *logits, int64_t V)
{
    int64_t best = 0;
    for (int64_t v = 1; v < V; v++)
        if (logits[v] > logits[best])
            best = v;
    return (int32_t)best;
}

int32_t gpt_pick_token(const float *logits, int64_t V, double temperature, int64_t top_k,
                       uint64_t *rng)
{
    if (temperature <= 0.0)
        return argmax(logits, V);
    /* the k-th largest logit is the cut; a failed copy samples from all */
    float cut = -INFINITY;
    float *sorted = top_k > 0 && top_k < V ? malloc((size_t)V * sizeof *sorted) : NULL;
    if (sorted) {
        memcpy(sorted, logits, (size_t)V * sizeof *sorted);
        qsort(sorted, (size_t)V, sizeof *sorted, descending);
        cut = sorted[top_k - 1];
        free(sorted);
    }
    const float max = logits[argmax(logits, V)];
    double total = 0.0;
    for (int64_t v = 0; v < V; v++)
        if (logits[v] >= cut)
            total += exact_exp(((double)logits[v] - max) / temperature);
    double u = next_uniform(rng) * total;
    int32_t last = 0;
    for (int64_t v = 0; v < V; v++) {
        if (logits[v] < cut)
            continue;
        last = (int32_t)v;
        u -= exact_exp(((double)logits[v] - max) / temperature);
        if (u < 0.0)
            break;
    }
    return last;
}

int gpt_generate(struct zero_engine *e, int64_t T, int64_t V, const int32_t *prompt, int64_t plen,
                 int64_t n, double temperature, int64_t top_k, uint64_t seed, int32_t *out,
                 struct zero_comm *comm, struct zero_error *err)
{
    int32_t *window = malloc((size_t)T * sizeof *window);     /* (T) */
    float *logits = malloc((size_t)(T * V) * sizeof *logits); /* (T, V) */
    int rc = window && logits ? ZERO_OK : zero_fail(err, ZERO_ENOMEM, "generation buffers");
    rc = example_agree(rc, err, comm);
    memcpy(out, prompt, (size_t)plen * sizeof *out);
    uint64_t rng = seed;
    for (int64_t len = plen; len < plen + n && !rc; len++) {
        /* the last min(len, T) tokens at positions 0.., the rest padding that the
         * causal mask keeps from mattering */
        const int64_t used = len < T ? len : T;
        for (int64_t t = 0; t < T; t++)
            window[t] = t < used ? out[len - used + t] : out[len - 1];
        struct zero_batch b = {.rows = T, .tokens = window};
        if ((rc = zero_engine_predict(e, &b, logits, err)))
            break;
        int32_t next = gpt_pick_token(logits + (used - 1) * V, V, temperature, top_k, &rng);
        zero_comm_bcast(comm, &next, sizeof next, 0);
        out[len] = next;
    }
    free(window);
    free(logits);
    return rc;
}

/* Greedy answers for the m problems starting at tokens (m, T), each holding its
 * prompt (plen tokens); the answer's D + 1 digits are written after the prompt. */
static int answer_batch(struct zero_engine *e, int64_t T, int64_t V, int64_t m, int plen,
                        int digits, int32_t *tokens, float *logits, struct zero_error *err)
{
    struct zero_batch b = {.rows = m * T, .tokens = tokens};
    for (int k = 0; k <= digits; k++) {
        int rc = zero_engine_predict(e, &b, logits, err);
        if (rc)
            return rc;
        for (int64_t j = 0; j < m; j++)
            tokens[j * T + plen + k] = argmax(logits + (j * T + plen + k - 1) * V, V);
    }
    return ZERO_OK;
}

/* Marks the answer of problem (a, b) in tokens (plen + D + 1) right or wrong. */
static int check_answer(const struct zero_addition *task, int64_t a, int64_t b,
                        const int32_t *tokens, struct gpt_accuracy *acc)
{
    const int plen = zero_addition_prompt_len(task->digits), len = plen + task->digits + 1;
    char want[3 * ZERO_ADDITION_MAX_DIGITS + 4], got[3 * ZERO_ADDITION_MAX_DIGITS + 4];
    zero_addition_format(task->digits, a, b, want);
    int ok = 1;
    for (int t = 0; t < len; t++) {
        got[t] = tokens[t] >= 32 && tokens[t] < 127 ? (char)tokens[t] : '?';
        ok &= t < plen || got[t] == want[t];
    }
    if (acc->nshown < GPT_SHOW)
        snprintf(acc->shown[acc->nshown++], sizeof acc->shown[0], "%.*s %s%.*s", len, got,
                 ok ? "ok" : "wrong, ", ok ? 0 : task->digits + 1, want + plen);
    return ok;
}

int gpt_addition_accuracy(struct zero_engine *e, const struct zero_addition *task, int64_t T,
                          int64_t V, int64_t m, int64_t problems, struct zero_comm *comm,
                          struct gpt_accuracy *acc, struct zero_error *err)
{
    int rank = zero_comm_rank(comm), world = zero_comm_size(comm);
    memset(acc, 0, sizeof *acc);
    const int plen = zero_addition_prompt_len(task->digits);
    int32_t *tokens = malloc((size_t)(m * T) * sizeof *tokens); /* (m, T) */
    int32_t *unused = malloc((size_t)(m * T) * sizeof *unused);
    float *logits = malloc((size_t)(m * T * V) * sizeof *logits); /* (m * T, V) */
    int rc = tokens && unused && logits ? ZERO_OK : zero_fail(err, ZERO_ENOMEM, "eval buffers");
    rc = example_agree(rc, err, comm);
    /* every rank runs the same number of predicts; problems past the end are padding */
    const int64_t rounds = (problems + world * m - 1) / (world * m);
    long long correct = 0, total = 0;
    for (int64_t round = 0; round < rounds && !rc; round++) {
        const int64_t first = (round * world + rank) * m;
        zero_addition_fill(task, 1, T, first, m, tokens, unused);
        if ((rc = answer_batch(e, T, V, m, plen, task->digits, tokens, logits, err)))
            break;
        for (int64_t j = 0; j < m && first + j < problems; j++) {
            int64_t a, b;
            zero_addition_operands(task, 1, first + j, &a, &b);
            correct += check_answer(task, a, b, tokens + j * T, acc);
            total++;
        }
    }
    int64_t sum[2] = {correct, total};
    zero_comm_allreduce_int64(comm, sum, 2, ZERO_COMM_SUM);
    acc->correct = sum[0];
    acc->total = sum[1];
    free(tokens);
    free(unused);
    free(logits);
    return rc;
}

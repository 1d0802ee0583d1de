/* train_gpt's data (see gpt_source.h). */
#include <stdio.h>
#include <string.h>

#include "gpt_source.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* A shard as it is; text as bytes, or encoded with the tokenizer. */
static int read_tokens(struct zero_tokens *t, const char *path, int64_t V,
                       const struct zero_tokenizer *tok, struct zero_error *err)
{
    if (tok && !ends_with(path, ".bin"))
        return zero_tokenizer_encode_file(tok, path, t, err);
    return zero_tokens_read(t, path, V, err);
}

/* Training and validation splits of --data (and --val-data). */
static int open_files(struct gpt_source *s, const struct gpt_args *a,
                      const struct zero_tokenizer *tok, struct zero_error *err)
{
    const int64_t T = a->model.block_size, V = a->model.vocab_size;
    int rc = read_tokens(&s->train_tokens, a->data, V, tok, err);
    if (rc != ZERO_OK)
        return rc;
    if (a->val_data) {
        if ((rc = read_tokens(&s->val_tokens, a->val_data, V, tok, err)))
            return rc;
        rc = zero_token_split_init(&s->train, &s->train_tokens, 0, s->train_tokens.n, T, a->data,
                                   err);
        if (!rc)
            rc = zero_token_split_init(&s->val, &s->val_tokens, 0, s->val_tokens.n, T, a->val_data,
                                       err);
        snprintf(s->what, sizeof s->what, "%s (%lld tokens), validation %s (%lld tokens)", a->data,
                 (long long)s->train_tokens.n, a->val_data, (long long)s->val_tokens.n);
        return rc;
    }
    const int64_t n = s->train_tokens.n, cut = n - (int64_t)((double)n * a->val_fraction);
    char what[600];
    snprintf(what, sizeof what, "%s: training part", a->data);
    rc = zero_token_split_init(&s->train, &s->train_tokens, 0, cut, T, what, err);
    snprintf(what, sizeof what, "%s: validation part (--val-fraction %g)", a->data,
             a->val_fraction);
    if (!rc)
        rc = zero_token_split_init(&s->val, &s->train_tokens, cut, n, T, what, err);
    snprintf(s->what, sizeof s->what, "%s: %lld tokens, %lld for training, %lld for validation",
             a->data, (long long)n, (long long)cut, (long long)(n - cut));
    return rc;
}

int gpt_source_open(struct gpt_source *s, const struct gpt_args *a,
                    const struct zero_tokenizer *tok, struct zero_error *err)
{
    memset(s, 0, sizeof *s);
    if (a->data) {
        int rc = open_files(s, a, tok, err);
        if (rc != ZERO_OK)
            gpt_source_close(s);
        return rc;
    }
    s->addition = 1;
    s->task = (struct zero_addition){.digits = a->digits, .seed = a->data_seed};
    snprintf(s->what, sizeof s->what,
             "the addition task, %d-digit operands (seed %llu), "
             "validation on held-out problems",
             a->digits, (unsigned long long)a->data_seed);
    return zero_addition_check(&s->task, a->model.block_size, err);
}

void gpt_source_close(struct gpt_source *s)
{
    zero_tokens_free(&s->train_tokens);
    zero_tokens_free(&s->val_tokens);
}

void gpt_source_fill(const struct gpt_source *s, int val, int64_t T, int64_t first, int64_t n,
                     int32_t *tokens, int32_t *labels)
{
    if (s->addition)
        zero_addition_fill(&s->task, val, T, first, n, tokens, labels);
    else
        zero_token_split_fill(val ? &s->val : &s->train, first, n, tokens, labels);
}

/* Training sequences cut from a token stream (include/zero/tokens.h). */
#include <string.h>

#include "zero/tokens.h"

int zero_token_split_init(struct zero_token_split *s, const struct zero_tokens *t, int64_t begin,
                          int64_t end, int64_t T, const char *what, struct zero_error *err)
{
    memset(s, 0, sizeof *s);
    if (T < 1 || begin < 0 || end > t->n || end - begin < T + 1)
        return zero_fail(err, ZERO_EINVAL,
                         "%s: %lld tokens, too few for one sequence of %lld "
                         "tokens and its next-token labels (need %lld)",
                         what, (long long)(end - begin), (long long)T, (long long)(T + 1));
    s->ids = t->ids;
    s->begin = begin;
    s->end = end;
    s->T = T;
    s->windows = (end - begin - 1) / T;
    return ZERO_OK;
}

void zero_token_split_fill(const struct zero_token_split *s, int64_t first, int64_t n,
                           int32_t *tokens, int32_t *labels)
{
    const int64_t T = s->T;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = (first + i) % s->windows; /* epochs wrap; a negative first too */
        k += k < 0 ? s->windows : 0;
        const int32_t *w = s->ids + s->begin + k * T;
        memcpy(tokens + i * T, w, (size_t)T * sizeof(int32_t));
        memcpy(labels + i * T, w + 1, (size_t)T * sizeof(int32_t));
    }
}

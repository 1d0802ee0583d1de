/* The addition task (include/zero/addition.h). */
#include <stdio.h>

#include "zero/addition.h"

/* splitmix64's finalizer: a counter-based hash */
static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t pow10i(int d)
{
    int64_t p = 1;
    while (d-- > 0)
        p *= 10;
    return p;
}

int zero_addition_problem_len(int digits)
{
    return 3 * digits + 4;
}

int zero_addition_prompt_len(int digits)
{
    return 2 * digits + 2;
}

int zero_addition_check(const struct zero_addition *task, int64_t T, struct zero_error *err)
{
    if (task->digits < 1 || task->digits > ZERO_ADDITION_MAX_DIGITS)
        return zero_fail(err, ZERO_EINVAL, "addition: %d digits; 1 to %d supported", task->digits,
                         ZERO_ADDITION_MAX_DIGITS);
    if (T < zero_addition_problem_len(task->digits))
        return zero_fail(err, ZERO_EINVAL,
                         "addition: a %d-digit problem is %d tokens, longer "
                         "than the sequence length %lld",
                         task->digits, zero_addition_problem_len(task->digits), (long long)T);
    return ZERO_OK;
}

/* A salt of its own, so the held-out set does not depend on the seed. */
int zero_addition_is_held_out(int64_t a, int64_t b)
{
    return (mix(mix((uint64_t)a ^ 0x4164646974696f6eULL) ^ (uint64_t)b) & 15) == 0;
}

void zero_addition_operands(const struct zero_addition *task, int held_out, int64_t s, int64_t *a,
                            int64_t *b)
{
    const uint64_t range = (uint64_t)pow10i(task->digits);
    const uint64_t base = mix(task->seed ^ (held_out ? 0x686f6c646f7574ULL : 0)) ^ mix((uint64_t)s);
    /* rejection: draw pairs until one falls in the wanted set (1/16 or 15/16 of them);
     * with one digit there may be no held-out pair at all, so the draws are bounded */
    for (uint64_t k = 0;; k++) {
        uint64_t z = mix(base + k);
        *a = (int64_t)(z % range);
        *b = (int64_t)((z >> 32) % range);
        if (zero_addition_is_held_out(*a, *b) == held_out || k == 1000)
            return;
    }
}

void zero_addition_format(int digits, int64_t a, int64_t b, char *out)
{
    char text[3 * ZERO_ADDITION_MAX_DIGITS + 8];
    snprintf(text, sizeof text, "%0*lld+%0*lld=%0*lld\n", digits, (long long)a, digits,
             (long long)b, digits + 1, (long long)(a + b));
    for (int i = 0; i < zero_addition_problem_len(digits); i++)
        out[i] = text[i];
}

void zero_addition_fill(const struct zero_addition *task, int held_out, int64_t T, int64_t first,
                        int64_t n, int32_t *tokens, int32_t *labels)
{
    const int len = zero_addition_problem_len(task->digits);
    char text[3 * ZERO_ADDITION_MAX_DIGITS + 4];
    for (int64_t i = 0; i < n; i++) {
        int64_t a, b;
        zero_addition_operands(task, held_out, first + i, &a, &b);
        zero_addition_format(task->digits, a, b, text);
        /* sequence t (T + 1 tokens): the problem, then '\n' */
        for (int64_t t = 0; t < T; t++) {
            tokens[i * T + t] = t < len ? (unsigned char)text[t] : '\n';
            labels[i * T + t] = t + 1 < len ? (unsigned char)text[t + 1] : '\n';
        }
    }
}

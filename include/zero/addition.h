/* The addition task: a language-modelling task generated in code, learnable by
 * a small GPT in minutes on a laptop CPU and checkable by eye and by a metric.
 *
 * A problem is one line of byte-level text with operands zero-padded to D digits
 * and the sum to D + 1:   "482+017=0499\n"   (D = 3; 3D + 4 characters).
 * A sequence is one problem from its first character, padded with '\n' to T + 1
 * tokens (T >= 3D + 4); inputs are its first T tokens, labels its last T.
 *
 * The held-out set is a fixed 1/16 of all operand pairs (chosen by a hash of the
 * pair, not by the seed), and training never draws from it, so exact-match
 * accuracy on held-out problems measures generalization, not memory. Problem s
 * of either set depends only on (seed, s). */
#ifndef ZERO_ADDITION_H
#define ZERO_ADDITION_H

#include <stdint.h>

#include "zero/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_ADDITION_MAX_DIGITS 9

struct zero_addition {
    int digits;    /* D, 1 .. ZERO_ADDITION_MAX_DIGITS */
    uint64_t seed; /* which problems, in which order */
};

/* Checks the digits and that a sequence of T tokens holds a problem. */
int zero_addition_check(const struct zero_addition *task, int64_t T, struct zero_error *err);
/* Characters of a problem (3D + 4) and of its prompt "a+b=" (2D + 2). */
int zero_addition_problem_len(int digits);
int zero_addition_prompt_len(int digits);
/* The operands of problem s of the training set (held_out = 0) or the held-out set. */
void zero_addition_operands(const struct zero_addition *task, int held_out, int64_t s, int64_t *a,
                            int64_t *b);
/* 1 if the pair (a, b) is in the held-out set. */
int zero_addition_is_held_out(int64_t a, int64_t b);
/* Writes the problem's text (zero_addition_problem_len bytes, no terminator). */
void zero_addition_format(int digits, int64_t a, int64_t b, char *out);
/* tokens (n, T) and labels (n, T) of sequences first .. first + n - 1 of a set. */
void zero_addition_fill(const struct zero_addition *task, int held_out, int64_t T, int64_t first,
                        int64_t n, int32_t *tokens, int32_t *labels);

#ifdef __cplusplus
}
#endif

#endif

/* Two safetensors files compared tensor by tensor (zero diff's first half): names matched
 * through weight_names.h, shapes checked, values compared by tensor_diff.h, each
 * difference judged against an envelope step when one is given, else against equality. */
#ifndef ZERO_CLI_DIFF_WEIGHTS_H
#define ZERO_CLI_DIFF_WEIGHTS_H

#include <stdint.h>
#include <stdio.h>

#include "envelope.h"

struct diff_options {
    const struct envelope *envelope; /* NULL: bits must be equal */
    int64_t step;                    /* the envelope's step to judge by; -1: the files' own */
    double factor;                   /* inside: max abs <= factor x the envelope's */
    int64_t ulps;                    /* inside also: every element within this many ulps (0: off) */
    int brief;                       /* print only the tensors that are not equal */
    const char *indent;              /* before each line ("" or "  ") */
};

struct diff_summary {
    int compared, equal, inside, outside; /* tensors in both files */
    int missing;                          /* in one file only (buffers and tied copies aside) */
    int skipped;                          /* buffers and tied copies */
    char first_outside[256];              /* the first tensor outside, or missing, and why */
};

/* Compares a with b and prints a line per tensor to out. Returns 0 when both files were
 * read (the verdict is in *s), 2 on bad input: an unreadable file, two tensors of one file
 * with one canonical name, no envelope step for the files (msg says which). */
int diff_weights(const char *a, const char *b, const struct diff_options *o, FILE *out,
                 struct diff_summary *s, char *msg, size_t len);

#endif

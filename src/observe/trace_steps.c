/* The trace's step lists ("2,3", "2-4,7"), on their own so that the config
 * validation (and its fuzzer) can check libzero.trace.steps without the trace
 * writer. See zero/trace.h. */
#include <errno.h>
#include <stdlib.h>

#include "zero/trace.h"

int zero_trace_parse_steps(const char *list, int64_t *steps, int max, int *n,
                           struct zero_error *err)
{
    *n = 0;
    const char *p = list;
    while (*p) {
        char *end;
        errno = 0;
        long long a = strtoll(p, &end, 10), b;
        if (end == p || errno || a < 1)
            goto bad;
        b = a;
        p = end;
        if (*p == '-') {
            b = strtoll(p + 1, &end, 10);
            if (end == p + 1 || errno || b < a)
                goto bad;
            p = end;
        }
        for (long long s = a; s <= b; s++) {
            if (*n >= max)
                return zero_fail(err, ZERO_EINVAL, "step list '%s': more than %d steps", list, max);
            steps[(*n)++] = s;
        }
        if (*p == ',' && p[1] != '\0')
            p++;
        else if (*p != '\0')
            goto bad;
    }
    if (*n == 0)
        goto bad;
    return ZERO_OK;
bad:
    return zero_fail(err, ZERO_EINVAL, "step list '%s': expected steps >= 1 such as 2,3 or 2-4",
                     list);
}

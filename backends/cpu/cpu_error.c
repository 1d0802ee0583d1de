/* The cpu backend's error helper: every file of the backend reports through it, so it
 * sits in its own file rather than in the table's (cpu_backend.c). */
#include <stdarg.h>
#include <stdio.h>

#include "cpu_internal.h"

int cpu_fail(struct cpu_state *s, int code, const char *fmt, ...)
{
    int n = snprintf(s->err, sizeof(s->err), "rank %d: ", s->rank);
    if (n < 0 || (size_t)n >= sizeof(s->err))
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err + n, sizeof(s->err) - (size_t)n, fmt, ap);
    va_end(ap);
    return code;
}

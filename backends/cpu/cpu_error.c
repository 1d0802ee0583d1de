/* The cpu backend's error helper: every file of the backend reports through it, so it
 * sits in its own file rather than in the table's (cpu_backend.c). */
#include <stdarg.h>

#include "cpu_internal.h"
#include "common/backend_error.h"

int cpu_fail(struct cpu_state *s, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    backend_error_vformat(s->err, sizeof(s->err), s->rank, fmt, ap);
    va_end(ap);
    return code;
}

/* Small helpers every engine file uses: tagged allocation and error wrapping. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "engine_internal.h"

int engine_alloc(struct zero_engine *e, size_t bytes, enum zero_tag tag, void **p,
                 const char *what, struct zero_error *err)
{
    *p = NULL;
    int rc = e->be->alloc(e->bself, bytes > 0 ? bytes : 1, tag, p);
    if (rc)
        return zero_fail(err, rc, "rank %d: allocating %zu bytes for %s (%s): %s", e->rank,
                         bytes, what, zero_tag_name(tag), e->be->last_error(e->bself));
    return ZERO_OK;
}

void engine_free(struct zero_engine *e, void *p)
{
    if (p)
        e->be->free(e->bself, p);
}

int engine_backend_error(struct zero_engine *e, int rc, struct zero_error *err, const char *fmt,
                         ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return zero_fail(err, rc, "rank %d: %s: %s", e->rank, what, e->be->last_error(e->bself));
}

double engine_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

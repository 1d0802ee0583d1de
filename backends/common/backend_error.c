/* See backend_error.h. */
#include <stdio.h>

#include "common/backend_error.h"

void backend_error_vformat(char *buf, size_t len, int rank, const char *fmt, va_list ap)
{
    int n = snprintf(buf, len, "rank %d: ", rank);
    if (n < 0 || (size_t)n >= len)
        n = 0;
    vsnprintf(buf + n, len - (size_t)n, fmt, ap);
}

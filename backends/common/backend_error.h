/* The last-error text every backend keeps ("rank R: what went wrong"), formatted once
 * for cpu_fail and cuda_fail. */
#ifndef ZERO_BACKEND_ERROR_H
#define ZERO_BACKEND_ERROR_H

#include <stdarg.h>
#include <stddef.h>

/* buf (len bytes) = "rank <rank>: " followed by fmt with ap, truncated to fit. */
void backend_error_vformat(char *buf, size_t len, int rank, const char *fmt, va_list ap);

#endif

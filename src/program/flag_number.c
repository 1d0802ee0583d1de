/* flag_number.c -- a flag's integer value: "500000" and "5e5" alike. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flag_number.h"

int flag_integer(const char *text, double min, double max, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (!errno && end != text && *end == '\0') {
        if ((double)v < min || (double)v > max)
            return -1;
        *out = v;
        return 0;
    }
    /* not a plain integer: a decimal real whose value is integral (exact below 2^63);
     * strtod's hex forms are no number JSON has */
    if (strpbrk(text, "xX"))
        return -1;
    errno = 0;
    double d = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(d) || d != floor(d) || d < min || d > max ||
        d >= 9223372036854775807.0 || d < -9223372036854775807.0)
        return -1;
    *out = (int64_t)d;
    return 0;
}

/* A key's value as text, as JSON writes it ("3", "null", "[0.9, 0.999]",
 * "\"WarmupLR\""): the printer's lines, the "auto" log and the unsupported
 * features' messages all show values this way. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_format.h"

/* The shortest %g that reads back as the same double. */
static void format_real(double x, char *buf, size_t len)
{
    if (buf == NULL || len == 0) /* never, but gcc's -fsanitize build cannot see it */
        return;
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

void config_format_value(const struct config_key *k, const struct zero_config *c, char *buf,
                         size_t len)
{
    const void *f = config_key_cfield(k, c);
    int nullable = (k->flags & KEY_NULLABLE) != 0;
    switch (k->type) {
    case KEY_BOOL:
        snprintf(buf, len, "%s", *(const int *)f ? "true" : "false");
        break;
    case KEY_INT:
        snprintf(buf, len, "%d", *(const int *)f);
        break;
    case KEY_I64: {
        int64_t v = *(const int64_t *)f;
        if (nullable && v == 0)
            snprintf(buf, len, "null");
        else
            snprintf(buf, len, "%" PRId64, v);
        break;
    }
    case KEY_U64:
        snprintf(buf, len, "%" PRIu64, *(const uint64_t *)f);
        break;
    case KEY_REAL:
        format_real(*(const double *)f, buf, len);
        break;
    case KEY_PAIR: {
        char a[32], b[32];
        format_real(((const double *)f)[0], a, sizeof a);
        format_real(((const double *)f)[1], b, sizeof b);
        snprintf(buf, len, "[%s, %s]", a, b);
        break;
    }
    case KEY_STRING:
        if (nullable && !((const char *)f)[0])
            snprintf(buf, len, "null");
        else
            snprintf(buf, len, "\"%.*s\"", (int)k->size, (const char *)f);
        break;
    case KEY_ENUM: {
        int v = *(const int *)f, n = 0;
        while (k->names[n])
            n++;
        if (v < 0 || v >= n)
            snprintf(buf, len, "%d", v);
        else if (!k->names[v][0])
            snprintf(buf, len, "null");
        else
            snprintf(buf, len, "\"%s\"", k->names[v]);
        break;
    }
    default:
        buf[0] = '\0';
    }
}

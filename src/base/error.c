/* Status codes and the error message every fallible call fills. */
#include "zero/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int zero_fail(struct zero_error *err, int code, const char *fmt, ...)
{
    if (err == NULL)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return code;
}

int zero_error_wrap(struct zero_error *err, const char *fmt, ...)
{
    if (err == NULL)
        return ZERO_EINVAL;
    /* Build in a copy: the old message is an input of the new one. */
    char old[ZERO_ERRMSG_LEN];
    memcpy(old, err->msg, sizeof(old));
    old[sizeof(old) - 1] = '\0';

    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    size_t used = (size_t)n < sizeof(err->msg) ? (size_t)n : sizeof(err->msg) - 1;
    size_t room = sizeof(err->msg) - 1 - used;
    size_t len = strlen(old) < room ? strlen(old) : room;
    memcpy(err->msg + used, old, len);
    err->msg[used + len] = '\0';
    return err->code;
}

void zero_error_clear(struct zero_error *err)
{
    if (err == NULL)
        return;
    err->code = ZERO_OK;
    err->msg[0] = '\0';
}

const char *zero_status_name(int code)
{
    static const char *const names[] = {
        [ZERO_OK] = "OK",       [ZERO_EINVAL] = "EINVAL",     [ZERO_ENOMEM] = "ENOMEM",
        [ZERO_EIO] = "EIO",     [ZERO_EFORMAT] = "EFORMAT",   [ZERO_ENOTSUP] = "ENOTSUP",
        [ZERO_ECOMM] = "ECOMM", [ZERO_EBACKEND] = "EBACKEND", [ZERO_EMISMATCH] = "EMISMATCH",
    };
    if (code < 0 || code >= (int)(sizeof(names) / sizeof(names[0])))
        return "EUNKNOWN";
    return names[code];
}

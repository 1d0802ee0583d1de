/* How a layer reports failure: it writes its reason to ctx->errmsg and the
 * engine prefixes the unit name. For a failed backend call the layer says
 * which operation failed and the backend says why. */
#include <stdarg.h>
#include <stdio.h>

#include "nn_internal.h"

int nn_unit_fail(struct zero_unit_ctx *ctx, int rc, const char *fmt, ...)
{
    if (ctx->errmsg == NULL || ctx->errlen == 0)
        return rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->errmsg, ctx->errlen, fmt, ap);
    va_end(ap);
    return rc;
}

int nn_backend_fail(struct zero_unit_ctx *ctx, int rc, const char *what)
{
    const char *why = ctx->be->last_error != NULL ? ctx->be->last_error(ctx->bself) : NULL;
    return nn_unit_fail(ctx, rc, "%s: %s", what, why != NULL ? why : "backend error");
}

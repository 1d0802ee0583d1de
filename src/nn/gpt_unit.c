/* What every GPT unit shares: its dimensions as impl, and the rule that a
 * micro-batch is whole sequences of T tokens. */
#include <stdlib.h>

#include "gpt_internal.h"
#include "nn_internal.h"

int gpt_unit_new(struct zero_unit **u, const char *name, const struct zero_unit_ops *ops,
                 const struct gpt_dims *dims, int64_t in_width, int64_t out_width,
                 struct zero_error *err)
{
    *u = NULL;
    struct gpt_dims *d = malloc(sizeof *d);
    if (d == NULL)
        return zero_fail(err, ZERO_ENOMEM, "unit %s: out of memory", name);
    *d = *dims;
    int rc = zero_unit_new(u, name, ops, d, in_width, out_width, err);
    if (rc != ZERO_OK)
        free(d);
    return rc;
}

void gpt_unit_destroy(struct zero_unit *u)
{
    free(u->impl);
    u->impl = NULL;
}

int gpt_sequences(struct zero_unit_ctx *ctx, const struct gpt_dims *d, int64_t *B)
{
    if (ctx->rows % d->T != 0)
        return nn_unit_fail(ctx, ZERO_EINVAL, "%lld rows are not whole sequences of %lld tokens",
                            (long long)ctx->rows, (long long)d->T);
    *B = ctx->rows / d->T;
    return ZERO_OK;
}

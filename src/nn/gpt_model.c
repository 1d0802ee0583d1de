/* GPT-2 from its config: wte, wpe, h.0 .. h.{L-1}, ln_f (include/zero/gpt.h). */
#include <stdio.h>

#include "zero/gpt.h"

/* Adds u when the constructor that made it succeeded (rc). */
static int add(struct zero_model *m, int rc, struct zero_unit *u, struct zero_error *err)
{
    return rc != ZERO_OK ? rc : zero_model_add(m, u, err);
}

int zero_nn_build_gpt(struct zero_model **m, const struct zero_gpt_config *c,
                      struct zero_error *err)
{
    *m = NULL;
    if (c->n_layer < 1 || c->n_head < 1 || c->n_embd < 1 || c->block_size < 1 ||
        c->vocab_size < 1 || c->n_embd % c->n_head != 0)
        return zero_fail(err, ZERO_EINVAL,
                         "gpt: need n_layer, n_head, n_embd, block_size, "
                         "vocab_size >= 1 and n_head dividing n_embd (got %d, %d, %lld, %lld, "
                         "%lld)",
                         c->n_layer, c->n_head, (long long)c->n_embd, (long long)c->block_size,
                         (long long)c->vocab_size);
    struct zero_model *model;
    int rc = zero_model_create(&model, err);
    if (rc != ZERO_OK)
        return rc;
    struct zero_unit *u = NULL;
    rc = zero_nn_token_embedding(&u, "wte", c->vocab_size, c->n_embd, err);
    rc = add(model, rc, u, err);
    if (rc == ZERO_OK) {
        rc = zero_nn_position_embedding(&u, "wpe", c->block_size, c->n_embd, err);
        rc = add(model, rc, u, err);
    }
    for (int l = 0; l < c->n_layer && rc == ZERO_OK; l++) {
        char name[ZERO_NAME_LEN];
        snprintf(name, sizeof(name), "h.%d", l);
        rc = zero_nn_gpt_block(&u, name, c->n_embd, c->n_head, c->block_size, c->n_layer, err);
        if (rc == ZERO_OK)
            u->checkpoint = c->checkpoint;
        rc = add(model, rc, u, err);
    }
    if (rc == ZERO_OK) { /* the head uses wte.weight: unit 0, parameter 0 */
        rc = zero_nn_gpt_head(&u, "ln_f", c->n_embd, c->vocab_size, 0, 0, err);
        rc = add(model, rc, u, err);
    }
    if (rc != ZERO_OK) {
        zero_model_destroy(model);
        return rc;
    }
    model->rows_per_sample = c->block_size;
    *m = model;
    return ZERO_OK;
}

/* LlamaForCausalLM from its config: model.embed_tokens, model.layers.0 .. L-1,
 * model.norm, lm_head (include/zero/llama.h). The embedding and the head are GPT-2's
 * code: the same token embedding, the same fused classifier without ln_f. */
#include <stdio.h>

#include "gpt_internal.h"
#include "llama_internal.h"

/* Adds u when the constructor that made it succeeded (rc). */
static int add(struct zero_model *m, int rc, struct zero_unit *u, struct zero_error *err)
{
    return rc != ZERO_OK ? rc : zero_model_add(m, u, err);
}

int zero_nn_build_llama(struct zero_model **m, const struct zero_llama_config *c,
                        const struct zero_llama_build *b, struct zero_error *err)
{
    *m = NULL;
    int rc = zero_llama_config_check(c, err);
    if (rc != ZERO_OK)
        return rc;
    if (b->block_size < 1 || b->block_size > c->max_position_embeddings)
        return zero_fail(err, ZERO_EINVAL,
                         "llama: block_size %lld outside 1..max_position_embeddings (%lld)",
                         (long long)b->block_size, (long long)c->max_position_embeddings);
    struct zero_model *model;
    if ((rc = zero_model_create(&model, err)) != ZERO_OK)
        return rc;
    struct zero_unit *u = NULL;
    rc = zero_nn_token_embedding(&u, "model.embed_tokens", c->vocab_size, c->hidden_size, err);
    rc = add(model, rc, u, err);
    for (int l = 0; l < c->num_hidden_layers && rc == ZERO_OK; l++) {
        char name[ZERO_NAME_LEN];
        snprintf(name, sizeof(name), "model.layers.%d", l);
        rc = llama_block_unit(&u, name, c, b->block_size, err);
        if (rc == ZERO_OK)
            u->checkpoint = b->checkpoint;
        rc = add(model, rc, u, err);
    }
    const float eps = (float)c->rms_norm_eps;
    if (rc == ZERO_OK && c->tie_word_embeddings) { /* model.norm + the head, as GPT-2's ln_f */
        rc = gpt_lm_head_unit(&u, "model.norm", c->hidden_size, c->vocab_size, eps,
                              LLAMA_UNIT_EMBED, 0, err);
        rc = add(model, rc, u, err);
    } else if (rc == ZERO_OK) { /* model.norm, then lm_head with its own weight */
        rc = llama_rmsnorm_unit(&u, "model.norm", c->hidden_size, eps, err);
        rc = add(model, rc, u, err);
        if (rc == ZERO_OK)
            rc = gpt_lm_head_unit(&u, "lm_head", c->hidden_size, c->vocab_size, 0.0f, -1, 0, err);
        rc = add(model, rc, u, err);
    }
    if (rc != ZERO_OK) {
        zero_model_destroy(model);
        return rc;
    }
    model->rows_per_sample = b->block_size;
    *m = model;
    return ZERO_OK;
}

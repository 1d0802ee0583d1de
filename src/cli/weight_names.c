/* See weight_names.h. */
#include <string.h>

#include "weight_names.h"

static const char *const wrappers[] = {"module.", "_orig_mod.", "transformer.", "model.", NULL};

const char *weight_name_canonical(const char *name)
{
    int stripped = 1;
    while (stripped) {
        stripped = 0;
        for (int i = 0; wrappers[i]; i++) {
            size_t n = strlen(wrappers[i]);
            if (strncmp(name, wrappers[i], n) == 0 && name[n] != '\0') {
                name += n;
                stripped = 1;
            }
        }
    }
    return name;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

int weight_name_is_buffer(const char *canonical)
{
    static const char *const buffers[] = {".attn.bias", ".attn.masked_bias", "rotary_emb.inv_freq",
                                          NULL};
    for (int i = 0; buffers[i]; i++)
        if (ends_with(canonical, buffers[i]))
            return 1;
    return 0;
}

const char *weight_name_tied_to(const char *canonical, int i)
{
    static const char *const embeddings[] = {"wte.weight", "embed_tokens.weight"};
    if (strcmp(canonical, "lm_head.weight") != 0 || i < 0 ||
        i >= (int)(sizeof embeddings / sizeof embeddings[0]))
        return NULL;
    return embeddings[i];
}

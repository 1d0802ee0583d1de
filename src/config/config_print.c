/* The resolved configuration as text: one `key.path = value   (origin)` line
 * per key in the key table's order, values written as JSON would write them. */
#include <stdio.h>

#include "config_auto.h"
#include "config_format.h"
#include "config_keys.h"
#include "zero/config_json.h"

void zero_config_print(FILE *out, const struct zero_config *c,
                       const struct zero_config_origins *origins)
{
    for (int i = 0; i < config_nkeys; i++) {
        const struct config_key *k = &config_keys[i];
        if (k->type == KEY_SECTION || (k->flags & KEY_ALIAS) || !config_key_applies(k, c))
            continue;
        char value[320], line[640];
        config_format_value(k, c, value, sizeof value);
        if (!origins) {
            fprintf(out, "%s = %s\n", k->path, value);
            continue;
        }
        snprintf(line, sizeof line, "%s = %s", k->path, value);
        if (origins->of[i] == ZERO_ORIGIN_AUTO && config_auto_source(i))
            /* the value a program starts from; it fills the key as Hugging Face would */
            fprintf(out, "%-66s (auto, as Hugging Face fills it: %s)\n", line,
                    config_auto_source(i));
        else
            fprintf(out, "%-66s (%s)\n", line, zero_config_origin_name(origins->of[i]));
    }
}

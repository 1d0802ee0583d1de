/* Where each resolved key came from (struct zero_config_origins, indexed like
 * the key table): the loader writes it, the printer and the programs read it. */
#include "zero/config_json.h"

#include "config_keys.h"

const char *zero_config_origin_name(int origin)
{
    switch (origin) {
    case ZERO_ORIGIN_DEFAULT:
        return "default";
    case ZERO_ORIGIN_FILE:
        return "file";
    case ZERO_ORIGIN_DERIVED:
        return "derived";
    case ZERO_ORIGIN_AUTO:
        return "auto";
    default:
        return "?";
    }
}

int zero_config_origin_of(const struct zero_config_origins *origins, const char *path)
{
    int k = config_key_find(path);
    if (k < 0)
        return -1;
    return origins->of[config_key_canonical(k)];
}

/* The JSON-only keys DeepSpeed knows that this build does not implement
 * (config_unsupported.c; zero_config_unsupported, in zero/config_json.h, checks
 * the field-backed ones on a struct). */
#ifndef ZERO_CONFIG_UNSUPPORTED_H
#define ZERO_CONFIG_UNSUPPORTED_H

#include <stddef.h>

struct config_unsupported {
    const char *path;    /* key or section */
    const char *inert;   /* the value(s) that ask for nothing, as JSON; an object lists
                            members that must be absent or equal */
    const char *feature; /* "mixed precision is not implemented yet in this build" */
};

/* The entry for a JSON-only path, NULL if none. */
const struct config_unsupported *config_unsupported_find(const char *path);

/* Whether a JSON value (a json_t *) asks for nothing; else the member path
 * (relative, may be "") and value that ask for something go to what. */
int config_unsupported_inert(const struct config_unsupported *u, const void *json, char *what,
                             size_t len);

#endif

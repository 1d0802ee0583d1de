/* The one validation path (config_validate.c; zero_config_validate, in
 * zero/config_json.h, runs all of it). */
#ifndef ZERO_CONFIG_VALIDATE_H
#define ZERO_CONFIG_VALIDATE_H

#include "zero/config.h"
#include "zero/error.h"

/* The checks of zero_config_validate that concern only what a file gives
 * (unsupported features, contradicting keys): the loader's under
 * ZERO_CONFIG_KEEP, where the program's flags may still change the rest. */
int config_validate_given(const struct zero_config *c, struct zero_error *err);

#endif

/* A key's value as text, as JSON writes it (config_format.c). */
#ifndef ZERO_CONFIG_FORMAT_H
#define ZERO_CONFIG_FORMAT_H

#include <stddef.h>

#include "config_keys.h"

/* "3" for zero_optimization.stage = 3: the value of key k in c as JSON writes
 * it (null for a nullable key at its default), cut to len bytes. */
void config_format_value(const struct config_key *k, const struct zero_config *c, char *buf,
                         size_t len);

#endif

/* "auto" (config_auto.c): whether key k accepts it (DeepSpeed's Hugging Face
 * integration fills it), marking it pending in c, and what Hugging Face fills
 * it from ("learning_rate"; NULL when k takes no "auto"). Keys are indices of
 * the key table (config_keys.h). */
#ifndef ZERO_CONFIG_AUTO_H
#define ZERO_CONFIG_AUTO_H

#include "zero/config.h"

int config_auto_allowed(int key);
void config_auto_mark(struct zero_config *c, int key);
const char *config_auto_source(int key);
int config_auto_is_pending(const struct zero_config *c, const char *path);

#endif

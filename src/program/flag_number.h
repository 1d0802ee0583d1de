/* flag_number.h -- a flag's integer value in every form its config key takes. */
#ifndef ZERO_PROGRAM_FLAG_NUMBER_H
#define ZERO_PROGRAM_FLAG_NUMBER_H

#include <stdint.h>

/* The whole of text as an integer in [min, max]: a decimal integer ("500000") or a
 * number with an integral value ("5e5", "5.0e5"), as ds_config.json's integer keys
 * take (src/config/config_json.c). 0 on success, -1 otherwise (*out untouched). */
int flag_integer(const char *text, double min, double max, int64_t *out);

#endif

/* Checked size arithmetic: every size derived from a flag, a config key or a
 * file goes through these, so an absurd value is an error that names where it
 * came from instead of a wrapped product, a short buffer and a crash.
 *
 *     int64_t n;
 *     if (zero_size_mul(&n, micro_batch, hidden, "micro-batch x --hidden", err))
 *         return err->code;
 *     // err->msg: "micro-batch x --hidden: 4611686018427387904 * 4 overflows 64 bits"
 *
 * `what` names the flag or key (or both, as here); it starts the message. */
#ifndef ZERO_SIZE_H
#define ZERO_SIZE_H

#include <stddef.h>
#include <stdint.h>

#include "zero/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* *out = a * b; ZERO_EINVAL when a or b is negative or the product exceeds
 * INT64_MAX (or SIZE_MAX). *out is untouched on failure. */
int zero_size_mul(int64_t *out, int64_t a, int64_t b, const char *what, struct zero_error *err);

/* *out = a + b under the same rules. */
int zero_size_add(int64_t *out, int64_t a, int64_t b, const char *what, struct zero_error *err);

/* *out = n * elem_size bytes, as a size_t; ZERO_EINVAL as above. */
int zero_size_bytes(size_t *out, int64_t n, size_t elem_size, const char *what,
                    struct zero_error *err);

/* malloc of n elements of elem_size (at least one byte): NULL with ZERO_EINVAL
 * when the size overflows, ZERO_ENOMEM "what: no memory for n x elem_size = B
 * bytes" when the allocation fails. */
void *zero_size_alloc(int64_t n, size_t elem_size, const char *what, struct zero_error *err);

#ifdef __cplusplus
}
#endif

#endif

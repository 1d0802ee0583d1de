/* Checked size arithmetic (include/zero/size.h). */
#include "zero/size.h"

#include <stdlib.h>

int zero_size_mul(int64_t *out, int64_t a, int64_t b, const char *what, struct zero_error *err)
{
    int64_t p = 0;
    if (a < 0 || b < 0)
        return zero_fail(err, ZERO_EINVAL, "%s: negative size (%lld * %lld)", what, (long long)a,
                         (long long)b);
    if (__builtin_mul_overflow(a, b, &p) || (uint64_t)p > SIZE_MAX)
        return zero_fail(err, ZERO_EINVAL, "%s: %lld * %lld overflows 64 bits", what, (long long)a,
                         (long long)b);
    *out = p;
    return ZERO_OK;
}

int zero_size_add(int64_t *out, int64_t a, int64_t b, const char *what, struct zero_error *err)
{
    int64_t s = 0;
    if (a < 0 || b < 0)
        return zero_fail(err, ZERO_EINVAL, "%s: negative size (%lld + %lld)", what, (long long)a,
                         (long long)b);
    if (__builtin_add_overflow(a, b, &s) || (uint64_t)s > SIZE_MAX)
        return zero_fail(err, ZERO_EINVAL, "%s: %lld + %lld overflows 64 bits", what, (long long)a,
                         (long long)b);
    *out = s;
    return ZERO_OK;
}

int zero_size_bytes(size_t *out, int64_t n, size_t elem_size, const char *what,
                    struct zero_error *err)
{
    int64_t bytes = 0;
    if (elem_size > INT64_MAX)
        return zero_fail(err, ZERO_EINVAL, "%s: element size %zu overflows", what, elem_size);
    int rc = zero_size_mul(&bytes, n, (int64_t)elem_size, what, err);
    if (rc == ZERO_OK)
        *out = (size_t)bytes;
    return rc;
}

void *zero_size_alloc(int64_t n, size_t elem_size, const char *what, struct zero_error *err)
{
    size_t bytes = 0;
    if (zero_size_bytes(&bytes, n, elem_size, what, err))
        return NULL;
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL)
        zero_fail(err, ZERO_ENOMEM, "%s: no memory for %lld x %zu = %zu bytes", what, (long long)n,
                  elem_size, bytes);
    return p;
}

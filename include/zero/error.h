/* Status codes and the error message every fallible call fills.
 *
 * The library never exits or aborts: a function that can fail returns one of
 * these codes (0 = ok) and writes a message that names what failed, where and
 * why ("rank 2: checkpoint ck/step_000300/rank-00002.bin: section
 * optim.exp_avg: checksum mismatch"). Programs print it and choose the exit code. */
#ifndef ZERO_ERROR_H
#define ZERO_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum zero_status {
    ZERO_OK = 0,
    ZERO_EINVAL = 1,   /* bad argument, config value, or call order */
    ZERO_ENOMEM = 2,   /* an allocation failed */
    ZERO_EIO = 3,      /* a file could not be read or written */
    ZERO_EFORMAT = 4,  /* a file or message is malformed or corrupt */
    ZERO_ENOTSUP = 5,  /* valid request this build/backend does not implement */
    ZERO_ECOMM = 6,    /* a collective or the communicator failed */
    ZERO_EBACKEND = 7, /* the backend (BLAS, CUDA, ...) reported a failure */
    ZERO_EMISMATCH = 8 /* ranks disagree (config, unit order, shapes) */
};

#define ZERO_ERRMSG_LEN 1024

struct zero_error {
    int code;
    char msg[ZERO_ERRMSG_LEN];
};

/* Sets code and message; returns code so callers can `return zero_fail(...)`. */
int zero_fail(struct zero_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes context to an existing message ("unit blocks.3: " + old);
 * returns err->code. Used as errors travel up the stack. */
int zero_error_wrap(struct zero_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void zero_error_clear(struct zero_error *err);

/* A short name for a status code: "EINVAL", "ENOMEM", ... */
const char *zero_status_name(int code);

#ifdef __cplusplus
}
#endif

#endif

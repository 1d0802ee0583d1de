/* What the libFuzzer harnesses share: a trap that libFuzzer reports as a crash,
 * the check of a failure's status and message, and a scratch directory (in
 * /dev/shm when it can) where an input becomes files, removed at exit. */
#ifndef ZERO_FUZZ_UTIL_H
#define ZERO_FUZZ_UTIL_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zero/error.h"

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);                             \
            __builtin_trap();                                                                      \
        }                                                                                          \
    } while (0)

/* A failure: a known status, and a NUL-terminated, non-empty message. */
static inline void fuzz_check_error(int rc, const struct zero_error *err)
{
    FUZZ_CHECK(rc > ZERO_OK && rc <= ZERO_EMISMATCH);
    FUZZ_CHECK(memchr(err->msg, '\0', sizeof err->msg) != NULL && err->msg[0] != '\0');
}

static char fuzz_dir[256];

static inline void fuzz_remove_scratch(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fuzz_dir);
    if (fuzz_dir[0] && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", fuzz_dir);
}

/* The scratch directory, made on the first call. */
static inline const char *fuzz_scratch(const char *name)
{
    if (!fuzz_dir[0]) {
        snprintf(fuzz_dir, sizeof fuzz_dir, "%s/%s.XXXXXX",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", name);
        FUZZ_CHECK(mkdtemp(fuzz_dir) != NULL);
        atexit(fuzz_remove_scratch);
    }
    return fuzz_dir;
}

/* Writes bytes to path (created or truncated). */
static inline void fuzz_put(const char *path, const uint8_t *bytes, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    FUZZ_CHECK(fd >= 0);
    FUZZ_CHECK(n == 0 || write(fd, bytes, n) == (ssize_t)n);
    close(fd);
}

/* Little-endian u32 at p. */
static inline uint32_t fuzz_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif

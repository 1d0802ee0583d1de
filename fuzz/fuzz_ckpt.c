/* libFuzzer harness for the checkpoint readers (./configure --enable-fuzzing;
 * make fuzz-ckpt FUZZ_SECONDS=60). An input is
 *
 *     u32 little-endian n | n bytes of meta.json | the bytes of rank-00000.bin
 *
 * written into a scratch step directory; then the checkpoint is opened, printed,
 * every rank file verified and (when every file verified and the model is
 * small) every tensor of every state read. Every failure must be a status with
 * a NUL-terminated message; nothing may crash, leak or read out of bounds.
 * Seeds: fuzz/corpus/ckpt/ (a real checkpoint of a tiny model, world size 1). */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zero/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_ckpt: %s:%d: %s\n", __FILE__, __LINE__, #cond);                  \
            __builtin_trap();                                                                      \
        }                                                                                          \
    } while (0)

static char dir[256];

static void put(const char *name, const uint8_t *bytes, size_t n)
{
    char path[320];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK(n == 0 || write(fd, bytes, n) == (ssize_t)n);
    close(fd);
}

/* the scratch directory goes when the fuzzer exits */
static void remove_scratch(void)
{
    char path[320];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/rank-00000.bin", dir);
    unlink(path);
    rmdir(dir);
}

static void check_error(int rc, const struct zero_error *err)
{
    CHECK(rc > ZERO_OK && rc <= ZERO_EMISMATCH);
    CHECK(memchr(err->msg, '\0', sizeof err->msg) != NULL && err->msg[0] != '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/fuzz_ckpt.XXXXXX",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        CHECK(mkdtemp(dir) != NULL);
        atexit(remove_scratch);
        sink = fopen("/dev/null", "w");
    }
    if (size < 4)
        return 0;
    size_t n =
        (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24;
    if (n > size - 4)
        n = size - 4;
    put("meta.json", data + 4, n);
    put("rank-00000.bin", data + 4 + n, size - 4 - n);

    struct zero_checkpoint *c = NULL;
    struct zero_error err;
    memset(&err, 0x5a, sizeof err);
    int rc = zero_checkpoint_open(&c, dir, &err);
    if (rc) {
        check_error(rc, &err);
        CHECK(c == NULL);
        return 0;
    }
    struct zero_checkpoint_info info;
    zero_checkpoint_get_info(c, &info);
    CHECK(info.world_size >= 1 && info.nstates >= 1 && info.ntensors >= 0);
    if (sink)
        zero_checkpoint_print(c, sink);
    int all_ok = 1;
    for (int r = 0; r < info.world_size && r < 4; r++) {
        memset(&err, 0x5a, sizeof err);
        rc = zero_checkpoint_verify_rank(c, r, &err);
        if (rc) {
            check_error(rc, &err);
            all_ok = 0;
        }
    }
    if (all_ok && info.world_size == 1 && info.numel <= (1 << 20)) {
        for (int i = 0; i < info.ntensors; i++) {
            struct zero_checkpoint_tensor t;
            CHECK(zero_checkpoint_tensor(c, i, &t) == 0 && t.numel >= 0);
            float *host = malloc((size_t)t.numel * sizeof *host + 1);
            for (int k = 0; host && k < info.nstates; k++) {
                rc =
                    zero_checkpoint_read_tensor(c, i, zero_checkpoint_state_name(c, k), host, &err);
                CHECK(rc == 0); /* the whole file verified: every read must succeed */
            }
            free(host);
        }
    }
    zero_checkpoint_close(c);
    return 0;
}

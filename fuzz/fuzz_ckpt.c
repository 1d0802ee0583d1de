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
#include "fuzz_util.h"
#include "zero/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char meta[300], rank0[300];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!meta[0]) {
        snprintf(meta, sizeof meta, "%s/meta.json", fuzz_scratch("fuzz_ckpt"));
        snprintf(rank0, sizeof rank0, "%s/rank-00000.bin", fuzz_dir);
        sink = fopen("/dev/null", "w");
    }
    if (size < 4)
        return 0;
    size_t n = fuzz_u32(data);
    if (n > size - 4)
        n = size - 4;
    fuzz_put(meta, data + 4, n);
    fuzz_put(rank0, data + 4 + n, size - 4 - n);

    struct zero_checkpoint *c = NULL;
    struct zero_error err;
    memset(&err, 0x5a, sizeof err);
    int rc = zero_checkpoint_open(&c, fuzz_dir, &err);
    if (rc) {
        fuzz_check_error(rc, &err);
        FUZZ_CHECK(c == NULL);
        return 0;
    }
    struct zero_checkpoint_info info;
    zero_checkpoint_get_info(c, &info);
    FUZZ_CHECK(info.world_size >= 1 && info.nstates >= 1 && info.ntensors >= 0);
    if (sink)
        zero_checkpoint_print(c, sink);
    int all_ok = 1;
    for (int r = 0; r < info.world_size && r < 4; r++) {
        memset(&err, 0x5a, sizeof err);
        rc = zero_checkpoint_verify_rank(c, r, &err);
        if (rc) {
            fuzz_check_error(rc, &err);
            all_ok = 0;
        }
    }
    if (all_ok && info.world_size == 1 && info.numel <= (1 << 20)) {
        for (int i = 0; i < info.ntensors; i++) {
            struct zero_checkpoint_tensor t;
            FUZZ_CHECK(zero_checkpoint_tensor(c, i, &t) == 0 && t.numel >= 0);
            float *host = malloc((size_t)t.numel * sizeof *host + 1);
            for (int k = 0; host && k < info.nstates; k++) {
                rc =
                    zero_checkpoint_read_tensor(c, i, zero_checkpoint_state_name(c, k), host, &err);
                FUZZ_CHECK(rc == 0); /* the whole file verified: every read must succeed */
            }
            free(host);
        }
    }
    zero_checkpoint_close(c);
    return 0;
}

/* libFuzzer harness for the ds_config.json loader (./configure --enable-fuzzing;
 * make fuzz-config FUZZ_SECONDS=60). Any bytes go in; the loader must either
 * fail with a status and a NUL-terminated message, or produce a config that
 * keeps the loader's promises: no unsupported feature, DeepSpeed's batch rule
 * holding when the world size is known, every value printable. */
#include "fuzz_util.h"
#include "zero/config_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    int world = (int)(size % 5); /* 0 = unknown, 1-4 ranks */
    struct zero_config c, before;
    struct zero_config_origins o;
    struct zero_error err;
    memset(&err, 0x5a, sizeof err);
    zero_config_defaults(&c);
    before = c;
    int rc = zero_config_load_string(&c, &o, (const char *)data, size, world, 0, &err);
    if (rc != ZERO_OK) {
        FUZZ_CHECK(rc > ZERO_OK && rc <= ZERO_EMISMATCH && err.code == rc);
        FUZZ_CHECK(memchr(err.msg, '\0', sizeof err.msg) != NULL && err.msg[0] != '\0');
        FUZZ_CHECK(zero_config_diff(&c, &before, NULL, 0) == 0); /* untouched on failure */
        return 0;
    }
    char why[256];
    FUZZ_CHECK(zero_config_unsupported(&c, why, sizeof why) == 0);
    FUZZ_CHECK(zero_config_diff(&c, &c, NULL, 0) == 0);
    FUZZ_CHECK(c.zero_optimization.stage >= 0 && c.zero_optimization.stage <= 3);
    /* a key left "auto" is the program's to fill (zero_config_resolve_auto): the
     * batch rule holds once every key is resolved */
    char pending[128];
    if (!zero_config_auto_pending(&c, pending, sizeof pending)) {
        if (world > 0)
            FUZZ_CHECK(c.train_batch_size ==
                       c.train_micro_batch_size_per_gpu * c.gradient_accumulation_steps * world);
        else
            FUZZ_CHECK(c.train_batch_size > 0 || c.train_micro_batch_size_per_gpu > 0);
    }
    for (int k = 0; k < ZERO_CONFIG_MAX_KEYS; k++)
        FUZZ_CHECK(o.of[k] <= ZERO_ORIGIN_AUTO);
    if (sink)
        zero_config_print(sink, &c, &o);
    return 0;
}

/* libFuzzer harness for the Hugging Face model directory's JSON readers: config.json
 * (zero_hf_config_parse) and model.safetensors.index.json (zero_hf_index_parse);
 * the first byte picks which. Each must fail with a status and a message, or give a
 * config that zero_llama_config_check accepts / an index whose every tensor points at
 * one of its plain shard names. */
#include "fuzz_util.h"
#include "hf_index.h"
#include "zero/hf_model.h"
#include "zero/llama.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_failure(int rc, const struct zero_error *err)
{
    FUZZ_CHECK(rc > ZERO_OK && rc <= ZERO_EMISMATCH && err->code == rc);
    FUZZ_CHECK(memchr(err->msg, '\0', sizeof err->msg) != NULL && err->msg[0] != '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    struct zero_error err;
    memset(&err, 0x5a, sizeof err);
    if (data[0] & 1) {
        struct zero_hf_index x;
        int rc = zero_hf_index_parse(&x, text, size - 1, "index.json", &err);
        if (rc) {
            check_failure(rc, &err);
            return 0;
        }
        for (int t = 0; t < x.ntensors; t++) {
            FUZZ_CHECK(x.shard_of[t] >= 0 && x.shard_of[t] < x.nshards);
            FUZZ_CHECK(!strchr(x.shards[x.shard_of[t]], '/'));
        }
        zero_hf_index_free(&x);
        return 0;
    }
    struct zero_llama_config c;
    char ignored[128];
    memset(ignored, 0x5a, sizeof ignored);
    int rc = zero_hf_config_parse(&c, text, size - 1, "config.json", ignored, sizeof ignored, &err);
    if (rc) {
        check_failure(rc, &err);
        return 0;
    }
    FUZZ_CHECK(memchr(ignored, '\0', sizeof ignored) != NULL);
    FUZZ_CHECK(zero_llama_config_check(&c, &err) == ZERO_OK);
    FUZZ_CHECK(zero_llama_num_parameters(&c) > 0);
    return 0;
}

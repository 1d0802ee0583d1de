/* libFuzzer harness for the token readers (make fuzz-tokens). The first byte
 * picks the format (even: an llm.c .bin shard, odd: byte-level text) and the
 * vocabulary; the rest is the file. A stream that reads is cut into a split of
 * sequences and a few of them (negative and huge indices included) filled.
 * Seeds: fuzz/corpus/tokens/. */
#include "fuzz_util.h"
#include "zero/tokens.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char bin[300], text[300];
    if (!bin[0]) {
        snprintf(bin, sizeof bin, "%s/shard.bin", fuzz_scratch("fuzz_tokens"));
        snprintf(text, sizeof text, "%s/book.txt", fuzz_scratch("fuzz_tokens"));
    }
    if (size < 1)
        return 0;
    const char *path = data[0] & 1 ? text : bin;
    const int64_t vocab = (data[0] >> 1) < 64 ? 50257 : 256 + (data[0] >> 1);
    fuzz_put(path, data + 1, size - 1);
    struct zero_tokens t;
    struct zero_error err;
    memset(&err, 0x5a, sizeof err);
    int rc = zero_tokens_read(&t, path, vocab, &err);
    if (rc) {
        fuzz_check_error(rc, &err);
        FUZZ_CHECK(t.ids == NULL && t.n == 0);
        return 0;
    }
    FUZZ_CHECK(t.n >= 1);
    for (int64_t i = 0; i < t.n; i++)
        FUZZ_CHECK(t.ids[i] >= 0 && t.ids[i] < vocab);
    const int64_t T = 1 + (int64_t)(size % 7);
    struct zero_token_split s;
    rc = zero_token_split_init(&s, &t, 0, t.n, T, "fuzz", &err);
    if (rc) {
        fuzz_check_error(rc, &err);
        FUZZ_CHECK(t.n < T + 1);
    } else {
        int32_t tokens[3 * 7], labels[3 * 7];
        const int64_t firsts[] = {0, -1, s.windows, INT64_MAX - 3, INT64_MIN + 3};
        for (size_t k = 0; k < sizeof firsts / sizeof *firsts; k++)
            zero_token_split_fill(&s, firsts[k], 3, tokens, labels);
    }
    zero_tokens_free(&t);
    return 0;
}

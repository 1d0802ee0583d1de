/* libFuzzer harness for encode and decode (make fuzz-encode). The first byte picks a
 * tokenizer of tests/fixtures/tokenizer/ (GPT-2, Llama 3, Llama 2, Metaspace, NFKC
 * shaped) and the flags; the rest is the text, any bytes. Every id is inside the
 * vocabulary, decode works, and for the byte-level tokenizers decode(encode(x)) is x
 * with its invalid UTF-8 replaced (what HF gives for the string Python hands it).
 * Seeds: fuzz/corpus/encode/. */
#include "fuzz_util.h"
#include "zero/tokenizer.h"

#ifndef FUZZ_FIXTURES
#define FUZZ_FIXTURES "tests/fixtures/tokenizer"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = {"gpt2", "llama3", "llama2", "metaspace", "nfkc"};
#define N_NAMES (sizeof names / sizeof *names)

static struct zero_tokenizer *tokenizer(size_t k)
{
    static struct zero_tokenizer *loaded[N_NAMES];
    if (!loaded[k]) {
        char path[1024];
        struct zero_error err;
        snprintf(path, sizeof path, "%s/%s.json", FUZZ_FIXTURES, names[k]);
        if (zero_tokenizer_load(&loaded[k], path, &err)) {
            fprintf(stderr, "fuzz_encode: %s\n", err.msg);
            __builtin_trap();
        }
    }
    return loaded[k];
}

/* gpt2 and llama3: byte-level, no normalizer, so decode gives back every valid text */
static int is_byte_level(size_t k)
{
    return k <= 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const size_t k = data[0] % N_NAMES;
    const unsigned flags = (data[0] / N_NAMES) & 1 ? ZERO_ENCODE_ADD_SPECIAL : 0;
    const struct zero_tokenizer *tok = tokenizer(k);
    const char *text = (const char *)data + 1;
    const size_t len = size - 1;
    struct zero_token_buf ids = {0};
    struct zero_error err;
    int64_t replaced = -1;
    FUZZ_CHECK(zero_tokenizer_encode(tok, text, len, flags, &ids, &replaced, &err) == 0);
    FUZZ_CHECK(replaced >= 0 && (size_t)replaced <= len);
    const int64_t V = zero_tokenizer_vocab_size(tok);
    for (int64_t i = 0; i < ids.n; i++)
        FUZZ_CHECK(ids.ids[i] >= 0 && ids.ids[i] < V);
    char *out;
    size_t out_len;
    FUZZ_CHECK(zero_tokenizer_decode(tok, ids.ids, ids.n, 0, &out, &out_len, &err) == 0);
    if (is_byte_level(k) && !flags && replaced == 0)
        FUZZ_CHECK(out_len == len && memcmp(out, text, len) == 0);
    free(out);
    zero_token_buf_free(&ids);
    return 0;
}

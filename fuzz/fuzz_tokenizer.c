/* libFuzzer harness for the tokenizer.json reader (make fuzz-tokenizer): the input is
 * the file. One that loads must then encode and decode a few strings (special tokens,
 * invalid UTF-8, whitespace runs) with every id inside its vocabulary.
 * Seeds: fuzz/corpus/tokenizer/ (small byte-level, Split, SentencePiece-style files). */
#include "fuzz_util.h"
#include "zero/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const struct zero_tokenizer *tok)
{
    static const char *const texts[] = {"",
                                        "Hello, world! It's 2024.",
                                        "a  b\n\n\tc",
                                        "<|endoftext|>x</s><s>",
                                        "\xff\xe2\x82 \xf0\x9f\x98\x80",
                                        "\xe2\x96\x81\xe2\x96\x81z"};
    const int64_t V = zero_tokenizer_vocab_size(tok);
    FUZZ_CHECK(V >= 0);
    for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) {
        struct zero_token_buf ids = {0};
        struct zero_error err;
        for (unsigned flags = 0; flags < 2; flags++) {
            ids.n = 0;
            int rc =
                zero_tokenizer_encode(tok, texts[k], strlen(texts[k]), flags, &ids, NULL, &err);
            if (rc) {
                fuzz_check_error(rc, &err);
                continue;
            }
            /* a template may name ids outside the vocabulary: decode skips those */
            for (int64_t i = 0; i < ids.n && !flags; i++)
                FUZZ_CHECK(ids.ids[i] >= 0 && ids.ids[i] < V);
            char *text;
            size_t len;
            rc = zero_tokenizer_decode(tok, ids.ids, ids.n, flags, &text, &len, &err);
            if (rc)
                fuzz_check_error(rc, &err);
            else
                FUZZ_CHECK(text[len] == '\0');
            free(text);
        }
        zero_token_buf_free(&ids);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct zero_tokenizer *tok = (struct zero_tokenizer *)&tok;
    struct zero_error err;
    memset(&err, 0x5a, sizeof err);
    int rc = zero_tokenizer_load_json(&tok, (const char *)data, size, "fuzz.json", &err);
    if (rc) {
        fuzz_check_error(rc, &err);
        FUZZ_CHECK(tok == NULL);
        FUZZ_CHECK(strncmp(err.msg, "fuzz.json: ", 11) == 0);
        return 0;
    }
    exercise(tok);
    zero_tokenizer_free(tok);
    return 0;
}

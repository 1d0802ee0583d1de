/* The tokenizer (src/text/) against Hugging Face tokenizers: for each fixture of
 * tests/fixtures/tokenizer/ (made once by make_tokenizer_fixtures.py), every case's ids
 * without and with the post-processor's special tokens, and decode with and without
 * the special tokens, byte for byte. Then: encode from several threads at once, invalid
 * UTF-8, and bad tokenizer.json files refused naming the JSON path of what is wrong. */
#include <check.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zero/tokenizer.h"

static const char *const fixtures[] = {"gpt2", "llama3", "llama2", "metaspace", "nfkc"};
#define N_FIXTURES (int)(sizeof fixtures / sizeof *fixtures)

static void fixture_path(char *out, size_t n, const char *file)
{
    const char *src = getenv("ZERO_TEST_SRCDIR");
    snprintf(out, n, "%s/fixtures/tokenizer/%s", src ? src : "tests", file);
}

static struct zero_tokenizer *load_fixture(const char *name)
{
    char path[1024], file[128];
    snprintf(file, sizeof file, "%s.json", name);
    fixture_path(path, sizeof path, file);
    struct zero_tokenizer *tok;
    struct zero_error err;
    ck_assert_msg(zero_tokenizer_load(&tok, path, &err) == ZERO_OK, "%s", err.msg);
    return tok;
}

static json_t *load_cases(const char *name)
{
    char path[1024], file[128];
    snprintf(file, sizeof file, "%s.cases.json", name);
    fixture_path(path, sizeof path, file);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    ck_assert_msg(root != NULL, "%s: %s", path, jerr.text);
    json_t *cases = json_object_get(root, "cases");
    ck_assert(json_array_size(cases) >= 200);
    json_incref(cases);
    json_decref(root);
    return cases;
}

/* hex -> bytes (malloc'ed, NUL after them) */
static char *unhex(const char *hex, size_t *n)
{
    *n = strlen(hex) / 2;
    char *out = malloc(*n + 1);
    for (size_t i = 0; i < *n; i++) {
        unsigned v;
        ck_assert(sscanf(hex + 2 * i, "%2x", &v) == 1);
        out[i] = (char)v;
    }
    out[*n] = '\0';
    return out;
}

static void expect_ids(const struct zero_token_buf *got, json_t *want, const char *name, size_t c,
                       const char *what)
{
    int same = (size_t)got->n == json_array_size(want);
    for (int64_t i = 0; same && i < got->n; i++)
        same = got->ids[i] == json_integer_value(json_array_get(want, (size_t)i));
    if (same)
        return;
    char msg[2048];
    int at = snprintf(msg, sizeof msg, "%s case %zu %s: got", name, c, what);
    for (int64_t i = 0; i < got->n && at < 1800; i++)
        at += snprintf(msg + at, sizeof msg - (size_t)at, " %d", got->ids[i]);
    at += snprintf(msg + at, sizeof msg - (size_t)at, " | HF");
    for (size_t i = 0; i < json_array_size(want) && at < 2000; i++)
        at += snprintf(msg + at, sizeof msg - (size_t)at, " %d",
                       (int)json_integer_value(json_array_get(want, i)));
    ck_abort_msg("%s", msg);
}

static void expect_decoded(const struct zero_tokenizer *tok, const struct zero_token_buf *ids,
                           unsigned flags, const char *want_hex, const char *name, size_t c)
{
    size_t want_n, got_n;
    char *want = unhex(want_hex, &want_n), *got;
    struct zero_error err;
    ck_assert_msg(zero_tokenizer_decode(tok, ids->ids, ids->n, flags, &got, &got_n, &err) == 0,
                  "%s", err.msg);
    ck_assert_msg(got_n == want_n && memcmp(got, want, got_n) == 0,
                  "%s case %zu decode%s: got \"%s\", HF \"%s\"", name, c,
                  flags ? " skipping special tokens" : "", got, want);
    free(want);
    free(got);
}

START_TEST(test_fixture_encodes_and_decodes_as_hf_tokenizers)
{
    const char *name = fixtures[_i];
    struct zero_tokenizer *tok = load_fixture(name);
    json_t *cases = load_cases(name);
    struct zero_error err;
    for (size_t c = 0; c < json_array_size(cases); c++) {
        json_t *row = json_array_get(cases, c);
        size_t n;
        char *text = unhex(json_string_value(json_object_get(row, "bytes")), &n);
        struct zero_token_buf plain = {0}, special = {0};
        ck_assert_msg(zero_tokenizer_encode(tok, text, n, 0, &plain, NULL, &err) == 0, "%s",
                      err.msg);
        ck_assert_msg(
            zero_tokenizer_encode(tok, text, n, ZERO_ENCODE_ADD_SPECIAL, &special, NULL, &err) == 0,
            "%s", err.msg);
        expect_ids(&plain, json_object_get(row, "ids"), name, c, "ids");
        expect_ids(&special, json_object_get(row, "ids_special"), name, c, "ids_special");
        expect_decoded(tok, &special, 0, json_string_value(json_object_get(row, "decoded")), name,
                       c);
        expect_decoded(tok, &special, ZERO_DECODE_SKIP_SPECIAL,
                       json_string_value(json_object_get(row, "decoded_skip")), name, c);
        zero_token_buf_free(&plain);
        zero_token_buf_free(&special);
        free(text);
    }
    json_decref(cases);
    zero_tokenizer_free(tok);
}
END_TEST

/* ---- threads ---- */

struct encode_job {
    const struct zero_tokenizer *tok;
    json_t *cases;
    int mismatches;
};

static void *encode_all(void *arg)
{
    struct encode_job *job = arg;
    for (int round = 0; round < 3; round++)
        for (size_t c = 0; c < json_array_size(job->cases); c++) {
            json_t *row = json_array_get(job->cases, c);
            size_t n;
            char *text = unhex(json_string_value(json_object_get(row, "bytes")), &n);
            struct zero_token_buf ids = {0};
            struct zero_error err;
            json_t *want = json_object_get(row, "ids");
            int ok = zero_tokenizer_encode(job->tok, text, n, 0, &ids, NULL, &err) == 0 &&
                     (size_t)ids.n == json_array_size(want);
            for (int64_t i = 0; ok && i < ids.n; i++)
                ok = ids.ids[i] == json_integer_value(json_array_get(want, (size_t)i));
            job->mismatches += !ok;
            zero_token_buf_free(&ids);
            free(text);
        }
    return NULL;
}

START_TEST(test_four_threads_encoding_at_once_get_hf_ids)
{
    struct zero_tokenizer *tok = load_fixture("llama3");
    json_t *cases = load_cases("llama3");
    pthread_t th[4];
    struct encode_job jobs[4];
    for (int t = 0; t < 4; t++) {
        jobs[t] = (struct encode_job){.tok = tok, .cases = cases};
        ck_assert(pthread_create(&th[t], NULL, encode_all, &jobs[t]) == 0);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        ck_assert_int_eq(jobs[t].mismatches, 0);
    }
    json_decref(cases);
    zero_tokenizer_free(tok);
}
END_TEST

/* ---- invalid UTF-8, lookups ---- */

START_TEST(test_invalid_utf8_encodes_as_its_replacement_characters)
{
    struct zero_tokenizer *tok = load_fixture("gpt2");
    struct zero_token_buf bad = {0}, good = {0};
    struct zero_error err;
    int64_t replaced = -1;
    /* E2 82 is a cut euro sign (one maximal subpart), FF and C0 AF are invalid bytes */
    const char in[] = "\xe2\x82 euro \xff\xc0\xaf";
    const char as_python[] = "\xef\xbf\xbd euro \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd";
    ck_assert(zero_tokenizer_encode(tok, in, sizeof in - 1, 0, &bad, &replaced, &err) == 0);
    ck_assert_int_eq(replaced, 4);
    ck_assert(zero_tokenizer_encode(tok, as_python, sizeof as_python - 1, 0, &good, &replaced,
                                    &err) == 0);
    ck_assert_int_eq(replaced, 0);
    ck_assert_int_eq(bad.n, good.n);
    ck_assert(memcmp(bad.ids, good.ids, (size_t)bad.n * sizeof *bad.ids) == 0);
    zero_token_buf_free(&bad);
    zero_token_buf_free(&good);
    zero_tokenizer_free(tok);
}
END_TEST

START_TEST(test_vocabulary_lookups_and_document_boundary)
{
    struct zero_tokenizer *gpt2 = load_fixture("gpt2"), *llama2 = load_fixture("llama2");
    const int32_t eot = zero_tokenizer_eot(gpt2);
    ck_assert_int_ge(eot, 0);
    ck_assert_str_eq(zero_tokenizer_token(gpt2, eot), "<|endoftext|>");
    ck_assert_int_eq(zero_tokenizer_token_id(gpt2, "<|endoftext|>"), eot);
    ck_assert_int_eq(zero_tokenizer_token_id(gpt2, "no such token"), -1);
    ck_assert_ptr_null(zero_tokenizer_token(gpt2, (int32_t)zero_tokenizer_vocab_size(gpt2)));
    ck_assert_int_eq(zero_tokenizer_eot(llama2), zero_tokenizer_token_id(llama2, "</s>"));
    ck_assert_int_eq(zero_tokenizer_token_id(llama2, "<0x41>"), 3 + 0x41);
    zero_tokenizer_free(gpt2);
    zero_tokenizer_free(llama2);
}
END_TEST

/* ---- bad files ---- */

static const char good_model[] =
    "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, "
    "\"merges\": [\"a b\"]}";

static const struct bad_file {
    const char *json;
    const char *says[3]; /* what the message must contain */
} bad_files[] = {
    {"{\"model\": ", {"tok.json: not JSON: line 1", NULL}},
    {"[1, 2]", {"tok.json: (top level): expected a JSON object", NULL}},
    {"{\"normalizer\": null}", {"model: missing", NULL}},
    {"{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}",
     {"model", "\"Unigram\" is not supported"}},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a b\"]}}",
     {"model.merges[0]", "\"b\" is not in model.vocab"}},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -3}}}",
     {"model.vocab.a", "expected an id"}},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"dropout\": 0.1}}",
     {"model.dropout", "dropout"}},
    {"{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"unk_token\": \"<unk>\"}}",
     {"model.unk_token", "\"<unk>\" is not in model.vocab"}},
    {"{%s, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
     "\"ByteLevel\"}, {\"type\": \"Whitespace\"}]}}",
     {"pre_tokenizer.pretokenizers[1]", "pre-tokenizer \"Whitespace\" is not supported"}},
    {"{%s, \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, \"behavior\": "
     "\"Isolated\"}}",
     {"pre_tokenizer.pattern", "does not compile"}},
    {"{%s, \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, "
     "\"behavior\": \"Sideways\"}}",
     {"pre_tokenizer.behavior", "\"Sideways\""}},
    {"{%s, \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, "
     "{\"type\": \"Lowercase\"}]}}",
     {"normalizer.normalizers[1]", "normalizer \"Lowercase\" is not supported"}},
    {"{%s, \"decoder\": {\"type\": \"WordPiece\"}}", {"decoder", "decoder \"WordPiece\""}},
    {"{%s, \"decoder\": {\"type\": \"Strip\", \"content\": \"ab\", \"start\": 1, \"stop\": 0}}",
     {"decoder.content", "one character"}},
    {"{%s, \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": "
     "{\"id\": \"<s>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], "
     "\"special_tokens\": {}}}",
     {"post_processor.special_tokens.<s>", "no \"ids\""}},
    {"{%s, \"added_tokens\": [{\"id\": 5, \"content\": \"\"}]}", {"added_tokens[0].content", NULL}},
    {"{%s, \"truncation\": {\"max_length\": 8}}", {"truncation", "only null"}},
    {"{%s, \"normalizer\": {\"type\": 7}}", {"normalizer.type", "expected a string"}},
};

START_TEST(test_bad_tokenizer_json_is_refused_naming_the_json_path)
{
    const struct bad_file *b = &bad_files[_i];
    char json[2048];
    snprintf(json, sizeof json, b->json, good_model);
    struct zero_tokenizer *tok = (struct zero_tokenizer *)1;
    struct zero_error err;
    ck_assert_int_ne(zero_tokenizer_load_json(&tok, json, strlen(json), "tok.json", &err), 0);
    ck_assert_ptr_null(tok);
    ck_assert_msg(strncmp(err.msg, "tok.json: ", 10) == 0, "%s", err.msg);
    for (int k = 0; k < 3 && b->says[k]; k++)
        ck_assert_msg(strstr(err.msg, b->says[k]) != NULL, "\"%s\" lacks \"%s\"", err.msg,
                      b->says[k]);
}
END_TEST

START_TEST(test_missing_file_is_an_io_error_naming_it)
{
    struct zero_tokenizer *tok;
    struct zero_error err;
    ck_assert_int_eq(zero_tokenizer_load(&tok, "/nonexistent/tokenizer.json", &err), ZERO_EIO);
    ck_assert(strstr(err.msg, "/nonexistent/tokenizer.json") != NULL);
}
END_TEST

static Suite *tokenizer_suite(void)
{
    Suite *s = suite_create("tokenizer");
    TCase *hf = tcase_create("hf_fixtures");
    tcase_set_timeout(hf, 120);
    tcase_add_loop_test(hf, test_fixture_encodes_and_decodes_as_hf_tokenizers, 0, N_FIXTURES);
    tcase_add_test(hf, test_four_threads_encoding_at_once_get_hf_ids);
    tcase_add_test(hf, test_invalid_utf8_encodes_as_its_replacement_characters);
    tcase_add_test(hf, test_vocabulary_lookups_and_document_boundary);
    suite_add_tcase(s, hf);
    TCase *bad = tcase_create("bad_files");
    tcase_add_loop_test(bad, test_bad_tokenizer_json_is_refused_naming_the_json_path, 0,
                        (int)(sizeof bad_files / sizeof *bad_files));
    tcase_add_test(bad, test_missing_file_is_an_io_error_naming_it);
    suite_add_tcase(s, bad);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tokenizer_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* The language-model data sources: byte-level text files, llm.c token shards
 * (good and bad files, written here), the training sequences cut from a
 * stream, and the generated addition task with its held-out set. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zero/addition.h"
#include "zero/tokens.h"

static char dir[64];

static const char *path_of(const char *name)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static void write_bytes(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* An llm.c shard with the given header fields and `present` uint16 tokens i * 7. */
static const char *write_shard(const char *name, int32_t magic, int32_t version, int32_t count,
                               int present)
{
    const char *path = path_of(name);
    size_t n = 1024 + 2 * (size_t)present;
    unsigned char *b = calloc(n, 1);
    ck_assert_ptr_nonnull(b);
    const int32_t h[3] = {magic, version, count};
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 4; j++)
            b[4 * k + j] = (unsigned char)((uint32_t)h[k] >> (8 * j));
    for (int i = 0; i < present; i++) {
        b[1024 + 2 * i] = (unsigned char)(i * 7);
        b[1024 + 2 * i + 1] = (unsigned char)((i * 7) >> 8);
    }
    write_bytes(path, b, n);
    free(b);
    return path;
}

/* Reading path must fail with a message containing the path and `why`. */
static void expect_llmc_error(const char *path, int64_t vocab, const char *why)
{
    struct zero_tokens t;
    struct zero_error err = {0};
    ck_assert_int_ne(zero_tokens_read_llmc(&t, path, vocab, &err), ZERO_OK);
    ck_assert_msg(strstr(err.msg, path) != NULL, "\"%s\" does not name the file", err.msg);
    ck_assert_msg(strstr(err.msg, why) != NULL, "\"%s\" does not say \"%s\"", err.msg, why);
    ck_assert_ptr_null(t.ids);
}

START_TEST(test_text_file_is_its_bytes_utf8_included)
{
    const char text[] = "h\xc3\xa9llo\n"; /* "héllo\n" */
    write_bytes(path_of("a.txt"), text, sizeof text - 1);
    struct zero_tokens t;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_tokens_read(&t, path_of("a.txt"), 256, &err), ZERO_OK);
    ck_assert_int_eq(t.n, 7);
    const int32_t want[7] = {'h', 0xc3, 0xa9, 'l', 'l', 'o', '\n'};
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(t.ids[i], want[i]);
    zero_tokens_free(&t);
}
END_TEST

START_TEST(test_empty_or_missing_text_file_fails_naming_it)
{
    write_bytes(path_of("empty.txt"), "", 0);
    struct zero_tokens t;
    struct zero_error err = {0};
    ck_assert_int_ne(zero_tokens_read_text(&t, path_of("empty.txt"), &err), ZERO_OK);
    ck_assert_msg(strstr(err.msg, "empty.txt: empty") != NULL, "%s", err.msg);
    ck_assert_int_ne(zero_tokens_read_text(&t, path_of("nope.txt"), &err), ZERO_OK);
    ck_assert_msg(strstr(err.msg, "nope.txt: cannot open") != NULL, "%s", err.msg);
    /* byte-level text needs 256 token ids */
    ck_assert_int_ne(zero_tokens_read(&t, path_of("empty.txt"), 100, &err), ZERO_OK);
    ck_assert_msg(strstr(err.msg, "at least 256") != NULL, "%s", err.msg);
}
END_TEST

START_TEST(test_llmc_shard_round_trips)
{
    int32_t ids[300];
    for (int i = 0; i < 300; i++)
        ids[i] = (i * 193) % 50257;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_tokens_write_llmc(path_of("ok.bin"), ids, 300, &err), ZERO_OK);
    struct zero_tokens t;
    ck_assert_int_eq(zero_tokens_read(&t, path_of("ok.bin"), 50257, &err), ZERO_OK);
    ck_assert_int_eq(t.n, 300);
    ck_assert_mem_eq(t.ids, ids, sizeof ids);
    zero_tokens_free(&t);
}
END_TEST

START_TEST(test_llmc_shard_written_by_hand_reads)
{
    struct zero_tokens t;
    struct zero_error err = {0};
    const char *p = write_shard("hand.bin", 20240520, 1, 50, 50);
    ck_assert_int_eq(zero_tokens_read_llmc(&t, p, 50257, &err), ZERO_OK);
    ck_assert_int_eq(t.n, 50);
    ck_assert_int_eq(t.ids[49], 49 * 7);
    zero_tokens_free(&t);
}
END_TEST

START_TEST(test_llmc_bad_files_fail_naming_file_and_problem)
{
    expect_llmc_error(write_shard("magic.bin", 20240521, 1, 10, 10), 50257, "magic 20240521");
    expect_llmc_error(write_shard("version.bin", 20240520, 2, 10, 10), 50257, "version 2");
    expect_llmc_error(write_shard("trunc.bin", 20240520, 1, 100, 50), 50257, "truncated");
    expect_llmc_error(write_shard("trail.bin", 20240520, 1, 10, 12), 50257, "trailing");
    expect_llmc_error(write_shard("none.bin", 20240520, 1, 0, 0), 50257, "no tokens");
    /* token 3 is 21, outside a vocabulary of 20 */
    expect_llmc_error(write_shard("range.bin", 20240520, 1, 10, 10), 20, "token 3 is 21");
    write_bytes(path_of("short.bin"), "\x28\xd6\x34\x01", 4);
    expect_llmc_error(path_of("short.bin"), 50257, "shorter than the 1024-byte");
    expect_llmc_error(path_of("missing.bin"), 50257, "cannot open");
}
END_TEST

static int64_t file_size(const char *path)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return (int64_t)st.st_size;
}

static int32_t header_field(const char *path, int k)
{
    unsigned char h[12];
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(h, 1, 12, f), 12);
    fclose(f);
    return (int32_t)((uint32_t)h[4 * k] | (uint32_t)h[4 * k + 1] << 8 |
                     (uint32_t)h[4 * k + 2] << 16 | (uint32_t)h[4 * k + 3] << 24);
}

START_TEST(test_vocabulary_over_65536_writes_and_reads_32_bit_shards)
{
    /* Llama 3's vocabulary: ids up to 128255 need the 32-bit variant */
    int32_t ids[300];
    for (int i = 0; i < 300; i++)
        ids[i] = (i * 7919) % 128256;
    ids[7] = 128255;
    struct zero_error err = {0};
    const char *p = path_of("wide.bin");
    ck_assert_int_eq(zero_tokens_write(p, ids, 300, 128256, &err), ZERO_OK);
    ck_assert_int_eq(header_field(p, 0), ZERO_TOKENS32_MAGIC);
    ck_assert_int_eq(header_field(p, 1), ZERO_TOKENS32_VERSION);
    ck_assert_int_eq(header_field(p, 2), 300);
    ck_assert_int_eq(file_size(p), 1024 + 4 * 300);
    struct zero_tokens t;
    ck_assert_int_eq(zero_tokens_read(&t, p, 128256, &err), ZERO_OK);
    ck_assert_int_eq(t.n, 300);
    ck_assert_mem_eq(t.ids, ids, sizeof ids);
    zero_tokens_free(&t);
    /* a smaller vocabulary is refused by the reader, naming the token */
    expect_llmc_error(p, 100000, "token 7 is 128255");
    /* and the writer refuses ids outside the vocabulary it is told */
    ck_assert_int_ne(zero_tokens_write(p, ids, 300, 128255, &err), ZERO_OK);
    ck_assert_msg(strstr(err.msg, "token 7 is 128255, outside the vocabulary of 128255"), "%s",
                  err.msg);
}
END_TEST

START_TEST(test_vocabulary_up_to_65536_writes_llmc_uint16_shards)
{
    int32_t ids[10] = {0, 1, 2, 65535, 4, 5, 6, 7, 8, 9};
    struct zero_error err = {0};
    const char *p = path_of("narrow.bin");
    ck_assert_int_eq(zero_tokens_write(p, ids, 10, 65536, &err), ZERO_OK);
    ck_assert_int_eq(header_field(p, 0), ZERO_LLMC_MAGIC);
    ck_assert_int_eq(file_size(p), 1024 + 2 * 10);
    struct zero_tokens t;
    ck_assert_int_eq(zero_tokens_read(&t, p, 65536, &err), ZERO_OK);
    ck_assert_mem_eq(t.ids, ids, sizeof ids);
    zero_tokens_free(&t);
}
END_TEST

START_TEST(test_32_bit_shard_bad_headers_fail_naming_file_and_problem)
{
    /* the uint16 body a 32-bit header does not match: half the bytes it says */
    expect_llmc_error(write_shard("wide_trunc.bin", ZERO_TOKENS32_MAGIC, 1, 10, 10), 50257,
                      "truncated");
    expect_llmc_error(write_shard("wide_version.bin", ZERO_TOKENS32_MAGIC, 2, 5, 10), 50257,
                      "version 2, only version 1 (uint32 tokens)");
}
END_TEST

START_TEST(test_sequences_are_windows_of_t_plus_one_and_wrap)
{
    struct zero_tokens t = {.n = 23};
    t.ids = malloc(23 * sizeof(int32_t));
    ck_assert_ptr_nonnull(t.ids);
    for (int i = 0; i < 23; i++)
        t.ids[i] = 100 + i;
    struct zero_token_split s;
    struct zero_error err = {0};
    /* [2, 20): 18 tokens, windows of 4 (+1) -> (18 - 1) / 4 = 4 windows */
    ck_assert_int_eq(zero_token_split_init(&s, &t, 2, 20, 4, "train", &err), ZERO_OK);
    ck_assert_int_eq(s.windows, 4);
    int32_t tokens[8], labels[8];
    zero_token_split_fill(&s, 3, 2, tokens, labels); /* sequences 3 and 4 (= 0) */
    const int32_t want_tokens[8] = {114, 115, 116, 117, 102, 103, 104, 105};
    const int32_t want_labels[8] = {115, 116, 117, 118, 103, 104, 105, 106};
    ck_assert_mem_eq(tokens, want_tokens, sizeof tokens);
    ck_assert_mem_eq(labels, want_labels, sizeof labels);
    ck_assert_int_ne(zero_token_split_init(&s, &t, 20, 23, 4, "validation", &err), ZERO_OK);
    ck_assert_msg(strstr(err.msg, "validation: 3 tokens") != NULL, "%s", err.msg);
    zero_tokens_free(&t);
}
END_TEST

START_TEST(test_addition_problem_text_is_zero_padded)
{
    char text[16];
    zero_addition_format(3, 482, 17, text);
    ck_assert_int_eq(zero_addition_problem_len(3), 13);
    ck_assert_mem_eq(text, "482+017=0499\n", 13);
    zero_addition_format(2, 99, 99, text);
    ck_assert_mem_eq(text, "99+99=198\n", 10);
}
END_TEST

START_TEST(test_addition_sequences_are_a_problem_padded_with_newlines)
{
    const struct zero_addition task = {.digits = 2, .seed = 5};
    const int64_t T = 12;
    int32_t tokens[2 * 12], labels[2 * 12];
    zero_addition_fill(&task, 0, T, 7, 2, tokens, labels);
    int64_t a, b;
    zero_addition_operands(&task, 0, 8, &a, &b);
    char text[16];
    zero_addition_format(2, a, b, text);
    for (int t = 0; t < 10; t++)
        ck_assert_int_eq(tokens[T + t], (unsigned char)text[t]);
    for (int t = 0; t < 9; t++)
        ck_assert_int_eq(labels[T + t], (unsigned char)text[t + 1]);
    for (int t = 10; t < T; t++)
        ck_assert_int_eq(tokens[T + t], '\n');
    for (int t = 9; t < T; t++)
        ck_assert_int_eq(labels[T + t], '\n');
    struct zero_error err = {0};
    ck_assert_int_eq(zero_addition_check(&task, 10, &err), ZERO_OK);
    ck_assert_int_ne(zero_addition_check(&task, 9, &err), ZERO_OK);
    ck_assert_msg(strstr(err.msg, "sequence length 9") != NULL, "%s", err.msg);
}
END_TEST

START_TEST(test_addition_training_never_draws_held_out_problems)
{
    const struct zero_addition task = {.digits = 3, .seed = 11};
    int held = 0;
    for (int64_t s = 0; s < 20000; s++) {
        int64_t a, b;
        zero_addition_operands(&task, 0, s, &a, &b);
        ck_assert(a >= 0 && a < 1000 && b >= 0 && b < 1000);
        ck_assert_msg(!zero_addition_is_held_out(a, b), "training problem %lld is held out",
                      (long long)s);
        zero_addition_operands(&task, 1, s, &a, &b);
        ck_assert(zero_addition_is_held_out(a, b));
    }
    /* about 1/16 of all pairs are held out */
    for (int64_t a = 0; a < 1000; a++)
        for (int64_t b = 0; b < 100; b++)
            held += zero_addition_is_held_out(a, b);
    ck_assert_msg(held > 100000 / 16 * 9 / 10 && held < 100000 / 16 * 11 / 10, "%d held out", held);
}
END_TEST

START_TEST(test_addition_problems_depend_only_on_seed_and_index)
{
    const struct zero_addition t1 = {.digits = 4, .seed = 1}, t2 = {.digits = 4, .seed = 2};
    int64_t a1, b1, a2, b2, a3, b3;
    zero_addition_operands(&t1, 0, 42, &a1, &b1);
    zero_addition_operands(&t1, 0, 42, &a2, &b2);
    zero_addition_operands(&t2, 0, 42, &a3, &b3);
    ck_assert(a1 == a2 && b1 == b2);
    ck_assert(a1 != a3 || b1 != b3);
}
END_TEST

static Suite *data_suite(void)
{
    Suite *s = suite_create("gpt_data");
    TCase *tc = tcase_create("data");
    tcase_add_test(tc, test_text_file_is_its_bytes_utf8_included);
    tcase_add_test(tc, test_empty_or_missing_text_file_fails_naming_it);
    tcase_add_test(tc, test_llmc_shard_round_trips);
    tcase_add_test(tc, test_llmc_shard_written_by_hand_reads);
    tcase_add_test(tc, test_llmc_bad_files_fail_naming_file_and_problem);
    tcase_add_test(tc, test_vocabulary_over_65536_writes_and_reads_32_bit_shards);
    tcase_add_test(tc, test_vocabulary_up_to_65536_writes_llmc_uint16_shards);
    tcase_add_test(tc, test_32_bit_shard_bad_headers_fail_naming_file_and_problem);
    tcase_add_test(tc, test_sequences_are_windows_of_t_plus_one_and_wrap);
    tcase_add_test(tc, test_addition_problem_text_is_zero_padded);
    tcase_add_test(tc, test_addition_sequences_are_a_problem_padded_with_newlines);
    tcase_add_test(tc, test_addition_training_never_draws_held_out_problems);
    tcase_add_test(tc, test_addition_problems_depend_only_on_seed_and_index);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/test_gpt_data.XXXXXX");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(data_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

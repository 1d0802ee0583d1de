# tests/misc.mk -- misc tests (included by tests/local.mk); see tests/local.mk for how to add a test.

# safetensors reader and writer: reference bytes, round trips, bad files, failed writes.
check_PROGRAMS += tests/test_safetensors
tests_test_safetensors_SOURCES = tests/test_safetensors.c
tests_test_safetensors_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_safetensors_LDADD = $(TEST_LDADD)
TESTS += tests/test_safetensors

# src/base/exact_math.h: accuracy on a dense sample, special values, pinned output hashes.
check_PROGRAMS += tests/test_exact_math
tests_test_exact_math_SOURCES = tests/test_exact_math.c tests/exact_math_ref.h
tests_test_exact_math_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_exact_math_LDADD = $(TEST_LDADD)
TESTS += tests/test_exact_math

# The tokenizer (src/text/) against Hugging Face tokenizers' encodings of a few hundred
# strings (tests/fixtures/tokenizer/, made by hand with make_tokenizer_fixtures.py),
# encode from four threads at once, invalid UTF-8, bad tokenizer.json files.
check_PROGRAMS += tests/test_tokenizer
tests_test_tokenizer_SOURCES = tests/test_tokenizer.c
tests_test_tokenizer_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_tokenizer_LDADD = $(TEST_LDADD)
TESTS += tests/test_tokenizer
EXTRA_DIST += tests/fixtures/make_tokenizer_fixtures.py tests/fixtures/tokenizer

# zero tokenize: text to llm.c shards (and the 32-bit variant) and back, bad input.
TESTS += tests/test_tokenize_cli.sh
EXTRA_DIST += tests/test_tokenize_cli.sh

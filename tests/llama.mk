# tests/llama.mk -- the Llama family's tests (included by tests/local.mk).

# Every Llama unit against float64 references and finite differences (cpu backend);
# the Hugging Face tensor enumeration; bad configs.
check_PROGRAMS += tests/test_llama_gradcheck
tests_test_llama_gradcheck_SOURCES = tests/test_llama_gradcheck.c tests/gradcheck_rig.c \
	tests/gradcheck_rig.h tests/gradcheck.c tests/gradcheck.h
tests_test_llama_gradcheck_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_llama_gradcheck_LDADD = $(TEST_LDADD)
TESTS += tests/test_llama_gradcheck.np1

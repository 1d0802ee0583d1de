# tests/llama.mk -- the Llama family's tests (included by tests/local.mk).

# Every Llama unit against float64 references and finite differences (cpu backend);
# the Hugging Face tensor enumeration; bad configs.
check_PROGRAMS += tests/test_llama_gradcheck
tests_test_llama_gradcheck_SOURCES = tests/test_llama_gradcheck.c tests/gradcheck_rig.c \
	tests/gradcheck_rig.h tests/gradcheck.c tests/gradcheck.h
tests_test_llama_gradcheck_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_llama_gradcheck_LDADD = $(TEST_LDADD)
TESTS += tests/test_llama_gradcheck.np1

# A tiny Llama: stages 0-3 in fp32, bf16 and fp16, checkpointing, the offloaded
# optimizer, N ranks vs one rank accumulating: one set of bits (np4 oversubscribed).
check_PROGRAMS += tests/test_llama_stages
tests_test_llama_stages_SOURCES = tests/test_llama_stages.c tests/mpi_check.h
tests_test_llama_stages_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_llama_stages_LDADD = $(TEST_LDADD)
TESTS += tests/test_llama_stages.np1 tests/test_llama_stages.np2 tests/test_llama_stages.np3 \
	tests/test_llama_stages.np4

# examples/train_gpt --arch llama end to end: the default learns addition, 2 ranks at
# stage 3 = 1 rank, Hugging Face names in --save-weights, checkpoints keep the arch.
TESTS += tests/test_train_gpt_llama.sh
EXTRA_DIST += tests/test_train_gpt_llama.sh examples/configs/llama-tiny.json

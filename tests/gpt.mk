# tests/gpt.mk -- GPT tests (included by tests/local.mk); see tests/local.mk for how to add a test.

# Every GPT unit against float64 references and finite differences (cpu backend).
check_PROGRAMS += tests/test_gpt_gradcheck
tests_test_gpt_gradcheck_SOURCES = tests/test_gpt_gradcheck.c tests/gradcheck_rig.c \
	tests/gradcheck_rig.h tests/gradcheck.c tests/gradcheck.h
tests_test_gpt_gradcheck_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_gpt_gradcheck_LDADD = $(TEST_LDADD)
TESTS += tests/test_gpt_gradcheck.np1

# A tiny GPT: stages 0-3, checkpointing on/off and N ranks vs one rank accumulating, same bits.
check_PROGRAMS += tests/test_gpt_stages
tests_test_gpt_stages_SOURCES = tests/test_gpt_stages.c tests/mpi_check.h \
	tests/stored_entries_ref.c tests/stored_entries_ref.h \
	tests/attention_state_backend.c tests/attention_state_backend.h
tests_test_gpt_stages_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_gpt_stages_LDADD = $(TEST_LDADD)
TESTS += tests/test_gpt_stages.np1 tests/test_gpt_stages.np2 tests/test_gpt_stages.np3

# Text and llm.c token files (good and bad, written by the test), sequences, the addition task.
check_PROGRAMS += tests/test_gpt_data
tests_test_gpt_data_SOURCES = tests/test_gpt_data.c
tests_test_gpt_data_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_gpt_data_LDADD = $(TEST_LDADD)
TESTS += tests/test_gpt_data

# examples/train_gpt end to end: the default task learns, weights round-trip,
# 1 rank = 2 ranks, text and llm.c files, bad files and flags.
TESTS += tests/test_train_gpt.sh
EXTRA_DIST += tests/test_train_gpt.sh

# the engine's step-end hook and pass brackets (CUDA Graphs' engine side) on a test backend
check_PROGRAMS += tests/test_device_step
tests_test_device_step_SOURCES = tests/test_device_step.c tests/mpi_check.h
tests_test_device_step_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_device_step_LDADD = $(TEST_LDADD)
TESTS += tests/test_device_step.np1 tests/test_device_step.np3

# The GPT units size the attention's saved state and scratch by the backend
# (attention_state_floats), the contract's where it has none; the standalone attention
# in buffers of those sizes keeps the plain bits.
check_PROGRAMS += tests/test_attention_state
tests_test_attention_state_SOURCES = tests/test_attention_state.c \
	tests/attention_state_backend.c tests/attention_state_backend.h tests/gradcheck_rig.c \
	tests/gradcheck_rig.h tests/gradcheck.c tests/gradcheck.h
tests_test_attention_state_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_attention_state_LDADD = $(TEST_LDADD)
TESTS += tests/test_attention_state.np1

# train_gpt --tokenizer: text encoded on the fly = zero tokenize's shards, text samples,
# 1 rank = 2 ranks, 32-bit shards, bad tokenizers refused.
TESTS += tests/test_train_gpt_text.sh
EXTRA_DIST += tests/test_train_gpt_text.sh

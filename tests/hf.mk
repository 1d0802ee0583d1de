# tests/hf.mk -- Hugging Face model directories (included by tests/local.mk).

# config.json refused and read, weights one file or sharded, round trip to the same bits
check_PROGRAMS += tests/test_hf_model
tests_test_hf_model_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_hf_model_LDADD = $(TEST_LDADD)
TESTS += tests/test_hf_model

# the fixtures transformers made (tests/fixtures/hf/make_llama_fixtures.py, run by hand)
EXTRA_DIST += tests/fixtures/hf

# parity with transformers: logits, loss and 3 AdamW steps of the fixtures' models
check_PROGRAMS += tests/test_hf_parity
tests_test_hf_parity_SOURCES = tests/test_hf_parity.c tests/mpi_check.h
tests_test_hf_parity_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_hf_parity_LDADD = $(TEST_LDADD)
TESTS += tests/test_hf_parity.np1

# zero estimate --hf-config: Ψ as transformers' num_parameters(), tied and untied
TESTS += tests/test_hf_estimate.sh
EXTRA_DIST += tests/test_hf_estimate.sh

# train_gpt --hf-model / --save-hf: same bits at 1, 2 and 3 ranks, shards named
TESTS += tests/test_train_gpt_hf.sh
EXTRA_DIST += tests/test_train_gpt_hf.sh

# tests/config_json.mk -- ds_config.json loading (included by tests/local.mk).
# test_config_json: tables of good and bad configs with exact values and messages
# (single process); test_config_cli.sh: `zero config` on the example configs and
# bad ones, and train_mlp --config with flags overriding the file.
check_PROGRAMS += tests/test_config_json
tests_test_config_json_SOURCES = tests/test_config_json.c
tests_test_config_json_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_config_json_LDADD = $(TEST_LDADD)
TESTS += tests/test_config_json tests/test_config_cli.sh
EXTRA_DIST += tests/test_config_cli.sh \
	tests/configs/bad_syntax.json \
	tests/configs/misspelled.json \
	tests/configs/duplicate.json \
	tests/configs/hf_auto.json \
	tests/configs/hf_zero3.json \
	examples/configs/stage0.json \
	examples/configs/stage1.json \
	examples/configs/stage2.json \
	examples/configs/stage3.json \
	examples/configs/fp16.json \
	examples/configs/bf16.json \
	examples/configs/offload.json \
	examples/configs/nvme.json

# The loader's fuzzer (fuzz/fuzz_config.c) is built and run by fuzz/local.mk.

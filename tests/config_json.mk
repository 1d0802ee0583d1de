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
	examples/configs/stage0.json \
	examples/configs/stage1.json \
	examples/configs/stage2.json \
	examples/configs/stage3.json \
	examples/configs/fp16.json \
	examples/configs/bf16.json \
	examples/configs/offload.json \
	examples/configs/nvme.json

# Fuzzing the loader (not part of make check): OMPI_CC=clang ../configure --enable-fuzzing,
# then `make fuzz-config` runs fuzz/fuzz_config for FUZZ_SECONDS over the seed corpus
# fuzz/corpus/config (new inputs go to fuzz-corpus/config in the build directory).
# The config sources are compiled into the harness itself so that libFuzzer's
# coverage instrumentation sees them.
FUZZ_SECONDS = 60
FUZZ_CONFIG_SOURCES = fuzz/fuzz_config.c src/config.c src/config_keys.c \
	src/config_unsupported.c src/config_json.c src/config_print.c src/error.c
EXTRA_DIST += fuzz/fuzz_config.c fuzz/config.dict \
	fuzz/corpus/config/seed_bad_syntax.json \
	fuzz/corpus/config/seed_bf16.json \
	fuzz/corpus/config/seed_duplicate.json \
	fuzz/corpus/config/seed_fp16.json \
	fuzz/corpus/config/seed_fp16_libzero.json \
	fuzz/corpus/config/seed_hf_auto.json \
	fuzz/corpus/config/seed_misspelled.json \
	fuzz/corpus/config/seed_nulls.json \
	fuzz/corpus/config/seed_offload.json \
	fuzz/corpus/config/seed_nvme.json \
	fuzz/corpus/config/seed_sgd_cosine.json \
	fuzz/corpus/config/seed_stage0.json \
	fuzz/corpus/config/seed_stage1.json \
	fuzz/corpus/config/seed_stage2.json \
	fuzz/corpus/config/seed_stage3.json
if ENABLE_FUZZING
noinst_PROGRAMS += fuzz/fuzz_config
fuzz_fuzz_config_SOURCES = $(FUZZ_CONFIG_SOURCES)
fuzz_fuzz_config_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_config_LDFLAGS = $(AM_LDFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_config_LDADD = $(JANSSON_LIBS) -lm
fuzz-config: fuzz/fuzz_config$(EXEEXT)
	@$(MKDIR_P) fuzz-corpus/config
	./fuzz/fuzz_config$(EXEEXT) -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	  -dict=$(srcdir)/fuzz/config.dict -print_final_stats=1 \
	  fuzz-corpus/config $(srcdir)/fuzz/corpus/config
else
fuzz-config:
	@echo "make fuzz-config: configure with --enable-fuzzing (OMPI_CC=clang ../configure --enable-fuzzing)" >&2; exit 1
endif
.PHONY: fuzz-config
clean-local: clean-local-fuzz-config
clean-local-fuzz-config:
	-rm -rf fuzz-corpus
.PHONY: clean-local-fuzz-config

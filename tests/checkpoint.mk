# tests/checkpoint.mk -- sharded checkpoints (included by tests/local.mk).
# test_checkpoint_format: CRC32C vectors (RFC 3720) and meta.json validation, one process.
# test_checkpoint: save / resume / other world sizes / export / faults with the engine,
#   at 1-4 ranks (4 -> 2 runs in the np4 instance, 2 -> 3 in np3 and np4).
# test_checkpoint_cli.sh: train_mlp --save-checkpoint / --resume across world sizes and
#   stages, zero ckpt inspect / export, exit codes.
# test_checkpoint_crash.sh: tests/ckpt_crash_writer killed (SIGKILL) at each point of a
#   save under mpirun; the previous checkpoint must verify and load afterwards.
check_PROGRAMS += tests/test_checkpoint_format
tests_test_checkpoint_format_SOURCES = tests/test_checkpoint_format.c
tests_test_checkpoint_format_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_checkpoint_format_LDADD = $(TEST_LDADD)
TESTS += tests/test_checkpoint_format

check_PROGRAMS += tests/test_checkpoint
tests_test_checkpoint_SOURCES = tests/test_checkpoint.c tests/mpi_check.h
tests_test_checkpoint_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_checkpoint_LDADD = $(TEST_LDADD)
TESTS += tests/test_checkpoint.np1 tests/test_checkpoint.np3 tests/test_checkpoint.np4

check_PROGRAMS += tests/ckpt_crash_writer
tests_ckpt_crash_writer_SOURCES = tests/ckpt_crash_writer.c
tests_ckpt_crash_writer_LDADD = $(TEST_LDADD)
TESTS += tests/test_checkpoint_crash.sh tests/test_checkpoint_cli.sh
EXTRA_DIST += tests/test_checkpoint_crash.sh tests/test_checkpoint_cli.sh

# libFuzzer harness for the meta.json and rank-file readers (./configure --enable-fuzzing):
#   make fuzz-ckpt FUZZ_SECONDS=60
if ENABLE_FUZZING
noinst_PROGRAMS += fuzz/fuzz_ckpt
# the readers are compiled into the harness so that libFuzzer sees their coverage
fuzz_fuzz_ckpt_SOURCES = fuzz/fuzz_ckpt.c src/crc32c.c src/checkpoint_format.c \
	src/checkpoint_meta.c src/checkpoint_read.c src/checkpoint_offline.c
fuzz_fuzz_ckpt_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
fuzz_fuzz_ckpt_LDFLAGS = -fsanitize=fuzzer,address,undefined
fuzz_fuzz_ckpt_LDADD = libzero.la $(JANSSON_LIBS) -lm
endif
FUZZ_SECONDS ?= 60
fuzz-ckpt:
	@if test ! -x fuzz/fuzz_ckpt; then \
	  echo "fuzz-ckpt: configure with --enable-fuzzing (OMPI_CC=clang) first" >&2; exit 1; fi
	$(MKDIR_P) fuzz/corpus-ckpt-run
	./fuzz/fuzz_ckpt -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 \
	  fuzz/corpus-ckpt-run $(srcdir)/fuzz/corpus/ckpt
.PHONY: fuzz-ckpt
EXTRA_DIST += fuzz/fuzz_ckpt.c
EXTRA_DIST += fuzz/corpus/ckpt/seed_stage3_world1.bin fuzz/corpus/ckpt/seed_meta_only.bin

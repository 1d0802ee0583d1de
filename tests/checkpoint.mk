# tests/checkpoint.mk -- sharded checkpoints (included by tests/local.mk).
# test_checkpoint_format: CRC32C vectors (RFC 3720) and meta.json validation, one process.
# test_checkpoint: save / resume / other world sizes / export / faults with the engine,
#   at 1-4 ranks (4 -> 2 runs in the np4 instance, 2 -> 3 in np3 and np4).
# test_checkpoint_cli.sh: train_mlp --save-checkpoint / --resume across world sizes and
#   stages, zero ckpt inspect / export, exit codes.
# test_checkpoint_atom_order.sh: a rank-major checkpoint refuses a micro-step-major resume
#   (named, nothing on disk changed) and resumes bit-identically with the flag, 2 and 3 ranks.
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
TESTS += tests/test_checkpoint_crash.sh tests/test_checkpoint_cli.sh \
	tests/test_checkpoint_atom_order.sh
EXTRA_DIST += tests/test_checkpoint_crash.sh tests/test_checkpoint_cli.sh \
	tests/test_checkpoint_atom_order.sh

# The readers' fuzzers (fuzz/fuzz_ckpt.c, fuzz/fuzz_ckpt_load.c) are in fuzz/local.mk.

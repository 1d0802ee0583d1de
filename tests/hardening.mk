# tests/hardening.mk -- hostile inputs (included by tests/local.mk): checked sizes,
# outputs that replace only regular files, verified checkpoint metadata.

# include/zero/size.h and the readers' wrap-around of a corrupt position
check_PROGRAMS += tests/test_size
tests_test_size_SOURCES = tests/test_size.c
tests_test_size_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_size_LDADD = $(TEST_LDADD)
TESTS += tests/test_size

# src/base/file_replace.h: FIFOs, directories, devices and symlinks to them are refused
check_PROGRAMS += tests/test_file_replace
tests_test_file_replace_SOURCES = tests/test_file_replace.c
tests_test_file_replace_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_file_replace_LDADD = $(TEST_LDADD)
TESTS += tests/test_file_replace

# the programs: overflowing batches (also under --enable-sanitizers), every
# writer refusing a FIFO, a directory and a character device
TESTS += tests/test_sizes.sh tests/test_outputs.sh tests/test_meta.sh tests/test_inputs.sh
EXTRA_DIST += tests/test_sizes.sh tests/test_outputs.sh tests/test_meta.sh tests/test_inputs.sh

# a flipped checksum in a chunk of padding fails the load, as it fails inspect
check_PROGRAMS += tests/test_checkpoint_padding
tests_test_checkpoint_padding_SOURCES = tests/test_checkpoint_padding.c tests/mpi_check.h
tests_test_checkpoint_padding_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_checkpoint_padding_LDADD = $(TEST_LDADD)
TESTS += tests/test_checkpoint_padding.np1 tests/test_checkpoint_padding.np3

# the layers of docs/design.md, read from the #include lines (pure shell, no build)
TESTS += tests/test_layers.sh
EXTRA_DIST += tests/test_layers.sh
# and it fails on planted errors: <mpi.h> in src/program and src/cli, zero/job.h in the engine
TESTS += tests/test_layers_planted.sh
EXTRA_DIST += tests/test_layers_planted.sh

# no circle of calls between the library's files, read from the built objects (nm, < 1 s)
TESTS += tests/test_call_circles.sh
EXTRA_DIST += tests/test_call_circles.sh

# every ZERO_* knob read through the one table, listed by zero config --env and the docs
TESTS += tests/test_knobs.sh
EXTRA_DIST += tests/test_knobs.sh

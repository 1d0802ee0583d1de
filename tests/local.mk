# tests/local.mk -- test-suite glue (included by the top-level Makefile.am).
#
# Tests live in the fragments included below; each appends to check_PROGRAMS
# and TESTS.  A Check program tests/test_foo.c that must run at 1, 2 and 4 ranks:
#
#     check_PROGRAMS += tests/test_foo
#     tests_test_foo_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
#     tests_test_foo_LDADD = $(TEST_LDADD)
#     TESTS += tests/test_foo.np1 tests/test_foo.np2 tests/test_foo.np4
#
# tests/test_foo.npN means "tests/test_foo under mpirun -np N" (N = 1..8, see
# Makefile.am and tests/mpirun-wrapper); logs are tests/test_foo.npN.log.  A
# test listed without the suffix (TESTS += tests/test_bar) runs as one plain
# process.  Exit 77 = skipped (e.g. no GPU).  CK_FORK=no, OPENBLAS_NUM_THREADS=1
# and the sanitizer options are set by AM_TESTS_ENVIRONMENT.  Sources of check
# programs are distributed automatically; data files need EXTRA_DIST.

TEST_CFLAGS = $(CHECK_CFLAGS)
TEST_LDADD = libzero.la $(CHECK_LIBS) $(BLAS_LIBS) $(JANSSON_LIBS) -lm

# What the shell tests (tests/test_*.sh) share: directories, mpirun, run/expect helpers.
EXTRA_DIST += tests/lib.sh tests/ompi_exit_race.sh

include tests/backend.mk
include tests/collectives.mk
include tests/engine.mk
include tests/nn.mk
include tests/misc.mk
include tests/config.mk
include tests/examples.mk
include tests/config_json.mk
include tests/gpt.mk
include tests/llama.mk
include tests/hf.mk
include tests/observability.mk
include tests/checkpoint.mk
include tests/aarch64/local.mk
include tests/hardening.mk
include tests/reference.mk
if HAVE_CUDA
include tests/cuda.mk
endif

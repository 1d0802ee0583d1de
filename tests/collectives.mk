# tests/collectives.mk -- collectives tests (included by tests/local.mk); see tests/local.mk for how to add a test.

# The canonical summation tree: pure math, one process.
check_PROGRAMS += tests/test_tree
tests_test_tree_SOURCES = tests/test_tree.c
tests_test_tree_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_tree_LDADD = $(TEST_LDADD)
TESTS += tests/test_tree

# The cpu backend's collectives at 1-4 ranks (np4 runs oversubscribed on small machines).
check_PROGRAMS += tests/test_collectives
tests_test_collectives_SOURCES = tests/test_collectives.c tests/mpi_check.h
tests_test_collectives_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_collectives_LDADD = $(TEST_LDADD)
TESTS += tests/test_collectives.np1 tests/test_collectives.np2 tests/test_collectives.np3 \
	tests/test_collectives.np4

# The programs' job (zero/job.h): reductions, broadcast, gather, split, dup at 1-4 ranks.
check_PROGRAMS += tests/test_job
tests_test_job_SOURCES = tests/test_job.c tests/mpi_check.h
tests_test_job_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_job_LDADD = $(TEST_LDADD)
TESTS += tests/test_job.np1 tests/test_job.np2 tests/test_job.np3 tests/test_job.np4

# Overlap (the communication thread) keeps the bits: train_mlp --overlap 0 and 1 at
# N = 2, 3, 4, stages 0-3.
TESTS += tests/test_overlap.sh
EXTRA_DIST += tests/test_overlap.sh

# ZeRO++ hpZ: stage 3 with in-group backward gathers gives flat stage 3's and stage 0's
# bits at N = 4 and 6, MLP and GPT, fp32 and bf16; comm counts; checkpoints across layouts
TESTS += tests/test_hpz.sh
EXTRA_DIST += tests/test_hpz.sh

# ZeRO++ qwZ: stage 3's int8 parameter gathers: deterministic at N = 2 and 3, within a
# bound of the unquantized run, int8 bytes equal to their formula; stages 1-2 refused
TESTS += tests/test_qwz.sh
EXTRA_DIST += tests/test_qwz.sh
# ZeRO++ qgZ: stage 3's int4/int8 all-to-all gradient exchange, one and two hops:
# deterministic at N = 2, 3, 4, within a bound of the unquantized run, bytes equal to
# their formula inside and across the groups; stage 2 and other widths refused
TESTS += tests/test_qgz.sh
EXTRA_DIST += tests/test_qgz.sh

# MiCS / HSDP: states sharded within shard groups, replicated across them, stages 1-3,
# give stage 0's bits at N = 4 and 6, MLP and GPT, fp32 and bf16; comm counts; refusals
TESTS += tests/test_mics.sh
EXTRA_DIST += tests/test_mics.sh

# 2 x 2 ranks across two network namespaces (TCP between them) match one node, stages
# 0-3; skips (77) unless root with iproute2.
TESTS += tests/test_multihost.sh
EXTRA_DIST += tests/test_multihost.sh

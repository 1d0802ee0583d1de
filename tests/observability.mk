# tests/observability.mk -- estimator, trace, schedule, memory chart, verify and the
# docs' commands (included by tests/local.mk).

check_PROGRAMS += tests/test_estimate
tests_test_estimate_SOURCES = tests/test_estimate.c src/cli/svg_chart.c src/cli/svg_chart.h
tests_test_estimate_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/cli
tests_test_estimate_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_estimate_LDADD = $(TEST_LDADD)
TESTS += tests/test_estimate

check_PROGRAMS += tests/test_trace
tests_test_trace_SOURCES = tests/test_trace.c tests/mpi_check.h
tests_test_trace_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_trace_LDADD = $(TEST_LDADD)
TESTS += tests/test_trace.np1 tests/test_trace.np2 tests/test_trace.np3

# zero schedule / memory / verify / estimate end to end at 2 and 3 ranks; the docs'
# commands with their shown output, whole, as root and (the quickstart's) as a normal
# user (all need src/cli/zero and examples/, built by `all').
TESTS += tests/test_observability_cli.sh tests/test_docs_commands.sh tests/test_docs_user.sh
EXTRA_DIST += tests/test_observability_cli.sh tests/test_docs_commands.sh tests/test_docs_user.sh

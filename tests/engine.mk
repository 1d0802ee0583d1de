# tests/engine.mk -- engine tests (included by tests/local.mk); see tests/local.mk for how to add a test.

check_PROGRAMS += tests/test_engine_stages
tests_test_engine_stages_SOURCES = tests/test_engine_stages.c tests/engine_harness.c \
	tests/engine_harness.h tests/mpi_check.h
tests_test_engine_stages_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_engine_stages_LDADD = $(TEST_LDADD)
TESTS += tests/test_engine_stages.np1 tests/test_engine_stages.np2 \
	tests/test_engine_stages.np3 tests/test_engine_stages.np4

check_PROGRAMS += tests/test_engine_api
tests_test_engine_api_SOURCES = tests/test_engine_api.c tests/engine_harness.h tests/mpi_check.h
tests_test_engine_api_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_engine_api_LDADD = $(TEST_LDADD)
TESTS += tests/test_engine_api.np1 tests/test_engine_api.np2 tests/test_engine_api.np3

check_PROGRAMS += tests/test_mixed_precision
tests_test_mixed_precision_SOURCES = tests/test_mixed_precision.c tests/engine_harness.c \
	tests/engine_harness.h tests/mpi_check.h
tests_test_mixed_precision_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_mixed_precision_LDADD = $(TEST_LDADD)
TESTS += tests/test_mixed_precision.np1 tests/test_mixed_precision.np2 \
	tests/test_mixed_precision.np3 tests/test_mixed_precision.np4

check_PROGRAMS += tests/test_loss_scaler
tests_test_loss_scaler_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_loss_scaler_LDADD = $(TEST_LDADD)
TESTS += tests/test_loss_scaler

check_PROGRAMS += tests/test_layout
tests_test_layout_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_layout_LDADD = $(TEST_LDADD)
TESTS += tests/test_layout

# the stage table (src/engine/stage.c) against the paper: partitions, reductions, ledger
check_PROGRAMS += tests/test_stage_table
tests_test_stage_table_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_stage_table_LDADD = $(TEST_LDADD)
TESTS += tests/test_stage_table

# ZeRO-Offload: host optimizer variants, bit-identity with device states, ledgers
check_PROGRAMS += tests/test_offload
tests_test_offload_SOURCES = tests/test_offload.c tests/engine_harness.c tests/engine_harness.h \
	tests/mpi_check.h
tests_test_offload_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_offload_LDADD = $(TEST_LDADD)
TESTS += tests/test_offload.np1 tests/test_offload.np2 tests/test_offload.np3 \
	tests/test_offload.np4

# ZeRO-Infinity: states in NVMe swap files, bit-identical; ledgers; path, disk and file faults
check_PROGRAMS += tests/test_nvme_offload
tests_test_nvme_offload_SOURCES = tests/test_nvme_offload.c tests/engine_harness.c \
	tests/engine_harness.h tests/mpi_check.h
tests_test_nvme_offload_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_nvme_offload_LDADD = $(TEST_LDADD)
TESTS += tests/test_nvme_offload.np1 tests/test_nvme_offload.np2 tests/test_nvme_offload.np3 \
	tests/test_nvme_offload.np4

check_PROGRAMS += tests/test_atom_order
tests_test_atom_order_SOURCES = tests/test_atom_order.c tests/engine_harness.c \
	tests/engine_harness.h tests/mpi_check.h
tests_test_atom_order_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_atom_order_LDADD = $(TEST_LDADD)
TESTS += tests/test_atom_order.np1 tests/test_atom_order.np2 tests/test_atom_order.np3 \
	tests/test_atom_order.np4

# the memory plan bounds every tag's ledger peak (src/engine/memory_peaks.c), and not loosely
check_PROGRAMS += tests/test_memory_peaks
tests_test_memory_peaks_SOURCES = tests/test_memory_peaks.c tests/mpi_check.h
tests_test_memory_peaks_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_memory_peaks_LDADD = $(TEST_LDADD)
TESTS += tests/test_memory_peaks.np1 tests/test_memory_peaks.np2 tests/test_memory_peaks.np3 \
	tests/test_memory_peaks.np4

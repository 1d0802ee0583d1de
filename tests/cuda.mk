# tests/cuda.mk -- the cuda backend against the cpu backend (included by tests/local.mk
# inside `if HAVE_CUDA'); see tests/local.mk for how to add a test.  Skips (exit 77)
# where no CUDA device is found.  At 2 ranks on one GPU the backend uses its
# host-staged test mode (ZERO_CUDA_COMM=auto).
check_PROGRAMS += tests/test_cuda_backend
tests_test_cuda_backend_SOURCES = tests/test_cuda_backend.c tests/cuda_pair.c tests/cuda_pair.h \
	tests/mpi_check.h tests/stored_entries_ref.c tests/stored_entries_ref.h
tests_test_cuda_backend_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_cuda_backend_LDADD = $(TEST_LDADD)
TESTS += tests/test_cuda_backend.np1 tests/test_cuda_backend.np2

# the toy MLP and a tiny GPT trained on cuda and on cpu, stages 0-3: final weights compared
check_PROGRAMS += tests/test_cuda_training
tests_test_cuda_training_SOURCES = tests/test_cuda_training.c tests/cuda_pair.c \
	tests/cuda_pair.h tests/mpi_check.h
tests_test_cuda_training_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_cuda_training_LDADD = $(TEST_LDADD)
TESTS += tests/test_cuda_training.np1 tests/test_cuda_training.np2

# GEMM rate of the cuda backend, run by tests/gpu/run.sh (not a test)
noinst_PROGRAMS += tests/gpu/gemm_bench
tests_gpu_gemm_bench_SOURCES = tests/gpu/gemm_bench.c
tests_gpu_gemm_bench_LDADD = libzero.la $(BLAS_LIBS) $(JANSSON_LIBS) -lm

# the llama group's kernels on cuda against the cpu's bits, and a tiny Llama trained on both
check_PROGRAMS += tests/test_cuda_llama
tests_test_cuda_llama_SOURCES = tests/test_cuda_llama.c tests/cuda_pair.c tests/cuda_pair.h \
	tests/mpi_check.h
tests_test_cuda_llama_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_cuda_llama_LDADD = $(TEST_LDADD)
TESTS += tests/test_cuda_llama.np1 tests/test_cuda_llama.np2

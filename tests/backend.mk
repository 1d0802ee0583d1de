# tests/backend.mk -- backend tests (included by tests/local.mk); see tests/local.mk for how to add a test.

# fp16/bf16 conversions: pure functions, one plain process
check_PROGRAMS += tests/test_dtype
tests_test_dtype_SOURCES = tests/test_dtype.c
tests_test_dtype_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_dtype_LDADD = $(TEST_LDADD)
TESTS += tests/test_dtype

# the interface's contract checks every backend calls (src/base/backend_contract.c)
check_PROGRAMS += tests/test_backend_contract
tests_test_backend_contract_SOURCES = tests/test_backend_contract.c
tests_test_backend_contract_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_backend_contract_LDADD = $(TEST_LDADD)
TESTS += tests/test_backend_contract

# cpu backend compute kernels (gemm, casts, optimizers, norms, layers) on one rank
check_PROGRAMS += tests/test_kernels
tests_test_kernels_SOURCES = tests/test_kernels.c
tests_test_kernels_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_kernels_LDADD = $(TEST_LDADD)
TESTS += tests/test_kernels.np1

# registry, zero_device, tagged memory and ledger, comm counters, error messages
check_PROGRAMS += tests/test_device
tests_test_device_SOURCES = tests/test_device.c
tests_test_device_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_device_LDADD = $(TEST_LDADD)
TESTS += tests/test_device.np1

# the bf16-product contract (src/base/bf16_dot.h): the reference on the edge table
# everywhere, and against VDPBF16PS itself where the processor has avx512_bf16 (else 77)
check_PROGRAMS += tests/test_bf16_dot tests/test_bf16_dot_hw
tests_test_bf16_dot_SOURCES = tests/test_bf16_dot.c
tests_test_bf16_dot_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_bf16_dot_LDADD = -lm
tests_test_bf16_dot_hw_SOURCES = tests/test_bf16_dot_hw.c
tests_test_bf16_dot_hw_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_bf16_dot_hw_LDADD = -lm
TESTS += tests/test_bf16_dot tests/test_bf16_dot_hw
noinst_HEADERS += tests/bf16_dot_edges.h
# the bf16-tile contract (src/base/bf16_tile.h): the reference on the edge table
# everywhere, and against AMX's TDPBF16PS where the processor has it
check_PROGRAMS += tests/test_bf16_tile tests/test_bf16_tile_hw
tests_test_bf16_tile_SOURCES = tests/test_bf16_tile.c
tests_test_bf16_tile_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_bf16_tile_LDADD = -lm
tests_test_bf16_tile_hw_SOURCES = tests/test_bf16_tile_hw.c
tests_test_bf16_tile_hw_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS) -I$(srcdir)/backends/cpu
tests_test_bf16_tile_hw_LDADD = -lm
TESTS += tests/test_bf16_tile tests/test_bf16_tile_hw
noinst_HEADERS += tests/bf16_tile_edges.h

# exact mode's own GEMM: every variant and thread count equals the naive fmaf chain
check_PROGRAMS += tests/test_gemm
tests_test_gemm_SOURCES = tests/test_gemm.c
tests_test_gemm_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/backends/cpu
tests_test_gemm_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_gemm_LDADD = $(TEST_LDADD)
TESTS += tests/test_gemm

# exact mode's bits under every ZERO_CPU_ISA, OPENBLAS_CORETYPE and thread count (MLP and GPT)
TESTS += tests/test_portable_bits.sh
EXTRA_DIST += tests/test_portable_bits.sh tests/golden/portable_bits.txt

# exact_math.h's float functions vectorized (cpu_exact_vec.h): every variant gives the scalar
# bits near every branch and on a dense sample; the GELU kernels the one-element loops' bits
check_PROGRAMS += tests/test_exact_vec
tests_test_exact_vec_SOURCES = tests/test_exact_vec.c
tests_test_exact_vec_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/backends/cpu
tests_test_exact_vec_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_exact_vec_LDADD = $(TEST_LDADD)
TESTS += tests/test_exact_vec.np1

# the exact collectives' owner combine (cpu_combine.c): every host variant gives the bits
# of the canonical tree written out element by element
check_PROGRAMS += tests/test_combine
tests_test_combine_SOURCES = tests/test_combine.c
tests_test_combine_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/backends/cpu
tests_test_combine_CFLAGS = $(AM_CFLAGS) $(TEST_CFLAGS)
tests_test_combine_LDADD = $(TEST_LDADD)
TESTS += tests/test_combine

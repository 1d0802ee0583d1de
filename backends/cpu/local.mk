# backends/cpu/local.mk -- MPI + OpenBLAS backend (included by the top-level Makefile.am).
# Append only, e.g.:  libzero_la_SOURCES += %reldir%/cpu_backend.c

# table, memory, BLAS, elementwise/optimizer kernels, layer kernels
libzero_la_SOURCES += \
	%reldir%/cpu_backend.c \
	%reldir%/cpu_error.c \
	%reldir%/cpu_memory.c \
	%reldir%/cpu_blas.c \
	%reldir%/cpu_openblas.c \
	%reldir%/cpu_kernels.c \
	%reldir%/cpu_layers.c
noinst_HEADERS += \
	%reldir%/cpu_internal.h \
	%reldir%/cpu_openblas.h \
	%reldir%/cpu_ops.h

# collectives: cpu_coll*.c added below
libzero_la_SOURCES += \
	%reldir%/cpu_coll.c \
	%reldir%/cpu_coll_setup.c \
	%reldir%/cpu_coll_job.c \
	%reldir%/cpu_coll_exact.c \
	%reldir%/cpu_coll_gather.c \
	%reldir%/cpu_coll_native.c \
	%reldir%/cpu_groups.c \
	%reldir%/cpu_quant.c \
	%reldir%/cpu_combine.c \
	%reldir%/cpu_progress.c \
	%reldir%/cpu_shm.c \
	%reldir%/cpu_mpi.c
noinst_HEADERS += %reldir%/cpu_coll.h
# GPT kernels: token embedding, LayerNorm, causal self-attention
libzero_la_SOURCES += %reldir%/cpu_gpt_kernels.c
# Llama kernels (the llama group): RMSNorm, rope, SwiGLU, grouped-query packing
libzero_la_SOURCES += %reldir%/cpu_llama_kernels.c
# exact mode's fixed-order GEMM: driver (packing, blocking, threads) and micro-kernels
libzero_la_SOURCES += \
	%reldir%/cpu_gemm.c \
	%reldir%/cpu_gemm_kernels.c
noinst_HEADERS += %reldir%/cpu_gemm.h %reldir%/cpu_amx.h
# exact_math.h's float functions over arrays, vectorized per instruction set (the scalar
# bits: each variant's loop is cpu_exact_vec_body.h over that set's operations)
libzero_la_SOURCES += \
	%reldir%/cpu_exact_vec.c \
	%reldir%/cpu_exact_vec_avx2.c \
	%reldir%/cpu_exact_vec_avx512.c
noinst_HEADERS += \
	%reldir%/cpu_exact_vec.h \
	%reldir%/cpu_exact_vec_body.h
# the gradient norm's block sums, sixteen blocks side by side in AVX-512 (the portable
# loop in cpu_kernels.c is the definition and does what is left)
libzero_la_SOURCES += %reldir%/cpu_sumsq_avx512.c
noinst_HEADERS += %reldir%/cpu_sumsq.h

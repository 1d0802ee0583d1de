# backends/cuda/local.mk -- CUDA runtime + cuBLAS/cuBLASLt + NCCL backend (included by the
# top-level Makefile.am).  Built only with ./configure --with-cuda [--with-nccl].
# .cu files are compiled by nvcc through libtool (rule `.cu.lo' in Makefile.am)
# and linked into libzero; C files here are compiled by mpicc as usual.  Inside
# the conditional, ZERO_HAVE_CUDA (and ZERO_HAVE_NCCL) are defined on the command
# line.  All sources listed here, conditional or not, go into the tarball.
#
# Without NCCL the backend still builds; its collectives then use the host-staged
# mode (cuda_staged.c), which is meant for tests.
if HAVE_CUDA
# table, memory, BLAS, entry points (C, compiled by mpicc)
libzero_la_SOURCES += \
	%reldir%/cuda_backend.c \
	%reldir%/cuda_error.c \
	%reldir%/cuda_memory.c \
	%reldir%/cuda_host.c \
	%reldir%/cuda_host_table.c \
	%reldir%/cuda_blas.c \
	%reldir%/cuda_blaslt.c \
	%reldir%/cuda_ops.c \
	%reldir%/cuda_layer_ops.c \
	%reldir%/cuda_fused_ops.c \
	%reldir%/cuda_fused_switch.c \
	%reldir%/cuda_embedding_native.c \
	%reldir%/cuda_gemm_epilogue.c \
	%reldir%/cuda_coll.c \
	%reldir%/cuda_coll_timing.c \
	%reldir%/cuda_staged.c \
	%reldir%/cuda_profile.c \
	%reldir%/cuda_step.c \
	%reldir%/cuda_graph.c \
	%reldir%/cuda_llama_ops.c \
	%reldir%/cuda_quant.c
# kernels (nvcc)
libzero_la_SOURCES += \
	%reldir%/cuda_probe.cu \
	%reldir%/cuda_kernels.cu \
	%reldir%/cuda_quant.cu \
	%reldir%/cuda_layers.cu \
	%reldir%/cuda_gpt_kernels.cu \
	%reldir%/cuda_combine.cu \
	%reldir%/cuda_exact_gemm.cu \
	%reldir%/cuda_flash_attention.cu \
	%reldir%/cuda_fast_kernels.cu \
	%reldir%/cuda_embedding_backward.cu \
	%reldir%/cuda_step_kernels.cu \
	%reldir%/cuda_llama_kernels.cu
libzero_la_CPPFLAGS += $(CUDA_CFLAGS) $(NCCL_CFLAGS)
endif
# private headers: listed outside the conditional so that the tarball always has them
noinst_HEADERS += \
	%reldir%/cuda_internal.h \
	%reldir%/cuda_ops.h \
	%reldir%/cuda_launch.h \
	%reldir%/cuda_device.cuh \
	%reldir%/zero_cuda_profile.h
# the GPU check script for a machine with a GPU (tests/gpu/run.sh), distributed
# whatever the configuration
EXTRA_DIST += tests/gpu/run.sh tests/gpu/make_bundle.sh tests/gpu/gemm_bench.c
EXTRA_DIST += tests/gpu/rehearse.sh

# The device-like rehearsal (tests/gpu/rehearse.sh): the bundle, then run.sh in dry-run
# mode inside a Debian minbase root with only what the GPU machine's image holds. Run it
# before every device run; not part of check or CI (root, network, minutes).
gpu-rehearsal:
	cd $(top_srcdir) && sh tests/gpu/make_bundle.sh && sh tests/gpu/rehearse.sh
.PHONY: gpu-rehearsal

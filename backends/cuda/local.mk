# backends/cuda/local.mk -- CUDA runtime + cuBLAS + NCCL backend (included by the
# top-level Makefile.am).  Built only with ./configure --with-cuda [--with-nccl].
# .cu files are compiled by nvcc through libtool (rule `.cu.lo' in Makefile.am)
# and linked into libzero; C files here are compiled by mpicc as usual.  Inside
# the conditional, ZERO_HAVE_CUDA (and ZERO_HAVE_NCCL) are defined on the command
# line.  All sources listed here, conditional or not, go into the tarball.
if HAVE_CUDA
libzero_la_SOURCES += %reldir%/cuda_probe.cu
libzero_la_CPPFLAGS += $(CUDA_CFLAGS) $(NCCL_CFLAGS)
endif

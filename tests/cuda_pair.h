/* The cpu and cuda devices side by side on MPI_COMM_WORLD, for the tests that
 * compare the two backends (tests/cuda.mk). */
#ifndef ZERO_TEST_CUDA_PAIR_H
#define ZERO_TEST_CUDA_PAIR_H

#include "zero/backend.h"

/* After MPI_Init. Opens *cpu and *gpu; ranks sharing one GPU get the host-staged
 * mode (ZERO_CUDA_COMM=auto unless set). Returns 0; or 77 on every rank, having
 * printed "SKIP: <test>: why", when some rank has no usable CUDA device; or
 * EXIT_FAILURE when opening failed (the message on stderr). Nothing is left open
 * unless it returns 0. */
int cuda_pair_open(const char *test, struct zero_device **cpu, struct zero_device **gpu);

#endif

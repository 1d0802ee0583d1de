/* The gradient norm's block sums, the part written for one instruction set by
 * hand (cpu_sumsq_avx512.c); cpu_kernels.c's portable loop does the rest and is
 * the definition: every block summed sequentially in double. */
#ifndef ZERO_CPU_SUMSQ_H
#define ZERO_CPU_SUMSQ_H

#include <stddef.h>

#include "base/host_isa.h"
#include "zero/dtype.h"

#ifdef ZERO_HOST_X86
#define CPU_SUMSQ_X86 1
/* out[b] = the sequential double sum of x's block b squared, for the whole groups
 * of 16 whole blocks from the first: returns how many blocks it summed (a multiple
 * of 16; 0 for types other than fp32, fp16 and bf16). The caller checks that the
 * processor has AVX-512F and AVX-512BW. */
size_t cpu_sumsq_groups_avx512(const void *x, enum zero_dtype t, size_t n, size_t block,
                               double *out);
#endif

#endif

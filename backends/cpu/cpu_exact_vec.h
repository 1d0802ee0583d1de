/* src/base/exact_math.h's float functions over arrays, vectorized: the AVX2 and AVX-512
 * variants compute each element with exactly the scalar function's sequence of IEEE
 * double operations (no fused multiply-add), four or eight elements at a time, the
 * scalar function's branches done by computing each piece and blending by masks; so
 * every variant gives the scalar bits for every input (bench/exact_vec_bits checks all
 * 2^32, tests/test_exact_vec.c a dense sample). The base variant is the scalar function
 * itself: the reference, and what other processors run. Not installed. */
#ifndef ZERO_CPU_EXACT_VEC_H
#define ZERO_CPU_EXACT_VEC_H

#include <stddef.h>

#include "base/host_isa.h"

/* y (n) = f(x (n)) with variant isa (one this processor lacks runs base); y may be x. */
void cpu_exact_expf_n(enum zero_host_isa isa, float *y, const float *x, size_t n);
void cpu_exact_erff_n(enum zero_host_isa isa, float *y, const float *x, size_t n);
void cpu_exact_tanhf_n(enum zero_host_isa isa, float *y, const float *x, size_t n);

/* For tests: y (n) = the double each variant rounds to float, n a multiple of
 * cpu_exact_wide_lanes(isa); 0 (and nothing written) when isa is base or unsupported. */
size_t cpu_exact_wide_lanes(enum zero_host_isa isa);
void cpu_exact_expf_wide_n(enum zero_host_isa isa, double *y, const float *x, size_t n);
void cpu_exact_erff_wide_n(enum zero_host_isa isa, double *y, const float *x, size_t n);
void cpu_exact_tanhf_wide_n(enum zero_host_isa isa, double *y, const float *x, size_t n);

/* The x86 variants (cpu_exact_vec_avx2.c, cpu_exact_vec_avx512.c), for x86-64 builds
 * with gcc or clang; the caller checks the processor supports them. */
#ifdef ZERO_HOST_X86
#define CPU_EXACT_VEC_X86 1
void cpu_exact_expf_avx2(float *y, const float *x, size_t n);
void cpu_exact_erff_avx2(float *y, const float *x, size_t n);
void cpu_exact_tanhf_avx2(float *y, const float *x, size_t n);
void cpu_exact_expf_avx512(float *y, const float *x, size_t n);
void cpu_exact_erff_avx512(float *y, const float *x, size_t n);
void cpu_exact_tanhf_avx512(float *y, const float *x, size_t n);
void cpu_exact_expf_wide_avx2(double *y, const float *x, size_t n);
void cpu_exact_erff_wide_avx2(double *y, const float *x, size_t n);
void cpu_exact_tanhf_wide_avx2(double *y, const float *x, size_t n);
void cpu_exact_expf_wide_avx512(double *y, const float *x, size_t n);
void cpu_exact_erff_wide_avx512(double *y, const float *x, size_t n);
void cpu_exact_tanhf_wide_avx512(double *y, const float *x, size_t n);
#endif

#endif

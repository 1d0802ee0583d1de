/* cpu_exact_vec.h's dispatch: the variant the caller names if this processor runs it,
 * else the scalar loop over src/base/exact_math.h (the reference). */
#include "cpu_exact_vec.h"

#include "base/exact_math.h"

typedef void (*array_fn)(float *y, const float *x, size_t n);
typedef void (*wide_fn)(double *y, const float *x, size_t n);

enum { FN_EXPF, FN_ERFF, FN_TANHF, FN_COUNT };

static void expf_base(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = exact_expf(x[i]);
}

static void erff_base(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = exact_erff(x[i]);
}

static void tanhf_base(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = exact_tanhf(x[i]);
}

static const struct {
    size_t lanes;
    array_fn fn[FN_COUNT];
    wide_fn wide[FN_COUNT];
} variants[ZERO_ISA_COUNT] = {
    [ZERO_ISA_BASE] = {1, {expf_base, erff_base, tanhf_base}, {NULL, NULL, NULL}},
#ifdef CPU_EXACT_VEC_X86
    [ZERO_ISA_AVX2] = {4,
                       {cpu_exact_expf_avx2, cpu_exact_erff_avx2, cpu_exact_tanhf_avx2},
                       {cpu_exact_expf_wide_avx2, cpu_exact_erff_wide_avx2,
                        cpu_exact_tanhf_wide_avx2}},
    [ZERO_ISA_AVX512] = {8,
                         {cpu_exact_expf_avx512, cpu_exact_erff_avx512, cpu_exact_tanhf_avx512},
                         {cpu_exact_expf_wide_avx512, cpu_exact_erff_wide_avx512,
                          cpu_exact_tanhf_wide_avx512}},
#endif
};

/* isa if this build has it and this processor runs it, else base */
static enum zero_host_isa usable(enum zero_host_isa isa)
{
    return zero_host_isa_supported(isa) && variants[isa].fn[0] != NULL ? isa : ZERO_ISA_BASE;
}

void cpu_exact_expf_n(enum zero_host_isa isa, float *y, const float *x, size_t n)
{
    variants[usable(isa)].fn[FN_EXPF](y, x, n);
}

void cpu_exact_erff_n(enum zero_host_isa isa, float *y, const float *x, size_t n)
{
    variants[usable(isa)].fn[FN_ERFF](y, x, n);
}

void cpu_exact_tanhf_n(enum zero_host_isa isa, float *y, const float *x, size_t n)
{
    variants[usable(isa)].fn[FN_TANHF](y, x, n);
}

size_t cpu_exact_wide_lanes(enum zero_host_isa isa)
{
    return usable(isa) == ZERO_ISA_BASE ? 0 : variants[isa].lanes;
}

static void wide(enum zero_host_isa isa, int fn, double *y, const float *x, size_t n)
{
    if (cpu_exact_wide_lanes(isa) > 0)
        variants[isa].wide[fn](y, x, n);
}

void cpu_exact_expf_wide_n(enum zero_host_isa isa, double *y, const float *x, size_t n)
{
    wide(isa, FN_EXPF, y, x, n);
}

void cpu_exact_erff_wide_n(enum zero_host_isa isa, double *y, const float *x, size_t n)
{
    wide(isa, FN_ERFF, y, x, n);
}

void cpu_exact_tanhf_wide_n(enum zero_host_isa isa, double *y, const float *x, size_t n)
{
    wide(isa, FN_TANHF, y, x, n);
}

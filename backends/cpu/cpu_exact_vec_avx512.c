/* cpu_exact_vec_body.h's operations in AVX-512F: eight double lanes, mask registers,
 * table lookups by vpermpd (a row of eight doubles is one register). */
#include "cpu_exact_vec.h"

#ifdef CPU_EXACT_VEC_X86
#include <immintrin.h>

#include "base/exact_math.h"

#define VEC_TARGET __attribute__((target("avx512f")))
#define VEC_FN static inline VEC_TARGET
#define VEC_NAME(f) cpu_exact_##f##_avx512
#define VEC_LANES 8

typedef __m512d vd;
typedef __mmask8 vm;
typedef __m512i vix;

VEC_FN vd vd_set(double c)
{
    return _mm512_set1_pd(c);
}

VEC_FN vd vd_add(vd a, vd b)
{
    return _mm512_add_pd(a, b);
}

VEC_FN vd vd_sub(vd a, vd b)
{
    return _mm512_sub_pd(a, b);
}

VEC_FN vd vd_mul(vd a, vd b)
{
    return _mm512_mul_pd(a, b);
}

VEC_FN vd vd_div(vd a, vd b)
{
    return _mm512_div_pd(a, b);
}

VEC_FN vm vd_lt(vd a, vd b)
{
    return _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ);
}

VEC_FN vm vd_le(vd a, vd b)
{
    return _mm512_cmp_pd_mask(a, b, _CMP_LE_OQ);
}

VEC_FN vm vd_gt(vd a, vd b)
{
    return _mm512_cmp_pd_mask(a, b, _CMP_GT_OQ);
}

VEC_FN vm vd_isnan(vd a)
{
    return _mm512_cmp_pd_mask(a, a, _CMP_UNORD_Q);
}

VEC_FN vd vd_select(vm m, vd a, vd b)
{
    return _mm512_mask_blend_pd(m, b, a);
}

VEC_FN vd vd_abs(vd x)
{
    return _mm512_castsi512_pd(
        _mm512_and_si512(_mm512_castpd_si512(x), _mm512_set1_epi64(0x7fffffffffffffffLL)));
}

VEC_FN vd vd_flip(vd r, vd x)
{
    __m512i sign = _mm512_and_si512(_mm512_castpd_si512(x), _mm512_set1_epi64(INT64_MIN));
    return _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(r), sign));
}

VEC_FN vd vd_floor(vd x)
{
    return _mm512_roundscale_pd(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}

/* f + 2^52 holds f in its low mantissa bits; vpermpd reads the low three */
VEC_FN vix vd_index(vd f)
{
    return _mm512_castpd_si512(_mm512_add_pd(f, _mm512_set1_pd(0x1p52)));
}

VEC_FN vd vd_lookup(const double *row, vix j)
{
    return _mm512_permutexvar_pd(j, _mm512_loadu_pd(row));
}

VEC_FN vd vd_pow2_of(vd t)
{
    __m512i k = _mm512_add_epi64(_mm512_castpd_si512(t), _mm512_set1_epi64(1023));
    return _mm512_castsi512_pd(_mm512_slli_epi64(k, 52));
}

VEC_FN vd vd_load(const float *p)
{
    return _mm512_cvtps_pd(_mm256_loadu_ps(p));
}

VEC_FN void vd_store(float *p, vd v)
{
    _mm256_storeu_ps(p, _mm512_cvtpd_ps(v));
}

VEC_FN void vd_store_wide(double *p, vd v)
{
    _mm512_storeu_pd(p, v);
}

#include "cpu_exact_vec_body.h"

#endif

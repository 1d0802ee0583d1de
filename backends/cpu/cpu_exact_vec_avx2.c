/* cpu_exact_vec_body.h's operations in AVX2: four double lanes, masks as all-ones
 * lanes, table lookups by gathers. */
#include "cpu_exact_vec.h"

#ifdef CPU_EXACT_VEC_X86
#include <immintrin.h>

#include "base/exact_math.h"

#define VEC_TARGET __attribute__((target("avx2")))
#define VEC_FN static inline VEC_TARGET
#define VEC_NAME(f) cpu_exact_##f##_avx2
#define VEC_LANES 4

typedef __m256d vd;
typedef __m256d vm;
typedef __m256i vix;

VEC_FN vd vd_set(double c)
{
    return _mm256_set1_pd(c);
}

VEC_FN vd vd_add(vd a, vd b)
{
    return _mm256_add_pd(a, b);
}

VEC_FN vd vd_sub(vd a, vd b)
{
    return _mm256_sub_pd(a, b);
}

VEC_FN vd vd_mul(vd a, vd b)
{
    return _mm256_mul_pd(a, b);
}

VEC_FN vd vd_div(vd a, vd b)
{
    return _mm256_div_pd(a, b);
}

VEC_FN vm vd_lt(vd a, vd b)
{
    return _mm256_cmp_pd(a, b, _CMP_LT_OQ);
}

VEC_FN vm vd_le(vd a, vd b)
{
    return _mm256_cmp_pd(a, b, _CMP_LE_OQ);
}

VEC_FN vm vd_gt(vd a, vd b)
{
    return _mm256_cmp_pd(a, b, _CMP_GT_OQ);
}

VEC_FN vm vd_isnan(vd a)
{
    return _mm256_cmp_pd(a, a, _CMP_UNORD_Q);
}

VEC_FN vd vd_select(vm m, vd a, vd b)
{
    return _mm256_blendv_pd(b, a, m);
}

VEC_FN vd vd_abs(vd x)
{
    return _mm256_and_pd(x, _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL)));
}

VEC_FN vd vd_flip(vd r, vd x)
{
    return _mm256_xor_pd(r, _mm256_and_pd(x, _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MIN))));
}

VEC_FN vd vd_floor(vd x)
{
    return _mm256_floor_pd(x);
}

/* f + 2^52 holds f in its low mantissa bits; the gather needs them in 0..7 */
VEC_FN vix vd_index(vd f)
{
    __m256i bits = _mm256_castpd_si256(_mm256_add_pd(f, _mm256_set1_pd(0x1p52)));
    return _mm256_and_si256(bits, _mm256_set1_epi64x(7));
}

VEC_FN vd vd_lookup(const double *row, vix j)
{
    return _mm256_i64gather_pd(row, j, 8);
}

VEC_FN vd vd_pow2_of(vd t)
{
    __m256i k = _mm256_add_epi64(_mm256_castpd_si256(t), _mm256_set1_epi64x(1023));
    return _mm256_castsi256_pd(_mm256_slli_epi64(k, 52));
}

VEC_FN vd vd_load(const float *p)
{
    return _mm256_cvtps_pd(_mm_loadu_ps(p));
}

VEC_FN void vd_store(float *p, vd v)
{
    _mm_storeu_ps(p, _mm256_cvtpd_ps(v));
}

VEC_FN void vd_store_wide(double *p, vd v)
{
    _mm256_storeu_pd(p, v);
}

#include "cpu_exact_vec_body.h"

#endif

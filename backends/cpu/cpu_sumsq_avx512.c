/* The gradient norm's block sums in AVX-512F: sixteen blocks side by side, each
 * summed sequentially in double, as cpu_kernels.c's portable loop sums them (the
 * order is part of the exactness contract). The portable loop leaves the vector
 * lanes to the compiler, which fills them one element of each of eight blocks at
 * a time, on one chain of additions: about one element a cycle, under the
 * memory's rate (50M elements: fp32 24 ms, bf16 28 ms; here 18 and 14, bf16
 * read straight from the gradient). Here each block's next eight elements are one
 * load, widened to double and squared (exact: 24-bit significands), and two 8x8
 * transposes turn the sixteen rows into eight steps of two registers, lane j
 * block j: the additions are the portable loop's, in its order, on two chains. */
#include "cpu_sumsq.h"

#ifdef CPU_SUMSQ_X86
#include <immintrin.h>

#include "base/dtype_convert.h"

#define TARGET __attribute__((target("avx512f,avx512bw")))

enum { ROWS = 16, STEP = 8, RUN = 256, PAD = 16 };

/* r (8 rows of 8 doubles) transposed in place: r[k] lane j = old r[j] lane k */
TARGET static inline void transpose8(__m512d r[8])
{
    const __m512i lo1 = _mm512_setr_epi64(0, 8, 2, 10, 4, 12, 6, 14);
    const __m512i hi1 = _mm512_setr_epi64(1, 9, 3, 11, 5, 13, 7, 15);
    const __m512i lo2 = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    const __m512i hi2 = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    const __m512i lo4 = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11);
    const __m512i hi4 = _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15);
    __m512d a[8], b[8];
    /* a[2i] = (r[2i]_0 r[2i+1]_0 r[2i]_2 r[2i+1]_2 ...), a[2i+1] the odd elements */
    for (int i = 0; i < 4; i++) {
        a[2 * i] = _mm512_permutex2var_pd(r[2 * i], lo1, r[2 * i + 1]);
        a[2 * i + 1] = _mm512_permutex2var_pd(r[2 * i], hi1, r[2 * i + 1]);
    }
    /* b[4h + e]: rows 4h..4h+3, elements e and e + 4 (e = 0, 1, 2, 3) */
    for (int h = 0; h < 2; h++)
        for (int odd = 0; odd < 2; odd++) {
            __m512d x = a[4 * h + odd], y = a[4 * h + 2 + odd];
            b[4 * h + odd] = _mm512_permutex2var_pd(x, lo2, y);     /* elements odd, odd + 4 */
            b[4 * h + 2 + odd] = _mm512_permutex2var_pd(x, hi2, y); /* odd + 2, odd + 6 */
        }
    for (int e = 0; e < 4; e++) {
        r[e] = _mm512_permutex2var_pd(b[e], lo4, b[4 + e]);
        r[e + 4] = _mm512_permutex2var_pd(b[e], hi4, b[4 + e]);
    }
}

/* Eight elements of a row from p, widened to double (exactly). A bf16 is the top
 * half of its fp32; its NaNs are not made quiet here as dtype_bf16_to_f32 makes
 * them, because the conversion to double does that (x86 keeps the payload and
 * sets the quiet bit), which gives the same double. */
TARGET static inline __m512d load8(const void *p, enum zero_dtype t)
{
    if (t == ZERO_F32)
        return _mm512_cvtps_pd(_mm256_loadu_ps(p));
    __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(p)), 16);
    return _mm512_cvtps_pd(_mm256_castsi256_ps(w));
}

/* acc[j] += x[j * stride + i]^2 in double for i = 0..len-1 in that order, j < 16
 * (stride and i in elements of t: fp32, or bf16) */
TARGET static inline __attribute__((always_inline)) void
rows16(const void *x, enum zero_dtype t, size_t stride, size_t len, double acc[ROWS])
{
    const size_t size = zero_dtype_size(t);
    __m512d lo = _mm512_loadu_pd(acc), hi = _mm512_loadu_pd(acc + 8);
    size_t i = 0;
    for (; i + STEP <= len; i += STEP) {
        __m512d r[ROWS];
        for (int j = 0; j < ROWS; j++) {
            r[j] = load8((const char *)x + ((size_t)j * stride + i) * size, t);
            r[j] = _mm512_mul_pd(r[j], r[j]);
        }
        transpose8(r);
        transpose8(r + 8);
        for (int k = 0; k < STEP; k++) {
            lo = _mm512_add_pd(lo, r[k]);
            hi = _mm512_add_pd(hi, r[8 + k]);
        }
    }
    _mm512_storeu_pd(acc, lo);
    _mm512_storeu_pd(acc + 8, hi);
    for (; i < len; i++)
        for (int j = 0; j < ROWS; j++) {
            double v = dtype_load_f32(x, t, (size_t)j * stride + i);
            acc[j] += v * v;
        }
}

/* fp16: each block's run widened to fp32 (exact) in rows PAD floats apart (rows
 * whole multiples of 4 KiB apart would share one set of the L1 cache), then summed */
TARGET static void rows16_f16(const uint16_t *h, size_t block, double acc[ROWS])
{
    float run[ROWS][RUN + PAD]; /* (ROWS, RUN): a run of each block in fp32 */
    for (size_t i0 = 0; i0 < block; i0 += RUN) {
        size_t len = block - i0 < RUN ? block - i0 : RUN;
        for (int j = 0; j < ROWS; j++)
            for (size_t i = 0; i < len; i++)
                run[j][i] = dtype_f16_to_f32(h[(size_t)j * block + i0 + i]);
        rows16(&run[0][0], ZERO_F32, RUN + PAD, len, acc);
    }
}

TARGET static void rows16_f32(const void *x, size_t block, double acc[ROWS])
{
    rows16(x, ZERO_F32, block, block, acc);
}

TARGET static void rows16_bf16(const void *x, size_t block, double acc[ROWS])
{
    rows16(x, ZERO_BF16, block, block, acc);
}

size_t cpu_sumsq_groups_avx512(const void *x, enum zero_dtype t, size_t n, size_t block,
                               double *out)
{
    if (t != ZERO_F32 && t != ZERO_BF16 && t != ZERO_F16)
        return 0;
    size_t full = n / block, b = 0;
    for (; b + ROWS <= full; b += ROWS) {
        double acc[ROWS] = {0};
        const void *at = (const char *)x + b * block * zero_dtype_size(t);
        if (t == ZERO_F32)
            rows16_f32(at, block, acc);
        else if (t == ZERO_BF16)
            rows16_bf16(at, block, acc);
        else
            rows16_f16(at, block, acc);
        for (int j = 0; j < ROWS; j++)
            out[b + (size_t)j] = acc[j];
    }
    return b;
}

#endif

/* The register-blocked micro-kernels of the exact GEMM (see cpu_gemm.h for the
 * contract). Each keeps an (MR, NR) tile of C in registers and, per k, adds
 * A[r][k] * B[k][c] to every element with one fused multiply-add: each element
 * is one chain in increasing k, whatever the vector width. The compiler must not
 * contract or reassociate (the build uses -ffp-contract=off); every FMA here is
 * an explicit fmaf(), _mm*_fmadd_ps or vfmaq_laneq_f32 (fused per lane: the
 * same bits).
 *
 *   scalar  4 x 4   fmaf()                      (any processor)
 *   avx2    4 x 24  three __m256 per row        (12 accumulators of 16 ymm)
 *   avx512  8 x 48  three __m512 per row        (24 accumulators of 32 zmm)
 *   neon    8 x 12  three float32x4_t per row   (24 accumulators of 32 v, aarch64)
 *   amx     32 x 32 four 16 x 16 tiles of C     (the bf16-tile contract only)
 *
 * and, for products of at most 16 rows against B with k contiguous (y = x W^T at the
 * training step's 16 rows), avx512's 16 x 24 with the rows in the lanes, which reads
 * W as stored instead of packing it.
 *
 * Rows in multiples of 4 and 8 (batch sizes, sequence lengths) fill whole tiles;
 * measured against 6 x 16 and 12 x 32 in bench/gemm, these were as fast or faster
 * (the M = 16 rows of the toy MLP by far).
 *
 * Packed panels (cpu_gemm.c): ap (kc, MR) row k = A[0..MR)[k]; bp (kc, NR) row k =
 * B[k][0..NR). */
#include <math.h>
#include <string.h>

#include "base/bf16_dot.h"
#include "base/bf16_tile.h"
#include "base/dtype_convert.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_X86_KERNELS 1
#include <immintrin.h>
#endif

#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_NEON_KERNEL 1
#include <arm_neon.h>
#endif

#include "cpu_amx.h"
#include "cpu_gemm.h"

/* ---- narrowing a finished row of C to fp16/bf16 ---- */

/* dtype_convert.h's inline conversions, compiled per instruction set (as
 * cpu_kernels.c compiles cast): written without branches, they vectorize, and a
 * conversion's bits do not depend on the vector width. */
static inline __attribute__((always_inline)) void
narrow_body(uint16_t *restrict dst, const float *restrict src, int64_t n, enum zero_dtype to)
{
    if (to == ZERO_BF16)
        for (int64_t i = 0; i < n; i++)
            dst[i] = dtype_f32_to_bf16(src[i]);
    else
        for (int64_t i = 0; i < n; i++)
            dst[i] = dtype_f32_to_f16(src[i]);
}

#define NARROW_VARIANT(attr, suffix)                                                               \
    attr static void narrow_##suffix(uint16_t *dst, const float *src, int64_t n,                   \
                                     enum zero_dtype to)                                           \
    {                                                                                              \
        narrow_body(dst, src, n, to);                                                              \
    }

NARROW_VARIANT(, scalar)

/* ---- scalar ---- */

#define S_MR 4
#define S_NR 4

static void tile_scalar(int64_t kc, const float *ap, const float *bp, const float *cin,
                        int64_t ldin, float *cout, int64_t ldout)
{
    float acc[S_MR][S_NR];
    for (int r = 0; r < S_MR; r++)
        for (int c = 0; c < S_NR; c++)
            acc[r][c] = cin != NULL ? cin[r * ldin + c] : 0.0f;
    for (int64_t k = 0; k < kc; k++) {
        const float *a = ap + k * S_MR, *b = bp + k * S_NR;
        for (int r = 0; r < S_MR; r++)
            for (int c = 0; c < S_NR; c++)
                acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
    }
    for (int r = 0; r < S_MR; r++)
        for (int c = 0; c < S_NR; c++)
            cout[r * ldout + c] = acc[r][c];
}

/* ---- the bf16-product tile in plain C (scalar, and neon's shape) ---- */

/* The contract's reference steps (bf16_dot.h) on widened panels: per pair, the odd
 * row of each panel (k = 2p + 1) first. The acc is made DAZ where the first step
 * reads it (K = 0 leaves C's start as it is, as the instruction would). */
static inline __attribute__((always_inline)) void dot_c_body(int mr, int nr, int64_t np,
                                                             const float *ap, const float *bp,
                                                             const float *cin, int64_t ldin,
                                                             float *cout, int64_t ldout)
{
    float acc[8 * 12];
    for (int r = 0; r < mr; r++)
        for (int c = 0; c < nr; c++) {
            const float start = cin != NULL ? cin[r * ldin + c] : 0.0f;
            acc[r * nr + c] = np > 0 ? bf16_dot_daz(start) : start;
        }
    for (int64_t p = 0; p < np; p++) {
        const float *a0 = ap + 2 * p * mr, *a1 = a0 + mr, *b0 = bp + 2 * p * nr, *b1 = b0 + nr;
        for (int r = 0; r < mr; r++)
            for (int c = 0; c < nr; c++)
                acc[r * nr + c] =
                    bf16_dot_fma(a0[r], b0[c], bf16_dot_fma(a1[r], b1[c], acc[r * nr + c]));
    }
    for (int r = 0; r < mr; r++)
        for (int c = 0; c < nr; c++)
            cout[r * ldout + c] = acc[r * nr + c];
}

static void dot_scalar(int64_t np, const void *ap, const void *bp, const float *cin, int64_t ldin,
                       float *cout, int64_t ldout)
{
    dot_c_body(S_MR, S_NR, np, ap, bp, cin, ldin, cout, ldout);
}

/* ---- the bf16-tile contract in plain C (scalar, and neon's shape) ---- */

/* bf16_tile_block's steps on widened panels, each block's 16 even rows then its 16 odd
 * ones (cpu_gemm_tile_row): the two chains from +0, then acc + (E + O). */
static inline __attribute__((always_inline)) void tdot_c_body(int mr, int nr, int64_t np,
                                                              const float *ap, const float *bp,
                                                              const float *cin, int64_t ldin,
                                                              float *cout, int64_t ldout)
{
    float acc[8 * 12], e[8 * 12], o[8 * 12];
    for (int r = 0; r < mr; r++)
        for (int c = 0; c < nr; c++)
            acc[r * nr + c] = cin != NULL ? cin[r * ldin + c] : 0.0f;
    for (int64_t b = 0; b < (np + 15) / 16; b++) {
        const float *ab = ap + 32 * b * mr, *bb = bp + 32 * b * nr;
        for (int i = 0; i < mr * nr; i++)
            e[i] = o[i] = 0.0f;
        for (int q = 0; q < 16; q++) {
            const float *ae = ab + q * mr, *ao = ae + 16 * mr, *be = bb + q * nr,
                        *bo = be + 16 * nr;
            for (int r = 0; r < mr; r++)
                for (int c = 0; c < nr; c++) {
                    e[r * nr + c] = bf16_dot_fma(ae[r], be[c], e[r * nr + c]);
                    o[r * nr + c] = bf16_dot_fma(ao[r], bo[c], o[r * nr + c]);
                }
        }
        for (int i = 0; i < mr * nr; i++)
            acc[i] = bf16_tile_add(bf16_dot_daz(acc[i]), bf16_tile_add(e[i], o[i]));
    }
    for (int r = 0; r < mr; r++)
        for (int c = 0; c < nr; c++)
            cout[r * ldout + c] = acc[r * nr + c];
}

static void tdot_scalar(int64_t np, const void *ap, const void *bp, const float *cin, int64_t ldin,
                        float *cout, int64_t ldout)
{
    tdot_c_body(S_MR, S_NR, np, ap, bp, cin, ldin, cout, ldout);
}

#ifdef HAVE_X86_KERNELS

/* x86's MXCSR with FTZ and DAZ set and rounding to nearest even gives fused
 * multiply-adds exactly VDPBF16PS's steps (tininess after rounding, signs kept:
 * tests/test_gemm.c compares every variant with the reference), so the emulating
 * kernels are the fp32 ones in pair order under that MXCSR. The body is a separate
 * call so that no arithmetic is moved across the MXCSR writes. */
#define MXCSR_BF16_DOT(csr) (((csr) & ~0x6000u) | 0x8040u)

/* fp16 as the compiler vectorizes dtype_f32_to_f16; bf16 below by hand: the
 * compiled mask selections cost more than the k = 16 dW product they store */
NARROW_VARIANT(__attribute__((target("avx2"))), f16_avx2)

/* 8 fp32 as bf16 in the low 16 bits of each lane, bit for bit dtype_f32_to_bf16:
 * x + 0x7fff + (kept & 1) carries into the kept half exactly when
 * dtype_round_shift_rne rounds up (no wrap: NaNs, the only patterns near 2^32,
 * take the other branch); a NaN is its top half made quiet */
__attribute__((target("avx2"))) static inline __m256i f32x8_to_bf16(const float *p)
{
    const __m256i x = _mm256_loadu_si256((const __m256i *)p);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i rne = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), odd), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(rne, quiet, nan);
}

__attribute__((target("avx2"))) static void narrow_avx2(uint16_t *dst, const float *src, int64_t n,
                                                        enum zero_dtype to)
{
    if (to != ZERO_BF16) {
        narrow_f16_avx2(dst, src, n, to);
        return;
    }
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) { /* lanes hold 0 .. 0xffff: the unsigned pack is exact */
        const __m256i h = _mm256_packus_epi32(f32x8_to_bf16(src + i), f32x8_to_bf16(src + i + 8));
        _mm256_storeu_si256((__m256i *)(dst + i), _mm256_permute4x64_epi64(h, 0xd8));
    }
    for (; i < n; i++)
        dst[i] = dtype_f32_to_bf16(src[i]);
}

/* the same, 16 at a time (AVX-512F's truncating vpmovdw: no AVX-512BW needed) */
__attribute__((target("avx512f"))) static void narrow_avx512(uint16_t *dst, const float *src,
                                                             int64_t n, enum zero_dtype to)
{
    if (to != ZERO_BF16) {
        narrow_f16_avx2(dst, src, n, to);
        return;
    }
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i x = _mm512_loadu_si512(src + i);
        const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
        const __m512i rne = _mm512_srli_epi32(
            _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), odd), 16);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(
            _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
        const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
        _mm256_storeu_si256((__m256i *)(dst + i),
                            _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(rne, nan, quiet)));
    }
    for (; i < n; i++)
        dst[i] = dtype_f32_to_bf16(src[i]);
}

/* ---- AVX2 + FMA: 4 rows x 24 columns ---- */

#define A2_MR 4
#define A2_NR 24

#define ROWS4(X) X(0) X(1) X(2) X(3)

/* The 4 x 24 tile's registers, shared by the fp32 tile and its bf16-product order:
 * declared, loaded from cin (or zeroed), one k step from a (4) and b0..b2 (24), stored. */
#define A2_DECL(r) __m256 c##r##0, c##r##1, c##r##2;
#define A2_LOAD(r)                                                                                 \
    c##r##0 = _mm256_loadu_ps(cin + r * ldin);                                                     \
    c##r##1 = _mm256_loadu_ps(cin + r * ldin + 8);                                                 \
    c##r##2 = _mm256_loadu_ps(cin + r * ldin + 16);
#define A2_ZERO(r) c##r##0 = c##r##1 = c##r##2 = _mm256_setzero_ps();
#define A2_STEP(r)                                                                                 \
    {                                                                                              \
        const __m256 ar = _mm256_broadcast_ss(a + r);                                              \
        c##r##0 = _mm256_fmadd_ps(ar, b0, c##r##0);                                                \
        c##r##1 = _mm256_fmadd_ps(ar, b1, c##r##1);                                                \
        c##r##2 = _mm256_fmadd_ps(ar, b2, c##r##2);                                                \
    }
#define A2_STORE(r)                                                                                \
    _mm256_storeu_ps(cout + r * ldout, c##r##0);                                                   \
    _mm256_storeu_ps(cout + r * ldout + 8, c##r##1);                                               \
    _mm256_storeu_ps(cout + r * ldout + 16, c##r##2);
#define A2_BEGIN                                                                                   \
    ROWS4(A2_DECL)                                                                                 \
    if (cin != NULL) {                                                                             \
        ROWS4(A2_LOAD)                                                                             \
    } else {                                                                                       \
        ROWS4(A2_ZERO)                                                                             \
    }

__attribute__((target("avx2,fma"))) static void tile_avx2(int64_t kc, const float *ap,
                                                          const float *bp, const float *cin,
                                                          int64_t ldin, float *cout, int64_t ldout)
{
    A2_BEGIN
    for (int64_t k = 0; k < kc; k++) {
        const float *a = ap + k * A2_MR, *b = bp + k * A2_NR;
        const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8),
                     b2 = _mm256_loadu_ps(b + 16);
        ROWS4(A2_STEP)
    }
    ROWS4(A2_STORE)
}

/* tile_avx2's registers under the bf16-product contract, widened panels (2 np rows) */
__attribute__((target("avx2,fma"), noinline)) static void
dot_avx2_body(int64_t np, const float *ap, const float *bp, const float *cin, int64_t ldin,
              float *cout, int64_t ldout)
{
    A2_BEGIN
    for (int64_t p = 0; p < np; p++)
        for (int odd = 1; odd >= 0; odd--) { /* k = 2p + 1, then 2p */
            const float *a = ap + (2 * p + odd) * A2_MR, *b = bp + (2 * p + odd) * A2_NR;
            const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8),
                         b2 = _mm256_loadu_ps(b + 16);
            ROWS4(A2_STEP)
        }
    ROWS4(A2_STORE)
}

static void dot_avx2(int64_t np, const void *ap, const void *bp, const float *cin, int64_t ldin,
                     float *cout, int64_t ldout)
{
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(MXCSR_BF16_DOT(csr));
    dot_avx2_body(np, ap, bp, cin, ldin, cout, ldout);
    _mm_setcsr(csr);
}

/* 8 x 8 floats, rows r0..r7, stored transposed: d[c * ldd + r] = r_r[c] */
__attribute__((target("avx2"))) static inline void
transpose8x8_store(float *d, int64_t ldd, __m256 r0, __m256 r1, __m256 r2, __m256 r3, __m256 r4,
                   __m256 r5, __m256 r6, __m256 r7)
{
    /* pairs of rows interleaved, then quadruples: column c of rows 0-3 | c + 4 */
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    _mm256_storeu_ps(d, _mm256_permute2f128_ps(s0, s4, 0x20));
    _mm256_storeu_ps(d + ldd, _mm256_permute2f128_ps(s1, s5, 0x20));
    _mm256_storeu_ps(d + 2 * ldd, _mm256_permute2f128_ps(s2, s6, 0x20));
    _mm256_storeu_ps(d + 3 * ldd, _mm256_permute2f128_ps(s3, s7, 0x20));
    _mm256_storeu_ps(d + 4 * ldd, _mm256_permute2f128_ps(s0, s4, 0x31));
    _mm256_storeu_ps(d + 5 * ldd, _mm256_permute2f128_ps(s1, s5, 0x31));
    _mm256_storeu_ps(d + 6 * ldd, _mm256_permute2f128_ps(s2, s6, 0x31));
    _mm256_storeu_ps(d + 7 * ldd, _mm256_permute2f128_ps(s3, s7, 0x31));
}

/* 8 rows of kc floats into 8 columns, 8 x 8 blocks through registers */
__attribute__((target("avx2"))) static void
transpose8_avx2(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t kc)
{
    int64_t k = 0;
    for (; k + 8 <= kc; k += 8) {
        const float *s = src + k;
        transpose8x8_store(dst + k * ldd, ldd, _mm256_loadu_ps(s), _mm256_loadu_ps(s + lds),
                           _mm256_loadu_ps(s + 2 * lds), _mm256_loadu_ps(s + 3 * lds),
                           _mm256_loadu_ps(s + 4 * lds), _mm256_loadu_ps(s + 5 * lds),
                           _mm256_loadu_ps(s + 6 * lds), _mm256_loadu_ps(s + 7 * lds));
    }
    for (; k < kc; k++)
        for (int r = 0; r < 8; r++)
            dst[k * ldd + r] = src[r * lds + k];
}

/* 8 bf16 as their exact fp32 values, bit for bit dtype_bf16_to_f32: the top half
 * of an fp32, a NaN made quiet */
__attribute__((target("avx2"))) static inline __m256 bf16x8_to_f32(const uint16_t *p)
{
    const __m256i x =
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    return _mm256_castsi256_ps(
        _mm256_or_si256(x, _mm256_and_si256(nan, _mm256_set1_epi32(0x400000))));
}

/* dst (n) = src (n) widened, 8 at a time */
__attribute__((target("avx2"))) static void widen_bf16_avx2(float *dst, const uint16_t *src,
                                                            int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, bf16x8_to_f32(src + i));
    for (; i < n; i++)
        dst[i] = dtype_bf16_to_f32(src[i]);
}

/* transpose8_avx2 of 8 bf16 rows, widened on the way (no fp32 copy of the rows) */
__attribute__((target("avx2"))) static void
transpose8_bf16_avx2(float *dst, int64_t ldd, const uint16_t *src, int64_t lds, int64_t kc)
{
    int64_t k = 0;
    for (; k + 8 <= kc; k += 8) {
        const uint16_t *s = src + k;
        transpose8x8_store(dst + k * ldd, ldd, bf16x8_to_f32(s), bf16x8_to_f32(s + lds),
                           bf16x8_to_f32(s + 2 * lds), bf16x8_to_f32(s + 3 * lds),
                           bf16x8_to_f32(s + 4 * lds), bf16x8_to_f32(s + 5 * lds),
                           bf16x8_to_f32(s + 6 * lds), bf16x8_to_f32(s + 7 * lds));
    }
    for (; k < kc; k++)
        for (int r = 0; r < 8; r++)
            dst[k * ldd + r] = dtype_bf16_to_f32(src[r * lds + k]);
}

/* ---- AVX-512: 8 rows x 48 columns ---- */

#define A5_MR 8
#define A5_NR 48

#define ROWS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

__attribute__((target("avx512f"))) static void tile_avx512(int64_t kc, const float *ap,
                                                           const float *bp, const float *cin,
                                                           int64_t ldin, float *cout, int64_t ldout)
{
#define DECL(r) __m512 c##r##0, c##r##1, c##r##2;
    ROWS8(DECL)
#undef DECL
    if (cin != NULL) {
#define LOAD(r)                                                                                    \
    c##r##0 = _mm512_loadu_ps(cin + r * ldin);                                                     \
    c##r##1 = _mm512_loadu_ps(cin + r * ldin + 16);                                                \
    c##r##2 = _mm512_loadu_ps(cin + r * ldin + 32);
        ROWS8(LOAD)
#undef LOAD
    } else {
#define ZERO(r) c##r##0 = c##r##1 = c##r##2 = _mm512_setzero_ps();
        ROWS8(ZERO)
#undef ZERO
    }
    for (int64_t k = 0; k < kc; k++) {
        const __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16),
                     b2 = _mm512_loadu_ps(bp + 32);
        _mm_prefetch((const char *)(bp + 8 * A5_NR), _MM_HINT_T0);
#define STEP(r)                                                                                    \
    {                                                                                              \
        const __m512 a = _mm512_set1_ps(ap[r]);                                                    \
        c##r##0 = _mm512_fmadd_ps(a, b0, c##r##0);                                                 \
        c##r##1 = _mm512_fmadd_ps(a, b1, c##r##1);                                                 \
        c##r##2 = _mm512_fmadd_ps(a, b2, c##r##2);                                                 \
    }
        ROWS8(STEP)
#undef STEP
        ap += A5_MR;
        bp += A5_NR;
    }
#define STORE(r)                                                                                   \
    _mm512_storeu_ps(cout + r * ldout, c##r##0);                                                   \
    _mm512_storeu_ps(cout + r * ldout + 16, c##r##1);                                              \
    _mm512_storeu_ps(cout + r * ldout + 32, c##r##2);
    ROWS8(STORE)
#undef STORE
}

/* tile_avx512's registers under the bf16-product contract. HARDWARE: VDPBF16PS on
 * pair panels, ap (np, 8) and bp (np, 48) of 32-bit pairs, one instruction per 16
 * columns and pair (it ignores MXCSR: DOT_LOOP_PAIRS); else fused multiply-adds on widened panels
 * under MXCSR_BF16_DOT, the odd row first. */
#define DOT_AVX512(name, attr, LOOP)                                                               \
    attr static void name(int64_t np, const void *apv, const void *bpv, const float *cin,          \
                          int64_t ldin, float *cout, int64_t ldout)                                \
    {                                                                                              \
        ROWS8(DOT_DECL)                                                                            \
        if (cin != NULL) {                                                                         \
            ROWS8(DOT_LOAD)                                                                        \
        } else {                                                                                   \
            ROWS8(DOT_ZERO)                                                                        \
        }                                                                                          \
        LOOP ROWS8(DOT_STORE)                                                                      \
    }
#define DOT_LOOP_PAIRS                                                                             \
    const uint32_t *ap = apv, *bp = bpv;                                                           \
    for (int64_t p = 0; p < np; p++) {                                                             \
        const __m512i b0 = _mm512_loadu_si512(bp), b1 = _mm512_loadu_si512(bp + 16),               \
                      b2 = _mm512_loadu_si512(bp + 32);                                            \
        _mm_prefetch((const char *)(bp + 8 * A5_NR), _MM_HINT_T0);                                 \
        ROWS8(DOT_PAIR_STEP)                                                                       \
        ap += A5_MR;                                                                               \
        bp += A5_NR;                                                                               \
    }
#define DOT_LOOP_FMA                                                                               \
    const float *ap = apv, *bp = bpv;                                                              \
    for (int64_t k = 0; k < 2 * np; k += 2)                                                        \
        for (int64_t kk = k + 1; kk >= k; kk--) {                                                  \
            const float *a = ap + kk * A5_MR, *b = bp + kk * A5_NR;                                \
            const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16),                    \
                         b2 = _mm512_loadu_ps(b + 32);                                             \
            ROWS8(DOT_FMA_STEP)                                                                    \
        }
#define DOT_DECL(r) __m512 c##r##0, c##r##1, c##r##2;
#define DOT_LOAD(r)                                                                                \
    c##r##0 = _mm512_loadu_ps(cin + r * ldin);                                                     \
    c##r##1 = _mm512_loadu_ps(cin + r * ldin + 16);                                                \
    c##r##2 = _mm512_loadu_ps(cin + r * ldin + 32);
#define DOT_ZERO(r) c##r##0 = c##r##1 = c##r##2 = _mm512_setzero_ps();
#define DOT_PAIR_STEP(r)                                                                           \
    {                                                                                              \
        const __m512bh ar = (__m512bh)_mm512_set1_epi32((int)ap[r]);                               \
        c##r##0 = _mm512_dpbf16_ps(c##r##0, ar, (__m512bh)b0);                                     \
        c##r##1 = _mm512_dpbf16_ps(c##r##1, ar, (__m512bh)b1);                                     \
        c##r##2 = _mm512_dpbf16_ps(c##r##2, ar, (__m512bh)b2);                                     \
    }
#define DOT_FMA_STEP(r)                                                                            \
    {                                                                                              \
        const __m512 ar = _mm512_set1_ps(a[r]);                                                    \
        c##r##0 = _mm512_fmadd_ps(ar, b0, c##r##0);                                                \
        c##r##1 = _mm512_fmadd_ps(ar, b1, c##r##1);                                                \
        c##r##2 = _mm512_fmadd_ps(ar, b2, c##r##2);                                                \
    }
#define DOT_STORE(r)                                                                               \
    _mm512_storeu_ps(cout + r * ldout, c##r##0);                                                   \
    _mm512_storeu_ps(cout + r * ldout + 16, c##r##1);                                              \
    _mm512_storeu_ps(cout + r * ldout + 32, c##r##2);

DOT_AVX512(dot_avx512_body, __attribute__((target("avx512f"), noinline)), DOT_LOOP_FMA)
DOT_AVX512(dot_avx512bf16, __attribute__((target("avx512f,avx512bf16"))), DOT_LOOP_PAIRS)

static void dot_avx512(int64_t np, const void *ap, const void *bp, const float *cin, int64_t ldin,
                       float *cout, int64_t ldout)
{
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(MXCSR_BF16_DOT(csr));
    dot_avx512_body(np, ap, bp, cin, ldin, cout, ldout);
    _mm_setcsr(csr);
}

/* ---- the bf16-tile contract: emulated by the fp32 tiles, and AMX itself ---- */

/* Under MXCSR_BF16_DOT the fp32 tile over a block's 16 even rows is its chain E (from
 * +0: cin NULL), over the 16 odd rows O; then acc + (E + O) in the variant's vectors.
 * acc is cin (NULL: +0) for the first block, the running sums in cout after. */
#define TDOT_X86(suffix, attr, MR, NR, VEC, LOAD, ZERO, ADD, STORE)                                \
    attr static void tdot_##suffix##_sum(const float *acc, int64_t lda, const float *e,            \
                                         const float *o, float *cout, int64_t ldout)               \
    {                                                                                              \
        for (int r = 0; r < MR; r++)                                                               \
            for (int c = 0; c < NR; c += VEC)                                                      \
                STORE(cout + r * ldout + c, ADD(acc != NULL ? LOAD(acc + r * lda + c) : ZERO(),    \
                                                ADD(LOAD(e + r * NR + c), LOAD(o + r * NR + c)))); \
    }                                                                                              \
    __attribute__((noinline)) static void tdot_##suffix##_body(                                    \
        int64_t np, const float *ap, const float *bp, const float *cin, int64_t ldin, float *cout, \
        int64_t ldout)                                                                             \
    {                                                                                              \
        float e[MR * NR] __attribute__((aligned(64))), o[MR * NR] __attribute__((aligned(64)));    \
        const float *acc = cin;                                                                    \
        int64_t lda = ldin;                                                                        \
        for (int64_t b = 0; b < (np + 15) / 16; b++) {                                             \
            const float *ab = ap + 32 * b * MR, *bb = bp + 32 * b * NR;                            \
            tile_##suffix(16, ab, bb, NULL, 0, e, NR);                                             \
            tile_##suffix(16, ab + 16 * MR, bb + 16 * NR, NULL, 0, o, NR);                         \
            tdot_##suffix##_sum(acc, lda, e, o, cout, ldout);                                      \
            acc = cout, lda = ldout;                                                               \
        }                                                                                          \
        if (np == 0) /* no block: the start as it is */                                            \
            for (int r = 0; r < MR; r++)                                                           \
                for (int c = 0; c < NR; c++)                                                       \
                    cout[r * ldout + c] = cin != NULL ? cin[r * ldin + c] : 0.0f;                  \
    }                                                                                              \
    static void tdot_##suffix(int64_t np, const void *ap, const void *bp, const float *cin,        \
                              int64_t ldin, float *cout, int64_t ldout)                            \
    {                                                                                              \
        const unsigned csr = _mm_getcsr();                                                         \
        _mm_setcsr(MXCSR_BF16_DOT(csr));                                                           \
        tdot_##suffix##_body(np, ap, bp, cin, ldin, cout, ldout);                                  \
        _mm_setcsr(csr);                                                                           \
    }

TDOT_X86(avx2, __attribute__((target("avx2,fma"))), A2_MR, A2_NR, 8, _mm256_loadu_ps,
         _mm256_setzero_ps, _mm256_add_ps, _mm256_storeu_ps)
TDOT_X86(avx512, __attribute__((target("avx512f"))), A5_MR, A5_NR, 16, _mm512_loadu_ps,
         _mm512_setzero_ps, _mm512_add_ps, _mm512_storeu_ps)

/* AMX: C (32, 32) in four 16 x 16 tiles (0 1 / 2 3), per block of 16 pairs A's two
 * 16-row tiles (4, 5: each row's 16 pairs, 64 bytes) and B's two 16-column tiles (6, 7:
 * each pair's 16 columns), four TDPBF16PS. ap (32, P) and bp (P, 32), P = np rounded
 * up to 16 (zero pairs). The instruction ignores MXCSR. */
#define AMX_MR 32
#define AMX_NR 32

__attribute__((target("amx-tile,amx-bf16"))) static void tdot_amx(int64_t np, const void *apv,
                                                                  const void *bpv, const float *cin,
                                                                  int64_t ldin, float *cout,
                                                                  int64_t ldout)
{
    const uint32_t *ap = apv, *bp = bpv;
    const int64_t P = (np + 15) / 16 * 16;
    struct cpu_amx_config cfg = {.palette = 1};
    for (int t = 0; t < 8; t++)
        cfg.rows[t] = 16, cfg.colsb[t] = 64;
    _tile_loadconfig(&cfg);
    if (cin != NULL) {
        _tile_loadd(0, cin, ldin * 4);
        _tile_loadd(1, cin + 16, ldin * 4);
        _tile_loadd(2, cin + 16 * ldin, ldin * 4);
        _tile_loadd(3, cin + 16 * ldin + 16, ldin * 4);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    for (int64_t p = 0; p < P; p += 16) {
        _tile_loadd(4, ap + p, P * 4);
        _tile_loadd(5, ap + 16 * P + p, P * 4);
        _tile_loadd(6, bp + p * AMX_NR, AMX_NR * 4);
        _tile_loadd(7, bp + p * AMX_NR + 16, AMX_NR * 4);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, cout, ldout * 4);
    _tile_stored(1, cout + 16, ldout * 4);
    _tile_stored(2, cout + 16 * ldout, ldout * 4);
    _tile_stored(3, cout + 16 * ldout + 16, ldout * 4);
}

/* AMX, few rows: C^T = W x^T, 64 columns of C (four 16 x 16 tiles of C^T: a tile row
 * per column, its 16 fp32 the rows, the layout of t) against W as stored, bf16 with k
 * contiguous: W's rows are the A tiles as they are (16 rows of 32 k, ld apart), x^T's
 * pairs (P, 16) the B tile, so W is read once and never packed. The products are the
 * same (each output's chains do not care which operand is which); K's last block, short
 * of 32, is W's rows copied with +0 after them. */
#define AMX_COLS 64

__attribute__((target("amx-tile,amx-bf16"))) static void
cols_amx(int64_t kc, const float *atv, const float *bpv, int64_t ldb, const float *tin, float *tout)
{
    const uint32_t *at = (const uint32_t *)atv;
    const uint16_t *w = (const uint16_t *)bpv;
    struct cpu_amx_config cfg = {.palette = 1};
    for (int t = 0; t < 6; t++)
        cfg.rows[t] = 16, cfg.colsb[t] = 64;
    _tile_loadconfig(&cfg);
    if (tin != NULL) {
        _tile_loadd(0, tin, 64);
        _tile_loadd(1, tin + 256, 64);
        _tile_loadd(2, tin + 512, 64);
        _tile_loadd(3, tin + 768, 64);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    const int64_t whole = kc / BF16_TILE_BLOCK * BF16_TILE_BLOCK, ldw = ldb * 2;
    for (int64_t k0 = 0; k0 < kc; k0 += BF16_TILE_BLOCK) {
        uint16_t last[AMX_COLS][BF16_TILE_BLOCK];
        const uint16_t *wk = w + k0;
        int64_t ld = ldw;
        if (k0 == whole) { /* the short last block */
            memset(last, 0, sizeof last);
            for (int c = 0; c < AMX_COLS; c++)
                memcpy(last[c], w + c * ldb + k0, sizeof(uint16_t) * (size_t)(kc - k0));
            wk = last[0];
            ld = sizeof last[0];
        }
        _tile_loadd(5, at + k0 / 2 * 16, 64);
        _tile_loadd(4, wk, ld);
        _tile_dpbf16ps(0, 4, 5);
        _tile_loadd(4, (const char *)wk + 16 * ld, ld);
        _tile_dpbf16ps(1, 4, 5);
        _tile_loadd(4, (const char *)wk + 32 * ld, ld);
        _tile_dpbf16ps(2, 4, 5);
        _tile_loadd(4, (const char *)wk + 48 * ld, ld);
        _tile_dpbf16ps(3, 4, 5);
    }
    _tile_stored(0, tout, 64);
    _tile_stored(1, tout + 256, 64);
    _tile_stored(2, tout + 512, 64);
    _tile_stored(3, tout + 768, 64);
}

/* ---- AVX-512, few rows: 16 rows x 24 columns against W as stored ---- */

#define A5_COLS 24

/* clang-format off */
#define COLS24(X)                                                                                  \
    X(0)  X(1)  X(2)  X(3)  X(4)  X(5)  X(6)  X(7)                                                 \
    X(8)  X(9)  X(10) X(11) X(12) X(13) X(14) X(15)                                                \
    X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)
/* clang-format on */

/* One zmm per column of C, its 16 lanes the rows: per k, A's column k (packed) times
 * B(k, c) = bp[c * ldb + k] broadcast from B itself (y = x W^T: 24 rows of W read
 * along k, each once), so B is never packed. Column c = 4 g + q is q rows past base g:
 * six bases and the offsets of 1, 2 and 3 rows keep every address in registers. */
__attribute__((target("avx512f"))) static void cols_avx512(int64_t kc, const float *at,
                                                           const float *bp, int64_t ldb,
                                                           const float *tin, float *tout)
{
#define DECL(n) __m512 v##n;
    COLS24(DECL)
#undef DECL
    if (tin != NULL) {
#define LOAD(n) v##n = _mm512_loadu_ps(tin + 16 * n);
        COLS24(LOAD)
#undef LOAD
    } else {
#define ZERO(n) v##n = _mm512_setzero_ps();
        COLS24(ZERO)
#undef ZERO
    }
    const float *b0 = bp, *b1 = bp + 4 * ldb, *b2 = bp + 8 * ldb, *b3 = bp + 12 * ldb,
                *b4 = bp + 16 * ldb, *b5 = bp + 20 * ldb;
    for (int64_t k = 0; k < kc; k++) {
        const __m512 a = _mm512_loadu_ps(at + 16 * k);
#define STEP(n, g, q) v##n = _mm512_fmadd_ps(a, _mm512_set1_ps(b##g[q * ldb + k]), v##n);
        /* clang-format off */
        STEP(0, 0, 0)  STEP(1, 0, 1)  STEP(2, 0, 2)  STEP(3, 0, 3)
        STEP(4, 1, 0)  STEP(5, 1, 1)  STEP(6, 1, 2)  STEP(7, 1, 3)
        STEP(8, 2, 0)  STEP(9, 2, 1)  STEP(10, 2, 2) STEP(11, 2, 3)
        STEP(12, 3, 0) STEP(13, 3, 1) STEP(14, 3, 2) STEP(15, 3, 3)
        STEP(16, 4, 0) STEP(17, 4, 1) STEP(18, 4, 2) STEP(19, 4, 3)
        STEP(20, 5, 0) STEP(21, 5, 1) STEP(22, 5, 2) STEP(23, 5, 3)
        /* clang-format on */
#undef STEP
    }
#define STORE(n) _mm512_storeu_ps(tout + 16 * n, v##n);
    COLS24(STORE)
#undef STORE
}

#endif

#ifdef HAVE_NEON_KERNEL

/* ---- NEON (AdvSIMD, every aarch64 processor): 8 rows x 12 columns ---- */

#define N_MR 8
#define N_NR 12

#define N_ROWS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

static void tile_neon(int64_t kc, const float *ap, const float *bp, const float *cin, int64_t ldin,
                      float *cout, int64_t ldout)
{
#define DECL(r) float32x4_t c##r##0, c##r##1, c##r##2;
    N_ROWS8(DECL)
#undef DECL
    if (cin != NULL) {
#define LOAD(r)                                                                                    \
    c##r##0 = vld1q_f32(cin + r * ldin);                                                           \
    c##r##1 = vld1q_f32(cin + r * ldin + 4);                                                       \
    c##r##2 = vld1q_f32(cin + r * ldin + 8);
        N_ROWS8(LOAD)
#undef LOAD
    } else {
#define ZERO(r) c##r##0 = c##r##1 = c##r##2 = vdupq_n_f32(0.0f);
        N_ROWS8(ZERO)
#undef ZERO
    }
    for (int64_t k = 0; k < kc; k++) {
        const float32x4_t b0 = vld1q_f32(bp), b1 = vld1q_f32(bp + 4), b2 = vld1q_f32(bp + 8);
        /* A[0..4)[k] and A[4..8)[k]; row r multiplies by lane r % 4 */
        const float32x4_t a_lo = vld1q_f32(ap), a_hi = vld1q_f32(ap + 4);
#define STEP(r, a, lane)                                                                           \
    c##r##0 = vfmaq_laneq_f32(c##r##0, b0, a, lane);                                               \
    c##r##1 = vfmaq_laneq_f32(c##r##1, b1, a, lane);                                               \
    c##r##2 = vfmaq_laneq_f32(c##r##2, b2, a, lane);
        STEP(0, a_lo, 0)
        STEP(1, a_lo, 1)
        STEP(2, a_lo, 2)
        STEP(3, a_lo, 3)
        STEP(4, a_hi, 0)
        STEP(5, a_hi, 1)
        STEP(6, a_hi, 2)
        STEP(7, a_hi, 3)
#undef STEP
        ap += N_MR;
        bp += N_NR;
    }
#define STORE(r)                                                                                   \
    vst1q_f32(cout + r * ldout, c##r##0);                                                          \
    vst1q_f32(cout + r * ldout + 4, c##r##1);                                                      \
    vst1q_f32(cout + r * ldout + 8, c##r##2);
    N_ROWS8(STORE)
#undef STORE
}

/* the bf16-product tile in neon's shape: the plain C steps (no flush-to-zero mode of
 * aarch64 matches x86's tininess, so the reference's explicit flush) */
static void dot_neon(int64_t np, const void *ap, const void *bp, const float *cin, int64_t ldin,
                     float *cout, int64_t ldout)
{
    dot_c_body(N_MR, N_NR, np, ap, bp, cin, ldin, cout, ldout);
}

/* the bf16-tile contract in neon's shape: the plain C steps, for the same reason */
static void tdot_neon(int64_t np, const void *ap, const void *bp, const float *cin, int64_t ldin,
                      float *cout, int64_t ldout)
{
    tdot_c_body(N_MR, N_NR, np, ap, bp, cin, ldin, cout, ldout);
}

#endif

/* the fp32 chain's and the bf16-product contract's kernels */
static const struct cpu_gemm_kernel kernels[CPU_ISA_COUNT] = {
    [CPU_ISA_SCALAR] = {S_MR, S_NR, tile_scalar, NULL, NULL, NULL, narrow_scalar, 0, NULL,
                        dot_scalar, 0},
#ifdef HAVE_X86_KERNELS
    [CPU_ISA_AVX2] = {A2_MR, A2_NR, tile_avx2, transpose8_avx2, transpose8_bf16_avx2,
                      widen_bf16_avx2, narrow_avx2, 0, NULL, dot_avx2, 0},
    /* AVX-512F processors all have AVX2 */
    [CPU_ISA_AVX512] = {A5_MR, A5_NR, tile_avx512, transpose8_avx2, transpose8_bf16_avx2,
                        widen_bf16_avx2, narrow_avx512, A5_COLS, cols_avx512, dot_avx512, 0},
    /* avx512 with the instruction itself on bf16 pairs (amx: the same, its tiles are the
     * bf16-tile contract's) */
    [CPU_ISA_AVX512BF16] = {A5_MR, A5_NR, tile_avx512, transpose8_avx2, transpose8_bf16_avx2,
                            widen_bf16_avx2, narrow_avx512, A5_COLS, cols_avx512, dot_avx512bf16,
                            1},
    [CPU_ISA_AMX] = {A5_MR, A5_NR, tile_avx512, transpose8_avx2, transpose8_bf16_avx2,
                     widen_bf16_avx2, narrow_avx512, A5_COLS, cols_avx512, dot_avx512bf16, 1},
#else
    [CPU_ISA_AVX2] = {1, 1, NULL, NULL, NULL, NULL, narrow_scalar, 0, NULL, NULL, 0},
    [CPU_ISA_AVX512] = {1, 1, NULL, NULL, NULL, NULL, narrow_scalar, 0, NULL, NULL, 0},
    [CPU_ISA_AVX512BF16] = {1, 1, NULL, NULL, NULL, NULL, narrow_scalar, 0, NULL, NULL, 0},
    [CPU_ISA_AMX] = {1, 1, NULL, NULL, NULL, NULL, narrow_scalar, 0, NULL, NULL, 0},
#endif
#ifdef HAVE_NEON_KERNEL
    [CPU_ISA_NEON] = {N_MR, N_NR, tile_neon, NULL, NULL, NULL, narrow_scalar, 0, NULL, dot_neon, 0},
#else
    [CPU_ISA_NEON] = {1, 1, NULL, NULL, NULL, NULL, narrow_scalar, 0, NULL, NULL, 0},
#endif
};

/* the bf16-tile contract's: the fp32 tiles emulating it, amx's own 32 x 32 */
static const struct cpu_gemm_kernel tile_kernels[CPU_ISA_COUNT] = {
    [CPU_ISA_SCALAR] = {S_MR, S_NR, tile_scalar, NULL, NULL, NULL, narrow_scalar, 0, NULL,
                        tdot_scalar, 0},
#ifdef HAVE_X86_KERNELS
    [CPU_ISA_AVX2] = {A2_MR, A2_NR, tile_avx2, transpose8_avx2, transpose8_bf16_avx2,
                      widen_bf16_avx2, narrow_avx2, 0, NULL, tdot_avx2, 0},
    [CPU_ISA_AVX512] = {A5_MR, A5_NR, tile_avx512, transpose8_avx2, transpose8_bf16_avx2,
                        widen_bf16_avx2, narrow_avx512, 0, NULL, tdot_avx512, 0},
    [CPU_ISA_AVX512BF16] = {A5_MR, A5_NR, tile_avx512, transpose8_avx2, transpose8_bf16_avx2,
                            widen_bf16_avx2, narrow_avx512, 0, NULL, tdot_avx512, 0},
    [CPU_ISA_AMX] = {AMX_MR, AMX_NR, NULL, transpose8_avx2, transpose8_bf16_avx2, widen_bf16_avx2,
                     narrow_avx512, AMX_COLS, cols_amx, tdot_amx, 1},
#else
    [CPU_ISA_AVX2] = {1, 1, NULL, NULL, NULL, NULL, narrow_scalar, 0, NULL, NULL, 0},
    [CPU_ISA_AVX512] = {1, 1, NULL, NULL, NULL, NULL, narrow_scalar, 0, NULL, NULL, 0},
    [CPU_ISA_AVX512BF16] = {1, 1, NULL, NULL, NULL, NULL, narrow_scalar, 0, NULL, NULL, 0},
    [CPU_ISA_AMX] = {1, 1, NULL, NULL, NULL, NULL, narrow_scalar, 0, NULL, NULL, 0},
#endif
#ifdef HAVE_NEON_KERNEL
    [CPU_ISA_NEON] = {N_MR, N_NR, tile_neon, NULL, NULL, NULL, narrow_scalar, 0, NULL, tdot_neon,
                      0},
#else
    [CPU_ISA_NEON] = {1, 1, NULL, NULL, NULL, NULL, narrow_scalar, 0, NULL, NULL, 0},
#endif
};

const struct cpu_gemm_kernel *cpu_gemm_kernel(enum cpu_isa isa, enum cpu_product product)
{
    const unsigned v = (unsigned)isa < CPU_ISA_COUNT ? (unsigned)isa : CPU_ISA_SCALAR;
    return product == CPU_PRODUCT_BF16_TILE ? &tile_kernels[v] : &kernels[v];
}

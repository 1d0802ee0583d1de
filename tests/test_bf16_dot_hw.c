/* VDPBF16PS itself equals the bf16-product contract's reference (src/base/bf16_dot.h),
 * bit for bit (a NaN as any NaN): every edge case of tests/bf16_dot_edges.h under
 * four MXCSR settings (the instruction ignores rounding mode, FTZ and DAZ and sets no
 * flag); every bf16 in each slot of a pair against a grid of partners spanning the
 * exponents (subnormal, near 2^-126's products, 1, near overflow, inf, NaN) and of
 * accumulators; and random lanes biased toward small exponents, where DAZ and FTZ
 * act. Skips (77) on a processor or build without avx512_bf16. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/bf16_dot.h"
#include "bf16_dot_edges.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

static uint32_t bits_of(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static float from_bits(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static int same(uint32_t got, uint32_t want)
{
    const int nan_got = (got & 0x7fffffffu) > 0x7f800000u,
              nan_want = (want & 0x7fffffffu) > 0x7f800000u;
    return got == want || (nan_got && nan_want);
}

/* out (16) = VDPBF16PS lanes of acc (16), x (16 pairs), y (16 pairs) */
__attribute__((target("avx512f,avx512bf16"))) static void
instruction(uint32_t *out, const uint32_t *acc, const uint32_t *x, const uint32_t *y)
{
    const __m512 r =
        _mm512_dpbf16_ps(_mm512_castsi512_ps(_mm512_loadu_si512(acc)),
                         (__m512bh)_mm512_loadu_si512(x), (__m512bh)_mm512_loadu_si512(y));
    _mm512_storeu_si512(out, _mm512_castps_si512(r));
}

static long checked, fails;

/* 16 lanes through the instruction and the reference */
static void compare16(const char *what, const uint32_t *acc, const uint32_t *x, const uint32_t *y)
{
    uint32_t got[16];
    instruction(got, acc, x, y);
    for (int l = 0; l < 16; l++) {
        const uint32_t want = bits_of(bf16_dot_pair(from_bits(acc[l]), x[l], y[l]));
        checked++;
        if (!same(got[l], want) && fails++ < 10)
            fprintf(stderr,
                    "FAIL %s: acc 0x%08" PRIx32 " x 0x%08" PRIx32 " y 0x%08" PRIx32
                    ": instruction 0x%08" PRIx32 ", reference 0x%08" PRIx32 "\n",
                    what, acc[l], x[l], y[l], got[l], want);
    }
}

static void test_edge_cases_under_every_mxcsr(void)
{
    /* default; round toward zero; round up with FTZ and DAZ; round down, exceptions masked */
    const unsigned modes[4] = {0x1f80, 0x7f80, 0xdf80 | 0x0040, 0x3f80};
    const unsigned saved = _mm_getcsr();
    for (int m = 0; m < 4; m++)
        for (int i = 0; i < BF16_DOT_EDGES; i++) {
            const struct bf16_dot_edge *e = &bf16_dot_edges[i];
            uint32_t acc[16], x[16], y[16], got[16];
            for (int l = 0; l < 16; l++)
                acc[l] = e->acc, x[l] = e->x, y[l] = e->y;
            _mm_setcsr(modes[m]);
            instruction(got, acc, x, y);
            const unsigned flags = _mm_getcsr() & 0x3f;
            _mm_setcsr(saved);
            checked++;
            if (!same(got[0], e->want) || flags != 0) {
                fprintf(stderr,
                        "FAIL edge \"%s\" under MXCSR 0x%04x: 0x%08" PRIx32 " (want 0x%08" PRIx32
                        "), flags 0x%x\n",
                        e->why, modes[m], got[0], e->want, flags);
                fails++;
            }
        }
}

/* the partners: each exponent class with a few mantissas, both signs */
static int grid(uint16_t *g)
{
    static const uint16_t exps[] = {0x00, 0x01, 0x02, 0x20, 0x30, 0x3e, 0x3f, 0x40, 0x41,
                                    0x60, 0x7f, 0x80, 0xbe, 0xbf, 0xc0, 0xfd, 0xfe, 0xff};
    static const uint16_t mants[] = {0x00, 0x01, 0x40, 0x7f};
    int n = 0;
    for (unsigned e = 0; e < sizeof exps / sizeof *exps; e++)
        for (unsigned m = 0; m < sizeof mants / sizeof *mants; m++)
            for (int s = 0; s < 2; s++)
                g[n++] = (uint16_t)(s << 15 | exps[e] << 7 | mants[m]);
    return n;
}

static void test_every_bf16_against_the_grid(void)
{
    uint16_t g[18 * 4 * 2];
    const int ng = grid(g);
    static const uint32_t accs[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x80400000u,
                                    0x00800000u, 0x00800001u, 0x80c00000u, 0x3f800000u,
                                    0xbf800001u, 0x4b800000u, 0x7f7fffffu, 0xff800000u};
    uint32_t acc[16], x[16], y[16];
    for (unsigned a = 0; a < sizeof accs / sizeof *accs; a++)
        for (int slot = 0; slot < 2; slot++)
            for (int j = 0; j < ng; j++)
                for (uint32_t v = 0; v < 0x10000u; v += 16) {
                    for (int l = 0; l < 16; l++) {
                        /* the other slot: 0, or the partner's negation times 1 (cancels) */
                        const uint32_t xv = v + (uint32_t)l, yv = g[j];
                        const uint32_t other_x = (v >> 4) & 1 ? 0x3f80u : 0,
                                       other_y = other_x ? (yv ^ 0x8000u) : 0;
                        x[l] = slot ? (xv << 16 | other_x) : (other_x << 16 | xv);
                        y[l] = slot ? (yv << 16 | other_y) : (other_y << 16 | yv);
                        acc[l] = accs[a];
                    }
                    compare16("every bf16 x grid", acc, x, y);
                }
}

/* xorshift64: reproducible lanes */
static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_random_lanes(void)
{
    uint64_t s = 0x9e3779b97f4a7c15u;
    uint32_t acc[16], x[16], y[16];
    for (long it = 0; it < 1 << 18; it++) {
        for (int l = 0; l < 16; l++) {
            uint64_t r = next(&s);
            acc[l] = (uint32_t)r;
            x[l] = (uint32_t)(r >> 32);
            y[l] = (uint32_t)next(&s);
            if (it & 1) { /* exponents near the bottom: products near 2^-126, subnormals */
                acc[l] = (acc[l] & 0x80ffffffu) | (uint32_t)(r % 6) << 24;
                x[l] = (x[l] & 0x80ff80ffu) | (uint32_t)(0x1c + (r >> 8) % 8) << 8 |
                       (uint32_t)(0x1c + (r >> 12) % 8) << 24;
                y[l] = (y[l] & 0x80ff80ffu) | (uint32_t)(0x1c + (r >> 16) % 8) << 8 |
                       (uint32_t)(0x1c + (r >> 20) % 8) << 24;
            }
        }
        compare16("random", acc, x, y);
    }
}

int main(void)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512bf16")) {
        printf("SKIP: this processor lacks avx512_bf16\n");
        return 77;
    }
    test_edge_cases_under_every_mxcsr();
    test_every_bf16_against_the_grid();
    test_random_lanes();
    if (fails) {
        fprintf(stderr, "%ld of %ld lanes differ\n", fails, checked);
        return 1;
    }
    printf("VDPBF16PS equals the bf16_dot reference on %ld lanes\n", checked);
    return 0;
}
#else
int main(void)
{
    printf("SKIP: not an x86-64 build\n");
    return 77;
}
#endif

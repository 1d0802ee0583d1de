/* TDPBF16PS itself equals the bf16-tile contract's reference (src/base/bf16_tile.h), bit
 * for bit (a NaN as any NaN): the edge cases of tests/bf16_tile_edges.h under four MXCSR
 * settings (the instruction ignores rounding mode, FTZ and DAZ and sets no flag); every
 * bf16 in every position of a block against a grid of partners; random 16 x 16 tiles of
 * every K from 1 to 32 and chains of several blocks (a block short of 32 padded with
 * zeros, as the GEMM packs it), biased toward small exponents where DAZ and FTZ act. Skips (77)
 * without AMX (cpuid amx_bf16 and amx_tile, the OS's tile state, Linux's permission). With -v
 * prints each edge case's result (how tests/bf16_tile_edges.h was made). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/bf16_tile.h"
#include "bf16_tile_edges.h"
#include "cpu_amx.h"

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

/* c (16, 16) = c + a (16, k) b (k, 16) by one TDPBF16PS per block of 32 k, a block
 * short of 32 padded with zeros. a row-major (ld 128), b row-major (ld 16). */
__attribute__((target("amx-tile,amx-bf16"))) static void instruction(float *c, const uint16_t *a,
                                                                     const uint16_t *b, int k)
{
    const int kb = BF16_TILE_BLOCK;
    struct cpu_amx_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    cfg.rows[0] = 16, cfg.colsb[0] = 64; /* C */
    cfg.rows[1] = 16, cfg.colsb[1] = 64; /* A: 16 rows of 32 k */
    cfg.rows[2] = 16, cfg.colsb[2] = 64; /* B: a row per pair of k, 16 columns */
    _tile_loadconfig(&cfg);
    _tile_loadd(0, c, 64);
    for (int k0 = 0; k0 < k; k0 += BF16_TILE_BLOCK) {
        uint16_t at[16][BF16_TILE_BLOCK], bt[BF16_TILE_BLOCK / 2][16][2];
        memset(at, 0, sizeof at);
        memset(bt, 0, sizeof bt);
        for (int r = 0; r < 16; r++)
            for (int q = 0; q < kb && k0 + q < k; q++)
                at[r][q] = a[r * 128 + k0 + q];
        for (int q = 0; q < kb && k0 + q < k; q++)
            for (int n = 0; n < 16; n++)
                bt[q / 2][n][q % 2] = b[(k0 + q) * 16 + n];
        _tile_loadd(1, at, sizeof at[0]);
        _tile_loadd(2, bt, sizeof bt[0]);
        _tile_dpbf16ps(0, 1, 2);
    }
    _tile_stored(0, c, 64);
    _tile_release();
}

static long checked, fails;

/* c0 (16, 16) through the instruction and the reference */
static void compare_tile(const char *what, const float *c0, const uint16_t *a, const uint16_t *b,
                         int k)
{
    float got[256];
    memcpy(got, c0, sizeof got);
    instruction(got, a, b, k);
    for (int r = 0; r < 16; r++)
        for (int n = 0; n < 16; n++) {
            uint16_t col[128];
            for (int q = 0; q < k; q++)
                col[q] = b[q * 16 + n];
            const uint32_t want = bits_of(bf16_tile_chain(c0[r * 16 + n], a + r * 128, col, k));
            checked++;
            if (!same(bits_of(got[r * 16 + n]), want) && fails++ < 10)
                fprintf(stderr,
                        "FAIL %s: K %d, row %d col %d, acc 0x%08" PRIx32
                        ": instruction 0x%08" PRIx32 ", reference 0x%08" PRIx32 "\n",
                        what, k, r, n, bits_of(c0[r * 16 + n]), bits_of(got[r * 16 + n]), want);
        }
}

static void test_edge_cases_under_every_mxcsr(int verbose)
{
    /* default; round toward zero; round up with FTZ and DAZ; round down, exceptions masked */
    const unsigned modes[4] = {0x1f80, 0x7f80, 0xdf80 | 0x0040, 0x3f80};
    const unsigned saved = _mm_getcsr();
    for (int i = 0; i < BF16_TILE_EDGES; i++) {
        const struct bf16_tile_edge *e = &bf16_tile_edges[i];
        static uint16_t a[16 * 128], b[128 * 16];
        float c[256];
        memset(a, 0, sizeof a);
        memset(b, 0, sizeof b);
        for (int q = 0; q < e->k; q++)
            for (int r = 0; r < 16; r++)
                a[r * 128 + q] = e->x[q];
        for (int q = 0; q < e->k; q++)
            for (int n = 0; n < 16; n++)
                b[q * 16 + n] = e->y[q];
        for (int m = 0; m < 4; m++) {
            for (int l = 0; l < 256; l++)
                c[l] = from_bits(e->acc);
            _mm_setcsr(modes[m]);
            instruction(c, a, b, e->k);
            const unsigned flags = _mm_getcsr() & 0x3f;
            _mm_setcsr(saved);
            checked++;
            if (verbose && m == 0)
                printf("edge \"%s\": 0x%08" PRIx32 "\n", e->why, bits_of(c[0]));
            if (!same(bits_of(c[0]), e->want) || !same(bits_of(c[255]), e->want) || flags != 0) {
                fprintf(stderr,
                        "FAIL edge \"%s\" under MXCSR 0x%04x: 0x%08" PRIx32 " (want 0x%08" PRIx32
                        "), flags 0x%x\n",
                        e->why, modes[m], bits_of(c[0]), e->want, flags);
                fails++;
            }
        }
        const float ref = bf16_tile_chain(from_bits(e->acc), e->x, e->y, e->k);
        if (!same(bits_of(ref), e->want)) {
            fprintf(stderr, "FAIL edge \"%s\": reference 0x%08" PRIx32 "\n", e->why, bits_of(ref));
            fails++;
        }
    }
}

/* xorshift64: reproducible values */
static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* a bf16 of exponent class `scale`: 0 any, 1 near the bottom (products near 2^-126,
 * subnormals), 2 moderate (cancellations matter) */
static uint16_t random_bf16(uint64_t *s, int scale)
{
    const uint64_t r = next(s);
    uint16_t v = (uint16_t)r;
    if (scale == 1)
        v = (uint16_t)((v & 0x807f) | (uint16_t)(0x1c + (r >> 16) % 8) << 7);
    else if (scale == 2)
        v = (uint16_t)((v & 0x807f) | (uint16_t)(0x78 + (r >> 16) % 12) << 7);
    return v;
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

/* Every bf16 value in every position k of a 32-k block (v's position is v mod 32), in 16
 * rows against 16 grid partners, the other products moderate random ones. */
static void test_every_bf16_in_every_position(void)
{
    uint16_t g[18 * 4 * 2];
    const int ng = grid(g);
    static uint16_t a[16 * 128], b[128 * 16];
    float c[256];
    uint64_t s = 0x2545f4914f6cdd1du;
    for (uint32_t v0 = 0; v0 < 0x10000u; v0 += 16)
        for (int j0 = 0; j0 < ng; j0 += 16) {
            for (int q = 0; q < 32; q++)
                for (int r = 0; r < 16; r++)
                    a[r * 128 + q] = random_bf16(&s, 2);
            for (int q = 0; q < 32; q++)
                for (int n = 0; n < 16; n++)
                    b[q * 16 + n] = random_bf16(&s, 2);
            for (int r = 0; r < 16; r++) {
                const uint32_t v = v0 + (uint32_t)r;
                a[r * 128 + v % 32] = (uint16_t)v;
            }
            for (int n = 0; n < 16; n++) /* the partner of every row's v */
                for (int r = 0; r < 16; r++)
                    b[((v0 + (uint32_t)r) % 32) * 16 + n] = g[(j0 + n) % ng];
            for (int l = 0; l < 256; l++)
                c[l] = (next(&s) & 3) == 0 ? 0.0f : from_bits((uint32_t)random_bf16(&s, 2) << 16);
            compare_tile("every bf16 x grid", c, a, b, 32);
        }
}

static void test_random_tiles_of_every_length(void)
{
    uint64_t s = 0x9e3779b97f4a7c15u;
    static uint16_t a[16 * 128], b[128 * 16];
    float c[256];
    for (int it = 0; it < 1 << 12; it++) {
        const int k = it % 4 == 3 ? 33 + (int)(next(&s) % 96) : 1 + it / 4 % 32;
        const int scale = it % 3;
        for (int r = 0; r < 16; r++)
            for (int q = 0; q < k; q++)
                a[r * 128 + q] = random_bf16(&s, scale);
        for (int q = 0; q < k; q++)
            for (int n = 0; n < 16; n++)
                b[q * 16 + n] = random_bf16(&s, scale);
        for (int l = 0; l < 256; l++) {
            const uint32_t x = (uint32_t)next(&s);
            c[l] = scale == 1 ? from_bits((x & 0x80ffffffu) | (x % 6) << 24)
                              : from_bits((uint32_t)random_bf16(&s, scale) << 16 | (x & 0xffff));
        }
        compare_tile("random", c, a, b, k);
    }
}

int main(int argc, char **argv)
{
    const char *why = cpu_amx_usable();
    if (why != NULL) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    test_edge_cases_under_every_mxcsr(argc > 1 && strcmp(argv[1], "-v") == 0);
    test_every_bf16_in_every_position();
    test_random_tiles_of_every_length();
    if (fails) {
        fprintf(stderr, "%ld of %ld outputs differ\n", fails, checked);
        return 1;
    }
    printf("TDPBF16PS equals the bf16_tile reference on %ld outputs\n", checked);
    return 0;
}
#else
int main(void)
{
    printf("SKIP: not an x86-64 build\n");
    return 77;
}
#endif

/* The exact GEMM's driver (contract in cpu_gemm.h): the variant's choice,
 * packing (with the exact fp16/bf16 widening), cache blocking, threads, and
 * the one place where alpha and beta are applied.
 *
 * Loops, as BLIS and OpenBLAS nest them:
 *   jc over N in NC columns        B panel (KC, NC) packed, in L3
 *     pc over K in KC steps        one K-block: partial sums go to C (or to an
 *       ic over M in MC rows       fp32 plane W) and the next K-block reloads them
 *         A block (MC, KC) packed, in L2
 *         jr, ir over NR x MR tiles: the micro-kernel, B micro-panel in L1
 * Products with few rows (all of M in one A block: the training step's m = 16)
 * never pack B as one 2 MiB block that spills L2. When B's k runs are contiguous
 * (y = x W^T: NR rows of W side by side are one contiguous span) each (KC, NR)
 * micro-panel is packed just before its tiles and the K-blocks of one column
 * panel run back to back, A packed once over all of K ("skinny"); on AVX-512, at
 * most 16 rows skip even that: a vector per column of C, W read as stored (few_rows).
 * When B is read by rows (dx = dy W) over several K-blocks its blocks are whole rows,
 * fewer of them, to stay in L2 and be read in order. Operands read by rows are packed
 * row by row, each row once, in order, prefetched (B's whole rows: by the hardware
 * alone). A K-block short
 * enough that the packed B block sits in L2 (dW = dy^T x with k = 16) walks C
 * strip of MR rows by strip, so C's stores run along its rows.
 * None of this changes which products an element sums or in which order (a
 * K-block's partial sums are stored as fp32 and reloaded: the same chain,
 * whichever order the tiles come in). */
#include "cpu_gemm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bf16_dot.h"
#include "base/bf16_tile.h"
#include "base/dtype_convert.h"
#include "base/host_parallel.h"
#include "cpu_amx.h"
#include "zero/knobs.h"

#define KC 256  /* K-block: a (KC, NR) micro-panel of B stays in L1 */
#define MC 192  /* rows of A per block (rounded down to MR): (MC, KC) fp32 in L2 */
#define NC 2048 /* columns of B per panel: (KC, NC) fp32, 2 MiB */
#define MAX_TILE (32 * 48)
#define MAX_PANEL 48 /* the widest tile side (MR or NR) of any kernel */
/* A packed over all of K for a few-row product, at most this many bytes */
#define A_WHOLE_BYTES ((int64_t)1 << 20)
/* packing a block by rows reads this many rows ahead */
#define PREFETCH_ROWS 4
/* B block (kc, nc) of a few-row product whose B is read by rows */
#define B_FEW_ROWS_BYTES ((int64_t)512 << 10)
/* a packed B block this small stays in L2: C's tiles may go row strip by strip */
#define B_L2_BYTES ((int64_t)256 << 10)
/* multiply-adds below which one more thread costs more than it saves */
#define WORK_PER_THREAD ((int64_t)1 << 22)

/* ---- which variant ---- */

static const char *const isa_names[CPU_ISA_COUNT] = {"scalar", "avx2",       "avx512",
                                                     "neon",   "avx512bf16", "amx"};
/* the architecture whose builds have the variant (scalar: every one) */
static const char *const isa_arch[CPU_ISA_COUNT] = {NULL,      "x86-64", "x86-64",
                                                    "aarch64", "x86-64", "x86-64"};
#if defined(__x86_64__)
static const char build_arch[] = "x86-64";
#elif defined(__aarch64__)
static const char build_arch[] = "aarch64";
#else
static const char build_arch[] = "another architecture";
#endif

const char *cpu_isa_name(enum cpu_isa isa)
{
    return (unsigned)isa < CPU_ISA_COUNT ? isa_names[isa] : "unknown";
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* 1 once AMX may run in this process (cpu_amx.h asks Linux's permission once) */
static int amx_usable(void)
{
    static int known, usable;
    if (!known) {
        usable = cpu_amx_usable() == NULL;
        known = 1;
    }
    return usable;
}
#endif

int cpu_isa_supported(enum cpu_isa isa)
{
    if ((unsigned)isa >= CPU_ISA_COUNT || cpu_gemm_kernel(isa, CPU_PRODUCT_FP32)->tile == NULL)
        return 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (isa == CPU_ISA_AVX2)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (isa == CPU_ISA_AVX512)
        return __builtin_cpu_supports("avx512f") != 0;
    if (isa == CPU_ISA_AVX512BF16 || isa == CPU_ISA_AMX)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16") &&
               (isa != CPU_ISA_AMX || amx_usable());
#endif
    return 1;
}

int cpu_isa_choose(enum cpu_isa *isa, char *why, size_t why_len)
{
    const char *want = zero_knob(ZERO_KNOB_CPU_ISA);
    if (want == NULL || want[0] == '\0') {
        *isa = CPU_ISA_SCALAR;
        for (int i = CPU_ISA_COUNT - 1; i > 0; i--)
            if (cpu_isa_supported((enum cpu_isa)i)) {
                *isa = (enum cpu_isa)i;
                break;
            }
        return 0;
    }
    for (int i = 0; i < CPU_ISA_COUNT; i++) {
        if (strcmp(want, isa_names[i]) != 0)
            continue;
        if (!cpu_isa_supported((enum cpu_isa)i)) {
            if (isa_arch[i] != NULL && strcmp(isa_arch[i], build_arch) != 0)
                snprintf(why, why_len,
                         "ZERO_CPU_ISA=%s: this processor or build lacks it (an %s variant, this "
                         "build is for %s; scalar always works)",
                         want, isa_arch[i], build_arch);
            else
                snprintf(why, why_len,
                         "ZERO_CPU_ISA=%s: this processor or build lacks it (scalar always works)",
                         want);
            return 1;
        }
        *isa = (enum cpu_isa)i;
        return 0;
    }
    snprintf(why, why_len,
             "ZERO_CPU_ISA=%s: unknown; expected scalar, avx2, avx512, avx512bf16, amx or neon",
             want);
    return 1;
}

static int64_t round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

static int64_t min64(int64_t x, int64_t y)
{
    return x < y ? x : y;
}

/* ---- reading operands ---- */

/* An operand seen as X (x, k): A with x = the row i, B with x = the column j.
 * k_contig says whether consecutive k are adjacent in memory. */
struct view {
    const char *p;
    size_t esize;
    int64_t ld;
    int k_contig;
    enum zero_dtype type, round;
    /* a bf16 contract: packed as bf16 pairs or DAZ-widened (dot: not the fp32 chain) */
    enum cpu_product product;
    int dot;
    int is_a; /* A's panels under amx's tiles: each row's pairs */
};

static struct view view_of(const struct cpu_gemm_operand *o, int is_b, enum cpu_product product)
{
    return (struct view){.p = o->p,
                         .esize = zero_dtype_size(o->type),
                         .ld = o->ld,
                         .k_contig = is_b ? o->trans : !o->trans,
                         .type = o->type,
                         .round = o->round,
                         .product = product,
                         .dot = product != CPU_PRODUCT_FP32,
                         .is_a = !is_b};
}

static const void *view_at(const struct view *v, int64_t x, int64_t k)
{
    int64_t off = v->k_contig ? x * v->ld + k : k * v->ld + x;
    return v->p + off * (int64_t)v->esize;
}

/* Rows per panel column of a packed K-block of kc: kc for the fp32 chain; under the
 * bf16-product contract the pairs (kc rounded up to even: an odd K's +0 element),
 * as 32-bit pairs or as the two widened rows of each; under the bf16-tile contract the
 * same for kc rounded up to whole blocks of 32. */
static int64_t packed_k(enum cpu_product product, const struct cpu_gemm_kernel *kr, int64_t kc)
{
    if (product == CPU_PRODUCT_FP32)
        return kc;
    const int64_t k = product == CPU_PRODUCT_BF16_TILE ? round_up(kc, BF16_TILE_BLOCK) : kc;
    return kr->dot_pairs ? (k + 1) / 2 : (k + 1) / 2 * 2;
}

/* element (x, k) of X as bf16: as stored, or an fp32 one rounded */
static uint16_t bf16_at(const struct view *v, int64_t x, int64_t k)
{
    const void *p = view_at(v, x, k);
    return v->type == ZERO_BF16 ? *(const uint16_t *)p : dtype_f32_to_bf16(*(const float *)p);
}

/* out (n) = X[x][k0 .. k0 + n) as bf16 (k contiguous): copied, or rounded by the
 * variant's narrowing (dtype_f32_to_bf16's bits) */
static void bf16_run_along_k(uint16_t *out, const struct view *v, int64_t x, int64_t k0, int64_t n,
                             const struct cpu_gemm_kernel *kr)
{
    if (v->type == ZERO_BF16)
        memcpy(out, view_at(v, x, k0), sizeof(uint16_t) * (size_t)n);
    else
        kr->narrow(out, view_at(v, x, k0), n, ZERO_BF16);
}

/* X[x0 .. x0 + n)[k] as bf16 (x contiguous): in place when stored so (a few dozen
 * elements: no copy), else rounded into out (n) by the variant's narrowing */
static const uint16_t *bf16_run_along_x(uint16_t *out, const struct view *v, int64_t x0, int64_t k,
                                        int64_t n, const struct cpu_gemm_kernel *kr)
{
    if (v->type == ZERO_BF16)
        return view_at(v, x0, k);
    kr->narrow(out, view_at(v, x0, k), n, ZERO_BF16);
    return out;
}

/* One micro-panel under the bf16-tile contract, X rows [x0, x0 + valid) over k [k0, k0 +
 * kc) (the rows past valid, and the k past kc up to whole blocks of 32, zero): amx's
 * pairs, element k of row r at A's (w, 2P) h[r][k] or B's (P, w, 2) h[k / 2][r][k % 2];
 * or widened (2 P, w) in cpu_gemm_tile_row's order with subnormals made zero (DAZ). */
static void pack_panel_tile(float *restrict dst, int w, int valid, int64_t x0, int64_t k0,
                            int64_t kc, const struct view *v, const struct cpu_gemm_kernel *kr)
{
    const int64_t kp = round_up(kc, BF16_TILE_BLOCK), P = kp / 2;
    uint16_t run[KC > MAX_TILE ? KC : MAX_TILE];
    if (!kr->dot_pairs) {
        memset(dst, 0, sizeof(float) * (size_t)(kp * w));
        for (int r = 0; r < valid; r++)
            for (int64_t k = 0; k < kc; k++)
                dst[cpu_gemm_tile_row(k) * w + r] = bf16_dot_operand(bf16_at(v, x0 + r, k0 + k));
        return;
    }
    uint16_t *restrict h = (uint16_t *)dst;
    memset(h, 0, sizeof(uint32_t) * (size_t)(P * w));
    if (v->k_contig && v->is_a) /* a row of A is a tile row as it is */
        for (int r = 0; r < valid; r++)
            bf16_run_along_k(h + r * 2 * P, v, x0 + r, k0, kc, kr);
    else if (v->k_contig) { /* B's columns side by side: each one's run, then pair by pair */
        uint16_t cols[MAX_PANEL][KC + 1];
        for (int r = 0; r < valid; r++) {
            bf16_run_along_k(cols[r], v, x0 + r, k0, kc, kr);
            cols[r][kc] = 0; /* an odd kc's +0 */
        }
        uint32_t *restrict d = (uint32_t *)dst;
        for (int64_t p = 0; p < (kc + 1) / 2; p++)
            for (int r = 0; r < valid; r++)
                d[p * w + r] = cols[r][2 * p] | (uint32_t)cols[r][2 * p + 1] << 16;
    } else
        for (int64_t k = 0; k < kc; k++) {
            const uint16_t *x = bf16_run_along_x(run, v, x0, k0 + k, valid, kr);
            if (v->is_a)
                for (int r = 0; r < valid; r++)
                    h[r * 2 * P + k] = x[r];
            else /* a pair of rows of B interleaved */
                for (int r = 0; r < valid; r++)
                    h[k / 2 * 2 * w + 2 * r + k % 2] = x[r];
        }
}

/* One micro-panel under the bf16-product contract, X rows [x0, x0 + valid) over k [k0,
 * k0 + kc) (the rows past valid, and an odd kc's element kc, zero): pairs (np, w) with
 * X[r][2p] in the low half, or widened (2 np, w) with subnormals made zero (DAZ). */
static void pack_panel_dot(float *restrict dst, int w, int valid, int64_t x0, int64_t k0,
                           int64_t kc, const struct view *v, const struct cpu_gemm_kernel *kr)
{
    if (v->product == CPU_PRODUCT_BF16_TILE) {
        pack_panel_tile(dst, w, valid, x0, k0, kc, v, kr);
        return;
    }
    const int64_t np = (kc + 1) / 2, even = kc / 2 * 2;
    if (kr->dot_pairs) {
        uint32_t *restrict d = (uint32_t *)dst;
        memset(d, 0, sizeof(uint32_t) * (size_t)(np * w));
        if (v->type == ZERO_BF16 && v->k_contig) /* a row's pairs are its 32-bit words */
            for (int r = 0; r < valid; r++) {
                const uint16_t *row = view_at(v, x0 + r, k0);
                for (int64_t p = 0; p < even / 2; p++)
                    d[p * w + r] = row[2 * p] | (uint32_t)row[2 * p + 1] << 16;
            }
        else if (v->type == ZERO_BF16) /* rows k and k + 1 interleaved */
            for (int64_t p = 0; p < even / 2; p++) {
                const uint16_t *lo = view_at(v, x0, k0 + 2 * p),
                               *hi = view_at(v, x0, k0 + 2 * p + 1);
                for (int r = 0; r < valid; r++)
                    d[p * w + r] = lo[r] | (uint32_t)hi[r] << 16;
            }
        else
            for (int64_t p = 0; p < even / 2; p++)
                for (int r = 0; r < valid; r++)
                    d[p * w + r] = bf16_at(v, x0 + r, k0 + 2 * p) |
                                   (uint32_t)bf16_at(v, x0 + r, k0 + 2 * p + 1) << 16;
        if (even < kc) /* the last element alone, +0 above it */
            for (int r = 0; r < valid; r++)
                d[(np - 1) * w + r] = bf16_at(v, x0 + r, k0 + even);
        return;
    }
    memset(dst, 0, sizeof(float) * (size_t)(2 * np * w));
    for (int r = 0; r < valid; r++)
        for (int64_t k = 0; k < kc; k++)
            dst[k * w + r] = bf16_dot_operand(bf16_at(v, x0 + r, k0 + k));
}

/* dst (n) = n consecutive elements at src as exact fp32, rounded to v->round
 * first when the operand is fp32 and asks for it. */
static void widen_run(float *restrict dst, const void *src, const struct view *v, int64_t n,
                      const struct cpu_gemm_kernel *kr)
{
    const uint16_t *restrict h = src;
    const float *restrict f = src;
    if (v->type == ZERO_BF16 && kr->widen_bf16 != NULL)
        kr->widen_bf16(dst, h, n);
    else if (v->type == ZERO_BF16)
        for (int64_t i = 0; i < n; i++)
            dst[i] = dtype_bf16_to_f32(h[i]);
    else if (v->type == ZERO_F16)
        for (int64_t i = 0; i < n; i++)
            dst[i] = dtype_f16_to_f32(h[i]);
    else if (v->round == ZERO_BF16)
        for (int64_t i = 0; i < n; i++)
            dst[i] = dtype_bf16_to_f32(dtype_f32_to_bf16(f[i]));
    else if (v->round == ZERO_F16)
        for (int64_t i = 0; i < n; i++)
            dst[i] = dtype_f16_to_f32(dtype_f32_to_f16(f[i]));
    else
        memcpy(dst, src, (size_t)n * sizeof(float));
}

/* One micro-panel: dst (kc, w) row k = X[x0 .. x0 + valid)[k0 + k], the last
 * w - valid entries of each row 0 (their results are never stored). */
static void pack_panel(float *restrict dst, int w, int valid, int64_t x0, int64_t k0, int64_t kc,
                       const struct view *v, const struct cpu_gemm_kernel *kr)
{
    cpu_gemm_transpose8_fn transpose8 = kr->transpose8;
    if (v->dot) {
        pack_panel_dot(dst, w, valid, x0, k0, kc, v, kr);
        return;
    }
    if (v->k_contig) {
        float run[8 * KC];
        int r = 0;
        for (; kr->transpose8_bf16 != NULL && v->type == ZERO_BF16 && r + 8 <= valid; r += 8)
            kr->transpose8_bf16(dst + r, w, view_at(v, x0 + r, k0), v->ld, kc);
        for (; transpose8 != NULL && r + 8 <= valid; r += 8) {
            /* fp32 rows straight from the operand, others widened first */
            const float *src = view_at(v, x0 + r, k0);
            int64_t lds = v->ld;
            if (v->type != ZERO_F32 || v->round != ZERO_F32) {
                for (int q = 0; q < 8; q++)
                    widen_run(run + q * KC, view_at(v, x0 + r + q, k0), v, kc, kr);
                src = run;
                lds = KC;
            }
            transpose8(dst + r, w, src, lds, kc);
        }
        for (; r < valid; r++) {
            widen_run(run, view_at(v, x0 + r, k0), v, kc, kr);
            for (int64_t k = 0; k < kc; k++)
                dst[k * w + r] = run[k];
        }
        for (int64_t k = 0; k < kc; k++)
            for (int r = valid; r < w; r++)
                dst[k * w + r] = 0.0f;
    } else {
        for (int64_t k = 0; k < kc; k++) {
            widen_run(dst + k * w, view_at(v, x0, k0 + k), v, valid, kr);
            for (int r = valid; r < w; r++)
                dst[k * w + r] = 0.0f;
        }
    }
}

/* dst = X rows [x0, x0 + len) over k [k0, k0 + kc), in panels of w; X read by rows
 * prefetches the rows ahead where `prefetch` says */
static void pack_block(float *dst, int w, int64_t x0, int64_t len, int64_t k0, int64_t kc,
                       const struct view *v, const struct cpu_gemm_kernel *kr, int prefetch)
{
    if (!v->k_contig &&
        !v->dot) { /* X[.][k] is one run: read it once, in order, into every panel */
        for (int64_t k = 0; k < kc; k++) {
            if (prefetch && k + PREFETCH_ROWS < kc) /* rows lie ld apart: the next ones early */
                for (int64_t b = 0; b < len * (int64_t)v->esize; b += 64)
                    __builtin_prefetch((const char *)view_at(v, x0, k0 + k + PREFETCH_ROWS) + b);
            for (int64_t p = 0; p * w < len; p++) {
                const int valid = len - p * w < w ? (int)(len - p * w) : w;
                float *d = dst + p * w * kc + k * w;
                widen_run(d, view_at(v, x0 + p * w, k0 + k), v, valid, kr);
                for (int r = valid; r < w; r++)
                    d[r] = 0.0f;
            }
        }
        return;
    }
    const int64_t kp = packed_k(v->product, kr, kc);
    for (int64_t p = 0; p * w < len; p++) {
        int64_t left = len - p * w;
        pack_panel(dst + p * w * kp, w, left < w ? (int)left : w, x0 + p * w, k0, kc, v, kr);
    }
}

/* ---- C: loads, stores, the epilogue ---- */

static float load_c(const void *c, enum zero_dtype t, int64_t i)
{
    if (t == ZERO_BF16)
        return dtype_bf16_to_f32(((const uint16_t *)c)[i]);
    if (t == ZERO_F16)
        return dtype_f16_to_f32(((const uint16_t *)c)[i]);
    return ((const float *)c)[i];
}

/* C[i .. i + n) = v (n) rounded (nearest even) to C's type: the variant's
 * vectorized narrowing, the bits of dtype_f32_to_bf16 / dtype_f32_to_f16 */
static void store_c_row(void *c, enum zero_dtype t, int64_t i, const float *v, int n,
                        const struct cpu_gemm_kernel *kr)
{
    if (t == ZERO_BF16 || t == ZERO_F16)
        kr->narrow((uint16_t *)c + i, v, n, t);
    else
        memcpy((float *)c + i, v, sizeof(float) * (size_t)n);
}

/* What one GEMM shares among its threads. */
struct job {
    const struct cpu_gemm_args *g;
    const struct cpu_gemm_kernel *kr;
    int chain_from_c; /* alpha 1, beta 1: the chain starts from C's old value */
    int epilogue;     /* alpha, beta other than (1, 0) and (1, 1) */
    float *part;      /* partial sums between K-blocks: C itself or the plane W (fp32) */
    int64_t ldp;
    struct view a, b;
    int threads, split_n;
    int skinny;       /* all of M in one A block, B's k contiguous: B micro-panel by one */
    int few_rows;     /* at most 16 rows: kr->few_rows against B as stored */
    int b_rows;       /* few rows, B read by rows: its blocks whole rows, not prefetched */
    int a_whole;      /* skinny, and A packed over all of K fits A_WHOLE_BYTES */
    int64_t b_offset; /* floats from a thread's packed A to its packed B */
    char *ws;         /* per-thread packing buffers */
    size_t ws_stride; /* bytes per thread */
    int64_t mc, nc, kc;
    enum cpu_product product; /* g->product */
};

/* One tile's K-block: the fp32 chain, or a bf16 contract's pairs. */
static void call_tile(const struct job *j, int64_t kc, const float *ap, const float *bp,
                      const float *cin, int64_t ldin, float *cout, int64_t ldout)
{
    if (j->product != CPU_PRODUCT_FP32)
        j->kr->dot((kc + 1) / 2, ap, bp, cin, ldin, cout, ldout);
    else
        j->kr->tile(kc, ap, bp, cin, ldin, cout, ldout);
}

/* The only place alpha and beta act (cpu_gemm.h). */
static float finish(const struct job *j, float acc, int64_t ci)
{
    const struct cpu_gemm_args *g = j->g;
    if (!j->epilogue)
        return acc;
    float t = g->alpha * acc;
    if (g->beta == 0.0f)
        return t;
    return fmaf(g->beta, load_c(g->c, g->c_type, ci), t);
}

/* Tile (i, j) of valid (mr, nr) for one K-block of kc, from packed panels. */
static void run_tile(const struct job *j, int64_t i, int64_t jj, int mr, int nr, int64_t kc,
                     const float *ap, const float *bp, int first, int last)
{
    const struct cpu_gemm_args *g = j->g;
    const int MR = j->kr->mr, NR = j->kr->nr, full = mr == MR && nr == NR;
    float tile[MAX_TILE] __attribute__((aligned(64)));
    const float *cin = NULL;
    int64_t ldin = NR;
    const int64_t ci = i * g->ldc + jj, pi = i * j->ldp + jj;
    if (!first || j->chain_from_c) {
        /* from the partial sums (fp32), or from C's old value (any type) */
        const int from_part = !first;
        if (full && (from_part || g->c_type == ZERO_F32)) {
            cin = from_part ? j->part + pi : (const float *)g->c + ci;
            ldin = from_part ? j->ldp : g->ldc;
        } else {
            memset(tile, 0, sizeof(float) * (size_t)(MR * NR));
            /* C's old rows widened exactly (fp32 ones copied), as an operand's are */
            const struct view cv = {.p = g->c,
                                    .esize = zero_dtype_size(g->c_type),
                                    .ld = g->ldc,
                                    .k_contig = 1,
                                    .type = g->c_type,
                                    .round = ZERO_F32};
            for (int r = 0; r < mr; r++)
                if (from_part)
                    memcpy(tile + r * NR, j->part + pi + r * j->ldp, sizeof(float) * (size_t)nr);
                else
                    widen_run(tile + r * NR, view_at(&cv, i + r, jj), &cv, nr, j->kr);
            cin = tile;
        }
    }
    if (!last) { /* partial sums stay fp32 */
        if (full) {
            call_tile(j, kc, ap, bp, cin, ldin, j->part + pi, j->ldp);
            return;
        }
        call_tile(j, kc, ap, bp, cin, ldin, tile, NR);
        for (int r = 0; r < mr; r++)
            memcpy(j->part + pi + r * j->ldp, tile + r * NR, sizeof(float) * (size_t)nr);
        return;
    }
    if (full && !j->epilogue && g->c_type == ZERO_F32) {
        call_tile(j, kc, ap, bp, cin, ldin, (float *)g->c + ci, g->ldc);
        return;
    }
    call_tile(j, kc, ap, bp, cin, ldin, tile, NR);
    if (j->epilogue) /* each element reads only its own old C: in place, then stored */
        for (int r = 0; r < mr; r++)
            for (int c = 0; c < nr; c++)
                tile[r * NR + c] = finish(j, tile[r * NR + c], ci + r * g->ldc + c);
    for (int r = 0; r < mr; r++)
        store_c_row(g->c, g->c_type, ci + r * g->ldc, tile + r * NR, nr, j->kr);
}

/* One B micro-panel (kc, NR) of columns [jj, jj + nr), packed into bpanel, against
 * C rows [m0, m1) whose A block (kc, MR panels) is at ablock. */
static void run_column_panel(const struct job *j, int64_t m0, int64_t m1, int64_t jj, int nr,
                             int64_t k0, int64_t kc, const float *ablock, float *bpanel, int first,
                             int last)
{
    const int MR = j->kr->mr, NR = j->kr->nr;
    pack_panel(bpanel, NR, nr, jj, k0, kc, &j->b, j->kr);
    const int64_t kp = packed_k(j->product, j->kr, kc);
    for (int64_t ir = 0; m0 + ir < m1; ir += MR)
        run_tile(j, m0 + ir, jj, (int)min64(m1 - m0 - ir, MR), nr, kc, ablock + ir * kp, bpanel,
                 first, last);
}

/* Few rows (m1 - m0 within one A block), B's k contiguous: B is never packed whole. */
static void run_skinny(const struct job *j, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                       float *apack, float *bpanel)
{
    const int MR = j->kr->mr, NR = j->kr->nr;
    const int64_t K = j->g->k, nk = K > 0 ? (K + j->kc - 1) / j->kc : 1;
    const int64_t mpad = round_up(m1 - m0, MR);
    if (j->a_whole) { /* apack (nk K-blocks, each mpad * kc) */
        for (int64_t pb = 0; pb < nk; pb++)
            pack_block(apack + pb * packed_k(j->product, j->kr, j->kc) * mpad, MR, m0, m1 - m0,
                       pb * j->kc, min64(K - pb * j->kc, j->kc), &j->a, j->kr, 1);
        for (int64_t jj = n0; jj < n1; jj += NR)
            for (int64_t pb = 0; pb < nk; pb++)
                run_column_panel(j, m0, m1, jj, (int)min64(n1 - jj, NR), pb * j->kc,
                                 min64(K - pb * j->kc, j->kc),
                                 apack + pb * packed_k(j->product, j->kr, j->kc) * mpad, bpanel,
                                 pb == 0, pb == nk - 1);
        return;
    }
    for (int64_t pb = 0; pb < nk; pb++) {
        const int64_t k0 = pb * j->kc, kc = min64(K - k0, j->kc);
        pack_block(apack, MR, m0, m1 - m0, k0, kc, &j->a, j->kr, 1);
        for (int64_t jj = n0; jj < n1; jj += NR)
            run_column_panel(j, m0, m1, jj, (int)min64(n1 - jj, NR), k0, kc, apack, bpanel, pb == 0,
                             pb == nk - 1);
    }
}

/* The whole loop nest over C rows [m0, m1), columns [n0, n1). */
static void run_range(const struct job *j, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                      float *apack, float *bpack)
{
    if (j->skinny) {
        run_skinny(j, m0, m1, n0, n1, apack, bpack);
        return;
    }
    const int MR = j->kr->mr, NR = j->kr->nr;
    const int64_t K = j->g->k, nk = K > 0 ? (K + j->kc - 1) / j->kc : 1;
    for (int64_t jc = n0; jc < n1; jc += j->nc) {
        const int64_t nc = min64(n1 - jc, j->nc);
        for (int64_t pb = 0; pb < nk; pb++) {
            const int64_t k0 = pb * j->kc, kc = min64(K - k0, j->kc);
            /* B block (kc, nc) in L2: C strip by strip along its rows; else column
             * panel by panel, each B micro-panel against the whole A block */
            const int rows_outer = kc * round_up(nc, NR) * (int64_t)sizeof(float) <= B_L2_BYTES;
            const int64_t kp = packed_k(j->product, j->kr, kc);
            pack_block(bpack, NR, jc, nc, k0, kc, &j->b, j->kr, !j->b_rows);
            for (int64_t ic = m0; ic < m1; ic += j->mc) {
                const int64_t mc = min64(m1 - ic, j->mc);
                pack_block(apack, MR, ic, mc, k0, kc, &j->a, j->kr, 1);
                const int64_t outer = rows_outer ? mc : nc, inner = rows_outer ? nc : mc;
                const int64_t step_o = rows_outer ? MR : NR, step_i = rows_outer ? NR : MR;
                for (int64_t o = 0; o < outer; o += step_o)
                    for (int64_t q = 0; q < inner; q += step_i) {
                        const int64_t ir = rows_outer ? o : q, jr = rows_outer ? q : o;
                        run_tile(j, ic + ir, jc + jr, (int)min64(mc - ir, MR),
                                 (int)min64(nc - jr, NR), kc, apack + ir * kp, bpack + jr * kp,
                                 pb == 0, pb == nk - 1);
                    }
            }
        }
    }
}

/* ---- at most 16 rows: a vector per column of C, B never packed ---- */

/* t (nj, 16) = C's old rows [m0, m1) of columns [c0, c0 + nj), widened (rows past m1: 0) */
static void gather_cols(const struct job *j, int64_t m0, int64_t m1, int64_t c0, int nj, float *t)
{
    const struct cpu_gemm_args *g = j->g;
    for (int c = 0; c < nj; c++)
        for (int64_t r = 0; r < 16; r++)
            t[c * 16 + r] =
                m0 + r < m1 ? load_c(g->c, g->c_type, (m0 + r) * g->ldc + c0 + c) : 0.0f;
}

/* C rows [m0, m1) of columns [c0, c0 + nj) = t (nj, 16), finished and rounded to C's type */
static void scatter_cols(const struct job *j, int64_t m0, int64_t m1, int64_t c0, int nj,
                         const float *t)
{
    const struct cpu_gemm_args *g = j->g;
    float row[MAX_TILE];
    for (int64_t r = 0; m0 + r < m1; r++) {
        const int64_t ci = (m0 + r) * g->ldc + c0;
        for (int c = 0; c < nj; c++)
            row[c] = finish(j, t[c * 16 + r], ci + c);
        store_c_row(g->c, g->c_type, ci, row, nj, j->kr);
    }
}

/* C rows [m0, m1) (at most 16), columns [n0, n1), B's k contiguous (y = x W^T):
 * whole groups of kr->cols columns against B in place, each group's chains over all
 * of K in one call, A packed once as at (K, 16); the last columns, fewer than a
 * group, the packed way (run_skinny). */
static void run_few_rows(const struct job *j, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                         float *ws)
{
    const struct cpu_gemm_args *g = j->g;
    const struct cpu_gemm_kernel *kr = j->kr;
    const int J = kr->cols;
    const int64_t K = g->k, full = (n1 - n0) / J * J;
    float *at = ws; /* (K, 16): A's column k, the rows past m1 zero */
    float t[MAX_TILE] __attribute__((aligned(64)));
    if (j->product == CPU_PRODUCT_BF16_TILE) { /* at (P, 16): x^T's pairs, as B's are packed */
        struct view pairs = j->a;
        pairs.is_a = 0;
        for (int64_t k0 = 0; k0 < K; k0 += KC)
            pack_panel_tile(at + k0 / 2 * 16, 16, (int)(m1 - m0), m0, k0, min64(K - k0, KC), &pairs,
                            kr);
    } else
        for (int64_t k0 = 0; k0 < K; k0 += KC)
            pack_block(at + k0 * 16, 16, m0, m1 - m0, k0, min64(K - k0, KC), &j->a, kr, 1);
    for (int64_t c0 = n0; c0 < n0 + full; c0 += J) {
        if (j->chain_from_c)
            gather_cols(j, m0, m1, c0, J, t);
        kr->few_rows(K, at, view_at(&j->b, c0, 0), j->b.ld, j->chain_from_c ? t : NULL, t);
        scatter_cols(j, m0, m1, c0, J, t);
    }
    if (full < n1 - n0) /* the packing reuses the workspace from its start: at is done */
        run_range(j, m0, m1, n0 + full, n1, ws, ws + j->b_offset);
}

/* Thread t's share: contiguous whole MR-row (or NR-column) panels. Which
 * thread computes an element does not change its chain. */
static void run_thread(void *arg, size_t begin, size_t end)
{
    const struct job *j = arg;
    const struct cpu_gemm_args *g = j->g;
    for (size_t t = begin; t < end; t++) {
        const int unit = j->split_n ? j->kr->nr : j->kr->mr;
        const int64_t len = j->split_n ? g->n : g->m, panels = (len + unit - 1) / unit;
        int64_t p0 = panels * (int64_t)t / j->threads, p1 = panels * (int64_t)(t + 1) / j->threads;
        int64_t x0 = p0 * unit, x1 = p1 * unit < len ? p1 * unit : len;
        if (x0 >= x1)
            continue;
        float *apack = (float *)(j->ws + t * j->ws_stride);
        float *bpack = apack + j->b_offset;
        if (j->few_rows)
            run_few_rows(j, j->split_n ? 0 : x0, j->split_n ? g->m : x1, j->split_n ? x0 : 0,
                         j->split_n ? x1 : g->n, apack);
        else if (j->split_n)
            run_range(j, 0, g->m, x0, x1, apack, bpack);
        else
            run_range(j, x0, x1, 0, g->n, apack, bpack);
    }
}

/* ---- the plan: block sizes, threads, workspace ---- */

struct plan {
    int64_t mc, nc, kc;
    int threads, split_n, skinny, a_whole, few_rows, b_rows;
    int64_t a_floats;  /* a thread's packed A: then its packed B */
    size_t per_thread; /* bytes, a multiple of 64 */
    int need_plane;    /* partial sums need the fp32 plane W (m, n) */
};

static struct plan make_plan(enum cpu_isa isa, int threads, const struct cpu_gemm_args *g)
{
    const struct cpu_gemm_kernel *kr = cpu_gemm_kernel(isa, g->product);
    /* K-blocks of whole pairs, or of whole blocks of 32 for the tile contract (the
     * workspace holds one padded) */
    const int64_t kstep = g->product == CPU_PRODUCT_BF16_TILE  ? BF16_TILE_BLOCK
                          : g->product == CPU_PRODUCT_BF16_DOT ? 2
                                                               : 1;
    struct plan p;
    p.kc = g->k < KC ? (g->k > 0 ? g->k : 1) : KC;
    p.kc = round_up(p.kc, kstep);
    const int64_t mc = MC / kr->mr * kr->mr, nc = NC / kr->nr * kr->nr;
    p.mc = round_up(g->m, kr->mr) < mc ? round_up(g->m, kr->mr) : mc;
    p.nc = round_up(g->n, kr->nr) < nc ? round_up(g->n, kr->nr) : nc;
    p.split_n = (g->n + kr->nr - 1) / kr->nr >= (g->m + kr->mr - 1) / kr->mr;
    const int64_t units = p.split_n ? (g->n + kr->nr - 1) / kr->nr : (g->m + kr->mr - 1) / kr->mr;
    const int64_t work = g->m * g->n * (g->k > 0 ? g->k : 1) / WORK_PER_THREAD;
    int64_t t = threads < 1 ? 1 : threads;
    t = t < units ? t : units;
    t = t < work ? t : (work > 0 ? work : 1);
    p.threads = (int)(t > 0 ? t : 1);
    const int64_t mpad = round_up(g->m, kr->mr), k_all = round_up(g->k > 0 ? g->k : 1, p.kc);
    p.skinny = mpad <= mc && g->b.trans;
    /* few rows, B read by rows and packed: B blocks that stay in L2 */
    const int64_t nc_packed =
        mpad <= mc && !g->b.trans
            ? min64(p.nc, B_FEW_ROWS_BYTES / (p.kc * (int64_t)sizeof(float)) / kr->nr * kr->nr)
            : p.nc;
    p.nc = nc_packed;
    p.a_whole = p.skinny && mpad * k_all * (int64_t)sizeof(float) <= A_WHOLE_BYTES;
    /* A block (mc, kc) or all of A, then B block (kc, nc) or one micro-panel (kc, NR) */
    p.a_floats = p.a_whole ? mpad * k_all : p.mc * p.kc;
    const int64_t b_floats = p.skinny ? p.kc * kr->nr : p.kc * nc_packed;
    p.per_thread = (size_t)round_up((p.a_floats + b_floats) * (int64_t)sizeof(float), 64);
    /* few rows, B read by rows over several K-blocks: B blocks of whole rows instead,
     * as many as the same bytes hold (the workspace stays what it was), so B is read
     * as stored, in order, which the hardware prefetcher follows best alone (measured
     * from DRAM: dx = dy W at 16 rows ~35 -> ~48 GFLOP/s, n 1024 and 4096) */
    p.b_rows = mpad <= mc && !g->b.trans && g->k > KC;
    if (p.b_rows) {
        p.nc = round_up(g->n, kr->nr);
        p.kc = KC * nc_packed / p.nc > 0 ? KC * nc_packed / p.nc : 1;
        p.kc = p.kc / kstep * kstep > 0 ? p.kc / kstep * kstep : kstep;
        p.a_floats = p.mc * p.kc;
    }
    /* at most 16 rows, B fp32 as it is with k contiguous: at (K, 16) where the packed
     * way's workspace holds it (so the workspace, the ledger's peaks and the docs'
     * memory tables stay as they were: 9 to 16 rows always, fewer rows for short K);
     * columns past the last whole group take the packed way in the same workspace */
    const int b_as_stored = g->product == CPU_PRODUCT_FP32
                                ? g->b.type == ZERO_F32 && g->b.round == ZERO_F32
                                : g->product == CPU_PRODUCT_BF16_TILE && g->b.type == ZERO_BF16;
    const size_t at_bytes = g->product == CPU_PRODUCT_BF16_TILE /* (P, 16) pairs */
                                ? (size_t)(8 * round_up(g->k, BF16_TILE_BLOCK)) * sizeof(uint32_t)
                                : (size_t)(16 * g->k) * sizeof(float);
    p.few_rows = kr->few_rows != NULL && b_as_stored && g->m <= 16 && g->k > 0 &&
                 g->n >= kr->cols && g->b.trans && at_bytes <= p.per_thread;
    const int epilogue = !(g->alpha == 1.0f && (g->beta == 0.0f || g->beta == 1.0f));
    p.need_plane = g->k > KC && (g->c_type != ZERO_F32 || (epilogue && g->beta != 0.0f));
    return p;
}

/* The most any variant of this build needs, not the chosen one's: the ledger counts the
 * workspace, and its peaks (the memory tables the docs print) must not depend on which
 * variant the processor runs (their tiles, so their blocks, differ). */
size_t cpu_gemm_workspace_bytes(enum cpu_isa isa, int threads, const struct cpu_gemm_args *g)
{
    size_t most = 0;
    for (int v = 0; v < CPU_ISA_COUNT; v++) {
        if (v != (int)isa && cpu_gemm_kernel((enum cpu_isa)v, CPU_PRODUCT_FP32)->tile == NULL)
            continue; /* not in this build */
        struct plan p = make_plan((enum cpu_isa)v, threads, g);
        size_t plane = p.need_plane ? (size_t)(g->m * g->n) * sizeof(float) : 0;
        size_t bytes = p.per_thread * (size_t)p.threads + plane;
        most = bytes > most ? bytes : most;
    }
    return most;
}

size_t cpu_gemm_workspace_bound(int threads)
{
    /* make_plan's per thread: an A block (MC, kc) or all of A within A_WHOLE_BYTES, a B
     * block of at most KC x NC floats (kc rounded up to a tile block at most) */
    const int64_t kc = KC + BF16_TILE_BLOCK, a = MC * kc * (int64_t)sizeof(float);
    const int64_t per_thread =
        round_up((a > A_WHOLE_BYTES ? a : A_WHOLE_BYTES) + kc * NC * (int64_t)sizeof(float), 64);
    return (size_t)(per_thread * (threads < 1 ? 1 : threads));
}

void cpu_gemm_exact(enum cpu_isa isa, int threads, const struct cpu_gemm_args *g, void *workspace)
{
    if (g->m == 0 || g->n == 0)
        return;
    struct plan p = make_plan(isa, threads, g);
    struct job j = {.g = g,
                    .kr = cpu_gemm_kernel(isa, g->product),
                    .chain_from_c = g->alpha == 1.0f && g->beta == 1.0f,
                    .epilogue = !(g->alpha == 1.0f && (g->beta == 0.0f || g->beta == 1.0f)),
                    .a = view_of(&g->a, 0, g->product),
                    .b = view_of(&g->b, 1, g->product),
                    .threads = p.threads,
                    .split_n = p.split_n,
                    .skinny = p.skinny,
                    .few_rows = p.few_rows,
                    .b_rows = p.b_rows,
                    .a_whole = p.a_whole,
                    .b_offset = p.a_floats,
                    .ws = workspace,
                    .ws_stride = p.per_thread,
                    .mc = p.mc,
                    .nc = p.nc,
                    .kc = p.kc,
                    .product = g->product};
    if (p.need_plane) {
        j.part = (float *)((char *)workspace + p.per_thread * (size_t)p.threads);
        j.ldp = g->n;
    } else { /* C is fp32 and may hold the partial sums (or there is one K-block) */
        j.part = g->c;
        j.ldp = g->ldc;
    }
    host_parallel_for((size_t)p.threads, 1, p.threads, run_thread, &j);
}

/* libzero's own GEMM for exact mode: fixed order, so its bits depend on the
 * operands alone, not on the CPU's vector width, the blocking, or the threads
 * (not installed).
 *
 * The contract. C (m, n) = alpha * op(A) (m, k) op(B) (k, n) + beta * C, where
 * every output element is ONE sequential chain of fused multiply-adds in
 * increasing k:
 *
 *   acc = start;  for k = 0 .. K-1:  acc = fmaf(A[i,k], B[k,j], acc)
 *
 *   alpha == 1, beta == 0:  start = 0,        c = acc      (old C never read, NaN included)
 *   alpha == 1, beta == 1:  start = C[i,j],   c = acc
 *   any other alpha, beta:  start = 0,        t = alpha * acc (rounded to fp32), then
 *                           c = t if beta == 0 (old C never read), else c = fmaf(beta, C[i,j], t)
 *
 * and c is rounded (nearest even) to C's type. Operands of type fp16/bf16 are
 * widened exactly to fp32 while they are packed (no converted copy of the
 * whole operand); an operand may also ask to be rounded to fp16/bf16 while it
 * is packed (the attention kernels' "fp16/bf16 operands, fp32 sums"). The
 * scalar, AVX2 and AVX-512 micro-kernels all compute that chain; a K-block
 * stores its partial sums as fp32 and the next one reloads them, which is the
 * same chain. alpha and beta are applied only by the driver (cpu_gemm.c),
 * after the last K-block, in scalar C that is the same for every variant.
 * Threads split the output over M or N blocks, never K. */
#ifndef ZERO_CPU_GEMM_H
#define ZERO_CPU_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "zero/dtype.h"

/* avx2, avx512, avx512bf16 and amx exist in x86-64 builds, neon in aarch64 builds;
 * avx512bf16 is avx512 with VDPBF16PS for the bf16-product GEMMs, amx is avx512bf16
 * with TDPBF16PS for the bf16-tile GEMMs (the widest: chosen first where the processor
 * has it) */
enum cpu_isa {
    CPU_ISA_SCALAR = 0,
    CPU_ISA_AVX2,
    CPU_ISA_AVX512,
    CPU_ISA_NEON,
    CPU_ISA_AVX512BF16,
    CPU_ISA_AMX,
    CPU_ISA_COUNT
};

/* What a GEMM's products are: the fmaf chain, or for bf16 operands the bf16-product
 * contract (src/base/bf16_dot.h) or the bf16-tile contract (src/base/bf16_tile.h). */
enum cpu_product { CPU_PRODUCT_FP32 = 0, CPU_PRODUCT_BF16_DOT, CPU_PRODUCT_BF16_TILE };

/* "scalar", "avx2", "avx512", "neon", "avx512bf16", "amx" */
const char *cpu_isa_name(enum cpu_isa isa);
/* 1 if this build has the variant and this processor runs it. */
int cpu_isa_supported(enum cpu_isa isa);
/* The widest supported variant, or the one the environment variable
 * ZERO_CPU_ISA names. 0, or nonzero with why filled when ZERO_CPU_ISA is
 * unknown or names a variant this processor lacks. */
int cpu_isa_choose(enum cpu_isa *isa, char *why, size_t why_len);

/* One operand as stored: p (rows, cols) with leading dimension ld, of type
 * fp32/fp16/bf16; trans says whether it is op's transpose. round = ZERO_F16 or
 * ZERO_BF16 rounds each (fp32) element to that type while packing; ZERO_F32
 * reads it as it is. */
struct cpu_gemm_operand {
    const void *p;
    enum zero_dtype type;
    int64_t ld;
    int trans;
    enum zero_dtype round;
};

/* One GEMM: shapes and pointers already checked by the caller. */
struct cpu_gemm_args {
    int64_t m, n, k;
    float alpha, beta;
    struct cpu_gemm_operand a, b; /* op(A) (m, k), op(B) (k, n) */
    void *c;                      /* (m, n), ld ldc, of c_type (fp32/fp16/bf16) */
    enum zero_dtype c_type;
    int64_t ldc;
    /* a bf16 contract instead of the fmaf chain: both operands are then bf16, or fp32
     * with round ZERO_BF16 */
    enum cpu_product product;
};

/* Bytes of workspace cpu_gemm_exact needs for g on that many threads: the most any
 * variant of this build needs, so that the same on every processor. */
size_t cpu_gemm_workspace_bytes(enum cpu_isa isa, int threads, const struct cpu_gemm_args *g);
/* At least cpu_gemm_workspace_bytes of any product on `threads` threads, less its
 * (m, n) fp32 plane: the packing panels' most */
size_t cpu_gemm_workspace_bound(int threads);

/* Computes g with the named variant (which must be supported) on up to
 * `threads` threads; workspace holds cpu_gemm_workspace_bytes(...) bytes,
 * 64-byte aligned. Never fails. */
void cpu_gemm_exact(enum cpu_isa isa, int threads, const struct cpu_gemm_args *g, void *workspace);

/* ---- the micro-kernels (cpu_gemm_kernels.c) ---- */

/* One (mr, nr) tile of C: acc (mr, nr) = cin (or 0 when cin is NULL), then
 * for k = 0 .. kc-1: acc[r][c] = fmaf(ap[k * mr + r], bp[k * nr + c], acc[r][c]);
 * then cout = acc. cin (ld ldin) and cout (ld ldout) may be the same tile. */
typedef void (*cpu_gemm_tile_fn)(int64_t kc, const float *ap, const float *bp, const float *cin,
                                 int64_t ldin, float *cout, int64_t ldout);

/* Packing's transpose (data movement only): dst[k * ldd + r] = src[r * lds + k]
 * for r < 8, k < kc. */
typedef void (*cpu_gemm_transpose8_fn)(float *dst, int64_t ldd, const float *src, int64_t lds,
                                       int64_t kc);

/* The same for 8 bf16 rows, each element widened exactly (dtype_bf16_to_f32's bits). */
typedef void (*cpu_gemm_transpose8_bf16_fn)(float *dst, int64_t ldd, const uint16_t *src,
                                            int64_t lds, int64_t kc);

/* At most 16 rows against B with k contiguous, as stored: t (cols, 16) with
 * t[c * 16 + r] = C[r][c] (a vector per column of C, its lanes the rows):
 * acc = tin (or 0 when tin is NULL), then for k = 0 .. kc-1:
 * acc[c][r] = fmaf(at[k * 16 + r], bp[c * ldb + k], acc[c][r]); then tout = acc. */
typedef void (*cpu_gemm_cols_fn)(int64_t kc, const float *at, const float *bp, int64_t ldb,
                                 const float *tin, float *tout);

/* One (mr, nr) tile under a bf16 contract over a K-block of np pairs: acc = cin (or 0),
 * then
 *   the bf16-product contract: for each pair p < np the two steps of bf16_dot_pair
 *   (k = 2p + 1 first). With pairs set, ap (np, mr) and bp (np, nr) hold the pairs as
 *   stored, two bf16 in a 32-bit word (element 2p in the low half); else they are fp32
 *   panels (2 np, mr) and (2 np, nr) of the bf16 values widened, subnormals already
 *   zero.
 *   the bf16-tile contract: for each block of 16 pairs (the last one padded with zero
 *   pairs) bf16_tile_block. With pairs set (AMX), ap (mr, P) holds each row's pairs
 *   and bp (P, nr) each pair's row, P = np rounded up to 16; else fp32 panels (2 P, mr)
 *   and (2 P, nr) of the values widened, subnormals zero, each block's 16 even k
 *   before its 16 odd ones. */
typedef void (*cpu_gemm_dot_fn)(int64_t np, const void *ap, const void *bp, const float *cin,
                                int64_t ldin, float *cout, int64_t ldout);

/* Row of element k of a widened panel under the bf16-tile contract: each block of 32 k
 * holds its 16 even k, then its 16 odd ones (so each chain reads consecutive rows). */
static inline int64_t cpu_gemm_tile_row(int64_t k)
{
    return k / 32 * 32 + k % 2 * 16 + k % 32 / 2;
}

struct cpu_gemm_kernel {
    int mr, nr; /* tile shape */
    cpu_gemm_tile_fn tile;
    cpu_gemm_transpose8_fn transpose8;           /* NULL: packing transposes element by element */
    cpu_gemm_transpose8_bf16_fn transpose8_bf16; /* NULL: widened into a run, then transposed */
    /* dst (n) = src (n) bf16 widened exactly; NULL: the plain loop */
    void (*widen_bf16)(float *dst, const uint16_t *src, int64_t n);
    /* dst (n) = src (n) rounded to `to` (ZERO_BF16 or ZERO_F16): the bits of
     * dtype_f32_to_bf16 / dtype_f32_to_f16 (nearest even, NaNs quiet); never NULL */
    void (*narrow)(uint16_t *dst, const float *src, int64_t n, enum zero_dtype to);
    int cols; /* columns of C per call of few_rows */
    /* NULL: the variant has none (the packed way instead). Under the bf16-tile contract
     * (amx) at holds x^T's pairs (P, 16) and bp is bf16: the same t */
    cpu_gemm_cols_fn few_rows;
    cpu_gemm_dot_fn dot; /* the bf16 contract's tile; never NULL where tile is not */
    int dot_pairs;       /* dot reads bf16 pairs (else widened fp32 panels) */
};

/* The kernel of a variant for a product: tile is NULL when this build lacks the variant;
 * under CPU_PRODUCT_BF16_TILE, dot is that contract's tile and (mr, nr) its shape (amx's
 * 32 x 32 has no fp32 tile: tile is NULL there, never called). */
const struct cpu_gemm_kernel *cpu_gemm_kernel(enum cpu_isa isa, enum cpu_product product);

#endif

// cuda_exact_gemm.cu -- the GEMM of exact mode: fp32 SIMT, every output one
// sequential chain of fused multiply-adds over k, so the GPU gives the bits of the
// cpu backend's exact GEMM (the portable-exactness issue; docs/gpu.md).
//
// The rule, per output element C[i, j] (the one place alpha and beta enter), the
// contract of the cpu backend's exact GEMM (backends/cpu/cpu_gemm.h) word for word:
//   acc = (beta == 1 && alpha == 1) ? C_old[i, j] : 0
//   for k = 0 .. K-1, in increasing k:  acc = fmaf(A[i, k], B[k, j], acc)
//   C[i, j] = acc                            if alpha == 1 and beta is 0 or 1
//   else t = alpha * acc (rounded to fp32);
//        C[i, j] = t                         if beta == 0
//                = fmaf(beta, C_old[i, j], t) otherwise
// rounded once to C's dtype. fp16/bf16 operands are widened to fp32 exactly (the
// conversions of src/base/dtype_convert.h); beta == 0 never reads C (NaN there is ignored).
// A padded k (the last tile's tail) is never part of a chain: fmaf(0, 0, -0) is +0.
//
// Shape: a block owns a kTileM x kTileN tile of C for one batch item; its 16 x 16
// threads own kPer x kPer outputs each (rows ty + 16 r, columns tx + 16 c). K goes by
// in kTileK slices staged in shared memory as fp32; each thread walks a slice's k in
// order for each of its outputs. Blocking over K cannot change a bit: the chain state
// of an output stays in its thread's register between slices. No split over K, no
// atomics. Compute-only here (no GPU in CI): conservative rather than fast.
//
// bf16_dot (both operands bf16, the backend's bf16_dot switch on): the bf16-product
// contract instead (src/base/bf16_dot.h, the cpu's VDPBF16PS bits): operands read with
// subnormals as zero, k taken in pairs, per pair k + 1's product first, each step
// bf16_dot_fma (round to nearest, FTZ after rounding); an odd K's padding element is
// +0 and takes part (the slice's zeros), kTileK being even keeps pairs within a slice.
//
// bf16_tile (both operands bf16, the switch at 2): the bf16-tile contract (src/base/
// bf16_tile.h, the cpu's TDPBF16PS bits): per block of 32 k, two slices, an even-k and an
// odd-k chain of bf16_dot_fma from +0 kept in registers across the two slices, then acc
// + (E + O); K's last block runs to its end, the slices' zeros being the padding's +0.
#include <stdint.h>

#include "base/bf16_dot.h"
#include "base/bf16_tile.h"

#include "cuda_device.cuh"
#include "cuda_launch.h"

namespace
{

constexpr int kTileM = 64, kTileN = 64, kTileK = 16;
constexpr int kSide = 16;             // threads per side of a block
constexpr int kPer = kTileM / kSide;  // outputs per thread per side
constexpr int kBlock = kSide * kSide; // threads per block
static_assert(kTileM == kTileN, "square tiles");
static_assert(kTileM * kTileK % kBlock == 0, "tile loads split evenly");
static_assert(kTileK % 2 == 0, "bf16_dot's pairs stay within a slice");
static_assert(BF16_TILE_BLOCK % kTileK == 0, "bf16_tile's blocks are whole slices");
constexpr int kDot = 1, kTile = 2; // bf16_product's contracts (enum zero_bf16_product)

struct exact_gemm_args {
    int ta, tb;
    int64_t m, n, k;
    float alpha, beta;
    const void *a;
    zero_dtype a_type;
    int64_t lda, sa; // sa, sb, sc: elements between batch items
    const void *b;
    zero_dtype b_type;
    int64_t ldb, sb;
    void *c;
    zero_dtype c_type;
    int64_t ldc, sc;
    int64_t batch;
    int product; // 0, kDot or kTile (a contract only with both operands bf16)
};

// Bytes of an fp32/fp16/bf16 element (zero_dtype_size is host code).
__device__ __forceinline__ size_t elem_bytes(zero_dtype t)
{
    return t == ZERO_F32 ? 4 : 2;
}

// Element (r, q) of the stored row-major matrix x (ld) as fp32.
__device__ __forceinline__ float element(const void *x, zero_dtype t, int64_t ld, int64_t r,
                                         int64_t q)
{
    return zero_cuda::load_f32(x, t, (size_t)r * (size_t)ld + (size_t)q);
}

// As (kTileK, kTileM) = op(A) rows [i0, i0 + kTileM), k [k0, k0 + kTileK); 0 outside.
// Consecutive threads read consecutive addresses of the stored matrix.
__device__ void load_a(float (*As)[kTileM + 1], const exact_gemm_args &g, const void *a, int64_t i0,
                       int64_t k0)
{
    for (int idx = threadIdx.y * kSide + threadIdx.x; idx < kTileM * kTileK; idx += kBlock) {
        int i, kk;
        if (g.ta) { // stored (k, m): contiguous in i
            kk = idx / kTileM;
            i = idx % kTileM;
        } else { // stored (m, k): contiguous in k
            i = idx / kTileK;
            kk = idx % kTileK;
        }
        int64_t gi = i0 + i, gk = k0 + kk;
        float v = 0.0f;
        if (gi < g.m && gk < g.k)
            v = g.ta ? element(a, g.a_type, g.lda, gk, gi) : element(a, g.a_type, g.lda, gi, gk);
        As[kk][i] = g.product != 0 ? bf16_dot_daz(v) : v;
    }
}

// Bs (kTileK, kTileN) = op(B) k [k0, k0 + kTileK), columns [j0, j0 + kTileN); 0 outside.
__device__ void load_b(float (*Bs)[kTileN + 1], const exact_gemm_args &g, const void *b, int64_t k0,
                       int64_t j0)
{
    for (int idx = threadIdx.y * kSide + threadIdx.x; idx < kTileN * kTileK; idx += kBlock) {
        int j, kk;
        if (g.tb) { // stored (n, k): contiguous in k
            j = idx / kTileK;
            kk = idx % kTileK;
        } else { // stored (k, n): contiguous in j
            kk = idx / kTileN;
            j = idx % kTileN;
        }
        int64_t gj = j0 + j, gk = k0 + kk;
        float v = 0.0f;
        if (gj < g.n && gk < g.k)
            v = g.tb ? element(b, g.b_type, g.ldb, gj, gk) : element(b, g.b_type, g.ldb, gk, gj);
        Bs[kk][j] = g.product != 0 ? bf16_dot_daz(v) : v;
    }
}

__global__ void __launch_bounds__(kBlock) exact_gemm_kernel(exact_gemm_args g)
{
    __shared__ float As[kTileK][kTileM + 1];
    __shared__ float Bs[kTileK][kTileN + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t tiles_m = (g.m + kTileM - 1) / kTileM;
    const bool from_c = g.beta == 1.0f && g.alpha == 1.0f;
    const bool plain = g.alpha == 1.0f && (g.beta == 0.0f || g.beta == 1.0f);
    for (int64_t item = blockIdx.z; item < g.batch; item += gridDim.z) {
        const void *a = (const char *)g.a + (size_t)(item * g.sa) * elem_bytes(g.a_type);
        const void *b = (const char *)g.b + (size_t)(item * g.sb) * elem_bytes(g.b_type);
        void *c = (char *)g.c + (size_t)(item * g.sc) * elem_bytes(g.c_type);
        const int64_t j0 = (int64_t)blockIdx.x * kTileN;
        for (int64_t tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
            const int64_t i0 = tm * kTileM;
            float acc[kPer][kPer];
            for (int r = 0; r < kPer; r++)
                for (int q = 0; q < kPer; q++) {
                    int64_t i = i0 + ty + kSide * r, j = j0 + tx + kSide * q;
                    acc[r][q] = from_c && i < g.m && j < g.n
                                    ? zero_cuda::load_f32(c, g.c_type,
                                                          (size_t)i * (size_t)g.ldc + (size_t)j)
                                    : 0.0f;
                }
            float e[kPer][kPer], o[kPer][kPer]; // bf16_tile's chains of the current block
            const int64_t kloop =
                g.product == kTile ? (g.k + BF16_TILE_BLOCK - 1) / BF16_TILE_BLOCK * BF16_TILE_BLOCK
                                   : g.k;
            for (int64_t k0 = 0; k0 < kloop; k0 += kTileK) {
                load_a(As, g, a, i0, k0);
                load_b(Bs, g, b, k0, j0);
                __syncthreads();
                const int kend = g.k - k0 < kTileK ? (int)(g.k - k0) : kTileK;
                if (g.product == kTile) {
                    if (k0 % BF16_TILE_BLOCK == 0)
                        for (int r = 0; r < kPer; r++)
                            for (int q = 0; q < kPer; q++)
                                e[r][q] = o[r][q] = 0.0f;
                    for (int kk = 0; kk < kTileK; kk += 2) // past K: the slice's +0
                        for (int r = 0; r < kPer; r++)
                            for (int q = 0; q < kPer; q++) {
                                const int ri = ty + kSide * r, qj = tx + kSide * q;
                                e[r][q] = bf16_dot_fma(As[kk][ri], Bs[kk][qj], e[r][q]);
                                o[r][q] = bf16_dot_fma(As[kk + 1][ri], Bs[kk + 1][qj], o[r][q]);
                            }
                    if ((k0 + kTileK) % BF16_TILE_BLOCK == 0)
                        for (int r = 0; r < kPer; r++)
                            for (int q = 0; q < kPer; q++)
                                acc[r][q] = bf16_tile_add(bf16_dot_daz(acc[r][q]),
                                                          bf16_tile_add(e[r][q], o[r][q]));
                    __syncthreads();
                    continue;
                }
                if (g.product == kDot) {
                    for (int kk = 0; kk < kend; kk += 2) // kk + 1 < kTileK: +0 past K
                        for (int r = 0; r < kPer; r++)
                            for (int q = 0; q < kPer; q++) {
                                const int ri = ty + kSide * r, qj = tx + kSide * q;
                                float v = bf16_dot_daz(acc[r][q]);
                                v = bf16_dot_fma(As[kk + 1][ri], Bs[kk + 1][qj], v);
                                acc[r][q] = bf16_dot_fma(As[kk][ri], Bs[kk][qj], v);
                            }
                    __syncthreads();
                    continue;
                }
                for (int kk = 0; kk < kend; kk++) {
                    float av[kPer], bv[kPer];
                    for (int r = 0; r < kPer; r++)
                        av[r] = As[kk][ty + kSide * r];
                    for (int q = 0; q < kPer; q++)
                        bv[q] = Bs[kk][tx + kSide * q];
                    for (int r = 0; r < kPer; r++)
                        for (int q = 0; q < kPer; q++)
                            acc[r][q] = __fmaf_rn(av[r], bv[q], acc[r][q]);
                }
                __syncthreads(); // the slice is read before the next one overwrites it
            }
            for (int r = 0; r < kPer; r++)
                for (int q = 0; q < kPer; q++) {
                    int64_t i = i0 + ty + kSide * r, j = j0 + tx + kSide * q;
                    if (i >= g.m || j >= g.n)
                        continue;
                    size_t at = (size_t)i * (size_t)g.ldc + (size_t)j;
                    float v = acc[r][q];
                    if (!plain) {
                        v = __fmul_rn(g.alpha, v);
                        if (g.beta != 0.0f)
                            v = __fmaf_rn(g.beta, zero_cuda::load_f32(c, g.c_type, at), v);
                    }
                    zero_cuda::store_f32(c, g.c_type, at, v);
                }
        }
    }
}

} // namespace

extern "C" cudaError_t cuda_launch_exact_gemm(cudaStream_t st, int trans_a, int trans_b, int64_t m,
                                              int64_t n, int64_t k, float alpha, const void *a,
                                              enum zero_dtype a_type, int64_t lda, int64_t stride_a,
                                              const void *b, enum zero_dtype b_type, int64_t ldb,
                                              int64_t stride_b, float beta, void *c,
                                              enum zero_dtype c_type, int64_t ldc, int64_t stride_c,
                                              int64_t batch, int bf16_product)
{
    if (m <= 0 || n <= 0 || batch <= 0)
        return cudaSuccess;
    const int64_t tiles_m = (m + kTileM - 1) / kTileM, tiles_n = (n + kTileN - 1) / kTileN;
    if (tiles_n > INT32_MAX)
        return cudaErrorInvalidConfiguration;
    exact_gemm_args g = {
        trans_a,  trans_b,  m,
        n,        k,        alpha,
        beta,     a,        a_type,
        lda,      stride_a, b,
        b_type,   ldb,      stride_b,
        c,        c_type,   ldc,
        stride_c, batch,    a_type == ZERO_BF16 && b_type == ZERO_BF16 ? bf16_product : 0};
    dim3 grid((unsigned)tiles_n, (unsigned)(tiles_m < 65535 ? tiles_m : 65535),
              (unsigned)(batch < 65535 ? batch : 65535));
    exact_gemm_kernel<<<grid, dim3(kSide, kSide), 0, st>>>(g);
    return cudaGetLastError();
}

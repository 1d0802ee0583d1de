// cuda_flash_attention.cu -- fused causal self-attention for native (fast) mode, in
// the manner of FlashAttention (Dao et al., 2022): keys and values stream through
// shared memory in tiles, each query keeps a running maximum and sum (the online
// softmax), and no T x T matrix is ever stored. All sequences and heads go in one
// launch. The reference path (cuda_layer_ops.c: cuBLAS products and the saved
// probabilities) stays for exact mode.
//
// Deterministic and without atomics: every output has one owner thread that sums in
// a fixed order, so two runs give the same bits (not the cpu's bits: exp and the
// order of the sums differ; tests/test_cuda_backend.c states the tolerance). fp32
// throughout (the matmul dtype of the reference path is not used here).
//
// Shapes: qkv (B, T, 3C) with q, k, v of head h at columns h*hs, C + h*hs, 2C + h*hs;
// y (B, T, C). The forward saves lse (B, NH, T) = log sum_j exp(s_ij) per query, in
// the first B*NH*T floats of the caller's att buffer (B, NH, T, T), which only this
// backend's backward reads. The backward runs two kernels: per query, dq and
// D_i = dO_i . O_i (O recomputed from lse; D into scratch); then per key, dk and dv
// from D. In the backward two threads own a query (or a key), each half of its
// accumulators in registers; in the forward one thread owns a query. So hs is
// a template parameter (8, 16, 32, 64: GPT-2's); other head sizes use the reference
// path. The products are SIMT fp32, so this is the memory-traffic win (no T x T
// matrix, one launch), not yet the tensor-core one.
#include <math.h>
#include <stdint.h>

#include "cuda_launch.h"

namespace
{

constexpr int kTile = 64; // queries per block, keys per shared-memory tile

__device__ __forceinline__ size_t row_of(int64_t b, int64_t t, int64_t T)
{
    return (size_t)(b * T + t);
}

// out = a . b over HS, in order
template <int HS> __device__ __forceinline__ float dot(const float *a, const float *b)
{
    float acc = 0.0f;
#pragma unroll
    for (int d = 0; d < HS; d++)
        acc = fmaf(a[d], b[d], acc);
    return acc;
}

// Block (query tile, b*NH + h): thread i of the tile owns query i0 + i.
template <int HS>
__global__ void __launch_bounds__(kTile)
    flash_forward(float *y, float *lse, const float *qkv, int64_t T, int64_t C, int NH, float scale)
{
    __shared__ float ks[kTile][HS];
    __shared__ float vs[kTile][HS];
    const int64_t bh = blockIdx.y, b = bh / NH, h = bh % NH;
    const int64_t i0 = (int64_t)blockIdx.x * kTile, i = i0 + threadIdx.x;
    const int64_t C3 = 3 * C;
    const bool live = i < T;
    float q[HS], o[HS];
    const float *qrow = qkv + row_of(b, live ? i : 0, T) * C3 + h * HS;
#pragma unroll
    for (int d = 0; d < HS; d++) {
        q[d] = live ? qrow[d] : 0.0f;
        o[d] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    const int64_t last = i0 + kTile - 1 < T - 1 ? i0 + kTile - 1 : T - 1; // the tile's last query
    for (int64_t j0 = 0; j0 <= last; j0 += kTile) {
        __syncthreads(); // the previous tile is read
        for (int e = threadIdx.x; e < kTile * HS; e += kTile) {
            int jj = e / HS, d = e % HS;
            int64_t j = j0 + jj;
            const float *src = qkv + row_of(b, j < T ? j : 0, T) * C3 + h * HS + d;
            ks[jj][d] = j < T ? src[C] : 0.0f;
            vs[jj][d] = j < T ? src[2 * C] : 0.0f;
        }
        __syncthreads();
        if (!live)
            continue;
        const int64_t jend = i - j0 + 1 < kTile ? i - j0 + 1 : kTile; // keys j <= i
        for (int64_t jj = 0; jj < jend; jj++) {
            float s = dot<HS>(q, ks[jj]) * scale;
            if (s > m) { // a new maximum: rescale what was summed so far
                float corr = expf(m - s);
                l *= corr;
#pragma unroll
                for (int d = 0; d < HS; d++)
                    o[d] *= corr;
                m = s;
            }
            float p = expf(s - m);
            l += p;
#pragma unroll
            for (int d = 0; d < HS; d++)
                o[d] = fmaf(p, vs[jj][d], o[d]);
        }
    }
    if (!live)
        return;
    float inv = 1.0f / l;
    float *yrow = y + row_of(b, i, T) * C + h * HS;
#pragma unroll
    for (int d = 0; d < HS; d++)
        yrow[d] = o[d] * inv;
    lse[bh * T + i] = m + logf(l);
}

// Backward, per query: O_i recomputed, D_i = dO_i . O_i (into dsum), then
// dq_i = scale sum_j p_ij (dO_i . v_j - D_i) k_j. Two threads per query, each owning
// half of the dimensions, dot products completed with one shuffle (as in the per-key
// kernel below).
template <int HS>
__global__ void __launch_bounds__(2 * kTile)
    flash_backward_dq(float *dqkv, float *dsum, const float *dy, const float *qkv, const float *lse,
                      int64_t T, int64_t C, int NH, float scale)
{
    constexpr int H2 = HS / 2;
    __shared__ float ks[kTile][HS];
    __shared__ float vs[kTile][HS];
    const int64_t bh = blockIdx.y, b = bh / NH, h = bh % NH;
    const int part = threadIdx.x % 2, lane = threadIdx.x % 32;
    const unsigned pair = 3u << (lane & ~1);
    const int64_t i0 = (int64_t)blockIdx.x * kTile, i = i0 + threadIdx.x / 2;
    const int64_t C3 = 3 * C;
    const bool live = i < T;
    const int d0 = part * H2;
    float q[H2], g[H2], acc[H2]; // g: dO_i; acc: O_i, then dq_i (this thread's half)
    const float *qrow = qkv + row_of(b, live ? i : 0, T) * C3 + h * HS + d0;
    const float *grow = dy + row_of(b, live ? i : 0, T) * C + h * HS + d0;
#pragma unroll
    for (int d = 0; d < H2; d++) {
        q[d] = live ? qrow[d] : 0.0f;
        g[d] = live ? grow[d] : 0.0f;
        acc[d] = 0.0f;
    }
    const float li = live ? lse[bh * T + i] : 0.0f;
    const int64_t last = i0 + kTile - 1 < T - 1 ? i0 + kTile - 1 : T - 1;
    float D = 0.0f;
    for (int pass = 0; pass < 2; pass++) { // 0: O_i and D_i; 1: dq_i
        for (int64_t j0 = 0; j0 <= last; j0 += kTile) {
            __syncthreads();
            for (int e = threadIdx.x; e < kTile * HS; e += 2 * kTile) {
                int jj = e / HS, d = e % HS;
                int64_t j = j0 + jj;
                const float *src = qkv + row_of(b, j < T ? j : 0, T) * C3 + h * HS + d;
                ks[jj][d] = j < T ? src[C] : 0.0f;
                vs[jj][d] = j < T ? src[2 * C] : 0.0f;
            }
            __syncthreads();
            if (!live)
                continue; // both threads of a pair: the same query
            const int64_t jend = i - j0 + 1 < kTile ? i - j0 + 1 : kTile;
            for (int64_t jj = 0; jj < jend; jj++) {
                float sq = dot<H2>(q, ks[jj] + d0);
                sq += __shfl_xor_sync(pair, sq, 1);
                float p = expf(sq * scale - li);
                if (pass == 0) {
#pragma unroll
                    for (int d = 0; d < H2; d++)
                        acc[d] = fmaf(p, vs[jj][d0 + d], acc[d]);
                } else {
                    float sv = dot<H2>(g, vs[jj] + d0);
                    sv += __shfl_xor_sync(pair, sv, 1);
                    float ds = p * (sv - D) * scale;
#pragma unroll
                    for (int d = 0; d < H2; d++)
                        acc[d] = fmaf(ds, ks[jj][d0 + d], acc[d]);
                }
            }
        }
        if (pass == 0 && live) {
            D = dot<H2>(g, acc);
            D += __shfl_xor_sync(pair, D, 1);
#pragma unroll
            for (int d = 0; d < H2; d++)
                acc[d] = 0.0f;
        }
    }
    if (!live)
        return;
    if (part == 0)
        dsum[bh * T + i] = D;
    float *dq = dqkv + row_of(b, i, T) * C3 + h * HS + d0;
#pragma unroll
    for (int d = 0; d < H2; d++)
        dq[d] = acc[d];
}

// Backward, per key j: dv_j = sum_{i >= j} p_ij dO_i and
// dk_j = scale sum_{i >= j} p_ij (dO_i . v_j - D_i) q_i, queries in increasing order.
// Two threads per key, each owning half of the head's dimensions (k, v, dk, dv: 2 hs
// registers, not 4 hs); a dot product is each half's sum plus the partner's, taken
// with one shuffle: a + b on one thread, b + a on the other, the same float.
template <int HS>
__global__ void __launch_bounds__(2 * kTile)
    flash_backward_dkv(float *dqkv, const float *dy, const float *qkv, const float *lse,
                       const float *dsum, int64_t T, int64_t C, int NH, float scale)
{
    constexpr int H2 = HS / 2;
    __shared__ float qs[kTile][HS];
    __shared__ float gs[kTile][HS];
    __shared__ float ls[kTile], Ds[kTile];
    const int64_t bh = blockIdx.y, b = bh / NH, h = bh % NH;
    const int part = threadIdx.x % 2, lane = threadIdx.x % 32;
    const unsigned pair = 3u << (lane & ~1); // this thread and its partner
    const int64_t j0k = (int64_t)blockIdx.x * kTile, j = j0k + threadIdx.x / 2;
    const int64_t C3 = 3 * C;
    const bool live = j < T;
    const int d0 = part * H2; // this thread's dimensions: d0 .. d0 + H2 - 1
    float k[H2], v[H2], dk[H2], dv[H2];
    const float *krow = qkv + row_of(b, live ? j : 0, T) * C3 + h * HS + d0;
#pragma unroll
    for (int d = 0; d < H2; d++) {
        k[d] = live ? krow[C + d] : 0.0f;
        v[d] = live ? krow[2 * C + d] : 0.0f;
        dk[d] = 0.0f;
        dv[d] = 0.0f;
    }
    for (int64_t i0 = j0k; i0 < T; i0 += kTile) { // query tiles from the block's first key on
        __syncthreads();
        for (int e = threadIdx.x; e < kTile * HS; e += 2 * kTile) {
            int ii = e / HS, d = e % HS;
            int64_t i = i0 + ii;
            bool in = i < T;
            qs[ii][d] = in ? qkv[row_of(b, i, T) * C3 + h * HS + d] : 0.0f;
            gs[ii][d] = in ? dy[row_of(b, i, T) * C + h * HS + d] : 0.0f;
        }
        if (threadIdx.x < kTile) {
            int64_t i = i0 + threadIdx.x;
            ls[threadIdx.x] = i < T ? lse[bh * T + i] : 0.0f;
            Ds[threadIdx.x] = i < T ? dsum[bh * T + i] : 0.0f;
        }
        __syncthreads();
        if (!live)
            continue; // both threads of a pair: the same key
        for (int ii = 0; ii < kTile; ii++) {
            int64_t i = i0 + ii;
            if (i < j || i >= T)
                continue;
            float sk = dot<H2>(qs[ii] + d0, k), sv = dot<H2>(gs[ii] + d0, v);
            sk += __shfl_xor_sync(pair, sk, 1);
            sv += __shfl_xor_sync(pair, sv, 1);
            float p = expf(sk * scale - ls[ii]);
            float ds = p * (sv - Ds[ii]) * scale;
#pragma unroll
            for (int d = 0; d < H2; d++) {
                dv[d] = fmaf(p, gs[ii][d0 + d], dv[d]);
                dk[d] = fmaf(ds, qs[ii][d0 + d], dk[d]);
            }
        }
    }
    if (!live)
        return;
    float *out = dqkv + row_of(b, j, T) * C3 + h * HS + d0;
#pragma unroll
    for (int d = 0; d < H2; d++) {
        out[C + d] = dk[d];
        out[2 * C + d] = dv[d];
    }
}

template <int HS>
cudaError_t forward_hs(cudaStream_t st, float *y, float *lse, const float *qkv, int64_t B,
                       int64_t T, int64_t C, int NH)
{
    dim3 grid((unsigned)((T + kTile - 1) / kTile), (unsigned)(B * NH));
    flash_forward<HS><<<grid, kTile, 0, st>>>(y, lse, qkv, T, C, NH, 1.0f / sqrtf((float)HS));
    return cudaGetLastError();
}

template <int HS>
cudaError_t backward_hs(cudaStream_t st, float *dqkv, float *dsum, const float *dy,
                        const float *qkv, const float *lse, int64_t B, int64_t T, int64_t C, int NH)
{
    dim3 grid((unsigned)((T + kTile - 1) / kTile), (unsigned)(B * NH));
    const float scale = 1.0f / sqrtf((float)HS);
    flash_backward_dq<HS><<<grid, 2 * kTile, 0, st>>>(dqkv, dsum, dy, qkv, lse, T, C, NH, scale);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    flash_backward_dkv<HS><<<grid, 2 * kTile, 0, st>>>(dqkv, dy, qkv, lse, dsum, T, C, NH, scale);
    return cudaGetLastError();
}

} // namespace

extern "C" int cuda_flash_attention_supports(int64_t B, int64_t T, int64_t C, int64_t NH)
{
    if (NH <= 0 || C % NH != 0 || B <= 0 || T <= 0 || B * NH > 65535 || T > INT32_MAX / 2)
        return 0;
    int64_t hs = C / NH;
    return hs == 8 || hs == 16 || hs == 32 || hs == 64;
}

extern "C" cudaError_t cuda_launch_flash_attention_forward(cudaStream_t st, float *y, float *lse,
                                                           const float *qkv, int64_t B, int64_t T,
                                                           int64_t C, int64_t NH)
{
    switch (C / NH) {
    case 8:
        return forward_hs<8>(st, y, lse, qkv, B, T, C, (int)NH);
    case 16:
        return forward_hs<16>(st, y, lse, qkv, B, T, C, (int)NH);
    case 32:
        return forward_hs<32>(st, y, lse, qkv, B, T, C, (int)NH);
    case 64:
        return forward_hs<64>(st, y, lse, qkv, B, T, C, (int)NH);
    default:
        return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t cuda_launch_flash_attention_backward(cudaStream_t st, float *dqkv,
                                                            float *dsum, const float *dy,
                                                            const float *qkv, const float *lse,
                                                            int64_t B, int64_t T, int64_t C,
                                                            int64_t NH)
{
    switch (C / NH) {
    case 8:
        return backward_hs<8>(st, dqkv, dsum, dy, qkv, lse, B, T, C, (int)NH);
    case 16:
        return backward_hs<16>(st, dqkv, dsum, dy, qkv, lse, B, T, C, (int)NH);
    case 32:
        return backward_hs<32>(st, dqkv, dsum, dy, qkv, lse, B, T, C, (int)NH);
    case 64:
        return backward_hs<64>(st, dqkv, dsum, dy, qkv, lse, B, T, C, (int)NH);
    default:
        return cudaErrorInvalidValue;
    }
}

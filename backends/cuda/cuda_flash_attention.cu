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
// y (B, T, C). The forward saves lse (B, NH, T) = log sum_j exp(s_ij) per query in
// the caller's att buffer, which only this backend's backward reads: B*NH*T floats, what
// attention_state_floats answers for this path (cuda_layer_ops.c), so the GPT units
// allocate no T x T for it. The backward runs two kernels: per query, dq and
// D_i = dO_i . O_i (O recomputed from lse; D into scratch, B*NH*T floats); then per
// key, dk and dv from D. In the backward two threads own a query (or a key), each half of its
// accumulators in registers; in the forward one thread owns a query. So hs is
// a template parameter (8, 16, 32, 64: GPT-2's); other head sizes use the reference
// path. The products are SIMT fp32, so this is the memory-traffic win (no T x T
// matrix, one launch), not yet the tensor-core one.
//
// qkv and y may be stored 16-bit activations (TQ uint16_t: fp16 or bf16 in t; the
// attention_forward_stored / attention_backward_stored entries): q, k, v are widened
// to fp32 as they are loaded, 8 values to a 128-bit load where C % 8 == 0 and qkv is
// 16-byte aligned, and y is rounded once (to nearest even, the cast kernel's
// dtype_store_f32) from the very fp32 value the fp32 kernel stores, 8 to a 128-bit
// store where y is aligned. Widening is exact and every fp32 operation is the fp32
// kernel's, so the _stored kernels give exactly the bits of widen -> fp32 kernels ->
// cast (tests/test_cuda_backend.c compares them bit for bit). dy and dqkv stay fp32.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda_device.cuh"
#include "cuda_launch.h"

namespace
{

constexpr int kTile = 64; // queries per block, keys per shared-memory tile

__device__ __forceinline__ size_t row_of(int64_t b, int64_t t, int64_t T)
{
    return (size_t)(b * T + t);
}

// dst (N) = src (N) widened to fp32: TQ float as it is; TQ uint16_t (fp16 or bf16 in
// t) 8 values to a 128-bit load where vec (src 16-byte aligned) and N % 8 == 0
template <int N, typename TQ>
__device__ __forceinline__ void load_widened(float *dst, const TQ *src, zero_dtype t, bool vec)
{
    if constexpr (sizeof(TQ) == 2) {
        if constexpr (N % 8 == 0) {
            if (vec) {
#pragma unroll
                for (int g = 0; g < N; g += 8) {
                    const uint4 u = *(const uint4 *)(src + g);
                    uint16_t h[8]; // memcpy, not a uint16_t view of u: no aliasing to miscompile
                    memcpy(h, &u, sizeof h);
#pragma unroll
                    for (int e = 0; e < 8; e++)
                        dst[g + e] = zero_cuda::load_f32(h, t, e);
                }
                return;
            }
        }
#pragma unroll
        for (int d = 0; d < N; d++)
            dst[d] = zero_cuda::load_f32(src, t, d);
    } else {
        (void)t;
        (void)vec;
#pragma unroll
        for (int d = 0; d < N; d++)
            dst[d] = src[d];
    }
}

// tiles (kTile, HS) of rows r0 .. r0 + kTile - 1 of sequence b, columns h*HS .. of
// base + oa into ta and of base + ob into tb (row stride ld), widened; rows at or past
// T are zeros (tb NULL: ta alone). nthreads threads share them: one value each, or 8
// (one 128-bit load) where TQ is 16-bit and vec.
template <int HS, typename TQ>
__device__ __forceinline__ void
stage_tiles(float (*ta)[HS], float (*tb)[HS], const TQ *base, int64_t ld, int64_t oa, int64_t ob,
            zero_dtype t, bool vec, int64_t b, int64_t r0, int64_t T, int64_t h, int nthreads)
{
    if (sizeof(TQ) == 2 && vec) {
        for (int e = threadIdx.x * 8; e < kTile * HS; e += nthreads * 8) {
            const int rr = e / HS, d = e % HS;
            const int64_t r = r0 + rr;
            const TQ *src = base + row_of(b, r < T ? r : 0, T) * ld + h * HS + d;
            load_widened<8>(&ta[rr][d], src + oa, t, true);
            if (tb != nullptr)
                load_widened<8>(&tb[rr][d], src + ob, t, true);
            if (r >= T)
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    ta[rr][d + k] = 0.0f;
                    if (tb != nullptr)
                        tb[rr][d + k] = 0.0f;
                }
        }
        return;
    }
    for (int e = threadIdx.x; e < kTile * HS; e += nthreads) {
        const int rr = e / HS, d = e % HS;
        const int64_t r = r0 + rr;
        const TQ *src = base + row_of(b, r < T ? r : 0, T) * ld + h * HS + d;
        float va, vb = 0.0f;
        load_widened<1>(&va, src + oa, t, false);
        ta[rr][d] = r < T ? va : 0.0f;
        if (tb != nullptr) {
            load_widened<1>(&vb, src + ob, t, false);
            tb[rr][d] = r < T ? vb : 0.0f;
        }
    }
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

// Block (query tile, b*NH + h): thread i of the tile owns query i0 + i. qkv and y in
// TQ (t: their dtype where TQ is 16-bit); vec_in, vec_out: 128-bit loads, stores.
template <int HS, typename TQ>
__global__ void __launch_bounds__(kTile)
    flash_forward(TQ *y, float *lse, const TQ *qkv, zero_dtype t, bool vec_in, bool vec_out,
                  int64_t T, int64_t C, int NH, float scale)
{
    __shared__ float ks[kTile][HS];
    __shared__ float vs[kTile][HS];
    const int64_t bh = blockIdx.y, b = bh / NH, h = bh % NH;
    const int64_t i0 = (int64_t)blockIdx.x * kTile, i = i0 + threadIdx.x;
    const int64_t C3 = 3 * C;
    const bool live = i < T;
    float q[HS], o[HS];
    load_widened<HS>(q, qkv + row_of(b, live ? i : 0, T) * C3 + h * HS, t, vec_in);
#pragma unroll
    for (int d = 0; d < HS; d++) {
        q[d] = live ? q[d] : 0.0f;
        o[d] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    const int64_t last = i0 + kTile - 1 < T - 1 ? i0 + kTile - 1 : T - 1; // the tile's last query
    for (int64_t j0 = 0; j0 <= last; j0 += kTile) {
        __syncthreads(); // the previous tile is read
        stage_tiles<HS>(ks, vs, qkv, C3, C, 2 * C, t, vec_in, b, j0, T, h, kTile);
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
    TQ *yrow = y + row_of(b, i, T) * C + h * HS;
    if constexpr (sizeof(TQ) == 2) { // each fp32 value of the branch below, rounded once
        if (vec_out) {
#pragma unroll
            for (int g = 0; g < HS; g += 8) {
                uint16_t hv[8];
#pragma unroll
                for (int e = 0; e < 8; e++)
                    zero_cuda::store_f32(hv, t, e, o[g + e] * inv);
                uint4 u; // memcpy, as in the load: the uint4 is read only after the stores
                memcpy(&u, hv, sizeof u);
                *(uint4 *)(yrow + g) = u;
            }
        } else {
#pragma unroll
            for (int d = 0; d < HS; d++)
                zero_cuda::store_f32(yrow, t, d, o[d] * inv);
        }
    } else {
        (void)vec_out;
#pragma unroll
        for (int d = 0; d < HS; d++)
            yrow[d] = o[d] * inv;
    }
    lse[bh * T + i] = m + logf(l);
}

// Backward, per query: O_i recomputed, D_i = dO_i . O_i (into dsum), then
// dq_i = scale sum_j p_ij (dO_i . v_j - D_i) k_j. Two threads per query, each owning
// half of the dimensions, dot products completed with one shuffle (as in the per-key
// kernel below).
template <int HS, typename TQ>
__global__ void __launch_bounds__(2 * kTile)
    flash_backward_dq(float *dqkv, float *dsum, const float *dy, const TQ *qkv, zero_dtype t,
                      bool vec_in, const float *lse, int64_t T, int64_t C, int NH, float scale)
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
    load_widened<H2>(q, qkv + row_of(b, live ? i : 0, T) * C3 + h * HS + d0, t, vec_in);
    const float *grow = dy + row_of(b, live ? i : 0, T) * C + h * HS + d0;
#pragma unroll
    for (int d = 0; d < H2; d++) {
        q[d] = live ? q[d] : 0.0f;
        g[d] = live ? grow[d] : 0.0f;
        acc[d] = 0.0f;
    }
    const float li = live ? lse[bh * T + i] : 0.0f;
    const int64_t last = i0 + kTile - 1 < T - 1 ? i0 + kTile - 1 : T - 1;
    float D = 0.0f;
    for (int pass = 0; pass < 2; pass++) { // 0: O_i and D_i; 1: dq_i
        for (int64_t j0 = 0; j0 <= last; j0 += kTile) {
            __syncthreads();
            stage_tiles<HS>(ks, vs, qkv, C3, C, 2 * C, t, vec_in, b, j0, T, h, 2 * kTile);
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
template <int HS, typename TQ>
__global__ void __launch_bounds__(2 * kTile)
    flash_backward_dkv(float *dqkv, const float *dy, const TQ *qkv, zero_dtype t, bool vec_in,
                       const float *lse, const float *dsum, int64_t T, int64_t C, int NH,
                       float scale)
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
    const TQ *krow = qkv + row_of(b, live ? j : 0, T) * C3 + h * HS + d0;
    load_widened<H2>(k, krow + C, t, vec_in);
    load_widened<H2>(v, krow + 2 * C, t, vec_in);
#pragma unroll
    for (int d = 0; d < H2; d++) {
        k[d] = live ? k[d] : 0.0f;
        v[d] = live ? v[d] : 0.0f;
        dk[d] = 0.0f;
        dv[d] = 0.0f;
    }
    for (int64_t i0 = j0k; i0 < T; i0 += kTile) { // query tiles from the block's first key on
        __syncthreads();
        stage_tiles<HS>(qs, nullptr, qkv, C3, 0, 0, t, vec_in, b, i0, T, h, 2 * kTile);
        stage_tiles<HS, float>(gs, nullptr, dy, C, 0, 0, ZERO_F32, false, b, i0, T, h, 2 * kTile);
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

template <int HS, typename TQ>
cudaError_t forward_hs(cudaStream_t st, TQ *y, float *lse, const TQ *qkv, zero_dtype t, bool vec_in,
                       bool vec_out, int64_t B, int64_t T, int64_t C, int NH)
{
    dim3 grid((unsigned)((T + kTile - 1) / kTile), (unsigned)(B * NH));
    flash_forward<HS, TQ><<<grid, kTile, 0, st>>>(y, lse, qkv, t, vec_in, vec_out, T, C, NH,
                                                  1.0f / sqrtf((float)HS));
    return cudaGetLastError();
}

template <int HS, typename TQ>
cudaError_t backward_hs(cudaStream_t st, float *dqkv, float *dsum, const float *dy, const TQ *qkv,
                        zero_dtype t, bool vec_in, const float *lse, int64_t B, int64_t T,
                        int64_t C, int NH)
{
    dim3 grid((unsigned)((T + kTile - 1) / kTile), (unsigned)(B * NH));
    const float scale = 1.0f / sqrtf((float)HS);
    flash_backward_dq<HS, TQ>
        <<<grid, 2 * kTile, 0, st>>>(dqkv, dsum, dy, qkv, t, vec_in, lse, T, C, NH, scale);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    flash_backward_dkv<HS, TQ>
        <<<grid, 2 * kTile, 0, st>>>(dqkv, dy, qkv, t, vec_in, lse, dsum, T, C, NH, scale);
    return cudaGetLastError();
}

// 128-bit accesses of 16-bit rows: every row offset (multiples of C, h*hs, 8) is a
// multiple of 8 elements when C is, so the base address decides
bool vec16(const void *p, int64_t C)
{
    return C % 8 == 0 && ((uintptr_t)p & 15) == 0;
}

template <typename TQ>
cudaError_t forward_typed(cudaStream_t st, TQ *y, float *lse, const TQ *qkv, zero_dtype t,
                          int64_t B, int64_t T, int64_t C, int64_t NH)
{
    const bool vin = vec16(qkv, C), vout = vec16(y, C);
    switch (C / NH) {
    case 8:
        return forward_hs<8>(st, y, lse, qkv, t, vin, vout, B, T, C, (int)NH);
    case 16:
        return forward_hs<16>(st, y, lse, qkv, t, vin, vout, B, T, C, (int)NH);
    case 32:
        return forward_hs<32>(st, y, lse, qkv, t, vin, vout, B, T, C, (int)NH);
    case 64:
        return forward_hs<64>(st, y, lse, qkv, t, vin, vout, B, T, C, (int)NH);
    default:
        return cudaErrorInvalidValue;
    }
}

template <typename TQ>
cudaError_t backward_typed(cudaStream_t st, float *dqkv, float *dsum, const float *dy,
                           const TQ *qkv, zero_dtype t, const float *lse, int64_t B, int64_t T,
                           int64_t C, int64_t NH)
{
    const bool vin = vec16(qkv, C);
    switch (C / NH) {
    case 8:
        return backward_hs<8>(st, dqkv, dsum, dy, qkv, t, vin, lse, B, T, C, (int)NH);
    case 16:
        return backward_hs<16>(st, dqkv, dsum, dy, qkv, t, vin, lse, B, T, C, (int)NH);
    case 32:
        return backward_hs<32>(st, dqkv, dsum, dy, qkv, t, vin, lse, B, T, C, (int)NH);
    case 64:
        return backward_hs<64>(st, dqkv, dsum, dy, qkv, t, vin, lse, B, T, C, (int)NH);
    default:
        return cudaErrorInvalidValue;
    }
}

} // namespace

extern "C" int cuda_flash_attention_supports(int64_t B, int64_t T, int64_t C, int64_t NH)
{
    if (NH <= 0 || C % NH != 0 || B <= 0 || T <= 0 || B * NH > 65535 || T > INT32_MAX / 2)
        return 0;
    int64_t hs = C / NH;
    return hs == 8 || hs == 16 || hs == 32 || hs == 64;
}

extern "C" cudaError_t cuda_launch_flash_attention_forward(cudaStream_t st, void *y, float *lse,
                                                           const void *qkv, enum zero_dtype t,
                                                           int64_t B, int64_t T, int64_t C,
                                                           int64_t NH)
{
    if (t == ZERO_F32)
        return forward_typed(st, (float *)y, lse, (const float *)qkv, t, B, T, C, NH);
    if (t == ZERO_F16 || t == ZERO_BF16)
        return forward_typed(st, (uint16_t *)y, lse, (const uint16_t *)qkv, t, B, T, C, NH);
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuda_launch_flash_attention_backward(cudaStream_t st, float *dqkv,
                                                            float *dsum, const float *dy,
                                                            const void *qkv, enum zero_dtype t,
                                                            const float *lse, int64_t B, int64_t T,
                                                            int64_t C, int64_t NH)
{
    if (t == ZERO_F32)
        return backward_typed(st, dqkv, dsum, dy, (const float *)qkv, t, lse, B, T, C, NH);
    if (t == ZERO_F16 || t == ZERO_BF16)
        return backward_typed(st, dqkv, dsum, dy, (const uint16_t *)qkv, t, lse, B, T, C, NH);
    return cudaErrorInvalidValue;
}

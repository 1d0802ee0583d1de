// cuda_fast_kernels.cu -- native-mode (fast) versions of the LayerNorm forward and the
// softmax cross-entropy forward; the kernels of cuda_gpt_kernels.cu and cuda_layers.cu
// stay as the reference (exact mode: the cpu backend's loops and bits).
//
//   layernorm_forward_warp: one warp per row, 128-bit loads where the row allows,
//     fp32 moments summed per lane in order and then along a fixed shuffle tree (the
//     reference: one thread per row, fp64 sums). Three reads of the row (the second
//     and third from cache) and one write.
//   xent_forward_online: one block per row; each thread keeps a running maximum and
//     the sum of exp(z - max) over its strided classes (the online softmax), the block
//     combines the pairs along a fixed tree; a second pass writes the probabilities.
//     Two reads of the logits and one write, against three and two.
// Deterministic: fixed trees, no atomics. The tolerances against the cpu are stated
// in tests/test_cuda_backend.c.
#include <math.h>
#include <stdint.h>

#include "cuda_launch.h"

namespace
{

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = 8; // warps per block in the LayerNorm kernel
constexpr int kXentThreads = 512;

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = kWarp / 2; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// x (cols) as float4s where cols % 4 == 0 and x is 16-byte aligned
inline bool vec4_ok(const void *p, size_t cols)
{
    return cols % 4 == 0 && ((uintptr_t)p & 15) == 0;
}

__global__ void __launch_bounds__(kWarp *kRowsPerBlock)
    layernorm_forward_warp(float *y, float *mean, float *rstd, const float *x, const float *weight,
                           const float *bias, size_t rows, size_t cols, float eps, bool vec)
{
    const int lane = threadIdx.x % kWarp;
    for (size_t r = (size_t)blockIdx.x * kRowsPerBlock + threadIdx.x / kWarp; r < rows;
         r += (size_t)gridDim.x * kRowsPerBlock) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float sum = 0.0f;
        if (vec) {
            for (size_t c = 4 * (size_t)lane; c < cols; c += 4 * kWarp) {
                float4 v = *(const float4 *)(xr + c);
                sum += (v.x + v.y) + (v.z + v.w);
            }
        } else {
            for (size_t c = lane; c < cols; c += kWarp)
                sum += xr[c];
        }
        const float m = warp_sum(sum) / (float)cols;
        float var = 0.0f;
        if (vec) {
            for (size_t c = 4 * (size_t)lane; c < cols; c += 4 * kWarp) {
                float4 v = *(const float4 *)(xr + c);
                float a = v.x - m, b = v.y - m, cc = v.z - m, d = v.w - m;
                var += (a * a + b * b) + (cc * cc + d * d);
            }
        } else {
            for (size_t c = lane; c < cols; c += kWarp) {
                float a = xr[c] - m;
                var += a * a;
            }
        }
        const float s = 1.0f / sqrtf(warp_sum(var) / (float)cols + eps);
        if (vec) {
            for (size_t c = 4 * (size_t)lane; c < cols; c += 4 * kWarp) {
                float4 v = *(const float4 *)(xr + c);
                float4 w = *(const float4 *)(weight + c), b = *(const float4 *)(bias + c), o;
                o.x = (v.x - m) * s * w.x + b.x;
                o.y = (v.y - m) * s * w.y + b.y;
                o.z = (v.z - m) * s * w.z + b.z;
                o.w = (v.w - m) * s * w.w + b.w;
                *(float4 *)(yr + c) = o;
            }
        } else {
            for (size_t c = lane; c < cols; c += kWarp)
                yr[c] = (xr[c] - m) * s * weight[c] + bias[c];
        }
        if (lane == 0) {
            mean[r] = m;
            rstd[r] = s;
        }
    }
}

// (m, s) pairs: s = sum of exp(z - m) over the elements seen
__device__ __forceinline__ void online_add(float &m, float &s, float z)
{
    if (z > m) {
        s = s * expf(m - z) + 1.0f;
        m = z;
    } else {
        s += expf(z - m);
    }
}

__device__ __forceinline__ void online_merge(float &m, float &s, float m2, float s2)
{
    if (m2 > m) {
        s = s * expf(m - m2) + s2;
        m = m2;
    } else if (m2 > -INFINITY) {
        s += s2 * expf(m2 - m);
    }
}

__global__ void __launch_bounds__(kXentThreads)
    xent_forward_online(float *losses, float *probs, const float *logits, const int32_t *labels,
                        size_t rows, size_t classes)
{
    __shared__ float sm[kXentThreads / kWarp], ss[kXentThreads / kWarp];
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *z = logits + r * classes;
        float *p = probs + r * classes;
        float m = -INFINITY, s = 0.0f;
        for (size_t c = threadIdx.x; c < classes; c += kXentThreads)
            online_add(m, s, z[c]);
#pragma unroll
        for (int o = kWarp / 2; o > 0; o /= 2) {
            float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
            online_merge(m, s, m2, s2);
        }
        if (lane == 0) {
            sm[warp] = m;
            ss[warp] = s;
        }
        __syncthreads();
        m = sm[0];
        s = ss[0];
        for (int w = 1; w < kXentThreads / kWarp; w++) // every thread: the same order
            online_merge(m, s, sm[w], ss[w]);
        __syncthreads(); // sm, ss are read before the next row overwrites them
        const float inv = 1.0f / s;
        for (size_t c = threadIdx.x; c < classes; c += kXentThreads)
            p[c] = expf(z[c] - m) * inv;
        if (threadIdx.x == 0)
            losses[r] = logf(s) - (z[labels[r]] - m);
    }
}

} // namespace

extern "C" cudaError_t cuda_launch_layernorm_forward_fast(cudaStream_t st, float *y, float *mean,
                                                          float *rstd, const float *x,
                                                          const float *weight, const float *bias,
                                                          int64_t rows, int64_t cols, float eps)
{
    if (rows <= 0 || cols <= 0)
        return cudaSuccess;
    bool vec = vec4_ok(x, (size_t)cols) && vec4_ok(y, (size_t)cols) &&
               vec4_ok(weight, (size_t)cols) && vec4_ok(bias, (size_t)cols);
    size_t blocks = ((size_t)rows + kRowsPerBlock - 1) / kRowsPerBlock;
    unsigned grid = (unsigned)(blocks > 65536 ? 65536 : blocks);
    layernorm_forward_warp<<<grid, kWarp * kRowsPerBlock, 0, st>>>(
        y, mean, rstd, x, weight, bias, (size_t)rows, (size_t)cols, eps, vec);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_launch_xent_forward_fast(cudaStream_t st, float *losses, float *probs,
                                                     const float *logits, const int32_t *labels,
                                                     int64_t rows, int64_t classes)
{
    if (rows <= 0 || classes <= 0)
        return cudaSuccess;
    unsigned grid = (unsigned)(rows > 65536 ? 65536 : rows);
    xent_forward_online<<<grid, kXentThreads, 0, st>>>(losses, probs, logits, labels, (size_t)rows,
                                                       (size_t)classes);
    return cudaGetLastError();
}

// cuda_quant.cu -- the quant group's kernels (zero/backend_quant.h): one thread block
// per quantization block takes the block's max |x| (a max: the same in any order),
// then every thread writes its codes through src/base/quant_int8.h (int4: a second
// kernel, a thread per byte of two codes, through quant_int4.h), as the cpu backend's
// loops do, so the codes and the dequantized values are the cpu's bits.
#include "cuda_device.cuh"
#include "cuda_launch.h"
#include "base/quant_int4.h"
#include "base/quant_int8.h"

using namespace zero_cuda;

__global__ void quantize_int8_kernel(const void *x, zero_dtype t, size_t n, size_t block,
                                     float *scales, int8_t *q)
{
    __shared__ float amax[kThreads];
    size_t begin = (size_t)blockIdx.x * block, end = begin + block < n ? begin + block : n;
    float m = 0.0f;
    for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x)
        m = fmaxf(m, fabsf(load_f32(x, t, i)));
    amax[threadIdx.x] = m;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            amax[threadIdx.x] = fmaxf(amax[threadIdx.x], amax[threadIdx.x + half]);
        __syncthreads();
    }
    float scale = quant_int8_scale(amax[0]);
    if (threadIdx.x == 0)
        scales[blockIdx.x] = scale;
    for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x)
        q[i] = quant_int8_code(load_f32(x, t, i), scale);
}

// A block's scale alone (int4): the same max as quantize_int8_kernel's.
__global__ void int4_scales_kernel(const void *x, zero_dtype t, size_t n, size_t block,
                                   float *scales)
{
    __shared__ float amax[kThreads];
    size_t begin = (size_t)blockIdx.x * block, end = begin + block < n ? begin + block : n;
    float m = 0.0f;
    for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x)
        m = fmaxf(m, fabsf(load_f32(x, t, i)));
    amax[threadIdx.x] = m;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            amax[threadIdx.x] = fmaxf(amax[threadIdx.x], amax[threadIdx.x + half]);
        __syncthreads();
    }
    if (threadIdx.x == 0)
        scales[blockIdx.x] = quant_int4_scale(amax[0]);
}

// byte b: elements 2b (low nibble) and 2b + 1 (high; 0 past n)
__global__ void int4_codes_kernel(const void *x, zero_dtype t, size_t n, size_t block,
                                  const float *scales, uint8_t *q)
{
    ZERO_CUDA_FOR(b, (n + 1) / 2)
    {
        size_t i = 2 * b;
        int lo = quant_int4_code(load_f32(x, t, i), scales[i / block]);
        int hi = i + 1 < n ? quant_int4_code(load_f32(x, t, i + 1), scales[(i + 1) / block]) : 0;
        q[b] = quant_int4_pack(lo, hi);
    }
}

__global__ void dequantize_int4_kernel(const float *scales, const uint8_t *q, size_t n,
                                       size_t block, void *y, zero_dtype t)
{
    ZERO_CUDA_FOR(i, n)
    store_f32(y, t, i, quant_int4_value(quant_int4_unpack(q, i), scales[i / block]));
}

__global__ void dequantize_int8_kernel(const float *scales, const int8_t *q, size_t n, size_t block,
                                       void *y, zero_dtype t)
{
    ZERO_CUDA_FOR(i, n) store_f32(y, t, i, quant_int8_value(q[i], scales[i / block]));
}

extern "C" cudaError_t cuda_launch_quantize_int8(cudaStream_t st, const void *x, enum zero_dtype t,
                                                 size_t n, size_t block, float *scales, int8_t *q)
{
    if (n == 0)
        return cudaSuccess;
    size_t blocks = (n + block - 1) / block;
    quantize_int8_kernel<<<(unsigned)blocks, kThreads, 0, st>>>(x, t, n, block, scales, q);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_launch_dequantize_int8(cudaStream_t st, const float *scales,
                                                   const int8_t *q, size_t n, size_t block, void *y,
                                                   enum zero_dtype t)
{
    if (n == 0)
        return cudaSuccess;
    dequantize_int8_kernel<<<grid_for(n), kThreads, 0, st>>>(scales, q, n, block, y, t);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_launch_quantize_int4(cudaStream_t st, const void *x, enum zero_dtype t,
                                                 size_t n, size_t block, float *scales, uint8_t *q)
{
    if (n == 0)
        return cudaSuccess;
    size_t blocks = (n + block - 1) / block;
    int4_scales_kernel<<<(unsigned)blocks, kThreads, 0, st>>>(x, t, n, block, scales);
    int4_codes_kernel<<<grid_for((n + 1) / 2), kThreads, 0, st>>>(x, t, n, block, scales, q);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_launch_dequantize_int4(cudaStream_t st, const float *scales,
                                                   const uint8_t *q, size_t n, size_t block,
                                                   void *y, enum zero_dtype t)
{
    if (n == 0)
        return cudaSuccess;
    dequantize_int4_kernel<<<grid_for(n), kThreads, 0, st>>>(scales, q, n, block, y, t);
    return cudaGetLastError();
}

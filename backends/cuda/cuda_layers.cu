// cuda_layers.cu -- layer kernels of the cuda backend, fp32 activations: bias,
// GELU, softmax cross-entropy, and the id/label range check. Forward and backward
// side by side, mirroring backends/cpu/cpu_layers.c.
//
// bias_add, bias_grad, GELU and softmax cross-entropy equal the cpu backend's bits
// (same operations, same order, no contraction). GELU calls src/base/exact_math.h's erf,
// tanh and exp, the functions the cpu backend calls, not the device's libm;
// xent_forward's exp and log (in double) are exact_math.h's too, and its sum of exps
// is the cpu backend's sequence over the row (one thread sums it: this is the exact
// path; native mode takes cuda_fast_kernels.cu's online softmax).
#include <float.h>

#include "cuda_device.cuh"
#include "cuda_launch.h"

using namespace zero_cuda;

// ---------------------------------------------------------------- bias

__global__ void bias_add_kernel(float *y, const float *b, size_t rows, size_t cols)
{
    ZERO_CUDA_FOR(i, rows * cols) y[i] = __fadd_rn(y[i], b[i % cols]);
}

extern "C" cudaError_t cuda_launch_bias_add(cudaStream_t st, float *y, const float *b, int64_t rows,
                                            int64_t cols)
{
    size_t n = (size_t)rows * (size_t)cols;
    if (n == 0)
        return cudaSuccess;
    bias_add_kernel<<<grid_for(n), kThreads, 0, st>>>(y, b, (size_t)rows, (size_t)cols);
    return cudaGetLastError();
}

// db (cols) = beta * db + the column sums of dy (rows, cols): one thread per
// column adds its rows in ascending order (no atomics), the sum the cpu backend
// forms, then combined with beta * db as there. The rows arrive through shared
// memory in tiles (see kSumCols in cuda_device.cuh). Two buffers, so one barrier
// per tile: a buffer is refilled only after the barrier that follows its last read.
__global__ void __launch_bounds__(kThreads)
    bias_grad_kernel(float *db, const float *dy, size_t rows, size_t cols, float beta)
{
    __shared__ float tile[2][kSumRows][kSumCols]; // 16 KiB
    const unsigned lc = threadIdx.x % kSumCols, lr = threadIdx.x / kSumCols;
    const size_t tiles = (rows + kSumRows - 1) / kSumRows;
    for (size_t c0 = (size_t)blockIdx.x * kSumCols; c0 < cols; c0 += (size_t)gridDim.x * kSumCols) {
        const size_t col = c0 + lc; // this thread loads column col; threads lr == 0 sum it
        float v[kSumLoads];         // this thread's rows lr + k * kSumRowStep of a tile
#pragma unroll
        for (int k = 0; k < kSumLoads; k++) {
            size_t r = lr + (size_t)k * kSumRowStep;
            v[k] = r < rows && col < cols ? dy[r * cols + col] : 0.0f;
        }
        float sum = 0.0f;
        for (size_t t = 0; t < tiles; t++) {
            float(*buf)[kSumCols] = tile[t & 1];
#pragma unroll
            for (int k = 0; k < kSumLoads; k++)
                buf[lr + k * kSumRowStep][lc] = v[k];
            __syncthreads();
            // the next tile's loads go out before this tile's chain starts
            const size_t next = (t + 1) * kSumRows;
#pragma unroll
            for (int k = 0; k < kSumLoads; k++) {
                size_t r = next + lr + (size_t)k * kSumRowStep;
                v[k] = r < rows && col < cols ? dy[r * cols + col] : 0.0f;
            }
            if (lr == 0) {
                const size_t n = rows - t * kSumRows < kSumRows ? rows - t * kSumRows : kSumRows;
#pragma unroll 8
                for (size_t r = 0; r < n; r++)
                    sum = __fadd_rn(sum, buf[r][lc]);
            }
        }
        if (lr == 0 && col < cols)
            db[col] = beta == 0.0f ? sum : __fadd_rn(__fmul_rn(beta, db[col]), sum);
        __syncthreads(); // the next column group refills a buffer this one may still read
    }
}

extern "C" cudaError_t cuda_launch_bias_grad(cudaStream_t st, float *db, const float *dy,
                                             int64_t rows, int64_t cols, float beta)
{
    if (cols <= 0)
        return cudaSuccess;
    bias_grad_kernel<<<grid_for_cols((size_t)cols), kThreads, 0, st>>>(
        db, dy, (size_t)(rows > 0 ? rows : 0), (size_t)cols, beta);
    return cudaGetLastError();
}

// ---------------------------------------------------------------- GELU

#define GELU_INV_SQRT2 0.70710678118654752440f
#define GELU_INV_SQRT_2PI 0.39894228040143267794f
#define GELU_TANH_SCALE 0.79788456080286535588f
#define GELU_TANH_CUBIC 0.044715f

// erf:  0.5 x (1 + erf(x / sqrt2));  tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
__global__ void gelu_forward_kernel(float *y, const float *x, size_t n, zero_gelu kind)
{
    ZERO_CUDA_FOR(i, n)
    {
        float v = x[i];
        if (kind == ZERO_GELU_ERF) {
            y[i] = __fmul_rn(__fmul_rn(0.5f, v),
                             __fadd_rn(1.0f, exact_erff(__fmul_rn(v, GELU_INV_SQRT2))));
        } else {
            float cube = __fmul_rn(__fmul_rn(__fmul_rn(GELU_TANH_CUBIC, v), v), v);
            float u = __fmul_rn(GELU_TANH_SCALE, __fadd_rn(v, cube));
            y[i] = __fmul_rn(__fmul_rn(0.5f, v), __fadd_rn(1.0f, exact_tanhf(u)));
        }
    }
}

// dx = dy * gelu'(x), the cpu backend's formulas (1 - t^2 instead of 1/cosh^2)
__global__ void gelu_backward_kernel(float *dx, const float *x, const float *dy, size_t n,
                                     zero_gelu kind)
{
    ZERO_CUDA_FOR(i, n)
    {
        float v = x[i], d;
        if (kind == ZERO_GELU_ERF) {
            float cdf = __fmul_rn(0.5f, __fadd_rn(1.0f, exact_erff(__fmul_rn(v, GELU_INV_SQRT2))));
            float pdf = __fmul_rn(exact_expf(__fmul_rn(__fmul_rn(-0.5f, v), v)), GELU_INV_SQRT_2PI);
            d = __fadd_rn(cdf, __fmul_rn(v, pdf));
        } else {
            float cube = __fmul_rn(__fmul_rn(__fmul_rn(GELU_TANH_CUBIC, v), v), v);
            float u = __fmul_rn(GELU_TANH_SCALE, __fadd_rn(v, cube));
            float t = exact_tanhf(u);
            float du =
                __fmul_rn(GELU_TANH_SCALE,
                          __fadd_rn(1.0f, __fmul_rn(__fmul_rn(3.0f * GELU_TANH_CUBIC, v), v)));
            float left = __fmul_rn(0.5f, __fadd_rn(1.0f, t));
            float right =
                __fmul_rn(__fmul_rn(__fmul_rn(0.5f, v), __fsub_rn(1.0f, __fmul_rn(t, t))), du);
            d = __fadd_rn(left, right);
        }
        dx[i] = __fmul_rn(dy[i], d);
    }
}

extern "C" cudaError_t cuda_launch_gelu_forward(cudaStream_t st, float *y, const float *x, size_t n,
                                                enum zero_gelu kind)
{
    if (n == 0)
        return cudaSuccess;
    gelu_forward_kernel<<<grid_for(n), kThreads, 0, st>>>(y, x, n, kind);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_launch_gelu_backward(cudaStream_t st, float *dx, const float *x,
                                                 const float *dy, size_t n, enum zero_gelu kind)
{
    if (n == 0)
        return cudaSuccess;
    gelu_backward_kernel<<<grid_for(n), kThreads, 0, st>>>(dx, x, dy, n, kind);
    return cudaGetLastError();
}

// ---------------------------------------------------------------- index range check

// The smallest bad row wins (atomicMin on an integer: deterministic), so the error
// names the same row as the cpu backend's sequential check.
__global__ void index_check_kernel(const int32_t *ids, size_t rows, int64_t limit,
                                   unsigned long long *first_bad)
{
    ZERO_CUDA_FOR(r, rows)
    {
        int32_t v = ids[r];
        if (v < 0 || (int64_t)v >= limit)
            atomicMin(first_bad, (unsigned long long)r);
    }
}

extern "C" cudaError_t cuda_launch_index_check(cudaStream_t st, const int32_t *ids, int64_t rows,
                                               int64_t limit, unsigned long long *first_bad)
{
    cudaError_t e = cudaMemsetAsync(first_bad, 0xff, sizeof(*first_bad), st);
    if (e != cudaSuccess || rows <= 0)
        return e;
    index_check_kernel<<<grid_for((size_t)rows), kThreads, 0, st>>>(ids, (size_t)rows, limit,
                                                                    first_bad);
    return cudaGetLastError();
}

// ---------------------------------------------------------------- softmax cross-entropy

// One block per row. The max is exact in any order; the sum of exps is kept in
// double and reduced along a fixed tree, so the bits do not change run to run.
__global__ void xent_forward_kernel(float *losses, float *probs, const float *logits,
                                    const int32_t *labels, size_t classes)
{
    __shared__ float smax[kThreads];
    __shared__ double ssum[1];
    size_t r = blockIdx.x;
    const float *z = logits + r * classes;
    float *p = probs + r * classes;

    float max = -FLT_MAX;
    for (size_t c = threadIdx.x; c < classes; c += blockDim.x)
        max = z[c] > max ? z[c] : max;
    smax[threadIdx.x] = max;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w && smax[threadIdx.x + w] > smax[threadIdx.x])
            smax[threadIdx.x] = smax[threadIdx.x + w];
        __syncthreads();
    }
    max = smax[0];

    for (size_t c = threadIdx.x; c < classes; c += blockDim.x)
        p[c] = exact_expf(__fsub_rn(z[c], max));
    __syncthreads();
    if (threadIdx.x == 0) { /* the cpu backend's order: one sequence over the row, in double */
        double row = 0.0;
        for (size_t c = 0; c < classes; c++)
            row = __dadd_rn(row, (double)p[c]);
        ssum[0] = row;
    }
    __syncthreads();
    double sum = ssum[0];
    float inv_sum = __double2float_rn(__drcp_rn(sum));
    for (size_t c = threadIdx.x; c < classes; c += blockDim.x)
        p[c] = __fmul_rn(p[c], inv_sum);
    if (threadIdx.x == 0)
        losses[r] = __double2float_rn(exact_log(sum) - (double)__fsub_rn(z[labels[r]], max));
}

extern "C" cudaError_t cuda_launch_xent_forward(cudaStream_t st, float *losses, float *probs,
                                                const float *logits, const int32_t *labels,
                                                int64_t rows, int64_t classes)
{
    if (rows <= 0)
        return cudaSuccess;
    // rows beyond the grid's y limit would need a loop; x allows 2^31 - 1 blocks
    xent_forward_kernel<<<(unsigned)rows, kThreads, 0, st>>>(losses, probs, logits, labels,
                                                             (size_t)classes);
    return cudaGetLastError();
}

// dlogits = (probs - onehot(labels)) * dloss, elementwise: bits equal the cpu's
__global__ void xent_backward_kernel(float *d, const float *p, const int32_t *labels, size_t rows,
                                     size_t classes, float dloss)
{
    ZERO_CUDA_FOR(i, rows * classes)
    {
        size_t r = i / classes, c = i % classes;
        float v = p[i];
        d[i] = (int64_t)c == labels[r] ? __fmul_rn(__fsub_rn(v, 1.0f), dloss) : __fmul_rn(v, dloss);
    }
}

extern "C" cudaError_t cuda_launch_xent_backward(cudaStream_t st, float *dlogits,
                                                 const float *probs, const int32_t *labels,
                                                 int64_t rows, int64_t classes, float dloss)
{
    size_t n = (size_t)rows * (size_t)classes;
    if (n == 0)
        return cudaSuccess;
    xent_backward_kernel<<<grid_for(n), kThreads, 0, st>>>(dlogits, probs, labels, (size_t)rows,
                                                           (size_t)classes, dloss);
    return cudaGetLastError();
}

// cuda_gpt_kernels.cu -- GPT kernels of the cuda backend, fp32: token embedding,
// LayerNorm, and the causal softmax of attention (its products are cuBLAS calls in
// cuda_layer_ops.c). Forward and backward side by side, mirroring
// backends/cpu/cpu_gpt_kernels.c.
//
// Every sum here runs in the cpu backend's order (one thread per row or per
// column, ascending), so embedding, LayerNorm and the softmax equal the cpu
// backend's bits for the same inputs (expf aside in the softmax forward). No
// atomics: the embedding backward gives each table row its rows in ascending order.
#include "cuda_device.cuh"
#include "cuda_launch.h"

using namespace zero_cuda;

// ---------------------------------------------------------------- token embedding

// y (rows, cols) row r = table row ids[r] (ids checked by the caller first)
__global__ void embedding_forward_kernel(float *y, const int32_t *ids, const float *table,
                                         size_t rows, size_t cols)
{
    ZERO_CUDA_FOR(i, rows * cols)
    {
        size_t r = i / cols, c = i % cols;
        y[i] = table[(size_t)ids[r] * cols + c];
    }
}

extern "C" cudaError_t cuda_launch_embedding_forward(cudaStream_t st, float *y, const int32_t *ids,
                                                     const float *table, int64_t rows, int64_t cols)
{
    size_t n = (size_t)rows * (size_t)cols;
    if (n == 0)
        return cudaSuccess;
    embedding_forward_kernel<<<grid_for(n), kThreads, 0, st>>>(y, ids, table, (size_t)rows,
                                                               (size_t)cols);
    return cudaGetLastError();
}

// Thread (c, g) owns column c of the table rows whose id is g modulo the group
// count: it walks every row in ascending order and adds the ones it owns, so each
// table element receives its rows in the cpu backend's order, and no two threads
// touch the same element.
enum { kEmbedGroups = 32 };

__global__ void embedding_backward_kernel(float *dtable, const int32_t *ids, const float *dy,
                                          size_t rows, size_t cols)
{
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned g = blockIdx.y;
    if (c >= cols)
        return;
    for (size_t r = 0; r < rows; r++) {
        int32_t id = ids[r];
        if ((unsigned)id % kEmbedGroups != g)
            continue;
        float *d = dtable + (size_t)id * cols + c;
        *d = __fadd_rn(*d, dy[r * cols + c]);
    }
}

extern "C" cudaError_t cuda_launch_embedding_backward(cudaStream_t st, float *dtable,
                                                      const int32_t *ids, const float *dy,
                                                      int64_t rows, int64_t cols, int64_t vocab,
                                                      float beta)
{
    if (beta == 0.0f) { // a kernel, not cudaMemsetAsync: dtable may be host_alloc memory
        cudaError_t e =
            cuda_launch_fill(st, dtable, sizeof(float), 0, (size_t)vocab * (size_t)cols);
        if (e != cudaSuccess)
            return e;
    }
    if (rows <= 0 || cols <= 0)
        return cudaSuccess;
    dim3 grid((unsigned)(((size_t)cols + kThreads - 1) / kThreads), kEmbedGroups);
    embedding_backward_kernel<<<grid, kThreads, 0, st>>>(dtable, ids, dy, (size_t)rows,
                                                         (size_t)cols);
    return cudaGetLastError();
}

// ---------------------------------------------------------------- LayerNorm

// One thread per row, the cpu backend's loops: moments in double, in order.
__global__ void layernorm_forward_kernel(float *y, float *mean, float *rstd, const float *x,
                                         const float *weight, const float *bias, size_t rows,
                                         size_t cols, float eps)
{
    ZERO_CUDA_FOR(r, rows)
    {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        double sum = 0.0;
        for (size_t c = 0; c < cols; c++)
            sum = __dadd_rn(sum, (double)xr[c]);
        const float m = __double2float_rn(__ddiv_rn(sum, (double)cols));
        double var = 0.0;
        for (size_t c = 0; c < cols; c++) {
            double d = (double)__fsub_rn(xr[c], m);
            var = __dadd_rn(var, __dmul_rn(d, d));
        }
        const float s = __double2float_rn(
            __ddiv_rn(1.0, __dsqrt_rn(__dadd_rn(__ddiv_rn(var, (double)cols), (double)eps))));
        for (size_t c = 0; c < cols; c++)
            yr[c] = __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(xr[c], m), s), weight[c]), bias[c]);
        mean[r] = m;
        rstd[r] = s;
    }
}

extern "C" cudaError_t cuda_launch_layernorm_forward(cudaStream_t st, float *y, float *mean,
                                                     float *rstd, const float *x,
                                                     const float *weight, const float *bias,
                                                     int64_t rows, int64_t cols, float eps)
{
    if (rows <= 0)
        return cudaSuccess;
    layernorm_forward_kernel<<<grid_for((size_t)rows), kThreads, 0, st>>>(
        y, mean, rstd, x, weight, bias, (size_t)rows, (size_t)cols, eps);
    return cudaGetLastError();
}

// dweight, dbias: one thread per column, rows in ascending order, then beta * old
__global__ void layernorm_param_grads_kernel(float *dweight, float *dbias, const float *dy,
                                             const float *x, const float *mean, const float *rstd,
                                             size_t rows, size_t cols, float w_beta, float b_beta)
{
    ZERO_CUDA_FOR(c, cols)
    {
        float sw = 0.0f, sb = 0.0f;
        for (size_t r = 0; r < rows; r++) {
            float g = dy[r * cols + c];
            float xhat = __fmul_rn(__fsub_rn(x[r * cols + c], mean[r]), rstd[r]);
            sw = __fadd_rn(sw, __fmul_rn(g, xhat));
            sb = __fadd_rn(sb, g);
        }
        dweight[c] = w_beta == 0.0f ? sw : __fadd_rn(__fmul_rn(w_beta, dweight[c]), sw);
        dbias[c] = b_beta == 0.0f ? sb : __fadd_rn(__fmul_rn(b_beta, dbias[c]), sb);
    }
}

// dx: one thread per row, float sums in order, as the cpu backend
__global__ void layernorm_dx_kernel(float *dx, const float *dy, const float *x, const float *weight,
                                    const float *mean, const float *rstd, size_t rows, size_t cols,
                                    float dx_beta)
{
    ZERO_CUDA_FOR(r, rows)
    {
        const float *g = dy + r * cols, *xr = x + r * cols;
        float *d = dx + r * cols;
        const float m = mean[r], s = rstd[r];
        float sum_g = 0.0f, sum_gx = 0.0f;
        for (size_t c = 0; c < cols; c++) {
            const float gw = __fmul_rn(g[c], weight[c]);
            sum_g = __fadd_rn(sum_g, gw);
            sum_gx = __fadd_rn(sum_gx, __fmul_rn(gw, __fmul_rn(__fsub_rn(xr[c], m), s)));
        }
        const float mean_g = __fdiv_rn(sum_g, (float)cols);
        const float mean_gx = __fdiv_rn(sum_gx, (float)cols);
        for (size_t c = 0; c < cols; c++) {
            const float xhat = __fmul_rn(__fsub_rn(xr[c], m), s);
            const float inner =
                __fsub_rn(__fsub_rn(__fmul_rn(g[c], weight[c]), mean_g), __fmul_rn(xhat, mean_gx));
            const float v = __fmul_rn(s, inner);
            d[c] = dx_beta == 0.0f ? v : __fadd_rn(__fmul_rn(dx_beta, d[c]), v);
        }
    }
}

extern "C" cudaError_t cuda_launch_layernorm_backward(cudaStream_t st, float *dx, float *dweight,
                                                      float *dbias, const float *dy, const float *x,
                                                      const float *weight, const float *mean,
                                                      const float *rstd, int64_t rows, int64_t cols,
                                                      float dx_beta, float w_beta, float b_beta)
{
    if (cols <= 0)
        return cudaSuccess;
    layernorm_param_grads_kernel<<<grid_for((size_t)cols), kThreads, 0, st>>>(
        dweight, dbias, dy, x, mean, rstd, (size_t)(rows > 0 ? rows : 0), (size_t)cols, w_beta,
        b_beta);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || rows <= 0)
        return e;
    layernorm_dx_kernel<<<grid_for((size_t)rows), kThreads, 0, st>>>(
        dx, dy, x, weight, mean, rstd, (size_t)rows, (size_t)cols, dx_beta);
    return cudaGetLastError();
}

// ---------------------------------------------------------------- causal softmax

// Row i of a (T, T) block: softmax of its first i + 1 entries in place, zeros after.
// One thread per row, float sum in order, as the cpu backend.
__global__ void causal_softmax_kernel(float *att, size_t rows, size_t T)
{
    ZERO_CUDA_FOR(row, rows)
    {
        float *a = att + row * T;
        size_t i = row % T;
        float max = a[0];
        for (size_t j = 1; j <= i; j++)
            max = a[j] > max ? a[j] : max;
        float sum = 0.0f;
        for (size_t j = 0; j <= i; j++) {
            a[j] = expf(__fsub_rn(a[j], max));
            sum = __fadd_rn(sum, a[j]);
        }
        const float inv = __fdiv_rn(1.0f, sum);
        for (size_t j = 0; j <= i; j++)
            a[j] = __fmul_rn(a[j], inv);
        for (size_t j = i + 1; j < T; j++)
            a[j] = 0.0f;
    }
}

extern "C" cudaError_t cuda_launch_causal_softmax(cudaStream_t st, float *att, int64_t rows,
                                                  int64_t T)
{
    if (rows <= 0)
        return cudaSuccess;
    causal_softmax_kernel<<<grid_for((size_t)rows), kThreads, 0, st>>>(att, (size_t)rows,
                                                                       (size_t)T);
    return cudaGetLastError();
}

// ds = att * (datt - sum_k att[k] datt[k]) over j <= i, zeros after
__global__ void causal_softmax_backward_kernel(float *datt, const float *att, size_t rows, size_t T)
{
    ZERO_CUDA_FOR(row, rows)
    {
        float *d = datt + row * T;
        const float *a = att + row * T;
        size_t i = row % T;
        float dot = 0.0f;
        for (size_t j = 0; j <= i; j++)
            dot = __fadd_rn(dot, __fmul_rn(a[j], d[j]));
        for (size_t j = 0; j <= i; j++)
            d[j] = __fmul_rn(a[j], __fsub_rn(d[j], dot));
        for (size_t j = i + 1; j < T; j++)
            d[j] = 0.0f;
    }
}

extern "C" cudaError_t cuda_launch_causal_softmax_backward(cudaStream_t st, float *datt,
                                                           const float *att, int64_t rows,
                                                           int64_t T)
{
    if (rows <= 0)
        return cudaSuccess;
    causal_softmax_backward_kernel<<<grid_for((size_t)rows), kThreads, 0, st>>>(
        datt, att, (size_t)rows, (size_t)T);
    return cudaGetLastError();
}

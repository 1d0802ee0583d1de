// cuda_gpt_kernels.cu -- GPT kernels of the cuda backend, fp32: token embedding,
// LayerNorm, and the causal softmax of attention (its products are cuBLAS calls in
// cuda_layer_ops.c). Forward and backward side by side, mirroring
// backends/cpu/cpu_gpt_kernels.c.
//
// Every sum here runs in the cpu backend's order (one thread per row or per
// column, ascending), so embedding, LayerNorm and the softmax equal the cpu
// backend's bits for the same inputs (exp is src/base/exact_math.h's on both). No
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

// LayerNorm's row loops are one chain per row in the cpu backend's order, one
// thread per row. Read straight from global memory, a warp's 32 rows make every
// access uncoalesced; so the staged kernels copy kLnRows whole rows into shared
// memory with coalesced loads, run the same loops there (kLnRows threads), and
// store the results coalesced. Rows sit at an odd stride so that those threads,
// each at the same c of its own row, hit distinct banks. The plain kernels stay
// for rows too wide to stage.
constexpr unsigned kLnRows = 8;
constexpr int kLnBatch = 8;             // loads in flight per thread while staging
constexpr int64_t kLnMaxCols = 1 << 20; // wider rows never fit: keeps the index math in 32 bits

__host__ __device__ __forceinline__ unsigned ln_stride(unsigned cols)
{
    return cols | 1u;
}

// dst (n / cols rows of cols, stride ld) = src (n contiguous floats)
__device__ __forceinline__ void ln_stage_rows(float *dst, const float *src, unsigned n,
                                              unsigned cols, unsigned ld)
{
    for (unsigned base = threadIdx.x; base < n; base += kLnBatch * blockDim.x) {
        float v[kLnBatch];
#pragma unroll
        for (int k = 0; k < kLnBatch; k++) {
            const unsigned i = base + k * blockDim.x;
            v[k] = i < n ? src[i] : 0.0f;
        }
#pragma unroll
        for (int k = 0; k < kLnBatch; k++) {
            const unsigned i = base + k * blockDim.x;
            if (i < n)
                dst[i / cols * ld + i % cols] = v[k];
        }
    }
}

// Rows per block of a staged kernel holding `arrays` (rows, cols) tiles in shared
// memory, and its dynamic shared memory: kLnRows, fewer where the device's
// opt-in limit is smaller, 0 when one row does not fit (use the plain kernel).
template <class Kernel>
static cudaError_t ln_tile(Kernel *kernel, unsigned arrays, int64_t cols, unsigned *rows_per_block,
                           size_t *smem)
{
    *rows_per_block = 0;
    *smem = 0;
    if (cols <= 0 || cols > kLnMaxCols)
        return cudaSuccess;
    int dev = 0, limit = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e != cudaSuccess)
        return e;
    const size_t row_bytes = (size_t)arrays * ln_stride((unsigned)cols) * sizeof(float);
    const size_t fit = (size_t)limit / row_bytes;
    if (fit == 0)
        return cudaSuccess;
    *rows_per_block = fit < kLnRows ? (unsigned)fit : kLnRows;
    *smem = *rows_per_block * row_bytes;
    if (*smem > 48 * 1024) // above the default a kernel must opt in
        e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)*smem);
    return e;
}

// Blocks for a loop over the row tiles of rows
static unsigned ln_grid(size_t rows, unsigned rows_per_block)
{
    size_t blocks = (rows + rows_per_block - 1) / rows_per_block;
    return (unsigned)(blocks > 65536 ? 65536 : blocks);
}

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

// The same loops as layernorm_forward_kernel, one thread per row, on rows staged in
// shared memory (see kLnRows); y overwrites x there, then leaves coalesced.
__global__ void __launch_bounds__(kThreads)
    layernorm_forward_staged_kernel(float *y, float *mean, float *rstd, const float *x,
                                    const float *weight, const float *bias, size_t rows,
                                    unsigned cols, unsigned rows_per_block, float eps)
{
    extern __shared__ float ln_smem[]; // (rows_per_block, ld): x, then y
    const unsigned ld = ln_stride(cols);
    for (size_t r0 = (size_t)blockIdx.x * rows_per_block; r0 < rows;
         r0 += (size_t)gridDim.x * rows_per_block) {
        const unsigned nr = rows - r0 < rows_per_block ? (unsigned)(rows - r0) : rows_per_block;
        ln_stage_rows(ln_smem, x + r0 * cols, nr * cols, cols, ld);
        __syncthreads();
        if (threadIdx.x < nr) {
            float *xr = ln_smem + threadIdx.x * ld;
            double sum = 0.0;
            for (unsigned c = 0; c < cols; c++)
                sum = __dadd_rn(sum, (double)xr[c]);
            const float m = __double2float_rn(__ddiv_rn(sum, (double)cols));
            double var = 0.0;
            for (unsigned c = 0; c < cols; c++) {
                double d = (double)__fsub_rn(xr[c], m);
                var = __dadd_rn(var, __dmul_rn(d, d));
            }
            const float s = __double2float_rn(
                __ddiv_rn(1.0, __dsqrt_rn(__dadd_rn(__ddiv_rn(var, (double)cols), (double)eps))));
            for (unsigned c = 0; c < cols; c++)
                xr[c] = __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(xr[c], m), s), weight[c]), bias[c]);
            mean[r0 + threadIdx.x] = m;
            rstd[r0 + threadIdx.x] = s;
        }
        __syncthreads();
        float *yb = y + r0 * cols;
        const unsigned n = nr * cols;
        for (unsigned i = threadIdx.x; i < n; i += blockDim.x)
            yb[i] = ln_smem[i / cols * ld + i % cols];
        __syncthreads(); // the next tile overwrites ln_smem
    }
}

extern "C" cudaError_t cuda_launch_layernorm_forward(cudaStream_t st, float *y, float *mean,
                                                     float *rstd, const float *x,
                                                     const float *weight, const float *bias,
                                                     int64_t rows, int64_t cols, float eps)
{
    if (rows <= 0)
        return cudaSuccess;
    unsigned rows_per_block = 0;
    size_t smem = 0;
    cudaError_t e = ln_tile(layernorm_forward_staged_kernel, 1, cols, &rows_per_block, &smem);
    if (e != cudaSuccess)
        return e;
    if (rows_per_block == 0) { // a row does not fit in shared memory
        layernorm_forward_kernel<<<grid_for((size_t)rows), kThreads, 0, st>>>(
            y, mean, rstd, x, weight, bias, (size_t)rows, (size_t)cols, eps);
        return cudaGetLastError();
    }
    layernorm_forward_staged_kernel<<<ln_grid((size_t)rows, rows_per_block), kThreads, smem, st>>>(
        y, mean, rstd, x, weight, bias, (size_t)rows, (unsigned)cols, rows_per_block, eps);
    return cudaGetLastError();
}

// dweight, dbias (cols): one thread per column adds its rows in ascending order,
// then beta * old, as the cpu backend. The rows arrive through shared memory in
// tiles (see kSumCols in cuda_device.cuh, and bias_grad_kernel for the double
// buffer); the loading threads form the per-element products g * xhat, with the
// same operations, so the summing threads only add.
__global__ void __launch_bounds__(kThreads)
    layernorm_param_grads_kernel(float *dweight, float *dbias, const float *dy, const float *x,
                                 const float *mean, const float *rstd, size_t rows, size_t cols,
                                 float w_beta, float b_beta)
{
    __shared__ float tgx[2][kSumRows][kSumCols]; // g * xhat, 16 KiB
    __shared__ float tg[2][kSumRows][kSumCols];  // g, 16 KiB
    const unsigned lc = threadIdx.x % kSumCols, lr = threadIdx.x / kSumCols;
    const size_t tiles = (rows + kSumRows - 1) / kSumRows;
    for (size_t c0 = (size_t)blockIdx.x * kSumCols; c0 < cols; c0 += (size_t)gridDim.x * kSumCols) {
        const size_t col = c0 + lc; // this thread loads column col; threads lr == 0 sum it
        // this thread's rows lr + k * kSumRowStep of a tile: dy, x, mean, rstd
        float g[kSumLoads], xv[kSumLoads], m[kSumLoads], s[kSumLoads];
#pragma unroll
        for (int k = 0; k < kSumLoads; k++) {
            size_t r = lr + (size_t)k * kSumRowStep;
            bool in = r < rows && col < cols;
            g[k] = in ? dy[r * cols + col] : 0.0f;
            xv[k] = in ? x[r * cols + col] : 0.0f;
            m[k] = in ? mean[r] : 0.0f;
            s[k] = in ? rstd[r] : 0.0f;
        }
        float sw = 0.0f, sb = 0.0f;
        for (size_t t = 0; t < tiles; t++) {
            float(*bgx)[kSumCols] = tgx[t & 1];
            float(*bg)[kSumCols] = tg[t & 1];
#pragma unroll
            for (int k = 0; k < kSumLoads; k++) {
                const float xhat = __fmul_rn(__fsub_rn(xv[k], m[k]), s[k]);
                bgx[lr + k * kSumRowStep][lc] = __fmul_rn(g[k], xhat);
                bg[lr + k * kSumRowStep][lc] = g[k];
            }
            __syncthreads();
            // the next tile's loads go out before this tile's chains start
            const size_t next = (t + 1) * kSumRows;
#pragma unroll
            for (int k = 0; k < kSumLoads; k++) {
                size_t r = next + lr + (size_t)k * kSumRowStep;
                bool in = r < rows && col < cols;
                g[k] = in ? dy[r * cols + col] : 0.0f;
                xv[k] = in ? x[r * cols + col] : 0.0f;
                m[k] = in ? mean[r] : 0.0f;
                s[k] = in ? rstd[r] : 0.0f;
            }
            if (lr == 0) {
                const size_t n = rows - t * kSumRows < kSumRows ? rows - t * kSumRows : kSumRows;
#pragma unroll 8
                for (size_t r = 0; r < n; r++) {
                    sw = __fadd_rn(sw, bgx[r][lc]);
                    sb = __fadd_rn(sb, bg[r][lc]);
                }
            }
        }
        if (lr == 0 && col < cols) {
            dweight[col] = w_beta == 0.0f ? sw : __fadd_rn(__fmul_rn(w_beta, dweight[col]), sw);
            dbias[col] = b_beta == 0.0f ? sb : __fadd_rn(__fmul_rn(b_beta, dbias[col]), sb);
        }
        __syncthreads(); // the next column group refills buffers this one may still read
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

// The same loops as layernorm_dx_kernel, one thread per row, on dy and x rows
// staged in shared memory; v overwrites dy there, and the store combines it with
// dx_beta * dx (the same operations) on the way out, coalesced.
__global__ void __launch_bounds__(kThreads)
    layernorm_dx_staged_kernel(float *dx, const float *dy, const float *x, const float *weight,
                               const float *mean, const float *rstd, size_t rows, unsigned cols,
                               unsigned rows_per_block, float dx_beta)
{
    extern __shared__ float ln_smem[]; // (rows_per_block, ld) dy then v; (rows_per_block, ld) x
    const unsigned ld = ln_stride(cols);
    float *gs = ln_smem, *xs = ln_smem + rows_per_block * ld;
    for (size_t r0 = (size_t)blockIdx.x * rows_per_block; r0 < rows;
         r0 += (size_t)gridDim.x * rows_per_block) {
        const unsigned nr = rows - r0 < rows_per_block ? (unsigned)(rows - r0) : rows_per_block;
        const unsigned n = nr * cols;
        ln_stage_rows(gs, dy + r0 * cols, n, cols, ld);
        ln_stage_rows(xs, x + r0 * cols, n, cols, ld);
        __syncthreads();
        if (threadIdx.x < nr) {
            float *g = gs + threadIdx.x * ld;
            const float *xr = xs + threadIdx.x * ld;
            const float m = mean[r0 + threadIdx.x], s = rstd[r0 + threadIdx.x];
            float sum_g = 0.0f, sum_gx = 0.0f;
            for (unsigned c = 0; c < cols; c++) {
                const float gw = __fmul_rn(g[c], weight[c]);
                sum_g = __fadd_rn(sum_g, gw);
                sum_gx = __fadd_rn(sum_gx, __fmul_rn(gw, __fmul_rn(__fsub_rn(xr[c], m), s)));
            }
            const float mean_g = __fdiv_rn(sum_g, (float)cols);
            const float mean_gx = __fdiv_rn(sum_gx, (float)cols);
            for (unsigned c = 0; c < cols; c++) {
                const float xhat = __fmul_rn(__fsub_rn(xr[c], m), s);
                const float inner = __fsub_rn(__fsub_rn(__fmul_rn(g[c], weight[c]), mean_g),
                                              __fmul_rn(xhat, mean_gx));
                g[c] = __fmul_rn(s, inner);
            }
        }
        __syncthreads();
        float *d = dx + r0 * cols;
        for (unsigned base = threadIdx.x; base < n; base += kLnBatch * blockDim.x) {
            float old[kLnBatch]; // dx before this call, loaded together to keep them in flight
#pragma unroll
            for (int k = 0; k < kLnBatch; k++) {
                const unsigned i = base + k * blockDim.x;
                old[k] = dx_beta != 0.0f && i < n ? d[i] : 0.0f;
            }
#pragma unroll
            for (int k = 0; k < kLnBatch; k++) {
                const unsigned i = base + k * blockDim.x;
                if (i < n) {
                    const float v = gs[i / cols * ld + i % cols];
                    d[i] = dx_beta == 0.0f ? v : __fadd_rn(__fmul_rn(dx_beta, old[k]), v);
                }
            }
        }
        __syncthreads(); // the next tile overwrites ln_smem
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
    layernorm_param_grads_kernel<<<grid_for_cols((size_t)cols), kThreads, 0, st>>>(
        dweight, dbias, dy, x, mean, rstd, (size_t)(rows > 0 ? rows : 0), (size_t)cols, w_beta,
        b_beta);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || rows <= 0)
        return e;
    unsigned rows_per_block = 0;
    size_t smem = 0;
    e = ln_tile(layernorm_dx_staged_kernel, 2, cols, &rows_per_block, &smem);
    if (e != cudaSuccess)
        return e;
    if (rows_per_block == 0) { // a row does not fit in shared memory
        layernorm_dx_kernel<<<grid_for((size_t)rows), kThreads, 0, st>>>(
            dx, dy, x, weight, mean, rstd, (size_t)rows, (size_t)cols, dx_beta);
        return cudaGetLastError();
    }
    layernorm_dx_staged_kernel<<<ln_grid((size_t)rows, rows_per_block), kThreads, smem, st>>>(
        dx, dy, x, weight, mean, rstd, (size_t)rows, (unsigned)cols, rows_per_block, dx_beta);
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
            a[j] = exact_expf(__fsub_rn(a[j], max));
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

// cuda_llama_kernels.cu -- the llama group's kernels (zero/backend_llama.h), fp32:
// RMSNorm, the rotary embedding, SwiGLU and the grouped-query packing. Forward and
// backward side by side, mirroring backends/cpu/cpu_llama_kernels.c operation for
// operation: every sum runs in the cpu's order (one thread per row or per column,
// ascending), products go through the round-to-nearest intrinsics (never fused), and
// the elementwise math is src/base/llama_math.h's, shared with the cpu. So each
// kernel gives the cpu backend's bits for the same inputs.
#include "cuda_device.cuh"
#include "cuda_launch.h"

#include "base/llama_math.h"

using namespace zero_cuda;

// ---------------------------------------------------------------- RMSNorm

// one thread per row: rstd = 1 / sqrt(sum x^2 / cols + eps) (double, ascending)
__global__ void rmsnorm_forward_kernel(float *y, float *rstd, const float *x, const float *weight,
                                       size_t rows, size_t cols, float eps)
{
    ZERO_CUDA_FOR(r, rows)
    {
        const float *xr = x + r * cols;
        double ss = 0.0;
        for (size_t c = 0; c < cols; c++)
            ss = __dadd_rn(ss, __dmul_rn((double)xr[c], (double)xr[c]));
        const float s = (float)(1.0 / sqrt(ss / (double)cols + (double)eps));
        for (size_t c = 0; c < cols; c++)
            y[r * cols + c] = __fmul_rn(__fmul_rn(xr[c], s), weight[c]);
        rstd[r] = s;
    }
}

extern "C" cudaError_t cuda_launch_rmsnorm_forward(cudaStream_t st, float *y, float *rstd,
                                                   const float *x, const float *weight,
                                                   int64_t rows, int64_t cols, float eps)
{
    if (rows == 0)
        return cudaSuccess;
    rmsnorm_forward_kernel<<<grid_for((size_t)rows), kThreads, 0, st>>>(
        y, rstd, x, weight, (size_t)rows, (size_t)cols, eps);
    return cudaGetLastError();
}

// one thread per column: dweight = w_beta dweight + sum_r dy xhat (rows ascending)
__global__ void rmsnorm_dweight_kernel(float *dweight, const float *dy, const float *x,
                                       const float *rstd, size_t rows, size_t cols, float w_beta)
{
    ZERO_CUDA_FOR(c, cols)
    {
        float sw = 0.0f;
        for (size_t r = 0; r < rows; r++)
            sw = __fadd_rn(sw, __fmul_rn(dy[r * cols + c], __fmul_rn(x[r * cols + c], rstd[r])));
        dweight[c] = w_beta == 0.0f ? sw : __fadd_rn(dweight[c], sw);
    }
}

// one thread per row: dx = dx_beta dx + rstd (g - xhat mean_c(g xhat)), g = dy weight
__global__ void rmsnorm_dx_kernel(float *dx, const float *dy, const float *x, const float *weight,
                                  const float *rstd, size_t rows, size_t cols, float dx_beta)
{
    ZERO_CUDA_FOR(r, rows)
    {
        const float *g = dy + r * cols, *xr = x + r * cols;
        float *d = dx + r * cols;
        const float s = rstd[r];
        double dot = 0.0;
        for (size_t c = 0; c < cols; c++)
            dot = __dadd_rn(
                dot, __dmul_rn((double)__fmul_rn(g[c], weight[c]), (double)__fmul_rn(xr[c], s)));
        const float m = (float)(dot / (double)cols);
        for (size_t c = 0; c < cols; c++) {
            const float v = __fmul_rn(
                s, __fsub_rn(__fmul_rn(g[c], weight[c]), __fmul_rn(__fmul_rn(xr[c], s), m)));
            d[c] = dx_beta == 0.0f ? v : __fadd_rn(d[c], v);
        }
    }
}

extern "C" cudaError_t cuda_launch_rmsnorm_backward(cudaStream_t st, float *dx, float *dweight,
                                                    const float *dy, const float *x,
                                                    const float *weight, const float *rstd,
                                                    int64_t rows, int64_t cols, float dx_beta,
                                                    float w_beta)
{
    rmsnorm_dweight_kernel<<<grid_for((size_t)cols), kThreads, 0, st>>>(
        dweight, dy, x, rstd, (size_t)rows, (size_t)cols, w_beta);
    if (rows > 0)
        rmsnorm_dx_kernel<<<grid_for((size_t)rows), kThreads, 0, st>>>(
            dx, dy, x, weight, rstd, (size_t)rows, (size_t)cols, dx_beta);
    return cudaGetLastError();
}

// ---------------------------------------------------------------- rotary embedding

// thread (t, i): the table entries of position t, pair i
__global__ void rope_table_kernel(float *cos_t, float *sin_t, size_t T, int64_t D,
                                  struct zero_rope_params p)
{
    const size_t half = (size_t)D / 2;
    ZERO_CUDA_FOR(j, T * half)
    {
        const size_t t = j / half, i = j % half;
        llama_rope_cos_sin((int64_t)t, llama_rope_inv_freq((int64_t)i, D, &p), &cos_t[j],
                           &sin_t[j]);
    }
}

extern "C" cudaError_t cuda_launch_rope_table(cudaStream_t st, float *cos_t, float *sin_t,
                                              int64_t T, int64_t D,
                                              const struct zero_rope_params *p)
{
    const size_t n = (size_t)T * (size_t)(D / 2);
    rope_table_kernel<<<grid_for(n), kThreads, 0, st>>>(cos_t, sin_t, (size_t)T, D, *p);
    return cudaGetLastError();
}

// thread (r, h, i): one pair of one head of one row, rotated in place
__global__ void rope_apply_kernel(float *x, const float *cos_t, const float *sin_t, size_t rows,
                                  size_t T, size_t heads, size_t D, float sign)
{
    const size_t half = D / 2;
    ZERO_CUDA_FOR(j, rows * heads * half)
    {
        const size_t i = j % half, rh = j / half, r = rh / heads;
        float *lo = x + rh * D + i, *hi = lo + half;
        const float c = cos_t[(r % T) * half + i], si = __fmul_rn(sign, sin_t[(r % T) * half + i]);
        const float a = *lo, b = *hi;
        *lo = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, si));
        *hi = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, si));
    }
}

extern "C" cudaError_t cuda_launch_rope_apply(cudaStream_t st, float *x, const float *cos_t,
                                              const float *sin_t, int64_t rows, int64_t T,
                                              int64_t heads, int64_t D, int inverse)
{
    const size_t n = (size_t)rows * (size_t)heads * (size_t)(D / 2);
    if (n == 0)
        return cudaSuccess;
    rope_apply_kernel<<<grid_for(n), kThreads, 0, st>>>(
        x, cos_t, sin_t, (size_t)rows, (size_t)T, (size_t)heads, (size_t)D, inverse ? -1.0f : 1.0f);
    return cudaGetLastError();
}

// ---------------------------------------------------------------- SwiGLU

__global__ void swiglu_forward_kernel(float *h, const float *gate, const float *up, size_t n)
{
    ZERO_CUDA_FOR(i, n)
    {
        h[i] = __fmul_rn(__fmul_rn(gate[i], llama_sigmoid(gate[i])), up[i]);
    }
}

extern "C" cudaError_t cuda_launch_swiglu_forward(cudaStream_t st, float *h, const float *gate,
                                                  const float *up, size_t n)
{
    if (n == 0)
        return cudaSuccess;
    swiglu_forward_kernel<<<grid_for(n), kThreads, 0, st>>>(h, gate, up, n);
    return cudaGetLastError();
}

__global__ void swiglu_backward_kernel(float *dgate, float *dup, const float *dh, const float *gate,
                                       const float *up, size_t n)
{
    ZERO_CUDA_FOR(i, n)
    {
        const float g = gate[i], sig = llama_sigmoid(g), d = dh[i];
        const float dsilu = __fmul_rn(sig, __fadd_rn(1.0f, __fmul_rn(g, __fsub_rn(1.0f, sig))));
        dgate[i] = __fmul_rn(__fmul_rn(d, up[i]), dsilu);
        dup[i] = __fmul_rn(d, __fmul_rn(g, sig));
    }
}

extern "C" cudaError_t cuda_launch_swiglu_backward(cudaStream_t st, float *dgate, float *dup,
                                                   const float *dh, const float *gate,
                                                   const float *up, size_t n)
{
    if (n == 0)
        return cudaSuccess;
    swiglu_backward_kernel<<<grid_for(n), kThreads, 0, st>>>(dgate, dup, dh, gate, up, n);
    return cudaGetLastError();
}

// ---------------------------------------------------------------- grouped-query packing

// element (r, col) of qkv (rows, 3Q): q as it is, k and v from kv head h / G
__global__ void gqa_pack_kernel(float *qkv, const float *q, const float *k, const float *v,
                                size_t rows, size_t H, size_t KV, size_t D)
{
    const size_t Q = H * D, G = H / KV;
    ZERO_CUDA_FOR(j, rows * 3 * Q)
    {
        const size_t r = j / (3 * Q), col = j % (3 * Q), part = col / Q, h = (col % Q) / D,
                     d = col % D;
        qkv[j] = part == 0   ? q[r * Q + col]
                 : part == 1 ? k[(r * KV + h / G) * D + d]
                             : v[(r * KV + h / G) * D + d];
    }
}

extern "C" cudaError_t cuda_launch_gqa_pack(cudaStream_t st, float *qkv, const float *q,
                                            const float *k, const float *v, int64_t rows, int64_t H,
                                            int64_t KV, int64_t D)
{
    const size_t n = (size_t)rows * 3 * (size_t)(H * D);
    if (n == 0)
        return cudaSuccess;
    gqa_pack_kernel<<<grid_for(n), kThreads, 0, st>>>(qkv, q, k, v, (size_t)rows, (size_t)H,
                                                      (size_t)KV, (size_t)D);
    return cudaGetLastError();
}

// dq element (r, col); dk, dv element (r, j, d): kv head j's group summed, heads ascending
__global__ void gqa_unpack_q_kernel(float *dq, const float *dqkv, size_t rows, size_t Q)
{
    ZERO_CUDA_FOR(j, rows * Q)
    {
        dq[j] = dqkv[(j / Q) * 3 * Q + j % Q];
    }
}

__global__ void gqa_unpack_kv_kernel(float *dk, float *dv, const float *dqkv, size_t rows, size_t H,
                                     size_t KV, size_t D)
{
    const size_t Q = H * D, G = H / KV, K = KV * D;
    ZERO_CUDA_FOR(j, rows * K)
    {
        const size_t r = j / K, kv = (j % K) / D, d = j % D;
        const float *gk = dqkv + r * 3 * Q + Q + kv * G * D + d, *gv = gk + Q;
        float sk = gk[0], sv = gv[0];
        for (size_t g = 1; g < G; g++) {
            sk = __fadd_rn(sk, gk[g * D]);
            sv = __fadd_rn(sv, gv[g * D]);
        }
        dk[j] = sk;
        dv[j] = sv;
    }
}

extern "C" cudaError_t cuda_launch_gqa_unpack(cudaStream_t st, float *dq, float *dk, float *dv,
                                              const float *dqkv, int64_t rows, int64_t H,
                                              int64_t KV, int64_t D)
{
    if (rows == 0)
        return cudaSuccess;
    const size_t Q = (size_t)(H * D), K = (size_t)(KV * D);
    gqa_unpack_q_kernel<<<grid_for((size_t)rows * Q), kThreads, 0, st>>>(dq, dqkv, (size_t)rows, Q);
    gqa_unpack_kv_kernel<<<grid_for((size_t)rows * K), kThreads, 0, st>>>(
        dk, dv, dqkv, (size_t)rows, (size_t)H, (size_t)KV, (size_t)D);
    return cudaGetLastError();
}

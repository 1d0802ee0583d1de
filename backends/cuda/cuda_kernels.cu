// cuda_kernels.cu -- elementwise kernels, the fused optimizers and the reductions
// of the cuda backend. Each mirrors its backends/cpu/cpu_kernels.c twin operation
// for operation, with explicit round-to-nearest intrinsics so that nothing is
// contracted into an FMA: the results equal the cpu backend's bit for bit.
#include "cuda_device.cuh"
#include "cuda_launch.h"

using namespace zero_cuda;

// ---------------------------------------------------------------- fill, cast

__global__ void fill_kernel(void *x, size_t elem_size, uint64_t pattern, size_t n)
{
    ZERO_CUDA_FOR(i, n)
    {
        switch (elem_size) {
        case 1:
            ((uint8_t *)x)[i] = (uint8_t)pattern;
            break;
        case 2:
            ((uint16_t *)x)[i] = (uint16_t)pattern;
            break;
        case 4:
            ((uint32_t *)x)[i] = (uint32_t)pattern;
            break;
        default:
            ((uint64_t *)x)[i] = pattern;
            break;
        }
    }
}

extern "C" cudaError_t cuda_launch_fill(cudaStream_t st, void *x, size_t elem_size,
                                        uint64_t pattern, size_t n)
{
    if (n == 0)
        return cudaSuccess;
    fill_kernel<<<grid_for(n), kThreads, 0, st>>>(x, elem_size, pattern, n);
    return cudaGetLastError();
}

__global__ void cast_kernel(void *dst, zero_dtype dt, const void *src, zero_dtype sty, size_t rows,
                            size_t cols, size_t ld_dst, size_t ld_src)
{
    ZERO_CUDA_FOR(i, rows * cols)
    {
        size_t r = i / cols, c = i % cols;
        size_t s = r * ld_src + c, d = r * ld_dst + c;
        if (sty == ZERO_F64) // to fp32 only
            ((float *)dst)[d] = __double2float_rn(((const double *)src)[s]);
        else if (dt == ZERO_F64)
            ((double *)dst)[d] = (double)load_f32(src, sty, s);
        else
            store_f32(dst, dt, d, load_f32(src, sty, s));
    }
}

// The contiguous fp32 <-> fp16/bf16 casts that stored activations
// (libzero.activations = "compute") pass through twice per value: 8 elements a
// thread, as llm.c's x128 packs, one 128-bit access of 8 16-bit values and two of
// 4 floats, where both pointers are 16-byte aligned; the same per-element
// conversion as cast_kernel (the same bits); a scalar loop takes the n % 8 tail.
struct alignas(16) pack16 {
    uint16_t h[8];
};

__global__ void cast_narrow_x128(uint16_t *__restrict__ dst, zero_dtype dt,
                                 const float *__restrict__ src, size_t n)
{
    const size_t packs = n / 8;
    ZERO_CUDA_FOR(p, packs)
    {
        const float4 a = reinterpret_cast<const float4 *>(src)[2 * p];
        const float4 b = reinterpret_cast<const float4 *>(src)[2 * p + 1];
        const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        pack16 out;
#pragma unroll
        for (int j = 0; j < 8; j++)
            store_f32(out.h, dt, j, v[j]);
        reinterpret_cast<pack16 *>(dst)[p] = out;
    }
    ZERO_CUDA_FOR(i, n - 8 * packs)
    {
        store_f32(dst, dt, 8 * packs + i, src[8 * packs + i]);
    }
}

__global__ void cast_widen_x128(float *__restrict__ dst, const uint16_t *__restrict__ src,
                                zero_dtype st, size_t n)
{
    const size_t packs = n / 8;
    ZERO_CUDA_FOR(p, packs)
    {
        const pack16 in = reinterpret_cast<const pack16 *>(src)[p];
        float v[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = load_f32(in.h, st, j);
        reinterpret_cast<float4 *>(dst)[2 * p] = make_float4(v[0], v[1], v[2], v[3]);
        reinterpret_cast<float4 *>(dst)[2 * p + 1] = make_float4(v[4], v[5], v[6], v[7]);
    }
    ZERO_CUDA_FOR(i, n - 8 * packs)
    {
        dst[8 * packs + i] = load_f32(src, st, 8 * packs + i);
    }
}

static bool is_16bit(zero_dtype t)
{
    return t == ZERO_F16 || t == ZERO_BF16;
}

static bool aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

extern "C" cudaError_t cuda_launch_cast(cudaStream_t st, void *dst, enum zero_dtype dst_type,
                                        const void *src, enum zero_dtype src_type, size_t rows,
                                        size_t cols, size_t ld_dst, size_t ld_src)
{
    if (rows == 0 || cols == 0)
        return cudaSuccess;
    const bool contiguous = rows == 1 || (ld_dst == cols && ld_src == cols);
    const size_t n = rows * cols;
    if (contiguous && aligned16(dst) && aligned16(src)) {
        if (src_type == ZERO_F32 && is_16bit(dst_type)) {
            cast_narrow_x128<<<grid_for(n / 8 + 1), kThreads, 0, st>>>((uint16_t *)dst, dst_type,
                                                                       (const float *)src, n);
            return cudaGetLastError();
        }
        if (dst_type == ZERO_F32 && is_16bit(src_type)) {
            cast_widen_x128<<<grid_for(n / 8 + 1), kThreads, 0, st>>>(
                (float *)dst, (const uint16_t *)src, src_type, n);
            return cudaGetLastError();
        }
    }
    cast_kernel<<<grid_for(rows * cols), kThreads, 0, st>>>(dst, dst_type, src, src_type, rows,
                                                            cols, ld_dst, ld_src);
    return cudaGetLastError();
}

// ---------------------------------------------------------------- axpy, scale, add

__global__ void axpy_kernel(float a, const float *__restrict__ x, float *__restrict__ y, size_t n)
{
    ZERO_CUDA_FOR(i, n) y[i] = __fadd_rn(y[i], __fmul_rn(a, x[i]));
}

__global__ void scale_kernel(float a, float *x, size_t n)
{
    ZERO_CUDA_FOR(i, n) x[i] = __fmul_rn(x[i], a);
}

// out may be a or b: each element is read before it is written, by the same thread
__global__ void add_kernel(float *out, const float *a, const float *b, size_t n)
{
    ZERO_CUDA_FOR(i, n) out[i] = __fadd_rn(a[i], b[i]);
}

extern "C" cudaError_t cuda_launch_axpy(cudaStream_t st, float a, const float *x, float *y,
                                        size_t n)
{
    if (n == 0)
        return cudaSuccess;
    axpy_kernel<<<grid_for(n), kThreads, 0, st>>>(a, x, y, n);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_launch_scale(cudaStream_t st, float a, float *x, size_t n)
{
    if (n == 0)
        return cudaSuccess;
    scale_kernel<<<grid_for(n), kThreads, 0, st>>>(a, x, n);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_launch_add(cudaStream_t st, float *out, const float *a, const float *b,
                                       size_t n)
{
    if (n == 0)
        return cudaSuccess;
    add_kernel<<<grid_for(n), kThreads, 0, st>>>(out, a, b, n);
    return cudaGetLastError();
}

// ---------------------------------------------------------------- optimizers

// src/base/host_optim.c adam_f32 (the cpu backend's and the offload path's loop), operation for
// operation:
//   g = grad / grad_div; Adam: g = g + l2 * p; AdamW: p = p - decay * p
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + ((1 - beta2) * g) * g
//   p = p - lr * ((m / bc1) / (sqrtf(v / bc2) + eps))
__device__ __forceinline__ float adam_element(const zero_adam_consts &k, float p, float g, float *m,
                                              float *v)
{
    g = __fdiv_rn(g, k.grad_div);
    if (k.l2 != 0.0f)
        g = __fadd_rn(g, __fmul_rn(k.l2, p));
    if (k.decay != 0.0f)
        p = __fsub_rn(p, __fmul_rn(k.decay, p));
    float mt = __fadd_rn(__fmul_rn(k.beta1, *m), __fmul_rn(k.one_minus_beta1, g));
    float vt = __fadd_rn(__fmul_rn(k.beta2, *v), __fmul_rn(__fmul_rn(k.one_minus_beta2, g), g));
    *m = mt;
    *v = vt;
    float m_hat = __fdiv_rn(mt, k.bias_correction1);
    float v_hat = __fdiv_rn(vt, k.bias_correction2);
    return __fsub_rn(p, __fmul_rn(k.lr, __fdiv_rn(m_hat, __fadd_rn(__fsqrt_rn(v_hat), k.eps))));
}

__global__ void adam_kernel(float *param, const void *grad, zero_dtype grad_type, float *m,
                            float *v, size_t n, zero_adam_consts k, void *copy,
                            zero_dtype copy_type)
{
    ZERO_CUDA_FOR(i, n)
    {
        float mi = m[i], vi = v[i];
        float p = adam_element(k, param[i], load_f32(grad, grad_type, i), &mi, &vi);
        m[i] = mi;
        v[i] = vi;
        param[i] = p;
        if (copy != nullptr)
            store_f32(copy, copy_type, i, p);
    }
}

extern "C" cudaError_t cuda_launch_adam(cudaStream_t st, float *param, const void *grad,
                                        enum zero_dtype grad_type, float *exp_avg,
                                        float *exp_avg_sq, size_t n, struct zero_adam_consts k,
                                        void *param_copy, enum zero_dtype copy_type)
{
    if (n == 0)
        return cudaSuccess;
    adam_kernel<<<grid_for(n), kThreads, 0, st>>>(param, grad, grad_type, exp_avg, exp_avg_sq, n, k,
                                                  param_copy, copy_type);
    return cudaGetLastError();
}

// src/base/host_optim.c sgd_f32, operation for operation (torch.optim.SGD)
__global__ void sgd_kernel(float *param, const void *grad, zero_dtype grad_type, float *buf,
                           size_t n, cuda_sgd_consts k, void *copy, zero_dtype copy_type)
{
    ZERO_CUDA_FOR(i, n)
    {
        float p = param[i];
        float g = __fdiv_rn(load_f32(grad, grad_type, i), k.grad_div);
        if (k.weight_decay != 0.0f)
            g = __fadd_rn(g, __fmul_rn(k.weight_decay, p));
        if (k.momentum != 0.0f) {
            float b =
                k.first ? g : __fadd_rn(__fmul_rn(k.momentum, buf[i]), __fmul_rn(k.undamped, g));
            buf[i] = b;
            g = k.nesterov ? __fadd_rn(g, __fmul_rn(k.momentum, b)) : b;
        }
        p = __fsub_rn(p, __fmul_rn(k.lr, g));
        param[i] = p;
        if (copy != nullptr)
            store_f32(copy, copy_type, i, p);
    }
}

extern "C" cudaError_t cuda_launch_sgd(cudaStream_t st, float *param, const void *grad,
                                       enum zero_dtype grad_type, float *momentum, size_t n,
                                       struct cuda_sgd_consts k, void *param_copy,
                                       enum zero_dtype copy_type)
{
    if (n == 0)
        return cudaSuccess;
    sgd_kernel<<<grid_for(n), kThreads, 0, st>>>(param, grad, grad_type, momentum, n, k, param_copy,
                                                 copy_type);
    return cudaGetLastError();
}

// ---------------------------------------------------------------- reductions

// One thread per block, summing in order: the order of this sum is part of the
// exactness contract (backend.h), and it equals the cpu backend's bits.
__global__ void sumsq_blocks_kernel(const void *x, zero_dtype t, size_t n, size_t block,
                                    size_t blocks, double *out)
{
    ZERO_CUDA_FOR(b, blocks)
    {
        size_t end = (b + 1) * block < n ? (b + 1) * block : n;
        double sum = 0.0;
        for (size_t i = b * block; i < end; i++) {
            double v = t == ZERO_F64 ? ((const double *)x)[i] : (double)load_f32(x, t, i);
            sum = __dadd_rn(sum, __dmul_rn(v, v));
        }
        out[b] = sum;
    }
}

extern "C" cudaError_t cuda_launch_sumsq_blocks(cudaStream_t st, const void *x, enum zero_dtype t,
                                                size_t n, size_t block, double *out)
{
    size_t blocks = (n + block - 1) / block;
    if (blocks == 0)
        return cudaSuccess;
    sumsq_blocks_kernel<<<grid_for(blocks), kThreads, 0, st>>>(x, t, n, block, blocks, out);
    return cudaGetLastError();
}

// Every thread that sees inf or NaN stores 1: the same value, so the race is benign.
__global__ void nonfinite_kernel(const void *x, zero_dtype t, size_t n, unsigned long long *flag)
{
    int bad = 0;
    ZERO_CUDA_FOR(i, n)
    {
        switch (t) {
        case ZERO_F32:
            bad |= (__float_as_uint(((const float *)x)[i]) & 0x7f800000u) == 0x7f800000u;
            break;
        case ZERO_F64: {
            unsigned long long b = (unsigned long long)__double_as_longlong(((const double *)x)[i]);
            bad |= (b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
            break;
        }
        case ZERO_F16:
            bad |= (((const uint16_t *)x)[i] & 0x7c00) == 0x7c00;
            break;
        default:
            bad |= (((const uint16_t *)x)[i] & 0x7f80) == 0x7f80;
            break;
        }
    }
    if (bad)
        *flag = 1;
}

extern "C" cudaError_t cuda_launch_nonfinite(cudaStream_t st, const void *x, enum zero_dtype t,
                                             size_t n, unsigned long long *flag)
{
    cudaError_t e = cudaMemsetAsync(flag, 0, sizeof(*flag), st);
    if (e != cudaSuccess || n == 0)
        return e;
    nonfinite_kernel<<<grid_for(n), kThreads, 0, st>>>(x, t, n, flag);
    return cudaGetLastError();
}

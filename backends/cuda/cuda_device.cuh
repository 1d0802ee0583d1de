// cuda_device.cuh -- device helpers shared by the .cu files of the cuda backend:
// the fp16/bf16 conversions of src/dtype.c, bit for bit, the launch shape of a
// grid-stride loop, and the tile shape of the column sums.
//
// CUDA's own __float2half_rn and __float2bfloat16_rn round the same way for
// numbers, but NaNs come out canonical; these keep sign and payload exactly as
// src/dtype.c does, so a cast on the GPU equals the cpu backend's in every bit
// (tests/test_cuda_backend.c compares all 65536 fp16 and bf16 patterns).
#ifndef ZERO_CUDA_DEVICE_CUH
#define ZERO_CUDA_DEVICE_CUH

#include <stdint.h>

#include "zero/dtype.h"

namespace zero_cuda
{

// Drops the low `shift` bits of v, rounding to nearest with ties to even.
__device__ __forceinline__ uint32_t round_shift_rne(uint32_t v, unsigned shift)
{
    uint32_t kept = v >> shift;
    uint32_t rest = v & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1)))
        kept++;
    return kept;
}

__device__ __forceinline__ uint16_t f32_to_f16(float f)
{
    uint32_t x = __float_as_uint(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t mag = x & 0x7fffffff;
    if (mag >= 0x7f800000) {
        if (mag == 0x7f800000)
            return sign | 0x7c00;
        return sign | 0x7e00 | (uint16_t)((mag >> 13) & 0x3ff);
    }
    if (mag >= 0x477ff000)
        return sign | 0x7c00;
    if (mag >= 0x38800000)
        return sign | (uint16_t)round_shift_rne(mag - (112u << 23), 13);
    if (mag < 0x33000000)
        return sign;
    uint32_t e = mag >> 23;
    uint32_t mant = (mag & 0x7fffff) | 0x800000;
    return sign | (uint16_t)round_shift_rne(mant, 126 - e);
}

__device__ __forceinline__ float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1f;
    uint32_t m = h & 0x3ff;
    if (e == 0x1f)
        return __uint_as_float(sign | 0x7f800000 | (m << 13) | (m ? 0x400000u : 0));
    if (e == 0) {
        if (m == 0)
            return __uint_as_float(sign);
        uint32_t exp = 113;
        while (!(m & 0x400)) {
            m <<= 1;
            exp--;
        }
        return __uint_as_float(sign | (exp << 23) | ((m & 0x3ff) << 13));
    }
    return __uint_as_float(sign | ((e + 112) << 23) | (m << 13));
}

__device__ __forceinline__ uint16_t f32_to_bf16(float f)
{
    uint32_t x = __float_as_uint(f);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x0040);
    return (uint16_t)round_shift_rne(x, 16);
}

__device__ __forceinline__ float bf16_to_f32(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    if ((x & 0x7fffffff) > 0x7f800000)
        x |= 0x400000;
    return __uint_as_float(x);
}

// Element i of an fp32/fp16/bf16 array as fp32 (exact).
__device__ __forceinline__ float load_f32(const void *x, zero_dtype t, size_t i)
{
    switch (t) {
    case ZERO_F16:
        return f16_to_f32(((const uint16_t *)x)[i]);
    case ZERO_BF16:
        return bf16_to_f32(((const uint16_t *)x)[i]);
    default:
        return ((const float *)x)[i];
    }
}

// Stores v as element i of an fp32/fp16/bf16 array (rounded to nearest even).
__device__ __forceinline__ void store_f32(void *x, zero_dtype t, size_t i, float v)
{
    switch (t) {
    case ZERO_F16:
        ((uint16_t *)x)[i] = f32_to_f16(v);
        break;
    case ZERO_BF16:
        ((uint16_t *)x)[i] = f32_to_bf16(v);
        break;
    default:
        ((float *)x)[i] = v;
        break;
    }
}

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items: enough to fill any current GPU,
// never more than the grid allows.
inline unsigned grid_for(size_t n)
{
    size_t blocks = (n + kThreads - 1) / kThreads;
    const size_t cap = 65536;
    return (unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
}

// Column sums (bias and LayerNorm parameter gradients) run one chain per column,
// rows added in ascending order: the cpu backend's order, so the bits match. What
// a fast kernel may change is only how the rows reach that chain. A block owns
// kSumCols columns, one 32-byte sector of each row, so its loads stay coalesced
// while cols = 768 still spreads over 96 blocks; its kThreads threads stage tiles
// of kSumRows rows into shared memory, the next tile's loads in flight while
// kSumCols threads add this tile's rows.
constexpr int kSumCols = 8;
constexpr int kSumRows = 256;
constexpr int kSumRowStep = kThreads / kSumCols;  // rows between one thread's loads
constexpr int kSumLoads = kSumRows / kSumRowStep; // loads per thread per tile
static_assert(kThreads % kSumCols == 0 && kSumRows % kSumRowStep == 0, "sum tile shape");

// Blocks for a loop over the column groups of a (rows, cols) column sum.
inline unsigned grid_for_cols(size_t cols)
{
    size_t blocks = (cols + kSumCols - 1) / kSumCols;
    const size_t cap = 65536;
    return (unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
}

#define ZERO_CUDA_FOR(i, n)                                                                        \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                        \
         i += (size_t)gridDim.x * blockDim.x)

} // namespace zero_cuda

#endif

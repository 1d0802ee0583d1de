// cuda_device.cuh -- device helpers shared by the .cu files of the cuda backend:
// element loads and stores through the fp16/bf16 conversions of src/base/dtype_convert.h
// (the very functions the cpu backend runs, compiled for the device; so are the
// elementwise functions of src/base/exact_math.h), the launch
// shape of a grid-stride loop, and the tile shape of the column sums.
//
// CUDA's own __float2half_rn and __float2bfloat16_rn round the same way for
// numbers, but NaNs come out canonical; these keep sign and payload exactly as
// the cpu does, so a cast on the GPU equals the cpu backend's in every bit
// (tests/test_cuda_backend.c compares all 65536 fp16 and bf16 patterns).
#ifndef ZERO_CUDA_DEVICE_CUH
#define ZERO_CUDA_DEVICE_CUH

#include <stdint.h>

#include "base/dtype_convert.h"
#include "base/exact_math.h"
#include "zero/dtype.h"

namespace zero_cuda
{

// Element loads and stores: src/base/dtype_convert.h's dtype_load_f32 and
// dtype_store_f32, the cpu backend's very code, under the kernels' short names.
__device__ __forceinline__ float load_f32(const void *x, zero_dtype t, size_t i)
{
    return dtype_load_f32(x, t, i);
}

__device__ __forceinline__ void store_f32(void *x, zero_dtype t, size_t i, float v)
{
    dtype_store_f32(x, t, i, v);
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

// cuda_embedding_backward.cu -- the bucketed token-embedding backward of native mode.
// llm.c's wte backward buckets the rows by token on the host; here the ids stay on the
// device:
//   1. the row numbers 0 .. rows-1 sorted by id (cub's radix sort, stable): each id's
//      rows form one run, in ascending row order;
//   2. one warp per (sorted position, 128-column chunk); the warp at the start of a run
//      adds that run's rows of dy into the table row in order, each lane 4 columns
//      (128-bit loads and stores where the row allows), kPrefetch rows in flight.
// Every table element so gets old + dy[r0] + dy[r1] + ... over its rows in ascending r,
// the reference kernel's chain (cuda_gpt_kernels.cu) and so the cpu backend's bits, while
// the work spreads over ids and column chunks instead of 32 groups that each walk every
// row. Deterministic: a radix sort and one owner per element, no atomics.
#include <stdint.h>

#include <cub/device/device_radix_sort.cuh>

#include "cuda_launch.h"

namespace
{

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = 8;
constexpr int kChunk = 4 * kWarp; // columns per warp
constexpr int kPrefetch = 8;      // rows of dy loaded before they are added

__global__ void iota_rows(int32_t *rows_out, size_t rows)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < rows;
         i += (size_t)gridDim.x * blockDim.x)
        rows_out[i] = (int32_t)i;
}

__device__ __forceinline__ void add4(float4 &acc, const float4 v)
{
    acc.x = __fadd_rn(acc.x, v.x);
    acc.y = __fadd_rn(acc.y, v.y);
    acc.z = __fadd_rn(acc.z, v.z);
    acc.w = __fadd_rn(acc.w, v.w);
}

// dtable (vocab, cols) rows += the rows of dy (rows, cols) listed by run, see above
__global__ void __launch_bounds__(kWarp *kWarpsPerBlock)
    embedding_backward_runs(float *dtable, const int32_t *sorted_ids, const int32_t *sorted_rows,
                            const float *dy, size_t rows, size_t cols, size_t vocab, bool vec)
{
    const size_t i = (size_t)blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarp;
    const int lane = threadIdx.x % kWarp;
    if (i >= rows)
        return;
    const int32_t id = sorted_ids[i];
    if ((i > 0 && sorted_ids[i - 1] == id) || id < 0 || (size_t)id >= vocab)
        return; // inside a run, or an id the forward would have refused: never a stray write
    size_t end = i + 1;
    while (end < rows && sorted_ids[end] == id)
        end++;
    float *d = dtable + (size_t)id * cols;
    const size_t base = (size_t)blockIdx.y * kChunk;
    if (vec) {
        const size_t c = base + 4 * (size_t)lane;
        if (c >= cols)
            return;
        float4 acc = *(const float4 *)(d + c);
        for (size_t j = i; j < end; j += kPrefetch) {
            float4 v[kPrefetch];
#pragma unroll
            for (int k = 0; k < kPrefetch; k++) {
                const int32_t r = j + k < end ? sorted_rows[j + k] : -1;
                v[k] = r >= 0 && (size_t)r < rows ? *(const float4 *)(dy + (size_t)r * cols + c)
                                                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int k = 0; k < kPrefetch; k++)
                if (j + k < end && sorted_rows[j + k] >= 0 && (size_t)sorted_rows[j + k] < rows)
                    add4(acc, v[k]);
        }
        *(float4 *)(d + c) = acc;
    } else {
        for (size_t c = base + lane; c < cols && c < base + kChunk; c += kWarp) {
            float acc = d[c];
            for (size_t j = i; j < end; j++) {
                const int32_t r = sorted_rows[j];
                if (r >= 0 && (size_t)r < rows)
                    acc = __fadd_rn(acc, dy[(size_t)r * cols + c]);
            }
            d[c] = acc;
        }
    }
}

// bits that hold every id below vocab
int key_bits(int64_t vocab)
{
    int b = 1;
    while (b < 31 && ((int64_t)1 << b) < vocab)
        b++;
    return b;
}

// the workspace's pieces: sorted ids, row numbers in and out (rows each, 256-byte
// aligned), then cub's temporary storage
size_t align256(size_t n)
{
    return (n + 255) & ~(size_t)255;
}

} // namespace

extern "C" int cuda_embedding_backward_bucketed_supports(int64_t rows, int64_t cols, int64_t vocab)
{
    return rows > 0 && rows <= INT32_MAX && cols > 0 && vocab > 0 && vocab <= INT32_MAX &&
           (cols + kChunk - 1) / kChunk <= 65535 &&
           ((size_t)rows + kWarpsPerBlock - 1) / kWarpsPerBlock <= (size_t)INT32_MAX;
}

extern "C" size_t cuda_embedding_backward_bucketed_workspace(int64_t rows, int64_t vocab)
{
    size_t temp = 0;
    if (cub::DeviceRadixSort::SortPairs(nullptr, temp, (const int32_t *)nullptr, (int32_t *)nullptr,
                                        (const int32_t *)nullptr, (int32_t *)nullptr, (int)rows, 0,
                                        key_bits(vocab)) != cudaSuccess)
        return 0;
    return 3 * align256((size_t)rows * sizeof(int32_t)) + align256(temp);
}

extern "C" cudaError_t cuda_launch_embedding_backward_bucketed(cudaStream_t st, float *dtable,
                                                               const int32_t *ids, const float *dy,
                                                               int64_t rows, int64_t cols,
                                                               int64_t vocab, float beta, void *ws,
                                                               size_t ws_bytes)
{
    if (!cuda_embedding_backward_bucketed_supports(rows, cols, vocab))
        return cudaErrorInvalidValue; // the caller asked first
    if (beta == 0.0f) { // a kernel, not cudaMemsetAsync: dtable may be host_alloc memory
        cudaError_t e =
            cuda_launch_fill(st, dtable, sizeof(float), 0, (size_t)vocab * (size_t)cols);
        if (e != cudaSuccess)
            return e;
    }
    const size_t piece = align256((size_t)rows * sizeof(int32_t));
    const size_t need = cuda_embedding_backward_bucketed_workspace(rows, vocab);
    if (need == 0 || ws_bytes < need)
        return cudaErrorInvalidValue;
    int32_t *sorted_ids = (int32_t *)ws;
    int32_t *rows_in = (int32_t *)((char *)ws + piece);
    int32_t *rows_out = (int32_t *)((char *)ws + 2 * piece);
    void *temp = (char *)ws + 3 * piece;
    size_t temp_bytes = ws_bytes - 3 * piece;
    const size_t n = (size_t)rows;
    unsigned iota_grid = (unsigned)((n + 255) / 256 > 65536 ? 65536 : (n + 255) / 256);
    iota_rows<<<iota_grid, 256, 0, st>>>(rows_in, n);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    e = cub::DeviceRadixSort::SortPairs(temp, temp_bytes, ids, sorted_ids, rows_in, rows_out,
                                        (int)rows, 0, key_bits(vocab), st);
    if (e != cudaSuccess)
        return e;
    const bool vec =
        (size_t)cols % 4 == 0 && ((uintptr_t)dtable & 15) == 0 && ((uintptr_t)dy & 15) == 0;
    dim3 grid((unsigned)((n + kWarpsPerBlock - 1) / kWarpsPerBlock),
              (unsigned)(((size_t)cols + kChunk - 1) / kChunk));
    embedding_backward_runs<<<grid, kWarp * kWarpsPerBlock, 0, st>>>(
        dtable, sorted_ids, rows_out, dy, n, (size_t)cols, (size_t)vocab, vec);
    return cudaGetLastError();
}

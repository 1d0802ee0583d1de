// cuda_step_kernels.cu -- what a step keeps on the device so that its passes need no
// host wait (cuda_step.c): the loss sum and the deferred range check of ids.
//
// The loss sum is one chain of double additions in index order, the host's loop in
// src/engine/engine_forward.c (mean_loss), so the step's loss has the bits the readback
// gave. The ids' check is one block: a pass for the smallest bad row, then
// the record, then a pass that replaces each bad id by 0.
#include <limits.h>

#include "cuda_device.cuh"
#include "cuda_launch.h"

using namespace zero_cuda;

// The block stages the losses through shared memory (coalesced loads), and thread 0
// adds them in index order: the same chain as one thread reading global memory, without
// waiting on every load.
constexpr int kLossChunk = 8 * kThreads;

__global__ void __launch_bounds__(kThreads)
    loss_accumulate_kernel(double *acc, float *last, const float *losses, size_t n, int64_t rows)
{
    __shared__ float chunk[kLossChunk];
    double sum = 0.0;
    for (size_t base = 0; base < n; base += kLossChunk) {
        size_t m = n - base < (size_t)kLossChunk ? n - base : (size_t)kLossChunk;
        for (size_t i = threadIdx.x; i < m; i += blockDim.x)
            chunk[i] = losses[base + i];
        __syncthreads();
        if (threadIdx.x == 0)
            for (size_t i = 0; i < m; i++)
                sum = __dadd_rn(sum, (double)chunk[i]);
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float mean = __double2float_rn(__ddiv_rn(sum, (double)rows));
        *last = mean;
        *acc = __dadd_rn(*acc, (double)mean);
    }
}

extern "C" cudaError_t cuda_launch_loss_accumulate(cudaStream_t st, double *acc, float *last,
                                                   const float *losses, size_t n, int64_t rows)
{
    loss_accumulate_kernel<<<1, kThreads, 0, st>>>(acc, last, losses, n, rows);
    return cudaGetLastError();
}

__device__ static bool outside(int32_t v, int64_t limit)
{
    return v < 0 || (int64_t)v >= limit;
}

__global__ void __launch_bounds__(kThreads)
    defer_ids_kernel(int32_t *ids, size_t rows, int64_t limit, int site, struct cuda_id_record *rec)
{
    __shared__ unsigned long long first;
    if (threadIdx.x == 0)
        first = ULLONG_MAX;
    __syncthreads();
    for (size_t r = threadIdx.x; r < rows; r += blockDim.x)
        if (outside(ids[r], limit))
            atomicMin(&first, (unsigned long long)r); // an integer minimum: any order
    __syncthreads();
    if (threadIdx.x == 0 && first != ULLONG_MAX && rec->site < 0) {
        rec->row = first;
        rec->value = ids[first];
        rec->site = site;
    }
    __syncthreads(); // the bad id is read before it is replaced
    for (size_t r = threadIdx.x; r < rows; r += blockDim.x)
        if (outside(ids[r], limit))
            ids[r] = 0;
}

extern "C" cudaError_t cuda_launch_defer_ids(cudaStream_t st, int32_t *ids, int64_t rows,
                                             int64_t limit, int site, struct cuda_id_record *rec)
{
    if (rows <= 0)
        return cudaSuccess;
    defer_ids_kernel<<<1, kThreads, 0, st>>>(ids, (size_t)rows, limit, site, rec);
    return cudaGetLastError();
}

// cuda_combine.cu -- the owner's combine of exact mode on the GPU: N pieces in, one
// shard out, summed along the canonical tree of src/base/tree.h in fp32 and rounded once
// to the output type; the same bits as backends/cpu/cpu_combine.c.
//
// Each thread evaluates the tree for its elements online, as the binary counter
// that tree.h describes: push leaf k, then merge the top two partial sums (older on
// the left) once per trailing one bit of k; at the end fold the stack from the top.
// That is tree(0, n) exactly, with at most 32 partial sums in flight.
#include "cuda_device.cuh"
#include "cuda_launch.h"

using namespace zero_cuda;

__global__ void combine_kernel(void *out, zero_dtype out_type, const void *own, const void *peers,
                               zero_dtype wire_type, int n, int me, size_t len)
{
    ZERO_CUDA_FOR(i, len)
    {
        float stack[32];
        int depth = 0;
        for (int k = 0; k < n; k++) {
            float leaf = k == me
                             ? load_f32(own, wire_type, i)
                             : load_f32(peers, wire_type, (size_t)(k < me ? k : k - 1) * len + i);
            stack[depth++] = leaf;
            for (unsigned bits = (unsigned)k; bits & 1u; bits >>= 1) {
                stack[depth - 2] = __fadd_rn(stack[depth - 2], stack[depth - 1]);
                depth--;
            }
        }
        float acc = stack[depth - 1];
        for (int d = depth - 2; d >= 0; d--)
            acc = __fadd_rn(stack[d], acc);
        store_f32(out, out_type, i, acc);
    }
}

extern "C" cudaError_t cuda_launch_combine(cudaStream_t st, void *out, enum zero_dtype out_type,
                                           const void *own, const void *peers,
                                           enum zero_dtype wire_type, int n, int me, size_t len)
{
    if (len == 0)
        return cudaSuccess;
    combine_kernel<<<grid_for(len), kThreads, 0, st>>>(out, out_type, own, peers, wire_type, n, me,
                                                       len);
    return cudaGetLastError();
}

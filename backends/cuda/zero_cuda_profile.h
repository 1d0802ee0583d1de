/* Per-kernel-class device time of the cuda backend, and the counts of what keeps a step
 * out of a CUDA Graph, for benchmarks (bench/gpt_mfu):
 * while profiling is on, every entry of the backend that launches work on the compute
 * stream brackets it with two CUDA events and adds the FLOPs and bytes it moves to its
 * class. Off by default: the events cost a little, so a benchmark times its steps
 * first and profiles one more step after. Plain C, no CUDA headers; defined only when
 * libzero is built with the cuda backend (ZERO_HAVE_CUDA). */
#ifndef ZERO_CUDA_PROFILE_H
#define ZERO_CUDA_PROFILE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum zero_cuda_kclass {
    ZERO_CUDA_K_GEMM,        /* cuda_gemm: cuBLASLt / cublasGemmEx / the exact kernel */
    ZERO_CUDA_K_ATTENTION,   /* attention forward and backward (products and softmax) */
    ZERO_CUDA_K_LAYERNORM,   /* LayerNorm forward and backward */
    ZERO_CUDA_K_GELU,        /* GELU forward and backward */
    ZERO_CUDA_K_BIAS,        /* bias add and bias gradient */
    ZERO_CUDA_K_XENT,        /* softmax cross-entropy forward and backward */
    ZERO_CUDA_K_EMBEDDING,   /* embedding forward and backward */
    ZERO_CUDA_K_CAST,        /* dtype conversions */
    ZERO_CUDA_K_OPTIMIZER,   /* adam, sgd */
    ZERO_CUDA_K_ELEMENTWISE, /* axpy, scale, add, fill */
    ZERO_CUDA_K_REDUCTION,   /* sums of squares, inf/NaN checks */
    ZERO_CUDA_K_COPY,        /* copy (device to device or host_alloc memory, compute stream) */
    ZERO_CUDA_K_COUNT
};

struct zero_cuda_ktime {
    int64_t calls;
    double seconds; /* device time between each call's two events, summed */
    double flops;   /* floating-point operations counted (GEMM and attention products) */
    double bytes;   /* bytes read plus bytes written, counted from the shapes */
};

const char *zero_cuda_kclass_name(int k);
/* self: a cuda device's zero_device.self. Turns profiling on (1) or off (0). */
int zero_cuda_profile_enable(void *self, int on);
/* Waits for the profiled work, fills out[ZERO_CUDA_K_COUNT] with the totals since the
 * last read (or enable) and starts them again from zero. */
int zero_cuda_profile_read(void *self, struct zero_cuda_ktime *out);

/* What keeps a step out of a CUDA Graph, counted since the device opened: device and
 * pinned allocations that reached CUDA (the caching allocator's misses and the grown
 * workspaces) and the host's waits for the compute stream (readbacks of losses, flags
 * and norms, synchronize). A benchmark reads it around its steady-state steps. */
struct zero_cuda_blockers {
    int64_t device_mallocs; /* cudaMalloc */
    int64_t pinned_mallocs; /* cudaMallocHost */
    int64_t stream_syncs;   /* cudaStreamSynchronize of the compute stream */
    /* libzero.cuda_graphs (cuda_graph.c): the waits and cudaMallocs above that came
     * inside a capture (0 is the steady state's promise: a wait fails its capture; a
     * cudaMalloc is let through into the graphs' pool), the graphs launched, and how
     * each captured pass reached its executable graph (updated or instantiated) */
    int64_t in_capture;
    int64_t graph_launches, graph_updates, graph_instantiations;
};
int zero_cuda_graph_blockers(void *self, struct zero_cuda_blockers *out);

#ifdef __cplusplus
}
#endif

#endif

/* State shared by the C files of the cuda backend (not installed).
 *
 * Files:
 *   cuda_backend.c    the table, probe, open/close (device choice, streams, cuBLAS, NCCL)
 *   cuda_error.c      the error helpers every file reports through (cuda_fail, cuda_check)
 *   cuda_memory.c     caching allocator (ledger), copies (copy_async too), fill, pinned
 *                     staging memory, streams and events
 *   cuda_host.c       host_alloc/host_free: mapped pinned memory for offload (host ledger)
 *   cuda_blas.c       gemm: checks, operand conversion and staging, cublasGemmEx fallback
 *   cuda_blaslt.c     gemm through cublasLtMatmul: workspace, per-shape plan cache
 *   cuda_ops.c        elementwise, optimizers, reductions: checks, then launchers
 *   cuda_layer_ops.c  layer and GPT kernels: checks, label/id range checks, attention GEMMs
 *   cuda_coll.c       collectives: requests, comm stats, NCCL native and exact modes
 *   cuda_staged.c     host-staging test mode: collectives through an inner cpu backend
 *   cuda_profile.c    per-kernel-class device time for benchmarks (zero_cuda_profile.h)
 *   cuda_step.c       the loss summed on the device, the deferred id and label checks
 *   cuda_graph.c      CUDA Graphs of the engine's passes (libzero.cuda_graphs)
 *   *.cu              the kernels and their launchers (cuda_launch.h) */
#ifndef ZERO_CUDA_INTERNAL_H
#define ZERO_CUDA_INTERNAL_H

#include <mpi.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#ifdef ZERO_HAVE_NCCL
#include <nccl.h>
#endif

#include "zero/backend.h"
#include "zero/error.h"

/* How collectives move bytes: NCCL on the comm stream, or host staging over MPI
 * through an inner cpu backend (a test mode: several ranks may share one GPU). */
enum cuda_comm_kind { CUDA_COMM_NCCL = 0, CUDA_COMM_MPI = 1 };

struct cuda_cache;    /* cuda_memory.c */
struct cuda_hosts;    /* cuda_host.c */
struct cuda_lt_cache; /* cuda_blaslt.c */
struct cuda_staged;   /* cuda_staged.c */
struct cuda_timing;   /* cuda_coll_timing.c: collectives whose time is not read yet */
struct cuda_profile;  /* cuda_profile.c: per-kernel-class times (zero_cuda_profile.h) */
struct cuda_graphs;   /* cuda_graph.c: the executable graphs by key */
struct cuda_deferred; /* cuda_step.c: the deferred input checks' record and sites */

struct cuda_state {
    MPI_Comm comm; /* our duplicate of the user's communicator */
    int rank, size;
    MPI_Comm node_comm; /* ranks on our node (MPI_COMM_TYPE_SHARED) */
    int local_rank, local_size;
    int device;
    enum zero_coll_mode mode;
    int bf16_product; /* bf16-bf16 GEMMs' products: enum zero_bf16_product (zero/backend_bf16_dot.h)
                       */
    enum cuda_comm_kind comm_kind;
    struct zero_ledger *ledger;      /* device memory */
    struct zero_ledger *host_ledger; /* host_alloc blocks */
    struct zero_comm_stats *stats;
    char err[ZERO_ERRMSG_LEN];

    cudaStream_t compute, comm_stream;
    cudaEvent_t compute_ready; /* recorded on compute before each collective */
    cublasHandle_t blas;
    cublasLtHandle_t lt; /* NULL: every gemm through cublasGemmEx (ZERO_CUDA_GEMM=cublas) */
    void *lt_ws;         /* (lt_ws_bytes) cuBLASLt workspace, on the ledger as workspace */
    size_t lt_ws_bytes;
    struct cuda_lt_cache *plans; /* cuda_blaslt.c: one plan per gemm shape */
    struct cuda_cache *cache;
    /* calls made so far (zero_cuda_graph_blockers): cudaMalloc, cudaMallocHost, and the
     * host's waits on the compute stream in cuda_memory.c (readbacks, synchronize) */
    int64_t device_mallocs, pinned_mallocs, stream_syncs;
    struct cuda_hosts *hosts;      /* cuda_host.c: the live host_alloc blocks */
    unsigned long long *flag_dev;  /* (1) device scratch of the range and inf/NaN checks */
    unsigned long long *flag_host; /* (1) pinned mirror */

#ifdef ZERO_HAVE_NCCL
    ncclComm_t nccl;
#endif
    void *pieces; /* device: the peers' pieces of our shard (exact mode) */
    size_t pieces_bytes;
    void *wire_tmp; /* device: native reduce-scatter result before a type change */
    size_t wire_tmp_bytes;
    size_t *split_count, *split_displ; /* (size) each: the current split of a buffer */
    struct cuda_timing *timing;
    struct cuda_staged *staged;
    struct cuda_profile *prof; /* NULL unless a benchmark turned profiling on */

    /* CUDA Graphs (cuda_graph.c), NULL until graph_open */
    struct cuda_graphs *graphs;
    int capturing;            /* a capture is open on compute (comm joined to it) */
    int capture_broken;       /* something inside it waited for the host: not launched */
    int64_t capture_gen;      /* captures begun: a request notes the one it was issued in */
    int64_t capture_blockers; /* waits and cudaMallocs met inside a capture */
    int64_t graph_launches, graph_updates, graph_instantiations;
    struct cuda_deferred *deferred; /* cuda_step.c: non-NULL while ids are checked late */
};

/* ---- cuda_error.c ---- */
/* Formats the instance's last error ("rank R: ..."); returns code. */
int cuda_fail(struct cuda_state *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 0 for cudaSuccess, else ZERO_EBACKEND with "what: <CUDA's message>". */
int cuda_check(struct cuda_state *s, cudaError_t e, const char *what);
int cuda_blas_check(struct cuda_state *s, cublasStatus_t st, const char *what);

/* ---- cuda_memory.c ---- */
void cuda_memory_fini(struct cuda_state *s);
/* Device blocks the backend keeps for itself, on the ledger under tag. */
int cuda_buffer_grow(struct cuda_state *s, void **buf, size_t *have, size_t need, enum zero_tag tag,
                     const char *what);
void cuda_buffer_free(struct cuda_state *s, void **buf, size_t *have, enum zero_tag tag);
/* 1 if p is a live block of alloc (its start). */
int cuda_is_device_block(struct cuda_state *s, const void *p);
/* Pinned (page-locked) host memory the backend keeps for itself (staging), on the DEVICE
 * ledger under tag; host_alloc (cuda_host.c) is the table entry with the host ledger. */
int cuda_pinned_alloc(struct cuda_state *s, size_t bytes, enum zero_tag tag, void **host);
void cuda_pinned_free(struct cuda_state *s, void *host, size_t bytes, enum zero_tag tag);
/* The host waits for the compute stream (counted: zero_cuda_graph_blockers). */
cudaError_t cuda_host_waits(struct cuda_state *s);
/* The graphs' pool (cuda_graph.c): while s->capturing, alloc takes blocks from it and
 * frees return them there; close returns its cached blocks to CUDA (device idle). */
void cuda_memory_pool_open(struct cuda_state *s);
void cuda_memory_pool_close(struct cuda_state *s);
/* Before the first capture: the ordinary cache is returned to CUDA (a host wait, once),
 * so that the first, uncaptured step's blocks do not sit idle beside the pool's. */
void cuda_memory_pool_prime(struct cuda_state *s);
/* Waits for the compute stream; then *out = the device flag word. */
int cuda_read_flag(struct cuda_state *s, const char *what, unsigned long long *out);
/* Makes the comm stream wait for everything issued on compute so far. */
int cuda_comm_after_compute(struct cuda_state *s, const char *what);

/* ---- cuda_step.c ---- */
int cuda_deferred_open(struct cuda_state *s); /* ids checked late from now on */
void cuda_deferred_close(struct cuda_state *s);
/* The deferred check of ids (rows) against [0, limit) for entry `what` (a literal). */
int cuda_defer_ids(struct cuda_state *s, const char *what, const char *noun, const int32_t *ids,
                   int64_t rows, int64_t limit);

/* ---- cuda_host_table.c: host_alloc's blocks ---- */
/* 1 if p lies inside a live host_alloc block (kernels use it in place; library calls
 * that read memory in tiles, as GEMMs do, stage it first). */
int cuda_is_host_memory(struct cuda_state *s, const void *p);
void cuda_hosts_fini(struct cuda_state *s); /* frees the blocks never host_free'd */
/* Room for one more block; -1 if the host is out of memory. Then insert adds block p. */
int cuda_host_table_reserve(struct cuda_state *s);
void cuda_host_table_insert(struct cuda_state *s, void *p, size_t bytes, enum zero_tag tag);
/* Takes block p (its start) off the table with its size and tag; -1 if it is none. */
int cuda_host_table_remove(struct cuda_state *s, const void *p, size_t *bytes, enum zero_tag *tag);

/* ---- cuda_blaslt.c ---- */
/* cuBLASLt handle and workspace unless ZERO_CUDA_GEMM=cublas (then s->lt stays NULL). */
int cuda_lt_open(struct cuda_state *s, char *why, size_t why_len);
void cuda_lt_close(struct cuda_state *s);
/* cuBLAS's calls inside a capture use our workspace (cuBLASLt's, made here where the
 * cublas GEMM mode left it out), so that they allocate nothing there (cuda_graph.c) */
int cuda_blas_capture_workspace(struct cuda_state *s);
/* C (m, n) = alpha op(A) op(B) + beta C, row-major, A and B of type ab, C of type c (ab
 * or fp32), fp32 accumulation; arguments checked by cuda_gemm. ZERO_ENOTSUP, with no
 * message, when cuBLASLt has no algorithm for the case: the caller uses cublasGemmEx. */
int cuda_lt_gemm(struct cuda_state *s, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                 float alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                 cudaDataType_t ab, float beta, void *c, int64_t ldc, cudaDataType_t ct);
/* d (m, n; ldc, of type dt: fp32, or ab's 16-bit type) = epilogue(op(a) op(b)), alpha 1,
 * with the cublasLtEpilogue_t epilogue: BIAS (+ bias (n), fp32), GELU_AUX_BIAS (aux (m, n;
 * ldc) = the biased product, d = its tanh GELU) or DGELU (times gelu'(aux), bias NULL);
 * aux of type aux_type, -1 for d's (cuBLASLt's default: CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_
 * DATA_TYPE is set only otherwise). ZERO_ENOTSUP: no cuBLASLt, no algorithm for the case,
 * or the combination refused at launch. */
int cuda_lt_gemm_epilogue(struct cuda_state *s, int trans_a, int trans_b, int64_t m, int64_t n,
                          int64_t k, const void *a, int64_t lda, const void *b, int64_t ldb,
                          cudaDataType_t ab, int epilogue, const float *bias, const void *aux,
                          int32_t aux_type, float beta, void *d, cudaDataType_t dt, int64_t ldc);

/* ---- cuda_profile.c ---- */
/* An entry's span on the compute stream: begin before its launches, end after with
 * the FLOPs and bytes it moved and its status rc, which end returns:
 *     struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_GELU);
 *     return cuda_prof_end(s, &pm, 0, 8.0 * n, cuda_check(s, launch(...), "gelu"));
 * No-ops unless profiling is on (klass: enum zero_cuda_kclass). */
struct cuda_prof_mark {
    int on, klass;
    cudaEvent_t start;
};
struct cuda_prof_mark cuda_prof_begin(struct cuda_state *s, int klass);
int cuda_prof_end(struct cuda_state *s, struct cuda_prof_mark *m, double flops, double bytes,
                  int rc);
void cuda_prof_fini(struct cuda_state *s);

/* ---- cuda_coll_timing.c: the device time of completed collectives ---- */
int cuda_coll_timing_open(struct cuda_state *s); /* -1: out of host memory */
void cuda_coll_timing_close(struct cuda_state *s);
/* Adds the time of every pending collective that finished; with block, waits for all. */
int cuda_coll_timing_harvest(struct cuda_state *s, int block);
int cuda_coll_drain_timing(struct cuda_state *s); /* every pending time read (synchronize) */
/* Keeps a completed collective's events (start to done) until done has completed; its
 * seconds then go to counter (without host memory to keep them: read now, blocking). */
void cuda_coll_timing_add(struct cuda_state *s, cudaEvent_t start, cudaEvent_t done,
                          struct zero_coll_counter *counter);

/* ---- cuda_coll.c / cuda_staged.c: set up / tear down in open/close ---- */
int cuda_coll_init(struct cuda_state *s);
void cuda_coll_fini(struct cuda_state *s);
int cuda_staged_open(struct cuda_state *s, void *comm, char *why, size_t why_len);
void cuda_staged_close(struct cuda_state *s);
int cuda_staged_set_mode(struct cuda_state *s, enum zero_coll_mode mode);
/* The host-staged collectives: device buffers copied to pinned host memory, the inner
 * cpu backend's collective (which counts the comm stats), the result copied back.
 * Arguments were checked by cuda_coll.c. */
int cuda_staged_reduce_scatter(struct cuda_state *s, const void *send, enum zero_dtype wire_type,
                               void *recv, enum zero_dtype recv_type, size_t count);
int cuda_staged_all_gather(struct cuda_state *s, const void *send, void *recv, enum zero_dtype t,
                           size_t count);
int cuda_staged_all_reduce(struct cuda_state *s, const void *send, void *recv, enum zero_dtype t,
                           size_t count);
int cuda_staged_broadcast(struct cuda_state *s, void *buf, enum zero_dtype t, size_t count,
                          int root);
int cuda_staged_barrier(struct cuda_state *s);
int cuda_staged_host_all_gather(struct cuda_state *s, const void *send_host, void *recv_host,
                                size_t bytes);

#endif

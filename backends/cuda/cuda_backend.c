/* The cuda backend: device memory, cuBLAS, own kernels (*.cu), NCCL collectives on a
 * communication stream that events order against the compute stream.
 *
 * This file is the table and the instance lifetime: which GPU (opt->device, else the
 * node-local rank modulo the visible devices), the two streams, the cuBLAS handle on
 * the compute stream, and the communication path:
 *   ZERO_CUDA_COMM=nccl  (default with NCCL) NCCL, bootstrapped over MPI: rank 0
 *                        creates the unique id, MPI_Bcast hands it to the others.
 *   ZERO_CUDA_COMM=mpi   host staging through an inner cpu backend (cuda_staged.c):
 *                        a test mode, so several ranks can share one GPU. The default
 *                        when the library was built without NCCL.
 *   ZERO_CUDA_COMM=auto  nccl when every rank has a GPU of its own, else mpi.
 * NCCL refuses two ranks on one GPU; then open fails and says to use the mpi mode.
 *
 * GEMMs go through cuBLASLt (cuda_blaslt.c) with cublasGemmEx as the fallback;
 * ZERO_CUDA_GEMM=cublas sends every GEMM to cublasGemmEx (to compare the two). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zero/fault.h"
#include "cuda_ops.h"
#include "zero/backend_attention.h"
#include "zero/backend_bf16_dot.h"
#include "zero/backend_classifier.h"
#include "zero/backend_llama.h"
#include "zero/backend_device_step.h"
#include "zero/backend_fused.h"
#include "zero/backend_groups.h"
#include "zero/backend_quant.h"
#include "zero/backend_stored.h"
#include "base/backend_contract.h"
#include "common/backend_mpi.h"
#include "zero/knobs.h"

/* defined in cuda_probe.cu: visible devices, 0 without a device or driver */
int zero_cuda_probe_count(void);

static int cuda_probe(char *why, size_t why_len)
{
    int rc = backend_mpi_ready("cuda", why, why_len);
    if (rc != ZERO_OK)
        return rc;
    if (zero_cuda_probe_count() < 1) {
        int n = 0;
        cudaError_t e = cudaGetDeviceCount(&n);
        (void)cudaGetLastError();
        snprintf(why, why_len, "no CUDA device (cudaGetDeviceCount: %s)",
                 e == cudaSuccess ? "0 devices" : cudaGetErrorString(e));
        return ZERO_ENOTSUP;
    }
    return ZERO_OK;
}

/* The communication path asked for by ZERO_CUDA_COMM (see the top of this file),
 * agreed by all ranks: -1 (and why filled) if it is unknown or not built in. */
static int choose_comm(struct cuda_state *s, int gpu_shared, char *why, size_t why_len)
{
    const char *env = zero_knob(ZERO_KNOB_CUDA_COMM);
#ifdef ZERO_HAVE_NCCL
    const char *fallback = "nccl";
#else
    const char *fallback = "mpi";
#endif
    const char *want = env && *env ? env : fallback;
    int shared_anywhere = !backend_mpi_all(s->comm, !gpu_shared);
    if (strcmp(want, "auto") == 0)
        want = shared_anywhere ? "mpi" : fallback;
    if (strcmp(want, "mpi") == 0)
        return CUDA_COMM_MPI;
    if (strcmp(want, "nccl") != 0) {
        snprintf(why, why_len, "cuda backend: ZERO_CUDA_COMM=%s; expected nccl, mpi or auto", want);
        return -1;
    }
#ifdef ZERO_HAVE_NCCL
    if (shared_anywhere) {
        snprintf(why, why_len,
                 "cuda backend: ranks share a GPU (%d ranks on this node, %d "
                 "visible devices); NCCL needs one GPU per rank: set ZERO_CUDA_COMM=mpi "
                 "(host-staged test mode) or ZERO_CUDA_COMM=auto",
                 s->local_size, zero_cuda_probe_count());
        return -1;
    }
    return CUDA_COMM_NCCL;
#else
    snprintf(why, why_len,
             "cuda backend: ZERO_CUDA_COMM=nccl but this build has no NCCL "
             "(configure --with-nccl); use ZERO_CUDA_COMM=mpi");
    return -1;
#endif
}

/* 1 if another rank of this node uses our device (compared by PCI bus id). */
static int device_shared(struct cuda_state *s)
{
    char mine[32] = "", *all = calloc((size_t)s->local_size, sizeof(mine));
    if (all == NULL)
        return 1;
    if (cudaDeviceGetPCIBusId(mine, (int)sizeof(mine), s->device) != cudaSuccess)
        snprintf(mine, sizeof(mine), "device-%d", s->device);
    MPI_Allgather(mine, (int)sizeof(mine), MPI_CHAR, all, (int)sizeof(mine), MPI_CHAR,
                  s->node_comm);
    int shared = 0;
    for (int r = 0; r < s->local_size; r++)
        shared |= r != s->local_rank && strncmp(all + r * sizeof(mine), mine, sizeof(mine)) == 0;
    free(all);
    return shared;
}

#ifdef ZERO_HAVE_NCCL
static int open_nccl(struct cuda_state *s, char *why, size_t why_len)
{
    ncclUniqueId id;
    ncclResult_t r = ncclSuccess;
    if (s->rank == 0)
        r = ncclGetUniqueId(&id);
    if (!backend_mpi_all(s->comm, r == ncclSuccess)) {
        snprintf(why, why_len, "cuda backend: rank 0: ncclGetUniqueId failed: %s",
                 ncclGetErrorString(r));
        return ZERO_ECOMM;
    }
    if (MPI_Bcast(&id, (int)sizeof(id), MPI_BYTE, 0, s->comm) != MPI_SUCCESS) {
        snprintf(why, why_len, "cuda backend: MPI_Bcast of the NCCL unique id failed");
        return ZERO_ECOMM;
    }
    r = ncclCommInitRank(&s->nccl, s->size, id, s->rank);
    if (r != ncclSuccess) {
        s->nccl = NULL;
        snprintf(why, why_len,
                 "cuda backend: rank %d: ncclCommInitRank (%d ranks, device %d) "
                 "failed: %s (%s)",
                 s->rank, s->size, s->device, ncclGetErrorString(r), ncclGetLastError(NULL));
        return ZERO_ECOMM;
    }
    return ZERO_OK;
}
#endif

static void cuda_release(struct cuda_state *s)
{
    cuda_graph_close(s);
    cuda_coll_fini(s);
    cuda_prof_fini(s);
    cuda_staged_close(s);
#ifdef ZERO_HAVE_NCCL
    if (s->nccl != NULL)
        ncclCommDestroy(s->nccl);
#endif
    cuda_lt_close(s);
    if (s->blas != NULL)
        cublasDestroy(s->blas);
    if (s->flag_host != NULL)
        cudaFreeHost(s->flag_host);
    if (s->flag_dev != NULL)
        cudaFree(s->flag_dev);
    cuda_memory_fini(s);
    cuda_hosts_fini(s);
    if (s->compute_ready != NULL)
        cudaEventDestroy(s->compute_ready);
    if (s->comm_stream != NULL)
        cudaStreamDestroy(s->comm_stream);
    if (s->compute != NULL)
        cudaStreamDestroy(s->compute);
    backend_mpi_free(&s->node_comm, &s->comm);
    free(s);
}

/* Picks and binds the device; creates streams, the ready event, flags, cuBLAS. */
static int open_device(struct cuda_state *s, const struct zero_backend_options *opt, char *why,
                       size_t why_len)
{
    int count = zero_cuda_probe_count();
    s->device = opt->device >= 0 ? opt->device : s->local_rank % (count > 0 ? count : 1);
    if (s->device >= count) {
        snprintf(why, why_len, "cuda backend: rank %d: device %d requested, %d visible", s->rank,
                 s->device, count);
        return ZERO_EINVAL;
    }
    const char *what = "cudaSetDevice";
    cudaError_t e = cudaSetDevice(s->device);
    if (e == cudaSuccess && (what = "cudaStreamCreate(compute)") != NULL)
        e = cudaStreamCreateWithFlags(&s->compute, cudaStreamNonBlocking);
    if (e == cudaSuccess && (what = "cudaStreamCreate(comm)") != NULL)
        e = cudaStreamCreateWithFlags(&s->comm_stream, cudaStreamNonBlocking);
    if (e == cudaSuccess && (what = "cudaEventCreate") != NULL)
        e = cudaEventCreateWithFlags(&s->compute_ready, cudaEventDisableTiming);
    if (e == cudaSuccess && (what = "cudaMalloc(flag)") != NULL)
        e = cudaMalloc((void **)&s->flag_dev, sizeof(*s->flag_dev));
    if (e == cudaSuccess && (what = "cudaMallocHost(flag)") != NULL)
        e = cudaMallocHost((void **)&s->flag_host, sizeof(*s->flag_host));
    if (e != cudaSuccess) {
        snprintf(why, why_len, "cuda backend: rank %d: device %d: %s: %s", s->rank, s->device, what,
                 cudaGetErrorString(e));
        return ZERO_EBACKEND;
    }
    cublasStatus_t st = cublasCreate(&s->blas);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasSetStream(s->blas, s->compute);
    /* plain fp32 GEMMs (no TF32 behind our back); fp16/bf16 inputs ask for it per call */
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasSetMathMode(s->blas, CUBLAS_DEFAULT_MATH);
    if (st != CUBLAS_STATUS_SUCCESS) {
        snprintf(why, why_len, "cuda backend: rank %d: cuBLAS setup failed: %s", s->rank,
                 cublasGetStatusString(st));
        return ZERO_EBACKEND;
    }
    return cuda_lt_open(s, why, why_len);
}

static int cuda_open(const struct zero_backend_options *opt, void *comm, void **self, char *why,
                     size_t why_len)
{
    *self = NULL;
    int rc = zero_contract_open("cuda", opt, comm, why, why_len);
    if (rc != ZERO_OK)
        return rc;
    struct cuda_state *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        snprintf(why, why_len, "cuda backend: out of memory for the instance");
        return ZERO_ENOMEM;
    }
    s->comm = MPI_COMM_NULL;
    s->node_comm = MPI_COMM_NULL;
    s->mode = opt->coll_mode;
    s->ledger = opt->ledger;
    s->host_ledger = opt->host_ledger;
    s->stats = opt->comm_stats;
    if ((rc = backend_mpi_dup("cuda", *(MPI_Comm *)comm, &s->comm, &s->rank, &s->size, why,
                              why_len)) != ZERO_OK ||
        (rc = backend_mpi_split_node("cuda", s->comm, s->rank, &s->node_comm, &s->local_rank,
                                     &s->local_size, why, why_len)) != ZERO_OK) {
        cuda_release(s);
        return rc;
    }

    zero_fault_set_rank(s->rank, s->size);
    rc = open_device(s, opt, why, why_len);
    /* all ranks learn whether every device opened, so that a failure on one rank does
     * not leave the others waiting in the collective setup below */
    if (rc == ZERO_OK && zero_fault("backend.open"))
        rc = zero_fault_fail_text(why, why_len, "cuda backend", "backend.open");
    rc = backend_mpi_agree("cuda", s->comm, s->rank, rc, why, why_len);
    int kind = -1;
    if (rc == ZERO_OK && (kind = choose_comm(s, device_shared(s), why, why_len)) < 0)
        rc = ZERO_EINVAL;
    s->comm_kind = kind < 0 ? CUDA_COMM_MPI : (enum cuda_comm_kind)kind;
    if (rc == ZERO_OK && s->comm_kind == CUDA_COMM_MPI)
        rc = cuda_staged_open(s, comm, why, why_len);
#ifdef ZERO_HAVE_NCCL
    if (rc == ZERO_OK && s->comm_kind == CUDA_COMM_NCCL)
        rc = open_nccl(s, why, why_len);
#endif
    if (rc == ZERO_OK && cuda_coll_init(s) != ZERO_OK) {
        snprintf(why, why_len, "cuda backend: collectives: %s", s->err);
        rc = ZERO_ENOMEM;
    }
    if (rc != ZERO_OK) {
        cuda_release(s);
        return rc;
    }
    *self = s;
    return ZERO_OK;
}

static void cuda_close(void *self)
{
    struct cuda_state *s = self;
    if (s == NULL)
        return;
    cudaSetDevice(s->device);
    cudaDeviceSynchronize();
    cuda_coll_drain_timing(s);
    cuda_release(s);
}

static int cuda_rank(void *self)
{
    return ((struct cuda_state *)self)->rank;
}

static int cuda_size(void *self)
{
    return ((struct cuda_state *)self)->size;
}

static const char *cuda_last_error(void *self)
{
    return ((struct cuda_state *)self)->err;
}

static int cuda_set_coll_mode(void *self, enum zero_coll_mode mode)
{
    struct cuda_state *s = self;
    char why[128];
    int rc = zero_contract_coll_mode(mode, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    s->mode = mode;
    return s->comm_kind == CUDA_COMM_MPI ? cuda_staged_set_mode(s, mode) : ZERO_OK;
}

/* ---- the optional groups: cuda has all of them ---- */

static const struct zero_fused_ops cuda_fused_ops = {
    .version = ZERO_FUSED_OPS_VERSION,
    .residual_layernorm_forward = cuda_residual_layernorm_forward,
    .gemm_bias = cuda_gemm_bias,
    .gemm_dgelu = cuda_gemm_dgelu,
    .gemm_bgrad = cuda_gemm_bgrad,
};

/* the bf16 contracts: the exact kernel's pair or block steps (cuda_exact_gemm.cu) */
static int cuda_set_bf16_product(void *self, enum zero_bf16_product product)
{
    struct cuda_state *s = self;
    if (product != ZERO_BF16_PRODUCT_FP32 && product != ZERO_BF16_PRODUCT_DOT &&
        product != ZERO_BF16_PRODUCT_TILE)
        return cuda_fail(s, ZERO_EINVAL, "set_bf16_product: %d is no bf16 product", (int)product);
    s->bf16_product = (int)product;
    return ZERO_OK;
}

static const struct zero_bf16_dot_ops cuda_bf16_dot_ops = {
    .version = ZERO_BF16_DOT_OPS_VERSION,
    .set_bf16_product = cuda_set_bf16_product,
};

static const struct zero_classifier_ops cuda_classifier_ops = {
    .version = ZERO_CLASSIFIER_OPS_VERSION,
    .xent_fused = cuda_xent_fused,
};

static const struct zero_stored_ops cuda_stored_ops = {
    .version = ZERO_STORED_OPS_VERSION,
    .layernorm_forward_stored = cuda_layernorm_forward_stored,
    .gemm_bias_stored = cuda_gemm_bias_stored,
    .gemm_dgelu_stored = cuda_gemm_dgelu_stored,
};

static const struct zero_attention_ops cuda_attention_ops = {
    .version = ZERO_ATTENTION_OPS_VERSION,
    .attention_state_floats = cuda_attention_state_floats,
    .attention_forward_stored = cuda_attention_forward_stored,
    .attention_backward_stored = cuda_attention_backward_stored,
};

static const struct zero_device_step_ops cuda_device_step_ops = {
    .version = ZERO_DEVICE_STEP_OPS_VERSION,
    .loss_accumulate = cuda_loss_accumulate,
    .graph_open = cuda_graph_open,
    .graph_close = cuda_graph_close,
    .input_errors = cuda_input_errors,
    .graph_begin = cuda_graph_begin,
    .graph_end = cuda_graph_end,
};

/* cuda_llama_ops.c: the llama group (zero/backend_llama.h) */
extern const struct zero_llama_ops cuda_llama_ops;

const struct zero_backend zero_backend_cuda = {
    .abi_version = ZERO_BACKEND_ABI,
    .name = "cuda",
    .caps = ZERO_CAP_FAST_LOWP_GEMM,

    .probe = cuda_probe,
    .open = cuda_open,
    .close = cuda_close,
    .rank = cuda_rank,
    .size = cuda_size,
    .last_error = cuda_last_error,
    .set_coll_mode = cuda_set_coll_mode,

    .alloc = cuda_alloc,
    .free = cuda_free,
    .copy = cuda_copy,
    .to_host = cuda_to_host,
    .from_host = cuda_from_host,
    .fill = cuda_fill,
    .product_workspace_bytes = cuda_product_workspace_bytes,

    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .copy_async = cuda_copy_async,

    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .stream_wait_event = cuda_stream_wait_event,
    .event_synchronize = cuda_event_synchronize,
    .synchronize = cuda_synchronize,

    .gemm = cuda_gemm,

    .cast = cuda_cast,
    .axpy = cuda_axpy,
    .scale = cuda_scale,
    .add = cuda_add,
    .adam = cuda_adam,
    .sgd = cuda_sgd,
    .sumsq_blocks = cuda_sumsq_blocks,
    .nonfinite = cuda_nonfinite,

    .bias_add = cuda_bias_add,
    .bias_grad = cuda_bias_grad,
    .gelu_forward = cuda_gelu_forward,
    .gelu_backward = cuda_gelu_backward,
    .xent_forward = cuda_xent_forward,
    .xent_backward = cuda_xent_backward,
    .embedding_forward = cuda_embedding_forward,
    .embedding_backward = cuda_embedding_backward,
    .layernorm_forward = cuda_layernorm_forward,
    .layernorm_backward = cuda_layernorm_backward,
    .attention_forward = cuda_attention_forward,
    .attention_backward = cuda_attention_backward,

    .reduce_scatter = cuda_reduce_scatter,
    .all_gather = cuda_all_gather,
    .all_reduce = cuda_all_reduce,
    .broadcast = cuda_broadcast,
    .barrier = cuda_barrier,
    .wait = cuda_wait,
    .wait_timed = cuda_wait_timed,
    .host_all_gather = cuda_host_all_gather,

    .fused = &cuda_fused_ops,
    .classifier = &cuda_classifier_ops,
    .stored = &cuda_stored_ops,
    .attention = &cuda_attention_ops,
    .device_step = &cuda_device_step_ops,
    .llama = &cuda_llama_ops,
    .groups = &cuda_groups_ops,
    .bf16_dot = &cuda_bf16_dot_ops,
    .quant = &cuda_quant_ops,
};

/* The cpu backend: host memory, its own exact GEMM (OpenBLAS sgemm in native
 * mode), plain C kernels, MPI collectives.
 *
 * This file is the table and the instance lifetime; the entries live in
 * cpu_memory.c, cpu_blas.c, cpu_kernels.c, cpu_layers.c (declared in cpu_ops.h)
 * and cpu_coll*.c (declared in cpu_internal.h); the error helper in cpu_error.c; the
 * MPI set-up shared with the cuda backend in backends/common/backend_mpi.c; the
 * argument checks of open in src/base/backend_contract.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zero/fault.h"
#include "cpu_internal.h"
#include "cpu_ops.h"
#include "cpu_openblas.h"
#include "zero/backend_bf16_dot.h"
#include "zero/backend_classifier.h"
#include "zero/backend_llama.h"
#include "zero/backend_groups.h"
#include "zero/backend_quant.h"
#include "base/backend_contract.h"
#include "base/host_parallel.h"
#include "common/backend_mpi.h"
#include "zero/knobs.h"

static int cpu_probe(char *why, size_t why_len)
{
    return backend_mpi_ready("cpu", why, why_len);
}

/* Splits off the ranks that share our memory; single_node says whether the
 * collectives may use shared-memory windows for the whole communicator. */
static int cpu_split_node(struct cpu_state *s, char *why, size_t why_len)
{
    int rc = backend_mpi_split_node("cpu", s->comm, s->rank, &s->node_comm, &s->node_rank,
                                    &s->node_size, why, why_len);
    s->single_node = rc == ZERO_OK && s->node_size == s->size;
    return rc;
}

/* ZERO_CPU_SHOW_NODES=1: one line per rank on stderr saying which node it found itself
 * on and which path the exact collectives take (tests/test_multihost.sh reads it). */
static void cpu_show_nodes(const struct cpu_state *s)
{
    const char *show = zero_knob(ZERO_KNOB_CPU_SHOW_NODES);
    if (!show || strcmp(show, "1") != 0)
        return;
    char host[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Get_processor_name(host, &len);
    fprintf(stderr, "cpu backend: rank %d of %d: node rank %d of %d on %s: %s path%s\n", s->rank,
            s->size, s->node_rank, s->node_size, host,
            cpu_shm_in_use(s) ? "shared-memory" : "MPI_Alltoallv",
            s->progress ? ", communication thread" : "");
}

/* OpenBLAS serves native mode only and is loaded when native mode first needs it
 * (cpu_openblas.c says why): at open in native mode, else at set_coll_mode's switch.
 * Its bits may depend on how many threads split a GEMM, so a backend opened in exact
 * mode gives it one thread per rank unless the caller asks for more; native mode
 * with no request keeps OpenBLAS's own default. The setting is process-wide:
 * OpenBLAS has no per-handle thread count. */
static int cpu_use_native(struct cpu_state *s, char *why, size_t why_len)
{
    return cpu_openblas_load(s->blas_threads, why, why_len);
}

/* Exact mode's own GEMM: its variant (ZERO_CPU_ISA may force one) and its
 * threads. Its bits do not depend on the thread count, so a rank takes its
 * share of the node's processors (the node's ranks from the shared-memory split)
 * unless blas_threads or ZERO_CPU_THREADS says otherwise. */
static int cpu_set_gemm(struct cpu_state *s, const struct zero_backend_options *opt, char *why,
                        size_t why_len)
{
    char isa_why[160];
    if (cpu_isa_choose(&s->gemm_isa, isa_why, sizeof isa_why)) {
        snprintf(why, why_len, "cpu backend: rank %d: %s", s->rank, isa_why);
        return ZERO_EINVAL;
    }
    const char *env = zero_knob(ZERO_KNOB_CPU_THREADS);
    if (opt->blas_threads > 0) {
        s->gemm_threads = opt->blas_threads;
    } else if (env != NULL && env[0] != '\0') {
        char *end;
        long t = strtol(env, &end, 10);
        if (*end != '\0' || t < 1 || t > 4096) {
            snprintf(why, why_len, "cpu backend: rank %d: ZERO_CPU_THREADS=%s: expected 1..4096",
                     s->rank, env);
            return ZERO_EINVAL;
        }
        s->gemm_threads = (int)t;
    } else {
        s->gemm_threads = host_processors() / (s->node_size > 0 ? s->node_size : 1);
    }
    if (s->gemm_threads < 1)
        s->gemm_threads = 1;
    return ZERO_OK;
}

static void cpu_release(struct cpu_state *s)
{
    backend_mpi_free(&s->node_comm, &s->comm);
    free(s);
}

static int cpu_open(const struct zero_backend_options *opt, void *comm, void **self, char *why,
                    size_t why_len)
{
    *self = NULL;
    int rc = zero_contract_open("cpu", opt, comm, why, why_len);
    if (rc != ZERO_OK)
        return rc;
    if (opt->blas_threads < 0) {
        snprintf(why, why_len, "cpu backend: blas_threads must be >= 0 (got %d)",
                 opt->blas_threads);
        return ZERO_EINVAL;
    }

    struct cpu_state *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        snprintf(why, why_len, "cpu backend: out of memory for the instance");
        return ZERO_ENOMEM;
    }
    s->comm = MPI_COMM_NULL;
    s->node_comm = MPI_COMM_NULL;
    s->mode = opt->coll_mode;
    s->blas_threads = opt->blas_threads > 0               ? opt->blas_threads
                      : opt->coll_mode == ZERO_COLL_EXACT ? 1
                                                          : 0;
    s->ledger = opt->ledger;
    s->host_ledger = opt->host_ledger;
    s->stats = opt->comm_stats;

    /* Our own communicator: our messages never match the user's, and errors
     * come back as codes instead of aborting the job. */
    if ((rc = backend_mpi_dup("cpu", *(MPI_Comm *)comm, &s->comm, &s->rank, &s->size, why,
                              why_len)) != ZERO_OK ||
        (rc = cpu_split_node(s, why, why_len)) != ZERO_OK) {
        cpu_release(s);
        return rc;
    }
    zero_fault_set_rank(s->rank, s->size);
    rc = cpu_set_gemm(s, opt, why, why_len);
    if (rc == ZERO_OK && s->mode != ZERO_COLL_EXACT)
        rc = cpu_use_native(s, why, why_len);
    if (rc == ZERO_OK && zero_fault("backend.open"))
        rc = zero_fault_fail_text(why, why_len, "cpu backend", "backend.open");
    /* a variable set on some ranks only must not leave the others in choose_path */
    if ((rc = backend_mpi_agree("cpu", s->comm, s->rank, rc, why, why_len)) != ZERO_OK) {
        cpu_release(s);
        return rc;
    }

    rc = cpu_coll_init(s);
    if (rc == ZERO_OK && (rc = cpu_progress_init(s)) != ZERO_OK)
        cpu_coll_fini(s);
    if (rc != ZERO_OK) {
        snprintf(why, why_len, "cpu backend: collectives: %s", s->err);
        cpu_release(s);
        return rc;
    }
    cpu_show_nodes(s);
    *self = s;
    return ZERO_OK;
}

static void cpu_close(void *self)
{
    struct cpu_state *s = self;
    if (s == NULL)
        return;
    cpu_progress_fini(s); /* first: its queued jobs complete */
    cpu_coll_fini(s);
    cpu_memory_fini(s);
    cpu_release(s);
}

static int cpu_rank(void *self)
{
    return ((struct cpu_state *)self)->rank;
}

static int cpu_size(void *self)
{
    return ((struct cpu_state *)self)->size;
}

static const char *cpu_last_error(void *self)
{
    return ((struct cpu_state *)self)->err;
}

static int cpu_set_coll_mode(void *self, enum zero_coll_mode mode)
{
    struct cpu_state *s = self;
    char why[128];
    int rc = zero_contract_coll_mode(mode, why, sizeof why);
    if (rc == ZERO_OK && mode != ZERO_COLL_EXACT)
        rc = cpu_use_native(s, why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(s, rc, "%s", why);
    s->mode = mode;
    return ZERO_OK;
}

/* The fused classifier, the reference of xent_forward's and xent_backward's loops
 * in one pass. */
static const struct zero_classifier_ops cpu_classifier_ops = {
    .version = ZERO_CLASSIFIER_OPS_VERSION,
    .xent_fused = cpu_xent_fused,
};

/* The bf16 contracts: VDPBF16PS on avx512_bf16, TDPBF16PS on amx_bf16, their emulation
 * elsewhere. */
static const struct zero_bf16_dot_ops cpu_bf16_dot_ops = {
    .version = ZERO_BF16_DOT_OPS_VERSION,
    .set_bf16_product = cpu_set_bf16_product,
};

const struct zero_backend zero_backend_cpu = {
    .abi_version = ZERO_BACKEND_ABI,
    .name = "cpu",
    .caps = ZERO_CAP_HOST_MEMORY | ZERO_CAP_WIDENING_GEMM |
            ZERO_CAP_ROUNDING_GEMM_STORE, /* cpu_blas.c widens exactly; both modes round a
                                             16-bit C once from the fp32 result */

    .probe = cpu_probe,
    .open = cpu_open,
    .close = cpu_close,
    .rank = cpu_rank,
    .size = cpu_size,
    .last_error = cpu_last_error,
    .set_coll_mode = cpu_set_coll_mode,

    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .to_host = cpu_to_host,
    .from_host = cpu_from_host,
    .fill = cpu_fill,
    .product_workspace_bytes = cpu_product_workspace_bytes,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_host_free,
    .copy_async = cpu_copy_async,

    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .stream_wait_event = cpu_stream_wait_event,
    .event_synchronize = cpu_event_synchronize,
    .synchronize = cpu_synchronize,

    .gemm = cpu_gemm,

    .cast = cpu_cast,
    .axpy = cpu_axpy,
    .scale = cpu_scale,
    .add = cpu_add,
    .adam = cpu_adam,
    .sgd = cpu_sgd,
    .sumsq_blocks = cpu_sumsq_blocks,
    .nonfinite = cpu_nonfinite,

    .bias_add = cpu_bias_add,
    .bias_grad = cpu_bias_grad,
    .gelu_forward = cpu_gelu_forward,
    .gelu_backward = cpu_gelu_backward,
    .xent_forward = cpu_xent_forward,
    .xent_backward = cpu_xent_backward,
    .embedding_forward = cpu_embedding_forward,
    .embedding_backward = cpu_embedding_backward,
    .layernorm_forward = cpu_layernorm_forward,
    .layernorm_backward = cpu_layernorm_backward,
    .attention_forward = cpu_attention_forward,
    .attention_backward = cpu_attention_backward,

    .reduce_scatter = cpu_reduce_scatter,
    .all_gather = cpu_all_gather,
    .all_reduce = cpu_all_reduce,
    .broadcast = cpu_broadcast,
    .barrier = cpu_barrier,
    .wait = cpu_wait,
    .wait_timed = cpu_wait_timed,
    .host_all_gather = cpu_host_all_gather,

    .classifier = &cpu_classifier_ops,
    .llama = &cpu_llama_ops,
    .groups = &cpu_groups_ops,
    .bf16_dot = &cpu_bf16_dot_ops,
    .quant = &cpu_quant_ops,
};

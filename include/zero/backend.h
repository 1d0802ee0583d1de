/* The backend interface: one versioned core table of function pointers per backend,
 * plus optional groups of entries, each a struct of its own.
 *
 * The core (engine, layers, optimizer driver) never touches MPI, BLAS or CUDA
 * and never dereferences memory a backend owns; every data operation goes
 * through this table. A backend is a folder under backends/ and one line in
 * src/base/registry.c.
 *
 * What is required and what is optional (docs/design.md, "Backends"):
 *   - Every entry of struct zero_backend is required: the registry refuses a table
 *     with a NULL entry, naming it, or another ZERO_BACKEND_ABI.
 *   - A capability only some backends have is a group: a struct in its own header
 *     (zero/backend_GROUP.h) with its own version first, reached by one pointer at
 *     the end of struct zero_backend. The pointer is the only way to say "not here":
 *     NULL = the backend has none of the group; a present group has every entry (the
 *     registry checks its version and entries too).
 *   - caps (ZERO_CAP_*) describe the arithmetic of entries that exist.
 *   - ZERO_ENOTSUP from an entry means "present, but not for these arguments", with
 *     a message naming the entry.
 *   - A new capability is a new group (a header and one pointer line below), never
 *     optional entries appended to the core; a new entry every backend must answer
 *     joins its section of the core and moves ZERO_BACKEND_ABI. The suffix _stored
 *     means "reads or writes the stored (16-bit) activation dtype".
 *
 * Conventions for every entry below and in the groups:
 *   - `self` is the instance returned by open().
 *   - Pointers named dev/x/y/... are backend memory (from alloc); pointers named
 *     host... are ordinary host memory.
 *   - Matrices are row-major. Shapes are given in comments as (rows, cols).
 *   - Return 0 on success or a zero_status code; the message is then available
 *     from last_error(self) until the next failing call.
 *   - Kernels run in order on the compute stream; collectives on the comm
 *     stream. A non-blocking collective (req != NULL) returns a handle; wait()
 *     makes the compute stream wait for it and frees the handle. With req == NULL
 *     the call is blocking. */
#ifndef ZERO_BACKEND_H
#define ZERO_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "zero/comm_stats.h"
#include "zero/dtype.h"
#include "zero/ledger.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The core table's version: it changes whenever an entry of struct zero_backend is
 * added, removed or changes meaning (the groups carry versions of their own).
 * 2: host memory for offload (host_alloc, host_free, copy_async).
 * 3: every entry required (wait_timed moved in); optional entries moved into groups.
 * 4: product_workspace_bytes (the memory plan bounds the backend's scratch). */
#define ZERO_BACKEND_ABI 4

enum zero_coll_mode {
    ZERO_COLL_EXACT = 0, /* owner combines pieces in canonical tree order: bit-reproducible */
    ZERO_COLL_NATIVE = 1 /* the communication library's own reductions: tolerance-level */
};

enum zero_stream { ZERO_STREAM_COMPUTE = 0, ZERO_STREAM_COMM = 1 };

enum zero_gelu { ZERO_GELU_ERF = 0, ZERO_GELU_TANH = 1 };

struct zero_backend_options {
    enum zero_coll_mode coll_mode;
    int blas_threads;                   /* 0: backend default (cpu exact mode: 1) */
    int device;                         /* -1: choose from the node-local rank */
    struct zero_ledger *ledger;         /* required: every allocation is recorded here */
    struct zero_ledger *host_ledger;    /* required: every host_alloc is recorded here */
    struct zero_comm_stats *comm_stats; /* required: every collective is counted here */
};

/* Fused optimizer updates on one shard. The gradient is divided by grad_div
 * before use (the engine folds 1/atoms, loss scale and clipping into it).
 * param is the fp32 master; when param_copy != NULL the updated value is also
 * written there in copy_type (the compute-dtype parameters). */
struct zero_adam_args {
    float lr, beta1, beta2, eps, weight_decay;
    int64_t step;        /* 1-based step count for bias correction */
    int adamw;           /* 1: decoupled weight decay (AdamW); 0: L2 added to grad (Adam) */
    int bias_correction; /* DeepSpeed's default: 1 */
    float grad_div;
};

struct zero_sgd_args {
    float lr, momentum, dampening, weight_decay;
    int nesterov;
    int64_t step; /* 1-based; the first step initializes the momentum buffer */
    float grad_div;
};

struct zero_request; /* opaque completion handle of a non-blocking collective */

/* The optional groups, each defined in its own header. */
struct zero_fused_ops;       /* zero/backend_fused.h */
struct zero_classifier_ops;  /* zero/backend_classifier.h */
struct zero_stored_ops;      /* zero/backend_stored.h */
struct zero_attention_ops;   /* zero/backend_attention.h */
struct zero_device_step_ops; /* zero/backend_device_step.h */
struct zero_llama_ops;       /* zero/backend_llama.h */
struct zero_groups_ops;      /* zero/backend_groups.h */
struct zero_bf16_dot_ops;    /* zero/backend_bf16_dot.h */
struct zero_quant_ops;       /* zero/backend_quant.h */

/* zero_backend.caps */
#define ZERO_CAP_HOST_MEMORY                                                                       \
    2u /* alloc's memory is the host's: the engine's memory plan counts it against                 \
          what the process may use */
#define ZERO_CAP_FAST_LOWP_GEMM                                                                    \
    1u /* fp16/bf16 GEMMs run far faster than fp32 ones (tensor                                    \
          cores): libzero.matmul "auto" picks them */
#define ZERO_CAP_WIDENING_GEMM                                                                     \
    4u /* gemm reads an fp16/bf16 operand as its exact fp32 values, with the bits of the           \
          same product on an fp32 copy: with fp32 GEMMs in mixed precision the engine hands        \
          parameters over in the compute dtype instead of converting them first */
#define ZERO_CAP_ROUNDING_GEMM_STORE                                                               \
    8u /* gemm with an fp16/bf16 C and beta 0 stores the fp32 result rounded once (to              \
          nearest even), the bits of the same gemm into an fp32 C cast afterwards: in mixed        \
          precision the layers may write a weight's final gradient in the compute dtype */

struct zero_backend {
    int abi_version; /* ZERO_BACKEND_ABI */
    const char *name;
    unsigned caps; /* ZERO_CAP_* */

    /* ---- lifetime ---- */
    /* 0 if this backend can run here (devices present, ...); else fills why. */
    int (*probe)(char *why, size_t why_len);
    /* comm: backend-specific communicator handle (cpu/cuda: MPI_Comm *). */
    int (*open)(const struct zero_backend_options *opt, void *comm, void **self, char *why,
                size_t why_len);
    void (*close)(void *self);
    int (*rank)(void *self);
    int (*size)(void *self);
    const char *(*last_error)(void *self);
    int (*set_coll_mode)(void *self, enum zero_coll_mode mode);

    /* ---- memory (tagged: the ledger sees every byte) ---- */
    int (*alloc)(void *self, size_t bytes, enum zero_tag tag, void **dev);
    int (*free)(void *self, void *dev);                                      /* NULL is a no-op */
    int (*copy)(void *self, void *dst, const void *src, size_t bytes);       /* device to device */
    int (*to_host)(void *self, void *host, const void *dev, size_t bytes);   /* synchronous */
    int (*from_host)(void *self, void *dev, const void *host, size_t bytes); /* synchronous */
    int (*fill)(void *self, void *x, enum zero_dtype t, double value, size_t n);
    /* The most scratch one product (gemm and the entries built on it) allocates
     * beyond fp32 copies of its three operands (cpu: the exact GEMM's packing panels
     * of its threads; cuda: the cuBLASLt workspace it holds from open): the memory
     * plan's share of the backend's own scratch (src/engine/memory_peaks.c). */
    size_t (*product_workspace_bytes)(void *self);

    /* ---- host memory for ZeRO-Offload ----
     * Host memory that copy_async moves asynchronously and that every entry of this
     * table accepts wherever it accepts device memory (cuda: page-locked, mapped
     * into the device's address space by unified addressing; cpu: ordinary memory),
     * so rare paths (initialization, checkpoints) need no special case. Each byte
     * is recorded in the host ledger under tag, not in the device ledger. */
    int (*host_alloc)(void *self, size_t bytes, enum zero_tag tag, void **host);
    int (*host_free)(void *self, void *host); /* NULL is a no-op */
    /* dst (bytes) = src, each of them device or host_alloc memory, queued on stream
     * s behind the work already there; event_record on s marks its completion. */
    int (*copy_async)(void *self, void *dst, const void *src, size_t bytes, enum zero_stream s);

    /* ---- streams and events (trivial on the cpu) ---- */
    int (*event_create)(void *self, void **ev);
    int (*event_destroy)(void *self, void *ev);
    int (*event_record)(void *self, void *ev, enum zero_stream s);
    int (*stream_wait_event)(void *self, enum zero_stream s, void *ev);
    int (*event_synchronize)(void *self, void *ev);
    int (*synchronize)(void *self); /* both streams idle */

    /* ---- BLAS ---- */
    /* C (m, n) = alpha * op(A) (m, k) @ op(B) (k, n) + beta * C; fp32 accumulate. */
    int (*gemm)(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                enum zero_dtype b_type, int64_t ldb, float beta, void *c, enum zero_dtype c_type,
                int64_t ldc);

    /* ---- elementwise and reductions ---- */
    int (*cast)(void *self, void *dst, enum zero_dtype dst_type, const void *src,
                enum zero_dtype src_type, size_t n);
    int (*axpy)(void *self, float a, const float *x, float *y, size_t n);         /* y += a x */
    int (*scale)(void *self, float a, float *x, size_t n);                        /* x *= a */
    int (*add)(void *self, float *out, const float *a, const float *b, size_t n); /* out = a + b */
    int (*adam)(void *self, float *param, const void *grad, enum zero_dtype grad_type,
                float *exp_avg, float *exp_avg_sq, size_t n, const struct zero_adam_args *args,
                void *param_copy, enum zero_dtype copy_type);
    int (*sgd)(void *self, float *param, const void *grad, enum zero_dtype grad_type,
               float *momentum, size_t n, const struct zero_sgd_args *args, void *param_copy,
               enum zero_dtype copy_type);
    /* out[i] (device doubles, ceil(n / block) of them) = sum of squares of
     * x[i*block .. (i+1)*block), summed sequentially in double. */
    int (*sumsq_blocks)(void *self, const void *x, enum zero_dtype t, size_t n, size_t block,
                        double *out);
    /* *host_flag = 1 if any element is inf or NaN, else 0 (synchronous). */
    int (*nonfinite)(void *self, const void *x, enum zero_dtype t, size_t n, int *host_flag);

    /* ---- layer kernels (fp32 activations) ---- */
    /* y (rows, cols) += b (cols) broadcast over rows */
    int (*bias_add)(void *self, float *y, const float *b, int64_t rows, int64_t cols);
    /* db (cols) = beta * db + sum over rows of dy (rows, cols), rows summed in order */
    int (*bias_grad)(void *self, float *db, const float *dy, int64_t rows, int64_t cols,
                     float beta);
    /* y (n) = gelu(x) */
    int (*gelu_forward)(void *self, float *y, const float *x, size_t n, enum zero_gelu kind);
    /* dx (n) = dy * gelu'(x)  (written, not accumulated) */
    int (*gelu_backward)(void *self, float *dx, const float *x, const float *dy, size_t n,
                         enum zero_gelu kind);
    /* probs (rows, classes) = softmax(logits); losses (rows) = -log probs[label]. */
    int (*xent_forward)(void *self, float *losses, float *probs, const float *logits,
                        const int32_t *labels, int64_t rows, int64_t classes);
    /* dlogits (rows, classes) = (probs - onehot(labels)) * dloss */
    int (*xent_backward)(void *self, float *dlogits, const float *probs, const int32_t *labels,
                         int64_t rows, int64_t classes, float dloss);

    /* -- GPT kernels (src/nn/embedding.c, layernorm.c, attention.c) --
     * beta arguments are 0 or 1: 0 writes the result and ignores the old values
     * (NaN included), 1 adds to them. Sums over rows go in ascending row order,
     * so results do not depend on how many ranks or threads exist. */

    /* Token embedding. y (rows, cols) row r = table (vocab, cols) row ids[r].
     * Fails with ZERO_EINVAL naming the row and the id when an id (device
     * memory, (rows)) is outside [0, vocab); y is then not written (with the checks
     * deferred, the device_step group's graph_open, the id is recorded and replaced by
     * 0 instead). */
    int (*embedding_forward)(void *self, float *y, const int32_t *ids, const float *table,
                             int64_t rows, int64_t cols, int64_t vocab);
    /* dtable (vocab, cols) = beta * dtable, then for r = 0, 1, ..., rows-1 in that
     * order: dtable row ids[r] += dy (rows, cols) row r. Deterministic: no atomics;
     * a parallel version must give every table row its rows in ascending order.
     * ids were checked by the forward. */
    int (*embedding_backward)(void *self, float *dtable, const int32_t *ids, const float *dy,
                              int64_t rows, int64_t cols, int64_t vocab, float beta);

    /* LayerNorm over each row of x (rows, cols), GPT-2's (eps inside the root):
     *   mean (rows) = sum_c x[r, c] / cols
     *   rstd (rows) = 1 / sqrt(sum_c (x[r, c] - mean[r])^2 / cols + eps)
     *   y (rows, cols) = (x - mean) * rstd * weight (cols) + bias (cols)
     * mean and rstd are saved for the backward (llm.c's layout). */
    int (*layernorm_forward)(void *self, float *y, float *mean, float *rstd, const float *x,
                             const float *weight, const float *bias, int64_t rows, int64_t cols,
                             float eps);
    /* With xhat = (x - mean) * rstd and g = dy * weight, per row:
     *   dx (rows, cols) = dx_beta * dx + rstd * (g - mean_c(g) - xhat * mean_c(g * xhat))
     *   dweight (cols)  = w_beta * dweight + sum_r dy * xhat
     *   dbias (cols)    = b_beta * dbias + sum_r dy
     * The row sums are formed on their own (rows ascending) before beta * old is
     * added, as in bias_grad. */
    int (*layernorm_backward)(void *self, float *dx, float *dweight, float *dbias, const float *dy,
                              const float *x, const float *weight, const float *mean,
                              const float *rstd, int64_t rows, int64_t cols, float dx_beta,
                              float w_beta, float b_beta);

    /* Multi-head causal self-attention on GPT-2's fused projection.
     * qkv (B*T, 3C): row b*T + t is [q (C) | k (C) | v (C)] of token t of sequence b;
     * head h (of NH, hs = C / NH) uses columns h*hs .. h*hs + hs - 1 of q, k and v.
     * Per (b, h), with q, k, v (T, hs) that head's slices:
     *   s (T, T)   = q k^T / sqrt(hs)
     *   att (T, T) = softmax over j <= i of s[i, j], and exactly 0 for j > i
     *   y (T, hs)  = att v, written to columns h*hs .. of y (B*T, C)
     * att (B, NH, T, T) is saved for the backward. A backend whose kernels keep less
     * (its attention group's state_floats, zero/backend_attention.h) uses only the
     * first floats it names there: att then holds at least that many, and only this
     * backend's backward reads them.
     *
     * matmul_type is the operand dtype of the products (libzero.matmul, as for the
     * layers' GEMMs). ZERO_F32: the fp32 values as they are. ZERO_F16 / ZERO_BF16:
     * both operands of each product are rounded to that dtype first (q and k for s;
     * att and v for y; backward: dy_h and v for datt, att and dy_h for dv, ds and k
     * for dq, ds and q for dk); the sums and every result stay fp32 (s, the saved
     * att, y and dqkv are fp32 buffers; softmax and its backward read fp32), and
     * 1 / sqrt(hs) is applied in fp32 as the product's alpha. Any other dtype:
     * ZERO_ENOTSUP naming the entry. */
    int (*attention_forward)(void *self, float *y, float *att, const float *qkv, int64_t B,
                             int64_t T, int64_t C, int64_t NH, enum zero_dtype matmul_type);
    /* dqkv (B*T, 3C) written (not accumulated) from dy (B*T, C), qkv and att:
     *   datt = dy_h v^T;  dv = att^T dy_h;
     *   ds[i, j] = att[i, j] * (datt[i, j] - sum_k att[i, k] datt[i, k]);
     *   dq = ds k / sqrt(hs);  dk = ds^T q / sqrt(hs).
     * matmul_type as in attention_forward.
     * scratch holds B * NH * T * T floats (or the attention group's scratch_floats),
     * contents undefined on entry and exit. */
    int (*attention_backward)(void *self, float *dqkv, float *scratch, const float *dy,
                              const float *qkv, const float *att, int64_t B, int64_t T, int64_t C,
                              int64_t NH, enum zero_dtype matmul_type);

    /* ---- collectives (over all ranks of the communicator) ---- */
    /* Rank r receives element-wise sum over ranks of send[r*count .. (r+1)*count).
     * send holds N*count elements of wire_type; recv holds count of recv_type.
     * Sums accumulate in fp32. In place when recv == send + r*count*size(wire)
     * and recv_type == wire_type. */
    int (*reduce_scatter)(void *self, const void *send, enum zero_dtype wire_type, void *recv,
                          enum zero_dtype recv_type, size_t count, struct zero_request **req);
    /* recv (N*count) = concatenation of every rank's send (count). In place when
     * send == recv + r*count*size. */
    int (*all_gather)(void *self, const void *send, void *recv, enum zero_dtype t, size_t count,
                      struct zero_request **req);
    /* recv (count) = sum over ranks of send (count); count need not divide by N.
     * exact mode: exact reduce-scatter then all-gather. send == recv allowed. */
    int (*all_reduce)(void *self, const void *send, void *recv, enum zero_dtype t, size_t count,
                      struct zero_request **req);
    int (*broadcast)(void *self, void *buf, enum zero_dtype t, size_t count, int root,
                     struct zero_request **req);
    int (*barrier)(void *self);
    int (*wait)(void *self, struct zero_request *req);
    /* wait(), and *done_ago = seconds between the collective's completion and this
     * call's return (0 when it completed only now, or where the backend cannot tell:
     * cuda's wait is queued on the compute stream, not on the host), so the trace can
     * show when a collective really finished. */
    int (*wait_timed)(void *self, struct zero_request *req, double *done_ago);
    /* Control plane: recv_host (N*bytes) = every rank's send_host (bytes), host memory. */
    int (*host_all_gather)(void *self, const void *send_host, void *recv_host, size_t bytes);

    /* ---- optional groups: NULL = the backend has none of the group ---- */
    const struct zero_fused_ops *fused;             /* zero/backend_fused.h */
    const struct zero_classifier_ops *classifier;   /* zero/backend_classifier.h */
    const struct zero_stored_ops *stored;           /* zero/backend_stored.h */
    const struct zero_attention_ops *attention;     /* zero/backend_attention.h */
    const struct zero_device_step_ops *device_step; /* zero/backend_device_step.h */
    const struct zero_llama_ops *llama;             /* zero/backend_llama.h */
    const struct zero_groups_ops *groups;           /* zero/backend_groups.h */
    const struct zero_bf16_dot_ops *bf16_dot;       /* zero/backend_bf16_dot.h */
    const struct zero_quant_ops *quant;             /* zero/backend_quant.h */
};

/* ---- the registry (src/base/registry.c) ---- */

/* NULL if no backend of that name was built in. */
const struct zero_backend *zero_backend_find(const char *name);
/* Names of built-in backends, NULL-terminated. */
const char *const *zero_backend_names(void);
/* ZERO_OK if be has this ZERO_BACKEND_ABI, every core entry, and for each group it has
 * that group's version and every entry of it; else fills why naming the backend and
 * what is missing (src/base/backend_check.c). zero_device_open checks every table. */
int zero_backend_check(const struct zero_backend *be, char *why, size_t why_len);

/* A backend instance with the ledger and counters it reports to. */
struct zero_device {
    const struct zero_backend *be;
    void *self;
    int rank, size;
    struct zero_ledger ledger;      /* device memory */
    struct zero_ledger host_ledger; /* host_alloc memory (offloaded states) */
    struct zero_comm_stats comm_stats;
};

struct zero_error;
/* Finds, probes and opens backend `name` over communicator comm (MPI_Comm * for
 * cpu and cuda). opt->ledger, opt->host_ledger and opt->comm_stats are ignored:
 * the device's own are used. */
int zero_device_open(struct zero_device **dev, const char *name, void *comm,
                     const struct zero_backend_options *opt, struct zero_error *err);
void zero_device_close(struct zero_device *dev);

#ifdef __cplusplus
}
#endif

#endif

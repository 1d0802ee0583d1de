/* The interface's contract checks, written once: what every backend verifies about
 * the arguments of an entry of struct zero_backend (include/zero/backend.h) before it
 * does any work, with the messages the caller sees. The checks know nothing of a
 * backend's state: each returns ZERO_OK, or a status with why filled (no rank
 * prefix); the backend hands why to its own error helper (cpu_fail, cuda_fail), so
 * both backends refuse the same calls with the same words. Not installed. */
#ifndef ZERO_BACKEND_CONTRACT_H
#define ZERO_BACKEND_CONTRACT_H

#include <stddef.h>
#include <stdint.h>

#include "base/optim_consts.h"
#include "zero/backend.h"
#include "zero/dtype.h"

/* ZERO_CONTRACT(call, refuse): runs the check `call`, whose why buffer is
 * ZERO_CONTRACT_WHY, and returns `refuse` when it refuses; `refuse` is the backend's
 * error helper, reading zero_contract_rc_ and zero_contract_why_. One statement. */
#define ZERO_CONTRACT_WHY zero_contract_why_, sizeof zero_contract_why_
#define ZERO_CONTRACT(call, refuse)                                                                \
    do {                                                                                           \
        char zero_contract_why_[192];                                                              \
        int zero_contract_rc_ = (call);                                                            \
        if (zero_contract_rc_ != ZERO_OK)                                                          \
            return (refuse);                                                                       \
    } while (0)

/* open: options with both ledgers and the comm stats, a communicator, a known
 * collective mode. name is the backend's ("cpu"). */
int zero_contract_open(const char *name, const struct zero_backend_options *opt, const void *comm,
                       char *why, size_t why_len);

/* set_coll_mode: exact or native. */
int zero_contract_coll_mode(enum zero_coll_mode mode, char *why, size_t why_len);

/* gemm: shapes in 0..INT_MAX, each operand fp32/fp16/bf16 with a leading dimension
 * that holds its stored row: A (m, k), or (k, m) with trans_a; B (k, n), or (n, k)
 * with trans_b; C (m, n). */
int zero_contract_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                       enum zero_dtype a_type, int64_t lda, enum zero_dtype b_type, int64_t ldb,
                       enum zero_dtype c_type, int64_t ldc, char *why, size_t why_len);

/* cast: both float types; fp64 turns only into fp32 (through fp32 to fp16 would
 * round twice) or into itself (a copy). */
int zero_contract_cast(enum zero_dtype dst_type, enum zero_dtype src_type, char *why,
                       size_t why_len);

/* quantize_int8, dequantize_int8 (what names the entry): x or y fp32, fp16 or bf16,
 * a block of at least one element. */
int zero_contract_quant(const char *what, enum zero_dtype t, size_t block, char *why,
                        size_t why_len);

/* adam: the gradient and the optional parameter copy are fp32, fp16 or bf16, and
 * the arguments make sense; k is filled with the step's constants (optim_consts.h). */
int zero_contract_adam(const struct zero_adam_args *args, enum zero_dtype grad_type,
                       const void *param_copy, enum zero_dtype copy_type,
                       struct zero_adam_consts *k, char *why, size_t why_len);

/* sgd: as adam; has_momentum says whether a momentum buffer came with the call. */
int zero_contract_sgd(const struct zero_sgd_args *args, int has_momentum, enum zero_dtype grad_type,
                      const void *param_copy, enum zero_dtype copy_type, char *why, size_t why_len);

/* sumsq_blocks, nonfinite (what names the entry): x is a float type. */
int zero_contract_float_input(const char *what, enum zero_dtype t, char *why, size_t why_len);

/* gemm_bias_stored's out_type, gemm_dgelu_stored's pre_type (what names the entry and the
 * argument): a stored activation's dtype, fp32, fp16 or bf16. */
int zero_contract_stored_type(const char *what, enum zero_dtype t, char *why, size_t why_len);

/* attention_forward, attention_backward and their _stored forms (what names the entry):
 * C splits into NH heads and the products' dtype is fp32, fp16 or bf16. */
int zero_contract_attention(const char *what, int64_t C, int64_t NH, enum zero_dtype matmul_type,
                            char *why, size_t why_len);

/* The llama group (zero/backend_llama.h; what names the entry): rmsnorm's rows >= 0 and
 * cols >= 1; the rope's T >= 1, heads >= 1, D even and >= 2 and, for the table, theta > 1
 * and llama3's factors as zero_llama_config_check wants them (p may be NULL for
 * rope_apply); gqa's heads >= 1 with KV dividing H and D >= 1. */
struct zero_rope_params;
int zero_contract_rmsnorm(const char *what, int64_t rows, int64_t cols, char *why, size_t why_len);
int zero_contract_rope(const char *what, int64_t T, int64_t heads, int64_t D,
                       const struct zero_rope_params *p, char *why, size_t why_len);
int zero_contract_gqa(const char *what, int64_t rows, int64_t H, int64_t KV, int64_t D, char *why,
                      size_t why_len);

/* The collectives over size ranks, this one rank: dtypes that exist (and can be summed,
 * for the reductions), buffers where there are elements, and no overlap but the in-place
 * forms each entry allows (zero/backend.h); broadcast's root a rank. What a backend's
 * transport adds (MPI's int counts) it checks itself. */
int zero_contract_reduce_scatter(int rank, int size, const void *send, enum zero_dtype wire_type,
                                 const void *recv, enum zero_dtype recv_type, size_t count,
                                 char *why, size_t why_len);
int zero_contract_all_reduce(const void *send, const void *recv, enum zero_dtype t, size_t count,
                             char *why, size_t why_len);
int zero_contract_all_gather(int rank, int size, const void *send, const void *recv,
                             enum zero_dtype t, size_t count, char *why, size_t why_len);
int zero_contract_broadcast(int size, const void *buf, enum zero_dtype t, size_t count, int root,
                            char *why, size_t why_len);
int zero_contract_host_all_gather(const void *send_host, const void *recv_host, size_t bytes,
                                  char *why, size_t why_len);

#endif

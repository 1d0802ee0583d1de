/* The interface's contract checks (backend_contract.h): one text for every backend. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "base/backend_contract.h"
#include "zero/backend_llama.h"
#include "zero/error.h"

/* fp32, fp16, bf16 or fp64: what cast, sumsq_blocks and nonfinite accept. */
static int is_float(enum zero_dtype t)
{
    return t == ZERO_F32 || t == ZERO_F16 || t == ZERO_BF16 || t == ZERO_F64;
}

/* fp32, fp16 or bf16: GEMM operands, optimizer gradients and parameter copies. */
static int is_narrow_float(enum zero_dtype t)
{
    return t == ZERO_F32 || t == ZERO_F16 || t == ZERO_BF16;
}

int zero_contract_open(const char *name, const struct zero_backend_options *opt, const void *comm,
                       char *why, size_t why_len)
{
    if (opt == NULL || opt->ledger == NULL || opt->host_ledger == NULL || opt->comm_stats == NULL ||
        comm == NULL) {
        snprintf(why, why_len,
                 "%s backend: open needs options with ledgers, comm stats "
                 "and an MPI_Comm *",
                 name);
        return ZERO_EINVAL;
    }
    if (opt->coll_mode != ZERO_COLL_EXACT && opt->coll_mode != ZERO_COLL_NATIVE) {
        snprintf(why, why_len, "%s backend: unknown collective mode %d", name, (int)opt->coll_mode);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

int zero_contract_coll_mode(enum zero_coll_mode mode, char *why, size_t why_len)
{
    if (mode != ZERO_COLL_EXACT && mode != ZERO_COLL_NATIVE) {
        snprintf(why, why_len, "set_coll_mode: unknown mode %d", (int)mode);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

/* One stored operand: its dtype and a leading dimension that holds a row. */
static int gemm_operand(char name, enum zero_dtype t, int64_t rows, int64_t cols, int64_t ld,
                        char *why, size_t why_len)
{
    if (!is_narrow_float(t)) {
        snprintf(why, why_len, "gemm: %c has dtype %s; fp32, fp16 or bf16 expected", name,
                 zero_dtype_name(t));
        return ZERO_ENOTSUP;
    }
    int64_t min_ld = cols > 1 ? cols : 1;
    if (ld < min_ld || ld > INT_MAX) {
        snprintf(why, why_len,
                 "gemm: ld%c = %lld for a stored (%lld, %lld) matrix; need %lld..INT_MAX", name,
                 (long long)ld, (long long)rows, (long long)cols, (long long)min_ld);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

int zero_contract_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                       enum zero_dtype a_type, int64_t lda, enum zero_dtype b_type, int64_t ldb,
                       enum zero_dtype c_type, int64_t ldc, char *why, size_t why_len)
{
    if (m < 0 || n < 0 || k < 0 || m > INT_MAX || n > INT_MAX || k > INT_MAX) {
        snprintf(why, why_len, "gemm: bad shape m=%lld n=%lld k=%lld", (long long)m, (long long)n,
                 (long long)k);
        return ZERO_EINVAL;
    }
    /* stored shapes: A (m, k) or (k, m) transposed; B (k, n) or (n, k); C (m, n) */
    int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
    int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
    int rc;
    if ((rc = gemm_operand('a', a_type, a_rows, a_cols, lda, why, why_len)) != ZERO_OK ||
        (rc = gemm_operand('b', b_type, b_rows, b_cols, ldb, why, why_len)) != ZERO_OK ||
        (rc = gemm_operand('c', c_type, m, n, ldc, why, why_len)) != ZERO_OK)
        return rc;
    return ZERO_OK;
}

int zero_contract_cast(enum zero_dtype dst_type, enum zero_dtype src_type, char *why,
                       size_t why_len)
{
    if (!is_float(dst_type) || !is_float(src_type)) {
        snprintf(why, why_len, "cast: %s -> %s is not supported", zero_dtype_name(src_type),
                 zero_dtype_name(dst_type));
        return ZERO_ENOTSUP;
    }
    if (src_type == ZERO_F64 && dst_type != ZERO_F32 && dst_type != ZERO_F64) {
        snprintf(why, why_len, "cast: fp64 -> %s is not supported", zero_dtype_name(dst_type));
        return ZERO_ENOTSUP;
    }
    return ZERO_OK;
}

int zero_contract_quant(const char *what, enum zero_dtype t, size_t block, char *why,
                        size_t why_len)
{
    if (!is_narrow_float(t)) {
        snprintf(why, why_len, "%s: dtype %s; fp32, fp16 or bf16 expected", what,
                 zero_dtype_name(t));
        return ZERO_ENOTSUP;
    }
    if (block == 0) {
        snprintf(why, why_len, "%s: a block of 0 elements", what);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

/* adam, sgd (what names the entry): the gradient and the optional parameter copy. */
static int optimizer_types(const char *what, enum zero_dtype grad_type, const void *param_copy,
                           enum zero_dtype copy_type, char *why, size_t why_len)
{
    if (!is_narrow_float(grad_type)) {
        snprintf(why, why_len, "%s: gradient dtype %s; fp32, fp16 or bf16 expected", what,
                 zero_dtype_name(grad_type));
        return ZERO_ENOTSUP;
    }
    if (param_copy != NULL && !is_narrow_float(copy_type)) {
        snprintf(why, why_len, "%s: parameter copy dtype %s; fp32, fp16 or bf16 expected", what,
                 zero_dtype_name(copy_type));
        return ZERO_ENOTSUP;
    }
    return ZERO_OK;
}

int zero_contract_adam(const struct zero_adam_args *args, enum zero_dtype grad_type,
                       const void *param_copy, enum zero_dtype copy_type,
                       struct zero_adam_consts *k, char *why, size_t why_len)
{
    int rc = optimizer_types("adam", grad_type, param_copy, copy_type, why, why_len);
    if (rc != ZERO_OK)
        return rc;
    char bad[160];
    if (zero_adam_prepare(args, k, bad, sizeof bad)) {
        snprintf(why, why_len, "adam: %s", bad);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

int zero_contract_sgd(const struct zero_sgd_args *args, int has_momentum, enum zero_dtype grad_type,
                      const void *param_copy, enum zero_dtype copy_type, char *why, size_t why_len)
{
    int rc = optimizer_types("sgd", grad_type, param_copy, copy_type, why, why_len);
    if (rc != ZERO_OK)
        return rc;
    char bad[160];
    if (zero_sgd_check(args, has_momentum, bad, sizeof bad)) {
        snprintf(why, why_len, "sgd: %s", bad);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

int zero_contract_float_input(const char *what, enum zero_dtype t, char *why, size_t why_len)
{
    if (!is_float(t)) {
        snprintf(why, why_len, "%s: dtype %s is not a float type", what, zero_dtype_name(t));
        return ZERO_ENOTSUP;
    }
    return ZERO_OK;
}

int zero_contract_stored_type(const char *what, enum zero_dtype t, char *why, size_t why_len)
{
    if (!is_narrow_float(t)) {
        snprintf(why, why_len, "%s %s; fp32, fp16 or bf16 expected", what, zero_dtype_name(t));
        return ZERO_ENOTSUP;
    }
    return ZERO_OK;
}

int zero_contract_attention(const char *what, int64_t C, int64_t NH, enum zero_dtype matmul_type,
                            char *why, size_t why_len)
{
    if (NH < 1 || C % NH != 0) {
        snprintf(why, why_len, "%s: %lld channels do not split into %lld heads", what, (long long)C,
                 (long long)NH);
        return ZERO_EINVAL;
    }
    if (!is_narrow_float(matmul_type)) {
        snprintf(why, why_len, "%s: matmul_type %s; fp32, fp16 or bf16 expected", what,
                 zero_dtype_name(matmul_type));
        return ZERO_ENOTSUP;
    }
    return ZERO_OK;
}

/* ---- the llama group ---- */

int zero_contract_rmsnorm(const char *what, int64_t rows, int64_t cols, char *why, size_t why_len)
{
    if (rows < 0 || cols < 1) {
        snprintf(why, why_len, "%s: %lld rows of %lld columns; rows >= 0, cols >= 1 expected", what,
                 (long long)rows, (long long)cols);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

int zero_contract_rope(const char *what, int64_t T, int64_t heads, int64_t D,
                       const struct zero_rope_params *p, char *why, size_t why_len)
{
    if (T < 1 || heads < 1 || D < 2 || D % 2 != 0) {
        snprintf(why, why_len,
                 "%s: T %lld, heads %lld, head_dim %lld; T, heads >= 1 and an even "
                 "head_dim >= 2 expected",
                 what, (long long)T, (long long)heads, (long long)D);
        return ZERO_EINVAL;
    }
    if (p != NULL &&
        (!(p->theta > 1.0) || (p->llama3 && (!(p->factor > 0.0) || !(p->low_freq_factor > 0.0) ||
                                             !(p->high_freq_factor > p->low_freq_factor) ||
                                             !(p->original_max_position_embeddings >= 1.0))))) {
        snprintf(why, why_len,
                 "%s: rope_theta %g, llama3 %d (factor %g, low_freq_factor %g, "
                 "high_freq_factor %g, original_max_position_embeddings %g) out of range",
                 what, p->theta, p->llama3, p->factor, p->low_freq_factor, p->high_freq_factor,
                 p->original_max_position_embeddings);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

int zero_contract_gqa(const char *what, int64_t rows, int64_t H, int64_t KV, int64_t D, char *why,
                      size_t why_len)
{
    if (rows < 0 || H < 1 || KV < 1 || H % KV != 0 || D < 1) {
        snprintf(why, why_len,
                 "%s: %lld query heads, %lld kv heads, head_dim %lld; kv heads "
                 "dividing the query heads expected",
                 what, (long long)H, (long long)KV, (long long)D);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

/* ---- collectives ---- */

static int coll_dtype(const char *op, const char *which, enum zero_dtype t, char *why,
                      size_t why_len)
{
    if ((int)t < 0 || t >= ZERO_DTYPE_COUNT) {
        snprintf(why, why_len, "%s: %s dtype %d is not a zero_dtype", op, which, (int)t);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

/* Sums are defined for the floating wire types only. */
static int coll_sum_dtype(const char *op, const char *which, enum zero_dtype t, char *why,
                          size_t why_len)
{
    int rc = coll_dtype(op, which, t, why, why_len);
    if (rc == ZERO_OK && !is_narrow_float(t)) {
        snprintf(why, why_len, "%s: %s dtype %s cannot be summed (use fp32, fp16 or bf16)", op,
                 which, zero_dtype_name(t));
        rc = ZERO_EINVAL;
    }
    return rc;
}

static int coll_buffers(const char *op, const void *a, const void *b, size_t count, char *why,
                        size_t why_len)
{
    if (count > 0 && (a == NULL || b == NULL)) {
        snprintf(why, why_len, "%s: NULL buffer for %zu elements", op, count);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

static int overlap(const void *a, size_t a_bytes, const void *b, size_t b_bytes)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return a_bytes > 0 && b_bytes > 0 && x < y + b_bytes && y < x + a_bytes;
}

int zero_contract_reduce_scatter(int rank, int size, const void *send, enum zero_dtype wire_type,
                                 const void *recv, enum zero_dtype recv_type, size_t count,
                                 char *why, size_t why_len)
{
    const char *op = "reduce_scatter";
    int rc = coll_sum_dtype(op, "wire", wire_type, why, why_len);
    if (rc == ZERO_OK)
        rc = coll_sum_dtype(op, "recv", recv_type, why, why_len);
    if (rc == ZERO_OK)
        rc = coll_buffers(op, send, recv, count, why, why_len);
    if (rc != ZERO_OK)
        return rc;
    size_t n = (size_t)size, wsize = zero_dtype_size(wire_type);
    const char *mine = (const char *)send + (size_t)rank * count * wsize;
    int in_place = recv == mine && recv_type == wire_type;
    if (!in_place && overlap(send, n * count * wsize, recv, count * zero_dtype_size(recv_type))) {
        snprintf(why, why_len,
                 "%s: recv overlaps send without being in place (recv == send + rank * count, "
                 "same dtype)",
                 op);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

int zero_contract_all_reduce(const void *send, const void *recv, enum zero_dtype t, size_t count,
                             char *why, size_t why_len)
{
    const char *op = "all_reduce";
    int rc = coll_sum_dtype(op, "", t, why, why_len);
    if (rc == ZERO_OK)
        rc = coll_buffers(op, send, recv, count, why, why_len);
    if (rc != ZERO_OK)
        return rc;
    size_t esize = zero_dtype_size(t);
    if (send != recv && overlap(send, count * esize, recv, count * esize)) {
        snprintf(why, why_len, "%s: send and recv overlap without being equal", op);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

int zero_contract_all_gather(int rank, int size, const void *send, const void *recv,
                             enum zero_dtype t, size_t count, char *why, size_t why_len)
{
    const char *op = "all_gather";
    int rc = coll_dtype(op, "element", t, why, why_len);
    if (rc == ZERO_OK)
        rc = coll_buffers(op, send, recv, count, why, why_len);
    if (rc != ZERO_OK)
        return rc;
    size_t n = (size_t)size, esize = zero_dtype_size(t);
    int in_place = send == (const char *)recv + (size_t)rank * count * esize;
    if (!in_place && overlap(send, count * esize, recv, n * count * esize)) {
        snprintf(why, why_len,
                 "%s: send overlaps recv without being in place (send == recv + rank * count)", op);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

int zero_contract_broadcast(int size, const void *buf, enum zero_dtype t, size_t count, int root,
                            char *why, size_t why_len)
{
    const char *op = "broadcast";
    int rc = coll_dtype(op, "element", t, why, why_len);
    if (rc == ZERO_OK)
        rc = coll_buffers(op, buf, buf, count, why, why_len);
    if (rc == ZERO_OK && (root < 0 || root >= size)) {
        snprintf(why, why_len, "%s: root %d is not a rank of %d", op, root, size);
        rc = ZERO_EINVAL;
    }
    return rc;
}

int zero_contract_host_all_gather(const void *send_host, const void *recv_host, size_t bytes,
                                  char *why, size_t why_len)
{
    return coll_buffers("host_all_gather", send_host, recv_host, bytes, why, why_len);
}

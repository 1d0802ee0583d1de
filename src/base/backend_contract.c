/* The interface's contract checks (backend_contract.h): one text for every backend. */
#include <limits.h>
#include <stdio.h>

#include "base/backend_contract.h"
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

int zero_contract_attention_qkv(const char *what, enum zero_dtype qkv_type, char *why,
                                size_t why_len)
{
    if (!is_narrow_float(qkv_type)) {
        snprintf(why, why_len, "%s: qkv dtype %s; fp32, fp16 or bf16 expected", what,
                 zero_dtype_name(qkv_type));
        return ZERO_ENOTSUP;
    }
    return ZERO_OK;
}

/* Pieces the built-in layers share (not installed). */
#ifndef ZERO_NN_INTERNAL_H
#define ZERO_NN_INTERNAL_H

#include "zero/model.h"

/* Writes the message to ctx->errmsg; returns rc. */
int nn_unit_fail(struct zero_unit_ctx *ctx, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Writes "<what>: <backend's last error>" to ctx->errmsg; returns rc. */
int nn_backend_fail(struct zero_unit_ctx *ctx, int rc, const char *what);

/* Declares "<prefix>weight" (out, in) and, if bias, "<prefix>bias" (out) with
 * torch.nn.Linear's initialization U(-1/sqrt(in), 1/sqrt(in)), in that order. */
int nn_add_affine_params(struct zero_unit *u, const char *prefix, int64_t in, int64_t out, int bias,
                         struct zero_error *err);

/* ---- operand.c: a GEMM operand ---- */

/* A GEMM operand (nn_gemm, matmul.c): an fp32 activation, or parameter slot `param` of
 * ctx, which has a compute-dtype view when the GEMMs run in that dtype.
 * Operands are packed: ld is the stored width. */
struct nn_operand {
    const float *x;
    int param;        /* -1: an activation */
    const void *lowp; /* the activation already in lowp_type, or NULL: nn_lower's rounding
                         (ctx->matmul_type) or a stored activation (nn_stored) */
    enum zero_dtype lowp_type;
};
struct nn_operand nn_act(const float *x);
struct nn_operand nn_param(const struct zero_unit_ctx *ctx, int i);
/* Rounds activation o (n elements) into a workspace once, for several products
 * (backward's dy feeds two GEMMs); a no-op with fp32 GEMMs. Free *tmp with
 * nn_release after the last product. */
int nn_lower(struct zero_unit_ctx *ctx, struct nn_operand *o, size_t n, void **tmp);
void nn_release(struct zero_unit_ctx *ctx, void *tmp);

/* ---- activation.c: stored activations, in ctx->act_type (libzero.activations) ---- */

/* Bytes of n stored elements; base advanced by n stored elements. */
size_t nn_act_bytes(const struct zero_unit_ctx *ctx, size_t n);
void *nn_act_at(const struct zero_unit_ctx *ctx, void *base, size_t n);
/* A GEMM operand that is a stored activation x (in ctx->act_type). */
struct nn_operand nn_stored(const struct zero_unit_ctx *ctx, const void *x);
/* *out (n, fp32) = stored x widened: x itself in fp32 mode, else a workspace block
 * (*tmp) to free with nn_release. */
int nn_act_load(struct zero_unit_ctx *ctx, const void *x, size_t n, const float **out, void **tmp);
/* An fp32 kernel's output that is to be stored in y (n, ctx->act_type): *out is y
 * itself in fp32 mode, else a workspace block (*tmp); nn_act_end(rc of the kernels
 * that wrote *out) rounds it into y once and frees it, and returns the status. */
int nn_act_begin(struct zero_unit_ctx *ctx, void *y, size_t n, float **out, void **tmp);
int nn_act_end(struct zero_unit_ctx *ctx, int rc, void *y, size_t n, void *tmp);

/* c (m, n; ldc, fp32) = op(a) (m, k) @ op(b) (k, n) + beta * c, with the operands
 * in ctx->matmul_type (activations rounded to it in a workspace); fp32 sums.
 * what names the product in an error ("gemm y = x w^T"). */
int nn_gemm(struct zero_unit_ctx *ctx, const char *what, int ta, int tb, int64_t m, int64_t n,
            int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b, int64_t ldb,
            float beta, float *c, int64_t ldc);

/* c (m, n; ldc) in c_type = op(a) op(b), as nn_gemm with beta 0: the backend's fp32 sums
 * stored in c_type (a 16-bit C: each rounded once where the backend's gemm does so, every
 * exact-mode GEMM; ZERO_CAP_ROUNDING_GEMM_STORE says it does in every mode). */
int nn_gemm_stored(struct zero_unit_ctx *ctx, const char *what, int ta, int tb, int64_t m,
                   int64_t n, int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b,
                   int64_t ldb, void *c, enum zero_dtype c_type, int64_t ldc);

/* Gradient slot i of ctx (m, n; contiguous, the whole gradient) = op(a) op(b), added
 * where ctx->grad_accumulate[i]; else, where the engine offers the direct route
 * (ctx->grad_lowp[i]), written there in the compute dtype, setting
 * ctx->grad_lowp_written[i]; else written fresh (beta 0) into ctx->grad[i]. */
int nn_gemm_grad(struct zero_unit_ctx *ctx, const char *what, int i, int ta, int tb, int64_t m,
                 int64_t n, int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b,
                 int64_t ldb);

/* c (m, n; contiguous, fp32) = op(a) op(b) + bias (n) on every row, as nn_gemm with
 * beta 0; with gelu, gelu (m, n) = gelu_tanh(c) too. One GEMM with cuBLASLt-style
 * epilogues where the backend has gemm_bias, else nn_gemm, bias_add, gelu_forward. */
int nn_gemm_bias(struct zero_unit_ctx *ctx, const char *what, int ta, int tb, int64_t m, int64_t n,
                 int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b, int64_t ldb,
                 const float *bias, float *c, float *gelu);
/* c (m, n; contiguous, fp32) = (op(a) op(b)) * gelu_tanh'(pre), pre (m, n) the saved
 * pre-activation: one GEMM with the DGELU epilogue where the backend has gemm_dgelu,
 * else nn_gemm (beta 0) and gelu_backward in place. */
int nn_gemm_dgelu(struct zero_unit_ctx *ctx, const char *what, int ta, int tb, int64_t m, int64_t n,
                  int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b, int64_t ldb,
                  float *c, const float *pre);

/* nn_gemm_bias with c and gelu (m, n) stored activations (ctx->act_type): each fp32
 * value rounded once. Written as they are where the backend has gemm_bias_stored, else
 * nn_gemm_bias into fp32 workspaces then cast (nn_act_begin, nn_act_end): the same bits. */
int nn_gemm_bias_stored(struct zero_unit_ctx *ctx, const char *what, int ta, int tb, int64_t m,
                        int64_t n, int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b,
                        int64_t ldb, const float *bias, void *c, void *gelu);
/* nn_gemm_dgelu with pre a stored activation (ctx->act_type): read as it is where the
 * backend has gemm_dgelu_stored, else widened into a workspace first (nn_act_load). */
int nn_gemm_dgelu_stored(struct zero_unit_ctx *ctx, const char *what, int ta, int tb, int64_t m,
                         int64_t n, int64_t k, struct nn_operand a, int64_t lda,
                         struct nn_operand b, int64_t ldb, float *c, const void *pre);

/* The weight gradient of slot w and its bias gradient from the same dy:
 *   grad w (m, n; contiguous) = op(a) op(b), written fresh or added (as nn_gemm_grad)
 *   db (len) = db_beta * db + sum over rows of dy (k, len)   (as bias_grad)
 * dy is the fp32 value of a (db_side 0: ta 1, lda = m, len = m) or of b (db_side 1:
 * tb 0, ldb = n, len = n); a and b are activations (nn_act, perhaps nn_lower'ed).
 * One GEMM with the bias gradient in its epilogue where the backend has gemm_bgrad
 * (which may sum dy as rounded to the GEMM's dtype) and the weight gradient is fp32,
 * else nn_gemm_grad then bias_grad. */
int nn_gemm_bgrad(struct zero_unit_ctx *ctx, const char *what, int w, int ta, int tb, int64_t m,
                  int64_t n, int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b,
                  int64_t ldb, int db_side, float *db, float db_beta);

/* y (rows, out) = x (rows, in) @ w^T (in, out) + b (out), w = parameter slot w of
 * ctx, (out, in); b may be NULL; x an activation operand (nn_act, nn_stored). */
int nn_affine_forward(struct zero_unit_ctx *ctx, struct nn_operand x, int w, const float *b,
                      float *y, int64_t in, int64_t out);

/* The gradients of nn_affine_forward from dy (rows, out):
 *   dx (rows, in) = dy @ w (out, in) + dx_beta * dx   (skipped when dx is NULL)
 *   dw (out, in)  = dy^T @ x (rows, in), gradient slot w of ctx (nn_gemm_grad)
 *   db (out)      = sum over rows of dy + (acc_b ? db : 0)   (skipped when db is NULL) */
int nn_affine_backward(struct zero_unit_ctx *ctx, struct nn_operand x, int w, const float *dy,
                       float *dx, float dx_beta, float *db, int acc_b, int64_t in, int64_t out);

/* nn_affine_backward from dy as a GEMM operand (an fp32 activation, or one already in
 * a 16-bit dtype: nn_stored's form); db needs dy's fp32 values (dy.x) */
int nn_affine_backward_stored(struct zero_unit_ctx *ctx, struct nn_operand x, int w,
                              struct nn_operand dy, float *dx, float dx_beta, float *db, int acc_b,
                              int64_t in, int64_t out);

#endif

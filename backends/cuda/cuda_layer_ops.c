/* Layer and GPT kernels of the cuda backend (fp32 activations): the cpu backend's
 * checks and messages, then launches on the compute stream (cuda_layers.cu,
 * cuda_gpt_kernels.cu). Attention's products are strided-batched cuBLAS GEMMs, one
 * call per sequence covering all its heads, fp32 or (matmul_type fp16/bf16) on
 * operand copies cast to that dtype in workspace, with fp32 sums and results.
 *
 * Label and token-id range checks run on the device first and are read back before
 * any output is written, so a bad batch leaves the buffers alone and the error names
 * the first bad row and its value, as on the cpu. That read costs one wait for the
 * compute stream per xent/embedding forward. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/backend_contract.h"
#include "cuda_launch.h"
#include "cuda_ops.h"
#include "zero_cuda_profile.h"
#include "zero/knobs.h"

/* ---- bias, GELU ---- */

int cuda_bias_add(void *self, float *y, const float *b, int64_t rows, int64_t cols)
{
    struct cuda_state *s = self;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_BIAS);
    return cuda_prof_end(
        s, &pm, 0, 8.0 * (double)rows * (double)cols + 4.0 * (double)cols,
        cuda_check(s, cuda_launch_bias_add(s->compute, y, b, rows, cols), "bias_add"));
}

int cuda_bias_grad(void *self, float *db, const float *dy, int64_t rows, int64_t cols, float beta)
{
    struct cuda_state *s = self;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_BIAS);
    return cuda_prof_end(
        s, &pm, 0, 4.0 * (double)rows * (double)cols + (beta != 0.0f ? 8.0 : 4.0) * (double)cols,
        cuda_check(s, cuda_launch_bias_grad(s->compute, db, dy, rows, cols, beta), "bias_grad"));
}

static int check_gelu_kind(struct cuda_state *s, const char *what, enum zero_gelu kind)
{
    if (kind != ZERO_GELU_ERF && kind != ZERO_GELU_TANH)
        return cuda_fail(s, ZERO_EINVAL, "%s: unknown gelu kind %d", what, (int)kind);
    return ZERO_OK;
}

int cuda_gelu_forward(void *self, float *y, const float *x, size_t n, enum zero_gelu kind)
{
    struct cuda_state *s = self;
    int rc = check_gelu_kind(s, "gelu_forward", kind);
    if (rc != ZERO_OK)
        return rc;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_GELU);
    return cuda_prof_end(
        s, &pm, 0, 8.0 * (double)n,
        cuda_check(s, cuda_launch_gelu_forward(s->compute, y, x, n, kind), "gelu_forward"));
}

int cuda_gelu_backward(void *self, float *dx, const float *x, const float *dy, size_t n,
                       enum zero_gelu kind)
{
    struct cuda_state *s = self;
    int rc = check_gelu_kind(s, "gelu_backward", kind);
    if (rc != ZERO_OK)
        return rc;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_GELU);
    return cuda_prof_end(
        s, &pm, 0, 12.0 * (double)n,
        cuda_check(s, cuda_launch_gelu_backward(s->compute, dx, x, dy, n, kind), "gelu_backward"));
}

/* ---- range checks of labels and token ids (device memory) ---- */

/* "what: row R: <noun> V is outside [0, limit)" for the first bad row, as the cpu says */
static int check_ids(struct cuda_state *s, const char *what, const char *noun, const int32_t *ids,
                     int64_t rows, int64_t limit)
{
    if (rows <= 0)
        return ZERO_OK;
    if (s->deferred != NULL) /* libzero.cuda_graphs: read at the step's end (cuda_step.c) */
        return cuda_defer_ids(s, what, noun, ids, rows, limit);
    int rc =
        cuda_check(s, cuda_launch_index_check(s->compute, ids, rows, limit, s->flag_dev), what);
    unsigned long long bad = ULLONG_MAX;
    if (rc == ZERO_OK)
        rc = cuda_read_flag(s, what, &bad);
    if (rc != ZERO_OK || bad == ULLONG_MAX)
        return rc;
    int32_t value = 0;
    rc = cuda_to_host(s, &value, ids + bad, sizeof(value));
    if (rc != ZERO_OK)
        return rc;
    return cuda_fail(s, ZERO_EINVAL, "%s: row %llu: %s %d is outside [0, %lld)", what, bad, noun,
                     (int)value, (long long)limit);
}

int cuda_check_ids(struct cuda_state *s, const char *what, const char *noun, const int32_t *ids,
                   int64_t rows, int64_t limit)
{
    return check_ids(s, what, noun, ids, rows, limit);
}

/* ---- softmax cross-entropy ---- */

int cuda_xent_forward(void *self, float *losses, float *probs, const float *logits,
                      const int32_t *labels, int64_t rows, int64_t classes)
{
    struct cuda_state *s = self;
    if (classes < 1)
        return cuda_fail(s, ZERO_EINVAL, "xent_forward: %lld classes", (long long)classes);
    if (rows > INT_MAX)
        return cuda_fail(s, ZERO_ENOTSUP, "xent_forward: %lld rows exceed the grid",
                         (long long)rows);
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_XENT);
    int rc = check_ids(s, "xent_forward", "label", labels, rows, classes);
    if (rc == ZERO_OK) /* logits read, probabilities written; native: the fast kernel */
        rc = cuda_check(s,
                        (s->mode == ZERO_COLL_NATIVE ? cuda_launch_xent_forward_fast
                                                     : cuda_launch_xent_forward)(
                            s->compute, losses, probs, logits, labels, rows, classes),
                        "xent_forward");
    return cuda_prof_end(s, &pm, 0, 8.0 * (double)rows * (double)classes, rc);
}

int cuda_xent_backward(void *self, float *dlogits, const float *probs, const int32_t *labels,
                       int64_t rows, int64_t classes, float dloss)
{
    struct cuda_state *s = self;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_XENT);
    int rc = check_ids(s, "xent_backward", "label", labels, rows, classes);
    if (rc == ZERO_OK)
        rc = cuda_check(
            s, cuda_launch_xent_backward(s->compute, dlogits, probs, labels, rows, classes, dloss),
            "xent_backward");
    return cuda_prof_end(s, &pm, 0, 8.0 * (double)rows * (double)classes, rc);
}

/* ---- token embedding ---- */

int cuda_embedding_forward(void *self, float *y, const int32_t *ids, const float *table,
                           int64_t rows, int64_t cols, int64_t vocab)
{
    struct cuda_state *s = self;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_EMBEDDING);
    int rc = check_ids(s, "embedding_forward", "token id", ids, rows, vocab);
    if (rc == ZERO_OK)
        rc = cuda_check(s, cuda_launch_embedding_forward(s->compute, y, ids, table, rows, cols),
                        "embedding_forward");
    return cuda_prof_end(s, &pm, 0, 8.0 * (double)rows * (double)cols, rc);
}

int cuda_embedding_backward(void *self, float *dtable, const int32_t *ids, const float *dy,
                            int64_t rows, int64_t cols, int64_t vocab, float beta)
{
    struct cuda_state *s = self;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_EMBEDDING);
    return cuda_prof_end(
        s, &pm, 0, 4.0 * (double)rows * (double)cols + 8.0 * (double)vocab * (double)cols,
        s->mode == ZERO_COLL_NATIVE /* the bucketed kernel, the same bits */
            ? cuda_embedding_backward_native(s, dtable, ids, dy, rows, cols, vocab, beta)
            : cuda_check(s,
                         cuda_launch_embedding_backward(s->compute, dtable, ids, dy, rows, cols,
                                                        vocab, beta),
                         "embedding_backward"));
}

/* ---- LayerNorm ---- */

int cuda_layernorm_forward(void *self, float *y, float *mean, float *rstd, const float *x,
                           const float *weight, const float *bias, int64_t rows, int64_t cols,
                           float eps)
{
    struct cuda_state *s = self;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_LAYERNORM);
    return cuda_prof_end(
        s, &pm, 0, 8.0 * (double)rows * (double)cols,
        cuda_check(s,
                   (s->mode == ZERO_COLL_NATIVE ? cuda_launch_layernorm_forward_fast
                                                : cuda_launch_layernorm_forward)(
                       s->compute, y, mean, rstd, x, weight, bias, rows, cols, eps),
                   "layernorm_forward"));
}

int cuda_layernorm_backward(void *self, float *dx, float *dweight, float *dbias, const float *dy,
                            const float *x, const float *weight, const float *mean,
                            const float *rstd, int64_t rows, int64_t cols, float dx_beta,
                            float w_beta, float b_beta)
{
    struct cuda_state *s = self;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_LAYERNORM);
    return cuda_prof_end(
        s, &pm, 0, 12.0 * (double)rows * (double)cols,
        cuda_check(s,
                   cuda_launch_layernorm_backward(s->compute, dx, dweight, dbias, dy, x, weight,
                                                  mean, rstd, rows, cols, dx_beta, w_beta, b_beta),
                   "layernorm_backward"));
}

/* ---- causal self-attention ---- */

/* the contract's checks (src/base/backend_contract.c), then cuBLAS's int sizes */
static int check_attention(struct cuda_state *s, const char *what, int64_t T, int64_t C, int64_t NH,
                           enum zero_dtype matmul_type)
{
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_attention(what, C, NH, matmul_type, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    if (T > INT_MAX || 3 * C > INT_MAX || NH > INT_MAX)
        return cuda_fail(s, ZERO_ENOTSUP, "%s: T = %lld, C = %lld exceed cuBLAS's int sizes", what,
                         (long long)T, (long long)C);
    return ZERO_OK;
}

/* The operands of the attention products: the caller's fp32 buffers, or their copies
 * in the matmul dtype (workspace). Offsets count elements of that type. */
struct att_operands {
    enum zero_dtype t;
    cudaDataType_t ct;
    size_t esize;
};

static struct att_operands att_operands(enum zero_dtype t)
{
    return (struct att_operands){.t = t,
                                 .ct = t == ZERO_F16    ? CUDA_R_16F
                                       : t == ZERO_BF16 ? CUDA_R_16BF
                                                        : CUDA_R_32F,
                                 .esize = zero_dtype_size(t)};
}

/* element i of base (const dropped, as strchr does: the workspace is written through it) */
static void *at(const struct att_operands *o, const void *base, int64_t i)
{
    return (char *)base + (size_t)i * o->esize;
}

/* dst (n) = src (n fp32) in the operands' dtype, on the compute stream */
static int cast_operand(struct cuda_state *s, const struct att_operands *o, void *dst,
                        const float *src, int64_t n, const char *what)
{
    return cuda_check(
        s,
        cuda_launch_cast(s->compute, dst, o->t, src, ZERO_F32, 1, (size_t)n, (size_t)n, (size_t)n),
        what);
}

/* batch row-major products C_i (m, n) = alpha op(A_i) op(B_i), i < batch, the operands
 * of item i at element offset i * stride: the operand swap of cuda_blas.c, per item.
 * A and B of type ab (fp32, or fp16/bf16 with fp32 sums), C fp32. Exact mode: the
 * fixed-order kernel of cuda_exact_gemm.cu (the bits of the cpu backend's GEMMs). */
static int gemm_batched(struct cuda_state *s, const char *what, int ta, int tb, int64_t m,
                        int64_t n, int64_t k, float alpha, const void *a, int64_t lda, int64_t sa,
                        const void *b, int64_t ldb, int64_t sb, cudaDataType_t ab, float *c,
                        int64_t ldc, int64_t sc, int64_t batch)
{
    const float beta = 0.0f;
    if (s->mode == ZERO_COLL_EXACT || (s->bf16_product != 0 && ab == CUDA_R_16BF)) {
        enum zero_dtype t = ab == CUDA_R_16F ? ZERO_F16 : ab == CUDA_R_16BF ? ZERO_BF16 : ZERO_F32;
        return cuda_check(s,
                          cuda_launch_exact_gemm(s->compute, ta, tb, m, n, k, alpha, a, t, lda, sa,
                                                 b, t, ldb, sb, beta, c, ZERO_F32, ldc, sc, batch,
                                                 s->bf16_product),
                          what);
    }
    cublasStatus_t st = cublasGemmStridedBatchedEx(
        s->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m,
        (int)k, &alpha, b, ab, (int)ldb, (long long)sb, a, ab, (int)lda, (long long)sa, &beta, c,
        CUDA_R_32F, (int)ldc, (long long)sc, (int)batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return cuda_blas_check(s, st, what);
}

/* Native mode takes the fused kernels (cuda_flash_attention.cu) where they fit the
 * shape, unless ZERO_CUDA_ATTENTION=reference; exact mode, the products and softmax
 * below. Forward and backward of one step see the same mode, so the backward finds
 * in att what its forward saved there. */
static int use_flash(struct cuda_state *s, int64_t B, int64_t T, int64_t C, int64_t NH)
{
    const char *env = zero_knob(ZERO_KNOB_CUDA_ATTENTION);
    return s->mode == ZERO_COLL_NATIVE && !(env != NULL && strcmp(env, "reference") == 0) &&
           cuda_flash_attention_supports(B, T, C, NH);
}

static int attention_forward(struct cuda_state *s, float *y, float *att, const float *qkv,
                             int64_t B, int64_t T, int64_t C, int64_t NH,
                             enum zero_dtype matmul_type)
{
    int rc = check_attention(s, "attention_forward", T, C, NH, matmul_type);
    if (rc != ZERO_OK || B <= 0 || T <= 0)
        return rc;
    const int64_t hs = C / NH, C3 = 3 * C, TT = T * T;
    if (use_flash(s, B, T, C, NH)) /* att: the lse (B, NH, T) in its first floats */
        return cuda_check(
            s, cuda_launch_flash_attention_forward(s->compute, y, att, qkv, ZERO_F32, B, T, C, NH),
            "attention_forward: fused kernel");
    const float scale = 1.0f / sqrtf((float)hs);
    const struct att_operands o = att_operands(matmul_type);
    /* fp16/bf16: qkv_m (B*T, 3C) all of qkv, att_m (NH, T, T) one sequence's att, in the
     * matmul dtype; the stream order lets every sequence reuse att_m */
    const void *qkv_m = qkv;
    void *ws = NULL, *att_m = NULL;
    if (matmul_type != ZERO_F32) {
        rc = cuda_alloc(s, (size_t)(B * T * C3 + NH * TT) * o.esize, ZERO_TAG_WORKSPACE, &ws);
        if (rc != ZERO_OK)
            return rc;
        qkv_m = ws;
        att_m = at(&o, ws, B * T * C3);
        rc = cast_operand(s, &o, ws, qkv, B * T * C3, "attention_forward: casting qkv");
    }
    /* s (T, T) = q k^T / sqrt(hs) for every head of sequence b */
    for (int64_t b = 0; b < B && rc == ZERO_OK; b++) {
        const void *q = at(&o, qkv_m, b * T * C3);
        rc = gemm_batched(s, "attention_forward: q k^T", 0, 1, T, T, hs, scale, q, C3, hs,
                          at(&o, q, C), C3, hs, o.ct, att + b * NH * TT, T, TT, NH);
    }
    if (rc == ZERO_OK)
        rc = cuda_check(s, cuda_launch_causal_softmax(s->compute, att, B * NH * T, T),
                        "attention_forward: softmax");
    /* y_h (T, hs) = att (T, T) v (T, hs); the saved att stays fp32 */
    for (int64_t b = 0; b < B && rc == ZERO_OK; b++) {
        const void *a = att + b * NH * TT;
        if (att_m != NULL) {
            rc = cast_operand(s, &o, att_m, a, NH * TT, "attention_forward: casting att");
            a = att_m;
        }
        if (rc == ZERO_OK)
            rc = gemm_batched(s, "attention_forward: att v", 0, 0, T, hs, T, 1.0f, a, T, TT,
                              at(&o, qkv_m, b * T * C3 + 2 * C), C3, hs, o.ct, y + b * T * C, C, hs,
                              NH);
    }
    cuda_free(s, ws); /* back to the cache; the stream order keeps it alive for the GEMMs */
    return rc;
}

static int attention_backward(struct cuda_state *s, float *dqkv, float *scratch, const float *dy,
                              const float *qkv, const float *att, int64_t B, int64_t T, int64_t C,
                              int64_t NH, enum zero_dtype matmul_type)
{
    int rc = check_attention(s, "attention_backward", T, C, NH, matmul_type);
    if (rc != ZERO_OK || B <= 0 || T <= 0)
        return rc;
    if (use_flash(s, B, T, C, NH)) /* att: the forward's lse; scratch: D (B, NH, T) */
        return cuda_check(s,
                          cuda_launch_flash_attention_backward(s->compute, dqkv, scratch, dy, qkv,
                                                               ZERO_F32, att, B, T, C, NH),
                          "attention_backward: fused kernels");
    const int64_t hs = C / NH, C3 = 3 * C, TT = T * T;
    const float scale = 1.0f / sqrtf((float)hs);
    const struct att_operands o = att_operands(matmul_type);
    /* fp16/bf16: qkv_m (B*T, 3C) and dy_m (B*T, C) whole, then tt_m (NH, T, T) one
     * sequence's att (first loop) or ds (second loop), in the matmul dtype */
    const void *qkv_m = qkv, *dy_m = dy;
    void *ws = NULL, *tt_m = NULL;
    if (matmul_type != ZERO_F32) {
        rc = cuda_alloc(s, (size_t)(B * T * C3 + B * T * C + NH * TT) * o.esize, ZERO_TAG_WORKSPACE,
                        &ws);
        if (rc != ZERO_OK)
            return rc;
        void *dy_w = at(&o, ws, B * T * C3);
        tt_m = at(&o, dy_w, B * T * C);
        rc = cast_operand(s, &o, ws, qkv, B * T * C3, "attention_backward: casting qkv");
        if (rc == ZERO_OK)
            rc = cast_operand(s, &o, dy_w, dy, B * T * C, "attention_backward: casting dy");
        qkv_m = ws;
        dy_m = dy_w;
    }
    for (int64_t b = 0; b < B && rc == ZERO_OK; b++) {
        const void *v = at(&o, qkv_m, b * T * C3 + 2 * C), *dyh = at(&o, dy_m, b * T * C);
        const void *a = att + b * NH * TT;
        float *ds = scratch + b * NH * TT, *dv = dqkv + b * T * C3 + 2 * C;
        /* datt (T, T) = dy_h (T, hs) v^T */
        rc = gemm_batched(s, "attention_backward: dy v^T", 0, 1, T, T, hs, 1.0f, dyh, C, hs, v, C3,
                          hs, o.ct, ds, T, TT, NH);
        if (rc == ZERO_OK && tt_m != NULL) {
            rc = cast_operand(s, &o, tt_m, a, NH * TT, "attention_backward: casting att");
            a = tt_m;
        }
        /* dv (T, hs) = att^T (T, T) dy_h (T, hs) */
        if (rc == ZERO_OK)
            rc = gemm_batched(s, "attention_backward: att^T dy", 1, 0, T, hs, T, 1.0f, a, T, TT,
                              dyh, C, hs, o.ct, dv, C3, hs, NH);
    }
    /* ds from the fp32 datt and att */
    if (rc == ZERO_OK)
        rc = cuda_check(
            s, cuda_launch_causal_softmax_backward(s->compute, scratch, att, B * NH * T, T),
            "attention_backward: softmax");
    for (int64_t b = 0; b < B && rc == ZERO_OK; b++) {
        const void *q = at(&o, qkv_m, b * T * C3), *k = at(&o, q, C);
        const void *ds = scratch + b * NH * TT;
        float *dq = dqkv + b * T * C3, *dk = dq + C;
        if (tt_m != NULL) {
            rc = cast_operand(s, &o, tt_m, ds, NH * TT, "attention_backward: casting ds");
            ds = tt_m;
        }
        /* dq (T, hs) = ds k / sqrt(hs);  dk (T, hs) = ds^T q / sqrt(hs) */
        if (rc == ZERO_OK)
            rc = gemm_batched(s, "attention_backward: ds k", 0, 0, T, hs, T, scale, ds, T, TT, k,
                              C3, hs, o.ct, dq, C3, hs, NH);
        if (rc == ZERO_OK)
            rc = gemm_batched(s, "attention_backward: ds^T q", 1, 0, T, hs, T, scale, ds, T, TT, q,
                              C3, hs, o.ct, dk, C3, hs, NH);
    }
    cuda_free(s, ws); /* back to the cache; the stream order keeps it alive for the GEMMs */
    return rc;
}

/* The attention entries, profiled: the products as computed (whole T x T, the causal
 * half included), the fp32 T x T matrices' traffic as the bytes. */
static double attention_tt(int64_t B, int64_t T, int64_t NH)
{
    return (double)B * (double)NH * (double)T * (double)T;
}

static int prof_forward_end(struct cuda_state *s, struct cuda_prof_mark *pm, int64_t B, int64_t T,
                            int64_t C, int64_t NH, int rc)
{
    double tt = attention_tt(B, T, NH);
    /* att written, softmaxed (read, written), read by att v; qkv read, y written */
    double bytes = 16.0 * tt + 16.0 * (double)B * (double)T * (double)C;
    return cuda_prof_end(s, pm, 4.0 * tt * (double)(NH > 0 ? C / NH : 0), bytes, rc);
}

static int prof_backward_end(struct cuda_state *s, struct cuda_prof_mark *pm, int64_t B, int64_t T,
                             int64_t C, int64_t NH, int rc)
{
    double tt = attention_tt(B, T, NH);
    /* datt written, att read twice, ds read, written and read twice; qkv, dy, dqkv */
    double bytes = 28.0 * tt + 28.0 * (double)B * (double)T * (double)C;
    return cuda_prof_end(s, pm, 8.0 * tt * (double)(NH > 0 ? C / NH : 0), bytes, rc);
}

int cuda_attention_forward(void *self, float *y, float *att, const float *qkv, int64_t B, int64_t T,
                           int64_t C, int64_t NH, enum zero_dtype matmul_type)
{
    struct cuda_state *s = self;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_ATTENTION);
    return prof_forward_end(s, &pm, B, T, C, NH,
                            attention_forward(s, y, att, qkv, B, T, C, NH, matmul_type));
}

int cuda_attention_backward(void *self, float *dqkv, float *scratch, const float *dy,
                            const float *qkv, const float *att, int64_t B, int64_t T, int64_t C,
                            int64_t NH, enum zero_dtype matmul_type)
{
    struct cuda_state *s = self;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_ATTENTION);
    return prof_backward_end(
        s, &pm, B, T, C, NH,
        attention_backward(s, dqkv, scratch, dy, qkv, att, B, T, C, NH, matmul_type));
}

/* The state the entries keep: use_flash's decision, so the sizes are the kernels' */
void cuda_attention_state_floats(void *self, int64_t B, int64_t T, int64_t C, int64_t NH,
                                 enum zero_dtype matmul_type, size_t *att_floats,
                                 size_t *scratch_floats)
{
    (void)matmul_type; /* the fused kernels are fp32 whatever it is; the reference reads it */
    const int64_t per_query = B * NH * T;
    const size_t n = (size_t)(use_flash(self, B, T, C, NH) ? per_query : per_query * T);
    *att_floats = *scratch_floats = n;
}

/* 16-bit qkv: the fused kernels read it (and write y) as it is; the reference path
 * widens it into a workspace, runs the fp32 entry and casts y (the same bits) */
static int check_qkv_type(struct cuda_state *s, const char *what, enum zero_dtype t)
{
    char why[ZERO_ERRMSG_LEN], what_qkv[96];
    snprintf(what_qkv, sizeof what_qkv, "%s: qkv dtype", what);
    int rc = zero_contract_stored_type(what_qkv, t, why, sizeof why);
    return rc != ZERO_OK ? cuda_fail(s, rc, "%s", why) : ZERO_OK;
}

/* *qkv32 (n fp32) = qkv (n, t) widened into a new workspace block (*ws, with extra
 * floats after it for the caller) */
static int widen_qkv(struct cuda_state *s, const char *what, const void *qkv, enum zero_dtype t,
                     size_t n, size_t extra, float **ws)
{
    int rc = cuda_alloc(s, (n + extra) * sizeof(float), ZERO_TAG_WORKSPACE, (void **)ws);
    if (rc == ZERO_OK)
        rc = cuda_check(s, cuda_launch_cast(s->compute, *ws, ZERO_F32, qkv, t, 1, n, n, n), what);
    return rc;
}

static int attention_forward_stored(struct cuda_state *s, void *y, float *att, const void *qkv,
                                    enum zero_dtype t, int64_t B, int64_t T, int64_t C, int64_t NH,
                                    enum zero_dtype matmul_type)
{
    int rc = check_qkv_type(s, "attention_forward_stored", t);
    if (rc == ZERO_OK)
        rc = check_attention(s, "attention_forward_stored", T, C, NH, matmul_type);
    if (rc != ZERO_OK || B <= 0 || T <= 0)
        return rc;
    if (t == ZERO_F32)
        return attention_forward(s, y, att, qkv, B, T, C, NH, matmul_type);
    if (use_flash(s, B, T, C, NH))
        return cuda_check(
            s, cuda_launch_flash_attention_forward(s->compute, y, att, qkv, t, B, T, C, NH),
            "attention_forward_stored: fused kernel");
    const size_t nqkv = (size_t)(B * T * 3 * C), ny = (size_t)(B * T * C);
    float *ws = NULL;
    rc = widen_qkv(s, "attention_forward_stored: widening qkv", qkv, t, nqkv, ny, &ws);
    if (rc == ZERO_OK)
        rc = attention_forward(s, ws + nqkv, att, ws, B, T, C, NH, matmul_type);
    if (rc == ZERO_OK)
        rc = cuda_check(s, cuda_launch_cast(s->compute, y, t, ws + nqkv, ZERO_F32, 1, ny, ny, ny),
                        "attention_forward_stored: rounding y");
    const int frc = cuda_free(s, ws); /* the stream order keeps it alive for the kernels */
    return rc == ZERO_OK ? frc : rc;
}

static int attention_backward_stored(struct cuda_state *s, float *dqkv, float *scratch,
                                     const float *dy, const void *qkv, enum zero_dtype t,
                                     const float *att, int64_t B, int64_t T, int64_t C, int64_t NH,
                                     enum zero_dtype matmul_type)
{
    int rc = check_qkv_type(s, "attention_backward_stored", t);
    if (rc == ZERO_OK)
        rc = check_attention(s, "attention_backward_stored", T, C, NH, matmul_type);
    if (rc != ZERO_OK || B <= 0 || T <= 0)
        return rc;
    if (t == ZERO_F32)
        return attention_backward(s, dqkv, scratch, dy, qkv, att, B, T, C, NH, matmul_type);
    if (use_flash(s, B, T, C, NH))
        return cuda_check(s,
                          cuda_launch_flash_attention_backward(s->compute, dqkv, scratch, dy, qkv,
                                                               t, att, B, T, C, NH),
                          "attention_backward_stored: fused kernels");
    float *ws = NULL;
    rc = widen_qkv(s, "attention_backward_stored: widening qkv", qkv, t, (size_t)(B * T * 3 * C), 0,
                   &ws);
    if (rc == ZERO_OK)
        rc = attention_backward(s, dqkv, scratch, dy, ws, att, B, T, C, NH, matmul_type);
    const int frc = cuda_free(s, ws);
    return rc == ZERO_OK ? frc : rc;
}

int cuda_attention_forward_stored(void *self, void *y, float *att, const void *qkv,
                                  enum zero_dtype qkv_type, int64_t B, int64_t T, int64_t C,
                                  int64_t NH, enum zero_dtype matmul_type)
{
    struct cuda_state *s = self;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_ATTENTION);
    return prof_forward_end(
        s, &pm, B, T, C, NH,
        attention_forward_stored(s, y, att, qkv, qkv_type, B, T, C, NH, matmul_type));
}

int cuda_attention_backward_stored(void *self, float *dqkv, float *scratch, const float *dy,
                                   const void *qkv, enum zero_dtype qkv_type, const float *att,
                                   int64_t B, int64_t T, int64_t C, int64_t NH,
                                   enum zero_dtype matmul_type)
{
    struct cuda_state *s = self;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_ATTENTION);
    return prof_backward_end(s, &pm, B, T, C, NH,
                             attention_backward_stored(s, dqkv, scratch, dy, qkv, qkv_type, att, B,
                                                       T, C, NH, matmul_type));
}

/* nn_gemm: every GEMM of the built-in layers, in the precision the engine
 * chose (ctx->matmul_type, from libzero.matmul).
 *
 * fp32: the operands as they are. Compute dtype (mixed precision with
 * low-precision GEMMs, as AMP's autocast does for matmuls): parameters through
 * their compute-dtype view (ctx->param_lowp: the engine's own buffer, no
 * conversion), activations rounded into a workspace first; the backend sums in
 * fp32 and writes fp32. The rounding is the same on every rank and stage, so the
 * exactness contract holds in both precisions; they differ from each other by
 * the rounding of the activations. */
#include "nn_internal.h"
#include "zero/backend_fused.h"
#include "zero/backend_stored.h"

/* o as the GEMM reads it: (stored rows * ld) elements; *tmp receives a
 * workspace block to free when o had to be converted here. */
static int lowered(struct zero_unit_ctx *ctx, struct nn_operand o, size_t n, const void **out,
                   enum zero_dtype *t, void **tmp)
{
    const struct zero_backend *be = ctx->be;
    *tmp = NULL;
    *out = o.x;
    *t = ZERO_F32;
    if (ctx->matmul_type == ZERO_F32) {
        /* fp32 products: a parameter's exact compute-dtype value where the engine
         * offers it (the backend widens it: the same product, no fp32 copy) */
        if (o.param >= 0 && ctx->param_lowp[o.param] != NULL && ctx->param_lowp_type != ZERO_F32) {
            *out = ctx->param_lowp[o.param];
            *t = ctx->param_lowp_type;
        }
        if (o.lowp == NULL) /* an fp32 activation or parameter */
            return ZERO_OK;
        /* a stored compute-dtype activation: as it is where the backend widens it,
         * else widened here (the same values either way) */
        *out = o.lowp;
        *t = o.lowp_type;
        if (be->caps & ZERO_CAP_WIDENING_GEMM)
            return ZERO_OK;
        *t = ZERO_F32;
    } else {
        *t = ctx->matmul_type;
        if (o.lowp != NULL && o.lowp_type == *t) {
            *out = o.lowp;
            return ZERO_OK;
        }
        if (o.lowp == NULL && o.param >= 0 && ctx->param_lowp[o.param] != NULL) {
            *out = ctx->param_lowp[o.param];
            return ZERO_OK;
        }
    }
    /* converted from o's fp32 value, or from its stored one */
    const void *src = o.lowp != NULL ? o.lowp : (const void *)o.x;
    enum zero_dtype src_type = o.lowp != NULL ? o.lowp_type : ZERO_F32;
    int rc = be->alloc(ctx->bself, n * zero_dtype_size(*t), ZERO_TAG_WORKSPACE, tmp);
    if (rc == ZERO_OK)
        rc = be->cast(ctx->bself, *tmp, *t, src, src_type, n);
    *out = *tmp;
    return rc;
}

/* Both operands of one product as the GEMM reads them (stored shapes: A is (m, k), or
 * (k, m) when transposed; B likewise); release_operands frees what was rounded here. */
struct gemm_operands {
    const void *a, *b;
    enum zero_dtype ta, tb;
    void *tmp_a, *tmp_b;
};

static int lower_operands(struct zero_unit_ctx *ctx, int ta, int tb, int64_t m, int64_t n,
                          int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b,
                          int64_t ldb, struct gemm_operands *o)
{
    o->tmp_b = NULL;
    int rc = lowered(ctx, a, (size_t)((ta ? k : m) * lda), &o->a, &o->ta, &o->tmp_a);
    if (rc == ZERO_OK)
        rc = lowered(ctx, b, (size_t)((tb ? n : k) * ldb), &o->b, &o->tb, &o->tmp_b);
    return rc;
}

static void release_operands(struct zero_unit_ctx *ctx, struct gemm_operands *o)
{
    ctx->be->free(ctx->bself, o->tmp_a);
    ctx->be->free(ctx->bself, o->tmp_b);
}

int nn_gemm(struct zero_unit_ctx *ctx, const char *what, int ta, int tb, int64_t m, int64_t n,
            int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b, int64_t ldb,
            float beta, float *c, int64_t ldc)
{
    const struct zero_backend *be = ctx->be;
    struct gemm_operands o;
    int rc = lower_operands(ctx, ta, tb, m, n, k, a, lda, b, ldb, &o);
    if (rc == ZERO_OK)
        rc = be->gemm(ctx->bself, ta, tb, m, n, k, 1.0f, o.a, o.ta, lda, o.b, o.tb, ldb, beta, c,
                      ZERO_F32, ldc);
    release_operands(ctx, &o);
    return rc == ZERO_OK ? ZERO_OK : nn_backend_fail(ctx, rc, what);
}

int nn_gemm_stored(struct zero_unit_ctx *ctx, const char *what, int ta, int tb, int64_t m,
                   int64_t n, int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b,
                   int64_t ldb, void *c, enum zero_dtype c_type, int64_t ldc)
{
    struct gemm_operands o;
    int rc = lower_operands(ctx, ta, tb, m, n, k, a, lda, b, ldb, &o);
    if (rc == ZERO_OK)
        rc = ctx->be->gemm(ctx->bself, ta, tb, m, n, k, 1.0f, o.a, o.ta, lda, o.b, o.tb, ldb, 0.0f,
                           c, c_type, ldc);
    release_operands(ctx, &o);
    return rc == ZERO_OK ? ZERO_OK : nn_backend_fail(ctx, rc, what);
}

int nn_gemm_grad(struct zero_unit_ctx *ctx, const char *what, int i, int ta, int tb, int64_t m,
                 int64_t n, int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b,
                 int64_t ldb)
{
    if (ctx->grad_accumulate[i] || ctx->grad_lowp[i] == NULL)
        return nn_gemm(ctx, what, ta, tb, m, n, k, a, lda, b, ldb,
                       ctx->grad_accumulate[i] ? 1.0f : 0.0f, ctx->grad[i], n);
    /* the direct route: the final gradient rounded once at the GEMM's store */
    const struct zero_backend *be = ctx->be;
    struct gemm_operands o;
    int rc = lower_operands(ctx, ta, tb, m, n, k, a, lda, b, ldb, &o);
    if (rc == ZERO_OK)
        rc = be->gemm(ctx->bself, ta, tb, m, n, k, 1.0f, o.a, o.ta, lda, o.b, o.tb, ldb, 0.0f,
                      ctx->grad_lowp[i], ctx->grad_lowp_type, n);
    release_operands(ctx, &o);
    if (rc == ZERO_OK)
        ctx->grad_lowp_written[i] = 1;
    return rc == ZERO_OK ? ZERO_OK : nn_backend_fail(ctx, rc, what);
}

int nn_gemm_bias(struct zero_unit_ctx *ctx, const char *what, int ta, int tb, int64_t m, int64_t n,
                 int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b, int64_t ldb,
                 const float *bias, float *c, float *gelu)
{
    const struct zero_backend *be = ctx->be;
    if (be->fused == NULL) { /* the three passes */
        int rc = nn_gemm(ctx, what, ta, tb, m, n, k, a, lda, b, ldb, 0.0f, c, n);
        if (rc == ZERO_OK && (rc = be->bias_add(ctx->bself, c, bias, m, n)) != ZERO_OK)
            return nn_backend_fail(ctx, rc, "bias_add");
        if (rc == ZERO_OK && gelu != NULL &&
            (rc = be->gelu_forward(ctx->bself, gelu, c, (size_t)(m * n), ZERO_GELU_TANH)))
            return nn_backend_fail(ctx, rc, "gelu_forward");
        return rc;
    }
    struct gemm_operands o;
    int rc = lower_operands(ctx, ta, tb, m, n, k, a, lda, b, ldb, &o);
    if (rc == ZERO_OK)
        rc = be->fused->gemm_bias(ctx->bself, ta, tb, m, n, k, o.a, o.ta, lda, o.b, o.tb, ldb, bias,
                                  c, n, gelu, ZERO_GELU_TANH);
    release_operands(ctx, &o);
    return rc == ZERO_OK ? ZERO_OK : nn_backend_fail(ctx, rc, what);
}

int nn_gemm_dgelu(struct zero_unit_ctx *ctx, const char *what, int ta, int tb, int64_t m, int64_t n,
                  int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b, int64_t ldb,
                  float *c, const float *pre)
{
    const struct zero_backend *be = ctx->be;
    if (be->fused == NULL) { /* the two passes */
        int rc = nn_gemm(ctx, what, ta, tb, m, n, k, a, lda, b, ldb, 0.0f, c, n);
        if (rc == ZERO_OK &&
            (rc = be->gelu_backward(ctx->bself, c, pre, c, (size_t)(m * n), ZERO_GELU_TANH)))
            return nn_backend_fail(ctx, rc, "gelu_backward");
        return rc;
    }
    struct gemm_operands o;
    int rc = lower_operands(ctx, ta, tb, m, n, k, a, lda, b, ldb, &o);
    if (rc == ZERO_OK)
        rc = be->fused->gemm_dgelu(ctx->bself, ta, tb, m, n, k, o.a, o.ta, lda, o.b, o.tb, ldb, c,
                                   n, pre, ZERO_GELU_TANH);
    release_operands(ctx, &o);
    return rc == ZERO_OK ? ZERO_OK : nn_backend_fail(ctx, rc, what);
}

int nn_gemm_bias_stored(struct zero_unit_ctx *ctx, const char *what, int ta, int tb, int64_t m,
                        int64_t n, int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b,
                        int64_t ldb, const float *bias, void *c, void *gelu)
{
    const struct zero_backend *be = ctx->be;
    const size_t mn = (size_t)(m * n);
    if (ctx->act_type == ZERO_F32 || be->stored == NULL) { /* fp32, then the casts */
        float *c32 = NULL, *gelu32 = NULL;
        void *tc = NULL, *tg = NULL;
        int rc = nn_act_begin(ctx, c, mn, &c32, &tc);
        if (rc == ZERO_OK && gelu != NULL)
            rc = nn_act_begin(ctx, gelu, mn, &gelu32, &tg);
        if (rc == ZERO_OK)
            rc = nn_gemm_bias(ctx, what, ta, tb, m, n, k, a, lda, b, ldb, bias, c32, gelu32);
        rc = nn_act_end(ctx, rc, c, mn, tc);
        return gelu != NULL ? nn_act_end(ctx, rc, gelu, mn, tg) : rc;
    }
    /* stored as written: no fp32 workspace, no cast pass */
    struct gemm_operands o;
    int rc = lower_operands(ctx, ta, tb, m, n, k, a, lda, b, ldb, &o);
    if (rc == ZERO_OK)
        rc = be->stored->gemm_bias_stored(ctx->bself, ta, tb, m, n, k, o.a, o.ta, lda, o.b, o.tb,
                                          ldb, bias, c, gelu, ctx->act_type, n, ZERO_GELU_TANH);
    release_operands(ctx, &o);
    return rc == ZERO_OK ? ZERO_OK : nn_backend_fail(ctx, rc, what);
}

int nn_gemm_dgelu_stored(struct zero_unit_ctx *ctx, const char *what, int ta, int tb, int64_t m,
                         int64_t n, int64_t k, struct nn_operand a, int64_t lda,
                         struct nn_operand b, int64_t ldb, float *c, const void *pre)
{
    const struct zero_backend *be = ctx->be;
    if (ctx->act_type == ZERO_F32 || be->stored == NULL) { /* pre widened first */
        const float *pre32 = NULL;
        void *tmp = NULL;
        int rc = nn_act_load(ctx, pre, (size_t)(m * n), &pre32, &tmp);
        if (rc == ZERO_OK)
            rc = nn_gemm_dgelu(ctx, what, ta, tb, m, n, k, a, lda, b, ldb, c, pre32);
        nn_release(ctx, tmp);
        return rc;
    }
    /* pre read as it is stored */
    struct gemm_operands o;
    int rc = lower_operands(ctx, ta, tb, m, n, k, a, lda, b, ldb, &o);
    if (rc == ZERO_OK)
        rc = be->stored->gemm_dgelu_stored(ctx->bself, ta, tb, m, n, k, o.a, o.ta, lda, o.b, o.tb,
                                           ldb, c, n, pre, ctx->act_type, ZERO_GELU_TANH);
    release_operands(ctx, &o);
    return rc == ZERO_OK ? ZERO_OK : nn_backend_fail(ctx, rc, what);
}

/* The weight gradient and its bias gradient, the two sums of the same dy: one call
 * where the backend fuses them (gemm_bgrad: cuBLASLt's bias gradient epilogue),
 * else nn_gemm_grad then bias_grad, the order the layers always ran. */
int nn_gemm_bgrad(struct zero_unit_ctx *ctx, const char *what, int w, int ta, int tb, int64_t m,
                  int64_t n, int64_t k, struct nn_operand a, int64_t lda, struct nn_operand b,
                  int64_t ldb, int db_side, float *db, float db_beta)
{
    const struct zero_backend *be = ctx->be;
    const float *dy = db_side == 0 ? a.x : b.x; /* (k, len) fp32 */
    const int64_t len = db_side == 0 ? m : n;
    /* the two passes: no fused entry, or the weight gradient takes the direct
     * route (nn_gemm_grad writes it in the compute dtype) */
    if (be->fused == NULL || (ctx->grad_lowp[w] != NULL && !ctx->grad_accumulate[w])) {
        int rc = nn_gemm_grad(ctx, what, w, ta, tb, m, n, k, a, lda, b, ldb);
        if (rc == ZERO_OK && (rc = be->bias_grad(ctx->bself, db, dy, k, len, db_beta)) != ZERO_OK)
            return nn_backend_fail(ctx, rc, "bias_grad db");
        return rc;
    }
    struct gemm_operands o;
    int rc = lower_operands(ctx, ta, tb, m, n, k, a, lda, b, ldb, &o);
    if (rc == ZERO_OK)
        rc = be->fused->gemm_bgrad(ctx->bself, ta, tb, m, n, k, o.a, o.ta, lda, o.b, o.tb, ldb,
                                   ctx->grad_accumulate[w] ? 1.0f : 0.0f, ctx->grad[w], n, db_side,
                                   dy, db, db_beta);
    release_operands(ctx, &o);
    return rc == ZERO_OK ? ZERO_OK : nn_backend_fail(ctx, rc, what);
}

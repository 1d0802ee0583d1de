/* Layer kernels of the cpu backend, fp32 activations: bias, GELU, softmax
 * cross-entropy (and the fused classifier, fp32 or bf16 logits). Forward and backward
 * side by side. */
#include "cpu_exact_vec.h"
#include "cpu_ops.h"
#include "base/dtype_convert.h"
#include "base/exact_math.h"

/* y (rows, cols) += b (cols) */
int cpu_bias_add(void *self, float *y, const float *b, int64_t rows, int64_t cols)
{
    (void)self;
    for (int64_t r = 0; r < rows; r++) {
        float *restrict yr = y + r * cols;
        const float *restrict br = b;
        for (int64_t c = 0; c < cols; c++)
            yr[c] += br[c];
    }
    return ZERO_OK;
}

/* db (cols) = beta * db + sum_r dy (rows, cols). The row sum is formed on its own,
 * rows in ascending order, and only then combined with beta * db; the columns go in
 * chunks so that the partial sums stay in a stack buffer. beta = 0 ignores db's old
 * values (NaN included), as in BLAS. */
#define BIAS_GRAD_CHUNK 256

int cpu_bias_grad(void *self, float *db, const float *dy, int64_t rows, int64_t cols, float beta)
{
    (void)self;
    for (int64_t c0 = 0; c0 < cols; c0 += BIAS_GRAD_CHUNK) {
        int64_t w = cols - c0 < BIAS_GRAD_CHUNK ? cols - c0 : BIAS_GRAD_CHUNK;
        float sum[BIAS_GRAD_CHUNK] = {0};
        for (int64_t r = 0; r < rows; r++) {
            const float *restrict row = dy + r * cols + c0;
            for (int64_t c = 0; c < w; c++)
                sum[c] += row[c];
        }
        float *restrict out = db + c0;
        for (int64_t c = 0; c < w; c++)
            out[c] = beta == 0.0f ? sum[c] : beta * out[c] + sum[c];
    }
    return ZERO_OK;
}

#define GELU_INV_SQRT2 0.70710678118654752440f    /* 1/sqrt(2) */
#define GELU_INV_SQRT_2PI 0.39894228040143267794f /* 1/sqrt(2 pi) */
#define GELU_TANH_SCALE 0.79788456080286535588f   /* sqrt(2/pi) */
#define GELU_TANH_CUBIC 0.044715f

static int check_gelu_kind(struct cpu_state *s, const char *what, enum zero_gelu kind)
{
    if (kind != ZERO_GELU_ERF && kind != ZERO_GELU_TANH)
        return cpu_fail(s, ZERO_EINVAL, "%s: unknown gelu kind %d", what, (int)kind);
    return ZERO_OK;
}

/* GELU's fp32 arithmetic around exact_math.h's erff, expf and tanhf, GELU_CHUNK
 * elements at a time: the arguments into a stack buffer, the function over the buffer
 * in the widest variant this processor has (cpu_exact_vec.h: every variant gives the
 * scalar function's bits; ZERO_HOST_ISA picks another), then the combination. Each
 * element sees the same float operations in the same order as a one-element loop; the
 * loops are compiled per instruction set too (vector width does not change an
 * element's operations), so the compiler vectorizes them as wide as the functions. */
#define GELU_CHUNK 512

#define GELU_FORWARD_ARGS                                                                          \
    enum zero_host_isa isa, float *y, const float *x, size_t n, enum zero_gelu kind
#define GELU_BACKWARD_ARGS                                                                         \
    enum zero_host_isa isa, float *dx, const float *x, const float *dy, size_t n,                  \
        enum zero_gelu kind

/* y (n) = gelu(x):  erf:  0.5 x (1 + erf(x / sqrt2))
 *                   tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))   (GPT-2) */
static inline __attribute__((always_inline)) void gelu_forward_body(GELU_FORWARD_ARGS)
{
    float f[GELU_CHUNK]; /* (w) the argument, then erf or tanh of it */
    for (size_t i0 = 0; i0 < n; i0 += GELU_CHUNK) {
        const size_t w = n - i0 < GELU_CHUNK ? n - i0 : GELU_CHUNK;
        float *restrict yr = y + i0;
        const float *restrict xr = x + i0;
        if (kind == ZERO_GELU_ERF) {
            for (size_t i = 0; i < w; i++)
                f[i] = xr[i] * GELU_INV_SQRT2;
            cpu_exact_erff_n(isa, f, f, w);
        } else {
            for (size_t i = 0; i < w; i++) {
                float v = xr[i];
                f[i] = GELU_TANH_SCALE * (v + GELU_TANH_CUBIC * v * v * v);
            }
            cpu_exact_tanhf_n(isa, f, f, w);
        }
        for (size_t i = 0; i < w; i++)
            yr[i] = 0.5f * xr[i] * (1.0f + f[i]);
    }
}

/* dx (n) = dy * gelu'(x) (dx may be dy):
 *   erf:  Phi(x) + x phi(x),  Phi(x) = 0.5 (1 + erf(x / sqrt2)),  phi(x) = exp(-x^2/2) / sqrt(2 pi)
 *   tanh: 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2),  t = tanh(u)
 *         (1 - t^2 instead of 1/cosh^2 u: no overflow for large u) */
static inline __attribute__((always_inline)) void gelu_backward_body(GELU_BACKWARD_ARGS)
{
    float f[GELU_CHUNK]; /* (w) erf(x / sqrt2), or tanh(u) */
    float e[GELU_CHUNK]; /* (w) exp(-x^2 / 2) (erf form) */
    for (size_t i0 = 0; i0 < n; i0 += GELU_CHUNK) {
        const size_t w = n - i0 < GELU_CHUNK ? n - i0 : GELU_CHUNK;
        float *dxr = dx + i0; /* may be dyr */
        const float *restrict xr = x + i0;
        const float *dyr = dy + i0;
        if (kind == ZERO_GELU_ERF) {
            for (size_t i = 0; i < w; i++) {
                float v = xr[i];
                f[i] = v * GELU_INV_SQRT2;
                e[i] = -0.5f * v * v;
            }
            cpu_exact_erff_n(isa, f, f, w);
            cpu_exact_expf_n(isa, e, e, w);
            for (size_t i = 0; i < w; i++) {
                float v = xr[i];
                float cdf = 0.5f * (1.0f + f[i]);
                float pdf = e[i] * GELU_INV_SQRT_2PI;
                dxr[i] = dyr[i] * (cdf + v * pdf);
            }
        } else {
            for (size_t i = 0; i < w; i++) {
                float v = xr[i];
                f[i] = GELU_TANH_SCALE * (v + GELU_TANH_CUBIC * v * v * v);
            }
            cpu_exact_tanhf_n(isa, f, f, w);
            for (size_t i = 0; i < w; i++) {
                float v = xr[i], t = f[i];
                float du = GELU_TANH_SCALE * (1.0f + 3.0f * GELU_TANH_CUBIC * v * v);
                dxr[i] = dyr[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
            }
        }
    }
}

#define GELU_VARIANT(attr, suffix)                                                                 \
    attr static void gelu_forward_##suffix(GELU_FORWARD_ARGS)                                      \
    {                                                                                              \
        gelu_forward_body(isa, y, x, n, kind);                                                     \
    }                                                                                              \
    attr static void gelu_backward_##suffix(GELU_BACKWARD_ARGS)                                    \
    {                                                                                              \
        gelu_backward_body(isa, dx, x, dy, n, kind);                                               \
    }

ZERO_HOST_VARIANTS(GELU_VARIANT)

int cpu_gelu_forward(void *self, float *y, const float *x, size_t n, enum zero_gelu kind)
{
    int rc = check_gelu_kind(self, "gelu_forward", kind);
    if (rc != ZERO_OK)
        return rc;
    const enum zero_host_isa isa = zero_host_isa_best(); /* a supported one */
    ZERO_HOST_PICK(isa, gelu_forward)(isa, y, x, n, kind);
    return ZERO_OK;
}

int cpu_gelu_backward(void *self, float *dx, const float *x, const float *dy, size_t n,
                      enum zero_gelu kind)
{
    int rc = check_gelu_kind(self, "gelu_backward", kind);
    if (rc != ZERO_OK)
        return rc;
    const enum zero_host_isa isa = zero_host_isa_best();
    ZERO_HOST_PICK(isa, gelu_backward)(isa, dx, x, dy, n, kind);
    return ZERO_OK;
}

/* Checked before any output is written, so a bad batch leaves the buffers alone. */
static int check_labels(struct cpu_state *s, const char *what, const int32_t *labels, int64_t rows,
                        int64_t classes)
{
    for (int64_t r = 0; r < rows; r++)
        if (labels[r] < 0 || labels[r] >= classes)
            return cpu_fail(s, ZERO_EINVAL, "%s: row %lld: label %d is outside [0, %lld)", what,
                            (long long)r, (int)labels[r], (long long)classes);
    return ZERO_OK;
}

/* p (classes) = softmax(z (classes)); returns the row's loss, logsumexp(z) - z[label].
 * The row max is subtracted before exp, and the sum of exps is kept in double so that
 * a 50k vocabulary loses no digits; its log is exact_log's in double (the cuda
 * backend's too). z[label] is read before p is written, so p may be z itself (the
 * fused classifier, in place); every element is read before it is overwritten. */
static float softmax_row(enum zero_host_isa isa, float *p, const float *z, int32_t label,
                         int64_t classes)
{
    float max = z[0];
    for (int64_t c = 1; c < classes; c++)
        max = z[c] > max ? z[c] : max;
    const float z_label = z[label] - max;
    for (int64_t c = 0; c < classes; c++)
        p[c] = z[c] - max;
    cpu_exact_expf_n(isa, p, p, (size_t)classes);
    double sum = 0.0; /* in class order, after all the exps */
    for (int64_t c = 0; c < classes; c++)
        sum += p[c];
    float inv_sum = (float)(1.0 / sum);
    for (int64_t c = 0; c < classes; c++)
        p[c] *= inv_sum;
    return (float)(exact_log(sum) - (double)z_label);
}

/* d (classes) = (p - onehot(label)) * dloss; d may be p itself */
static void xent_grad_row(float *d, const float *p, int32_t label, int64_t classes, float dloss)
{
    const float p_label = p[label];
    for (int64_t c = 0; c < classes; c++)
        d[c] = p[c] * dloss;
    d[label] = (p_label - 1.0f) * dloss;
}

/* probs (rows, classes) = softmax(logits (rows, classes)); losses (rows) =
 * logsumexp(logits) - logits[label], row by row (softmax_row). */
int cpu_xent_forward(void *self, float *losses, float *probs, const float *logits,
                     const int32_t *labels, int64_t rows, int64_t classes)
{
    struct cpu_state *s = self;
    if (classes < 1)
        return cpu_fail(s, ZERO_EINVAL, "xent_forward: %lld classes", (long long)classes);
    int rc = check_labels(s, "xent_forward", labels, rows, classes);
    if (rc != ZERO_OK)
        return rc;
    const enum zero_host_isa isa = zero_host_isa_best(); /* the exps vectorized, as GELU's */
    for (int64_t r = 0; r < rows; r++)
        losses[r] = softmax_row(isa, probs + r * classes, logits + r * classes, labels[r], classes);
    return ZERO_OK;
}

/* dlogits (rows, classes) = (probs - onehot(labels)) * dloss */
int cpu_xent_backward(void *self, float *dlogits, const float *probs, const int32_t *labels,
                      int64_t rows, int64_t classes, float dloss)
{
    int rc = check_labels(self, "xent_backward", labels, rows, classes);
    if (rc != ZERO_OK)
        return rc;
    for (int64_t r = 0; r < rows; r++)
        xent_grad_row(dlogits + r * classes, probs + r * classes, labels[r], classes, dloss);
    return ZERO_OK;
}

/* The fused classifier (include/zero/backend.h), the reference the cuda backend's exact
 * mode matches: per row, xent_forward's softmax_row and xent_backward's xent_grad_row,
 * the same operations in the same order, so the same bits as the two entries with a
 * probability buffer, without one. fp32: the row is computed where dlogits is (in place
 * over the logits, or disjoint). bf16: the row widened exactly into a row of fp32
 * workspace, computed there, and each dlogit rounded once to nearest even (the bits of
 * cast, xent_forward, xent_backward, cast). */
int cpu_xent_fused(void *self, float *losses, void *dlogits, const void *logits, enum zero_dtype t,
                   const int32_t *labels, int64_t rows, int64_t classes, float dloss)
{
    struct cpu_state *s = self;
    if (classes < 1)
        return cpu_fail(s, ZERO_EINVAL, "xent_fused: %lld classes", (long long)classes);
    if (rows < 0)
        return cpu_fail(s, ZERO_EINVAL, "xent_fused: %lld rows", (long long)rows);
    if (t != ZERO_F32 && t != ZERO_BF16)
        return cpu_fail(s, ZERO_ENOTSUP, "xent_fused: logits dtype %s; fp32 or bf16 expected",
                        zero_dtype_name(t));
    const size_t esize = zero_dtype_size(t), bytes = (size_t)rows * (size_t)classes * esize;
    const uintptr_t d0 = (uintptr_t)dlogits, z0 = (uintptr_t)logits;
    if (dlogits != logits && bytes > 0 && d0 < z0 + bytes && z0 < d0 + bytes)
        return cpu_fail(s, ZERO_EINVAL, "xent_fused: dlogits overlaps logits without being them");
    int rc = check_labels(s, "xent_fused", labels, rows, classes);
    if (rc != ZERO_OK)
        return rc;
    const enum zero_host_isa isa = zero_host_isa_best();
    if (t == ZERO_F32) {
        for (int64_t r = 0; r < rows; r++) {
            float *d = (float *)dlogits + r * classes;
            losses[r] =
                softmax_row(isa, d, (const float *)logits + r * classes, labels[r], classes);
            xent_grad_row(d, d, labels[r], classes, dloss);
        }
        return ZERO_OK;
    }
    float *row = NULL; /* (classes) fp32 */
    if (rows > 0 && (rc = cpu_alloc(s, (size_t)classes * sizeof(float), ZERO_TAG_WORKSPACE,
                                    (void **)&row)) != ZERO_OK)
        return rc;
    for (int64_t r = 0; r < rows; r++) {
        const uint16_t *z = (const uint16_t *)logits + r * classes;
        uint16_t *d = (uint16_t *)dlogits + r * classes;
        for (int64_t c = 0; c < classes; c++)
            row[c] = dtype_bf16_to_f32(z[c]);
        losses[r] = softmax_row(isa, row, row, labels[r], classes);
        xent_grad_row(row, row, labels[r], classes, dloss);
        for (int64_t c = 0; c < classes; c++)
            d[c] = dtype_f32_to_bf16(row[c]);
    }
    cpu_free(s, row);
    return ZERO_OK;
}

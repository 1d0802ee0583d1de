/* GPT kernels of the cpu backend, fp32 activations: token embedding, LayerNorm,
 * causal self-attention (the per-head products through cpu_gemm_f32: the exact
 * GEMM, or OpenBLAS in native mode; optionally on fp16/bf16-rounded operands). Forward and backward
 * side by side; the semantics are documented in include/zero/backend.h. */
#include <math.h>
#include <string.h>

#include "cpu_ops.h"
#include "base/backend_contract.h"
#include "base/dtype_convert.h"
#include "base/exact_math.h"

/* ---- token embedding ---- */

/* y (rows, cols) row r = table (vocab, cols) row ids[r]; ids checked first so a
 * bad batch leaves y alone. */
int cpu_embedding_forward(void *self, float *y, const int32_t *ids, const float *table,
                          int64_t rows, int64_t cols, int64_t vocab)
{
    for (int64_t r = 0; r < rows; r++)
        if (ids[r] < 0 || ids[r] >= vocab)
            return cpu_fail(self, ZERO_EINVAL,
                            "embedding_forward: row %lld: token id %d is "
                            "outside [0, %lld)",
                            (long long)r, (int)ids[r], (long long)vocab);
    for (int64_t r = 0; r < rows; r++)
        memcpy(y + r * cols, table + (int64_t)ids[r] * cols, (size_t)cols * sizeof(float));
    return ZERO_OK;
}

/* dtable (vocab, cols) = beta * dtable, then rows added in ascending order */
int cpu_embedding_backward(void *self, float *dtable, const int32_t *ids, const float *dy,
                           int64_t rows, int64_t cols, int64_t vocab, float beta)
{
    (void)self;
    if (beta == 0.0f)
        memset(dtable, 0, (size_t)(vocab * cols) * sizeof(float));
    for (int64_t r = 0; r < rows; r++) {
        float *restrict d = dtable + (int64_t)ids[r] * cols;
        const float *restrict g = dy + r * cols;
        for (int64_t c = 0; c < cols; c++)
            d[c] += g[c];
    }
    return ZERO_OK;
}

/* ---- LayerNorm ---- */

/* y (rows, cols) = (x - mean) * rstd * weight + bias; mean, rstd (rows) saved.
 * The moments are summed in double: one row of 1600 floats loses no digits. */
int cpu_layernorm_forward(void *self, float *y, float *mean, float *rstd, const float *x,
                          const float *weight, const float *bias, int64_t rows, int64_t cols,
                          float eps)
{
    (void)self;
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict xr = x + r * cols;
        float *restrict yr = y + r * cols;
        double sum = 0.0;
        for (int64_t c = 0; c < cols; c++)
            sum += xr[c];
        const float m = (float)(sum / (double)cols);
        double var = 0.0;
        for (int64_t c = 0; c < cols; c++) {
            double d = (double)(xr[c] - m);
            var += d * d;
        }
        const float s = (float)(1.0 / sqrt(var / (double)cols + (double)eps));
        for (int64_t c = 0; c < cols; c++)
            yr[c] = (xr[c] - m) * s * weight[c] + bias[c];
        mean[r] = m;
        rstd[r] = s;
    }
    return ZERO_OK;
}

/* Column chunk of the parameter-gradient sums, kept on the stack (as bias_grad). */
#define LN_CHUNK 256

/* dweight (cols) = w_beta * dweight + sum_r dy * xhat; dbias = b_beta * dbias + sum_r dy */
static void layernorm_param_grads(float *dweight, float *dbias, const float *dy, const float *x,
                                  const float *mean, const float *rstd, int64_t rows, int64_t cols,
                                  float w_beta, float b_beta)
{
    for (int64_t c0 = 0; c0 < cols; c0 += LN_CHUNK) {
        const int64_t w = cols - c0 < LN_CHUNK ? cols - c0 : LN_CHUNK;
        float sw[LN_CHUNK] = {0}, sb[LN_CHUNK] = {0};
        for (int64_t r = 0; r < rows; r++) {
            const float *restrict g = dy + r * cols + c0;
            const float *restrict xr = x + r * cols + c0;
            const float m = mean[r], s = rstd[r];
            for (int64_t c = 0; c < w; c++) {
                sw[c] += g[c] * ((xr[c] - m) * s);
                sb[c] += g[c];
            }
        }
        for (int64_t c = 0; c < w; c++) {
            dweight[c0 + c] = w_beta == 0.0f ? sw[c] : w_beta * dweight[c0 + c] + sw[c];
            dbias[c0 + c] = b_beta == 0.0f ? sb[c] : b_beta * dbias[c0 + c] + sb[c];
        }
    }
}

/* dx (rows, cols) = dx_beta * dx + rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * weight */
int cpu_layernorm_backward(void *self, float *dx, float *dweight, float *dbias, const float *dy,
                           const float *x, const float *weight, const float *mean,
                           const float *rstd, int64_t rows, int64_t cols, float dx_beta,
                           float w_beta, float b_beta)
{
    (void)self;
    layernorm_param_grads(dweight, dbias, dy, x, mean, rstd, rows, cols, w_beta, b_beta);
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict g = dy + r * cols;
        const float *restrict xr = x + r * cols;
        float *restrict d = dx + r * cols;
        const float m = mean[r], s = rstd[r];
        float sum_g = 0.0f, sum_gx = 0.0f;
        for (int64_t c = 0; c < cols; c++) {
            const float gw = g[c] * weight[c];
            sum_g += gw;
            sum_gx += gw * ((xr[c] - m) * s);
        }
        const float mean_g = sum_g / (float)cols, mean_gx = sum_gx / (float)cols;
        for (int64_t c = 0; c < cols; c++) {
            const float xhat = (xr[c] - m) * s;
            const float v = s * (g[c] * weight[c] - mean_g - xhat * mean_gx);
            d[c] = dx_beta == 0.0f ? v : dx_beta * d[c] + v;
        }
    }
    return ZERO_OK;
}

/* ---- causal self-attention ---- */

/* the contract's checks (src/base/backend_contract.c), in this backend's error */
static int check_attention(struct cpu_state *s, const char *what, int64_t C, int64_t NH,
                           enum zero_dtype matmul_type)
{
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_attention(what, C, NH, matmul_type, why, sizeof why);
    return rc != ZERO_OK ? cpu_fail(s, rc, "%s", why) : ZERO_OK;
}

/* dst (n) = src rounded to t's precision, kept as fp32 values. A product of two
 * fp16 or two bf16 values is exact in fp32 (11 + 11 or 8 + 8 significand bits
 * <= 24), so sgemm on these copies is "fp16/bf16 operands, fp32 sums". dst may
 * equal src. */
static void round_to(float *dst, const float *src, int64_t n, enum zero_dtype t)
{
    if (t == ZERO_BF16)
        for (int64_t i = 0; i < n; i++)
            dst[i] = dtype_bf16_to_f32(dtype_f32_to_bf16(src[i]));
    else
        for (int64_t i = 0; i < n; i++)
            dst[i] = dtype_f16_to_f32(dtype_f32_to_f16(src[i]));
}

/* The low-precision path's workspace (NULL for fp32, and in exact mode, whose
 * GEMM rounds the operands while packing them: the same values): n floats for
 * the rounded copies of one sequence's operands; freed by the caller with cpu_free. */
static int lowp_workspace(struct cpu_state *s, enum zero_dtype matmul_type, int64_t n, float **ws)
{
    *ws = NULL;
    if (matmul_type == ZERO_F32 || cpu_gemm_rounds_while_packing(s))
        return ZERO_OK;
    void *block;
    int rc = cpu_alloc(s, (size_t)n * sizeof(float), ZERO_TAG_WORKSPACE, &block);
    if (rc == ZERO_OK)
        *ws = block;
    return rc;
}

/* att (T, T) row i: softmax of its first i + 1 entries in place, zeros after */
static void causal_softmax_rows(float *att, int64_t T)
{
    for (int64_t i = 0; i < T; i++) {
        float *restrict a = att + i * T;
        float max = a[0];
        for (int64_t j = 1; j <= i; j++)
            max = a[j] > max ? a[j] : max;
        float sum = 0.0f;
        for (int64_t j = 0; j <= i; j++) {
            a[j] = exact_expf(a[j] - max);
            sum += a[j];
        }
        const float inv = 1.0f / sum;
        for (int64_t j = 0; j <= i; j++)
            a[j] *= inv;
        for (int64_t j = i + 1; j < T; j++)
            a[j] = 0.0f;
    }
}

int cpu_attention_forward(void *self, float *y, float *att, const float *qkv, int64_t B, int64_t T,
                          int64_t C, int64_t NH, enum zero_dtype matmul_type)
{
    int rc = check_attention(self, "attention_forward", C, NH, matmul_type);
    if (rc != ZERO_OK)
        return rc;
    const int64_t hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    /* fp16/bf16: seq_r (T, 3C) one sequence's qkv rounded, then att_r (T, T) one head's att */
    float *ws;
    if ((rc = lowp_workspace(self, matmul_type, T * C3 + T * T, &ws)) != ZERO_OK)
        return rc;
    const enum zero_dtype rnd = ws != NULL ? ZERO_F32 : matmul_type; /* left to the GEMM */
    for (int64_t b = 0; b < B && rc == ZERO_OK; b++) {
        const float *seq = qkv + b * T * C3; /* (T, 3C) */
        if (ws != NULL) {
            round_to(ws, seq, T * C3, matmul_type);
            seq = ws;
        }
        for (int64_t h = 0; h < NH && rc == ZERO_OK; h++) {
            const float *q = seq + h * hs;         /* (T, hs), ld 3C */
            const float *k = q + C;                /* (T, hs), ld 3C */
            const float *v = q + 2 * C;            /* (T, hs), ld 3C */
            float *a = att + (b * NH + h) * T * T; /* (T, T) */
            float *yh = y + b * T * C + h * hs;    /* (T, hs), ld C */
            /* s (T, T) = q k^T / sqrt(hs) */
            if ((rc = cpu_gemm_f32(self, 0, 1, T, T, hs, scale, q, C3, rnd, k, C3, rnd, 0.0f, a,
                                   T)) != ZERO_OK)
                break;
            causal_softmax_rows(a, T);
            /* the saved att stays fp32; the product reads a rounded copy */
            const float *ar = a;
            if (ws != NULL) {
                round_to(ws + T * C3, a, T * T, matmul_type);
                ar = ws + T * C3;
            }
            /* y (T, hs) = att (T, T) v (T, hs) */
            rc = cpu_gemm_f32(self, 0, 0, T, hs, T, 1.0f, ar, T, rnd, v, C3, rnd, 0.0f, yh, C);
        }
    }
    cpu_free(self, ws);
    return rc;
}

/* ds (T, T) in place of datt: att * (datt - rowsum(att * datt)) */
static void softmax_backward_rows(float *datt, const float *att, int64_t T)
{
    for (int64_t i = 0; i < T; i++) {
        float *restrict d = datt + i * T;
        const float *restrict a = att + i * T;
        float dot = 0.0f;
        for (int64_t j = 0; j <= i; j++)
            dot += a[j] * d[j];
        for (int64_t j = 0; j <= i; j++)
            d[j] = a[j] * (d[j] - dot);
        for (int64_t j = i + 1; j < T; j++)
            d[j] = 0.0f;
    }
}

int cpu_attention_backward(void *self, float *dqkv, float *scratch, const float *dy,
                           const float *qkv, const float *att, int64_t B, int64_t T, int64_t C,
                           int64_t NH, enum zero_dtype matmul_type)
{
    int rc = check_attention(self, "attention_backward", C, NH, matmul_type);
    if (rc != ZERO_OK)
        return rc;
    const int64_t hs = C / NH, C3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)hs);
    float *ds = scratch; /* (T, T): datt, then ds in place; one head at a time */
    /* fp16/bf16: seq_r (T, 3C) qkv and dy_r (T, C) of one sequence rounded, then att_r
     * (T, T) of one head; ds is formed in fp32 (from the fp32 datt and att), then
     * rounded in place */
    float *ws;
    if ((rc = lowp_workspace(self, matmul_type, T * C3 + T * C + T * T, &ws)) != ZERO_OK)
        return rc;
    const enum zero_dtype rnd = ws != NULL ? ZERO_F32 : matmul_type; /* left to the GEMM */
    for (int64_t b = 0; b < B && rc == ZERO_OK; b++) {
        const float *seq = qkv + b * T * C3; /* (T, 3C) */
        const float *dys = dy + b * T * C;   /* (T, C) */
        if (ws != NULL) {
            round_to(ws, seq, T * C3, matmul_type);
            round_to(ws + T * C3, dys, T * C, matmul_type);
            seq = ws;
            dys = ws + T * C3;
        }
        for (int64_t h = 0; h < NH && rc == ZERO_OK; h++) {
            const float *q = seq + h * hs, *k = q + C, *v = q + 2 * C;
            float *dq = dqkv + b * T * C3 + h * hs, *dk = dq + C, *dv = dq + 2 * C;
            const float *a = att + (b * NH + h) * T * T; /* (T, T) */
            const float *dyh = dys + h * hs;             /* (T, hs), ld C */
            const float *ar = a;
            if (ws != NULL) {
                round_to(ws + T * C3 + T * C, a, T * T, matmul_type);
                ar = ws + T * C3 + T * C;
            }
            /* datt (T, T) = dy_h (T, hs) v^T (hs, T) */
            if ((rc = cpu_gemm_f32(self, 0, 1, T, T, hs, 1.0f, dyh, C, rnd, v, C3, rnd, 0.0f, ds,
                                   T)) != ZERO_OK)
                break;
            /* dv (T, hs) = att^T (T, T) dy_h (T, hs) */
            if ((rc = cpu_gemm_f32(self, 1, 0, T, hs, T, 1.0f, ar, T, rnd, dyh, C, rnd, 0.0f, dv,
                                   C3)) != ZERO_OK)
                break;
            softmax_backward_rows(ds, a, T);
            if (ws != NULL)
                round_to(ds, ds, T * T, matmul_type);
            /* dq (T, hs) = ds (T, T) k (T, hs) / sqrt(hs) */
            if ((rc = cpu_gemm_f32(self, 0, 0, T, hs, T, scale, ds, T, rnd, k, C3, rnd, 0.0f, dq,
                                   C3)) != ZERO_OK)
                break;
            /* dk (T, hs) = ds^T (T, T) q (T, hs) / sqrt(hs) */
            rc = cpu_gemm_f32(self, 1, 0, T, hs, T, scale, ds, T, rnd, q, C3, rnd, 0.0f, dk, C3);
        }
    }
    cpu_free(self, ws);
    return rc;
}

/* The llama group of the cpu backend (zero/backend_llama.h): RMSNorm, the rotary
 * embedding, SwiGLU and the grouped-query packing, fp32 and in the fixed orders the
 * header gives (the reference the cuda kernels reproduce). Forward and backward side
 * by side. */
#include <math.h>
#include <string.h>

#include "cpu_ops.h"
#include "base/backend_contract.h"
#include "base/llama_math.h"

/* Argument checks shared with cuda: a refusal names the entry. */
#define CONTRACT(call)                                                                             \
    ZERO_CONTRACT(call, cpu_fail(self, zero_contract_rc_, "%s", zero_contract_why_))
#define WHY ZERO_CONTRACT_WHY

/* ---- RMSNorm ---- */

/* y (rows, cols) = (x * rstd) * weight; rstd (rows) saved, the square sum in double */
static int rmsnorm_forward(void *self, float *y, float *rstd, const float *x, const float *weight,
                           int64_t rows, int64_t cols, float eps)
{
    CONTRACT(zero_contract_rmsnorm("rmsnorm_forward", rows, cols, WHY));
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict xr = x + r * cols;
        float *restrict yr = y + r * cols;
        double ss = 0.0;
        for (int64_t c = 0; c < cols; c++)
            ss += (double)xr[c] * (double)xr[c];
        const float s = (float)(1.0 / sqrt(ss / (double)cols + (double)eps));
        for (int64_t c = 0; c < cols; c++)
            yr[c] = (xr[c] * s) * weight[c];
        rstd[r] = s;
    }
    return ZERO_OK;
}

#define RMS_CHUNK 256 /* columns of dweight's sums kept on the stack */

/* dx (rows, cols) = dx_beta dx + rstd (g - xhat mean_c(g xhat)); dweight (cols) =
 * w_beta dweight + sum_r dy xhat, rows ascending */
static int rmsnorm_backward(void *self, float *dx, float *dweight, const float *dy, const float *x,
                            const float *weight, const float *rstd, int64_t rows, int64_t cols,
                            float dx_beta, float w_beta)
{
    CONTRACT(zero_contract_rmsnorm("rmsnorm_backward", rows, cols, WHY));
    for (int64_t c0 = 0; c0 < cols; c0 += RMS_CHUNK) {
        const int64_t w = cols - c0 < RMS_CHUNK ? cols - c0 : RMS_CHUNK;
        float sw[RMS_CHUNK] = {0};
        for (int64_t r = 0; r < rows; r++) {
            const float *restrict g = dy + r * cols + c0;
            const float *restrict xr = x + r * cols + c0;
            for (int64_t c = 0; c < w; c++)
                sw[c] += g[c] * (xr[c] * rstd[r]);
        }
        for (int64_t c = 0; c < w; c++)
            dweight[c0 + c] = w_beta == 0.0f ? sw[c] : dweight[c0 + c] + sw[c];
    }
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict g = dy + r * cols;
        const float *restrict xr = x + r * cols;
        float *restrict d = dx + r * cols;
        const float s = rstd[r];
        double dot = 0.0; /* sum_c g xhat */
        for (int64_t c = 0; c < cols; c++)
            dot += (double)(g[c] * weight[c]) * (double)(xr[c] * s);
        const float m = (float)(dot / (double)cols);
        for (int64_t c = 0; c < cols; c++) {
            const float v = s * (g[c] * weight[c] - (xr[c] * s) * m);
            d[c] = dx_beta == 0.0f ? v : d[c] + v;
        }
    }
    return ZERO_OK;
}

/* ---- rotary position embedding ---- */

/* cos, sin (T, D/2) for positions 0 .. T-1 */
static int rope_table(void *self, float *cos_t, float *sin_t, int64_t T, int64_t D,
                      const struct zero_rope_params *p)
{
    CONTRACT(zero_contract_rope("rope_table", T, 1, D, p, WHY));
    const int64_t half = D / 2;
    for (int64_t i = 0; i < half; i++) {
        const float inv = llama_rope_inv_freq(i, D, p);
        for (int64_t t = 0; t < T; t++)
            llama_rope_cos_sin(t, inv, &cos_t[t * half + i], &sin_t[t * half + i]);
    }
    return ZERO_OK;
}

/* x (rows, heads * D) rotated in place, pair (i, i + D/2) of each head, row r at
 * position r % T; inverse: the transposed rotation */
static int rope_apply(void *self, float *x, const float *cos_t, const float *sin_t, int64_t rows,
                      int64_t T, int64_t heads, int64_t D, int inverse)
{
    CONTRACT(zero_contract_rope("rope_apply", T, heads, D, NULL, WHY));
    const int64_t half = D / 2;
    const float sign = inverse ? -1.0f : 1.0f;
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict c = cos_t + (r % T) * half;
        const float *restrict s = sin_t + (r % T) * half;
        for (int64_t h = 0; h < heads; h++) {
            float *restrict lo = x + (r * heads + h) * D, *restrict hi = lo + half;
            for (int64_t i = 0; i < half; i++) {
                const float a = lo[i], b = hi[i], si = sign * s[i];
                lo[i] = a * c[i] - b * si;
                hi[i] = b * c[i] + a * si;
            }
        }
    }
    return ZERO_OK;
}

/* ---- SwiGLU ---- */

/* h (n) = silu(gate) * up */
static int swiglu_forward(void *self, float *h, const float *gate, const float *up, size_t n)
{
    (void)self;
    for (size_t i = 0; i < n; i++)
        h[i] = (gate[i] * llama_sigmoid(gate[i])) * up[i];
    return ZERO_OK;
}

/* dgate = dh up silu'(gate), dup = dh silu(gate) */
static int swiglu_backward(void *self, float *dgate, float *dup, const float *dh, const float *gate,
                           const float *up, size_t n)
{
    (void)self;
    for (size_t i = 0; i < n; i++) {
        const float g = gate[i], sig = llama_sigmoid(g), d = dh[i];
        dgate[i] = (d * up[i]) * (sig * (1.0f + g * (1.0f - sig)));
        dup[i] = d * (g * sig);
    }
    return ZERO_OK;
}

/* ---- grouped-query packing ---- */

/* qkv (rows, 3 H D) = [q | k, v with kv head j repeated over heads j G .. j G + G - 1] */
static int gqa_pack(void *self, float *qkv, const float *q, const float *k, const float *v,
                    int64_t rows, int64_t H, int64_t KV, int64_t D)
{
    CONTRACT(zero_contract_gqa("gqa_pack", rows, H, KV, D, WHY));
    const int64_t G = H / KV, Q = H * D;
    const size_t head = (size_t)D * sizeof(float);
    for (int64_t r = 0; r < rows; r++) {
        float *row = qkv + r * 3 * Q;
        memcpy(row, q + r * Q, (size_t)Q * sizeof(float));
        for (int64_t h = 0; h < H; h++) {
            memcpy(row + Q + h * D, k + (r * KV + h / G) * D, head);
            memcpy(row + 2 * Q + h * D, v + (r * KV + h / G) * D, head);
        }
    }
    return ZERO_OK;
}

/* dq = dqkv's q part; dk, dv (rows, KV D): each kv head's group summed, heads ascending */
static int gqa_unpack(void *self, float *dq, float *dk, float *dv, const float *dqkv, int64_t rows,
                      int64_t H, int64_t KV, int64_t D)
{
    CONTRACT(zero_contract_gqa("gqa_unpack", rows, H, KV, D, WHY));
    const int64_t G = H / KV, Q = H * D;
    for (int64_t r = 0; r < rows; r++) {
        const float *row = dqkv + r * 3 * Q;
        memcpy(dq + r * Q, row, (size_t)Q * sizeof(float));
        for (int64_t j = 0; j < KV; j++) {
            float *restrict ok = dk + (r * KV + j) * D, *restrict ov = dv + (r * KV + j) * D;
            const float *gk = row + Q + j * G * D, *gv = row + 2 * Q + j * G * D;
            memcpy(ok, gk, (size_t)D * sizeof(float));
            memcpy(ov, gv, (size_t)D * sizeof(float));
            for (int64_t g = 1; g < G; g++)
                for (int64_t d = 0; d < D; d++) {
                    ok[d] += gk[g * D + d];
                    ov[d] += gv[g * D + d];
                }
        }
    }
    return ZERO_OK;
}

const struct zero_llama_ops cpu_llama_ops = {
    .version = ZERO_LLAMA_OPS_VERSION,
    .rmsnorm_forward = rmsnorm_forward,
    .rmsnorm_backward = rmsnorm_backward,
    .rope_table = rope_table,
    .rope_apply = rope_apply,
    .swiglu_forward = swiglu_forward,
    .swiglu_backward = swiglu_backward,
    .gqa_pack = gqa_pack,
    .gqa_unpack = gqa_unpack,
};

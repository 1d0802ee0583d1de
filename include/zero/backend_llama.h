/* The Llama family's layer kernels: RMSNorm, the rotary position embedding, the SwiGLU
 * gate and the packing that lets grouped-query attention run on the core table's
 * multi-head attention (each kv head repeated over its group, as Hugging Face's
 * repeat_kv does, and the group's gradients summed back).
 *
 * Every entry is fp32 and deterministic: sums go in the order written here, so the bits
 * do not depend on the backend, its thread count or the ISA (the cuda kernels compute
 * the cpu's bits). beta arguments are 0 (write, ignoring old values, NaN included) or 1
 * (add).
 *
 * Reached from struct zero_backend's `llama` pointer (zero/backend.h): NULL = the
 * backend has none of these (the Llama units then refuse to run); a present group has
 * every entry (src/base/backend_check.c). */
#ifndef ZERO_BACKEND_LLAMA_H
#define ZERO_BACKEND_LLAMA_H

#include <stddef.h>
#include <stdint.h>

#include "zero/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_LLAMA_OPS_VERSION 1

/* The rotary embedding's frequencies (Hugging Face's rope_theta and rope_scaling). */
struct zero_rope_params {
    double theta; /* rope_theta */
    int llama3;   /* 1: rope_scaling of type "llama3" with the fields below */
    double factor, low_freq_factor, high_freq_factor;
    double original_max_position_embeddings;
};

struct zero_llama_ops {
    int version; /* ZERO_LLAMA_OPS_VERSION */
    /* RMSNorm over each row of x (rows, cols), as LlamaRMSNorm in fp32:
     *   rstd (rows)    = 1 / sqrt(sum_c x[r, c]^2 / cols + eps), the sum in double,
     *                    columns ascending, rounded once to float
     *   y (rows, cols) = (x * rstd) * weight (cols)
     * rstd is saved for the backward. */
    int (*rmsnorm_forward)(void *self, float *y, float *rstd, const float *x, const float *weight,
                           int64_t rows, int64_t cols, float eps);
    /* With xhat = x * rstd and g = dy * weight, per row (the sum in double, ascending):
     *   dx (rows, cols) = dx_beta * dx + rstd * (g - xhat * sum_c(g * xhat) / cols)
     *   dweight (cols)  = w_beta * dweight + sum_r dy * xhat   (rows ascending, fp32)
     * The row sums are formed on their own before w_beta * old is added. */
    int (*rmsnorm_backward)(void *self, float *dx, float *dweight, const float *dy, const float *x,
                            const float *weight, const float *rstd, int64_t rows, int64_t cols,
                            float dx_beta, float w_beta);
    /* The rotation tables cos, sin (T, D/2) for positions 0..T-1, D even:
     *   inv_freq[i] = theta^(-2i/D) in double (exact_math.h), llama3-rescaled where p says
     *                 (Hugging Face's _compute_llama3_parameters), rounded to float;
     *   angle = (float)(t * inv_freq[i]) (fp32, as the reference's fp32 product);
     *   cos[t, i], sin[t, i] = cos(angle), sin(angle) in double, rounded once. */
    int (*rope_table)(void *self, float *cos, float *sin, int64_t T, int64_t D,
                      const struct zero_rope_params *p);
    /* Rotates x (rows, heads * D) in place, row r at position r % T, each head's pair
     * (i, i + D/2) (rotate_half), i < D/2, with c = cos[t, i], s = sin[t, i]:
     *   forward (inverse 0): x_i' = x_i c - x_{i+D/2} s;  x_{i+D/2}' = x_{i+D/2} c + x_i s
     *   inverse 1 (the backward, the transposed rotation):
     *                        x_i' = x_i c + x_{i+D/2} s;  x_{i+D/2}' = x_{i+D/2} c - x_i s */
    int (*rope_apply)(void *self, float *x, const float *cos, const float *sin, int64_t rows,
                      int64_t T, int64_t heads, int64_t D, int inverse);
    /* h (n) = silu(gate) * up, silu(g) = g / (1 + exp(-g)) (exact_expf) */
    int (*swiglu_forward)(void *self, float *h, const float *gate, const float *up, size_t n);
    /* dgate (n) = dh * up * silu'(gate), dup (n) = dh * silu(gate);
     * silu'(g) = sig (1 + g (1 - sig)), sig = 1 / (1 + exp(-g)) */
    int (*swiglu_backward)(void *self, float *dgate, float *dup, const float *dh, const float *gate,
                           const float *up, size_t n);
    /* qkv (rows, 3 H D) = [q | k | v] with H query heads and KV kv heads (KV divides H):
     * q (rows, H D) as it is, k and v (rows, KV D) each with kv head j copied to the
     * heads j G .. j G + G - 1, G = H / KV: attention_forward's layout (zero/backend.h). */
    int (*gqa_pack)(void *self, float *qkv, const float *q, const float *k, const float *v,
                    int64_t rows, int64_t H, int64_t KV, int64_t D);
    /* The gradients back: dq (rows, H D) = dqkv's q part; dk, dv (rows, KV D) = for kv
     * head j the sum over its heads j G, j G + 1, ... in that order (fp32). */
    int (*gqa_unpack)(void *self, float *dq, float *dk, float *dv, const float *dqkv, int64_t rows,
                      int64_t H, int64_t KV, int64_t D);
};

#ifdef __cplusplus
}
#endif

#endif

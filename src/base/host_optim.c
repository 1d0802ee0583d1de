/* See host_optim.h. Where the 16-bit copy does not overlap the gradient, one loop
 * per (gradient dtype, copy dtype) pair reads each element's gradient, widens it,
 * updates p, m, v and narrows the new value into the copy in one pass: the
 * conversions' integer work then runs beside Adam's divisions instead of in passes
 * of its own. Where the copy is the gradient's own buffer (the offload path), the
 * arrays are walked in chunks: a chunk of the gradient is widened to fp32 on the
 * stack, the fp32 loop updates it, and its new values are narrowed into the copy.
 * Every loop vectorizes; the element's arithmetic is the same in both. */
#include "host_optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtype_convert.h"

#define CHUNK 2048 /* elements: 8 KiB of fp32 per stream, well inside L1 + L2 */

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define NO_COPY ZERO_DTYPE_COUNT /* the copy dtype of a loop that writes no copy */

ALWAYS_INLINE void widen(float *restrict out, const void *x, enum zero_dtype t, size_t n)
{
    const uint16_t *restrict h = x;
    if (t == ZERO_BF16)
        for (size_t i = 0; i < n; i++)
            out[i] = dtype_bf16_to_f32(h[i]);
    else
        for (size_t i = 0; i < n; i++)
            out[i] = dtype_f16_to_f32(h[i]);
}

ALWAYS_INLINE void narrow(void *x, enum zero_dtype t, const float *restrict v, size_t n)
{
    uint16_t *restrict h = x;
    if (t == ZERO_F32)
        memcpy(x, v, n * sizeof(float));
    else if (t == ZERO_BF16)
        for (size_t i = 0; i < n; i++)
            h[i] = dtype_f32_to_bf16(v[i]);
    else
        for (size_t i = 0; i < n; i++)
            h[i] = dtype_f32_to_f16(v[i]);
}

/* The chunk of len gradient elements at byte offset `at` as fp32: the gradient itself,
 * or its 16-bit elements widened into buf (len) */
ALWAYS_INLINE const float *chunk_grad(float *buf, const void *grad, enum zero_dtype gt, size_t at,
                                      size_t len)
{
    const void *src = (const char *)grad + at;
    if (gt == ZERO_F32)
        return src;
    widen(buf, src, gt, len);
    return buf;
}

/* a where mask is all ones, b where it is 0: both are computed and one is kept by
 * integer masks, because a branch (or a choice gcc turns back into one) keeps the loop
 * scalar */
ALWAYS_INLINE float select_f32(uint32_t mask, float a, float b)
{
    return dtype_f32_from_bits((dtype_f32_bits(a) & mask) | (dtype_f32_bits(b) & ~mask));
}

/* How adam_loop applies weight decay: by masks per element, or a constant of the
 * call saying which of the two terms apply */
enum {
    DECAY_SELECTED = -1, /* both terms computed and kept or not by masks (l2_on, decay_on) */
    DECAY_L2 = 1,        /* bit 0: g += l2 * p applied, with no selection */
    DECAY_DECOUPLED = 2  /* bit 1: p -= decay * p applied, with no selection */
};                       /* 0: neither term (wd == 0 or lr == 0) */

/* One element of Adam/AdamW in fp32, in exactly this order (DeepSpeed's FusedAdam
 * math; AdamW's decay applied to the parameter first, as torch.optim.AdamW does):
 *
 *   g     = grad / grad_div
 *   Adam:   g = g + wd * p                       (L2, only when wd != 0)
 *   AdamW:  p = p - (lr * wd) * p                (decoupled, only when wd != 0)
 *   m     = beta1 * m + (1 - beta1) * g
 *   v     = beta2 * v + ((1 - beta2) * g) * g
 *   m_hat = m / bc1,  bc1 = (float)(1 - beta1^t) in double   (1 without bias correction)
 *   v_hat = v / bc2,  bc2 = (float)(1 - beta2^t) in double
 *   p     = p - lr * (m_hat / (sqrtf(v_hat) + eps))
 *
 * torch computes the same quantities grouped differently (step_size = lr / bc1,
 * denom = sqrt(v) / sqrt(bc2) + eps), so agreement with it is to rounding, not
 * bits. The cuda backend's kernel (backends/cuda/cuda_kernels.cu) spells the
 * same order. decay_form: DECAY_SELECTED, or the terms that apply (bits, above). */
ALWAYS_INLINE void adam_loop(const struct zero_adam_consts *k, float *restrict p,
                             const void *restrict g, enum zero_dtype gt, float *restrict m,
                             float *restrict v, size_t n, void *restrict copy, enum zero_dtype ct,
                             int decay_form)
{
    const float lr = k->lr, b1 = k->beta1, b2 = k->beta2, eps = k->eps;
    const float c1 = k->one_minus_beta1, c2 = k->one_minus_beta2;
    const float bc1 = k->bias_correction1, bc2 = k->bias_correction2;
    const float l2 = k->l2, decay = k->decay, div = k->grad_div;
    const uint32_t l2_on = dtype_mask(l2 != 0.0f), decay_on = dtype_mask(decay != 0.0f);
    for (size_t i = 0; i < n; i++) {
        float gi = dtype_load_f32(g, gt, i) / div, pi = p[i];
        if (decay_form == DECAY_SELECTED) {
            gi = select_f32(l2_on, gi + l2 * pi, gi);
            pi = select_f32(decay_on, pi - decay * pi, pi);
        } else {
            if (decay_form & DECAY_L2)
                gi = gi + l2 * pi;
            if (decay_form & DECAY_DECOUPLED)
                pi = pi - decay * pi;
        }
        float mt = b1 * m[i] + c1 * gi;
        float vt = b2 * v[i] + c2 * gi * gi;
        m[i] = mt;
        v[i] = vt;
        pi = pi - lr * ((mt / bc1) / (sqrtf(vt / bc2) + eps));
        p[i] = pi;
        if (ct != NO_COPY)
            dtype_store_f32(copy, ct, i, pi);
    }
}

/* The mixed-precision loops (a 16-bit gradient and a 16-bit copy) once per form of
 * weight decay, chosen here rather than by masks per element: their selections
 * take the vector integer ports the conversions need (a bf16 loop ran 4% faster in
 * cache without them), while the fp32 loops wait on the divider and keep them */
ALWAYS_INLINE void adam_loop_per_decay(const struct zero_adam_consts *k, float *p, const void *g,
                                       enum zero_dtype gt, float *m, float *v, size_t n, void *copy,
                                       enum zero_dtype ct)
{
    int form = (k->l2 != 0.0f ? DECAY_L2 : 0) | (k->decay != 0.0f ? DECAY_DECOUPLED : 0);
    if (form == DECAY_DECOUPLED) /* AdamW */
        adam_loop(k, p, g, gt, m, v, n, copy, ct, DECAY_DECOUPLED);
    else if (form == DECAY_L2) /* Adam with weight decay */
        adam_loop(k, p, g, gt, m, v, n, copy, ct, DECAY_L2);
    else if (form == 0)
        adam_loop(k, p, g, gt, m, v, n, copy, ct, 0);
    else
        adam_loop(k, p, g, gt, m, v, n, copy, ct, DECAY_L2 | DECAY_DECOUPLED);
}

/* Whether the copy's bytes overlap the gradient's */
static inline int overlaps(const void *grad, enum zero_dtype gt, const void *copy,
                           enum zero_dtype ct, size_t n)
{
    const char *g = grad, *c = copy;
    return c != NULL && c < g + n * zero_dtype_size(gt) && g < c + n * zero_dtype_size(ct);
}

/* The dtype pair's own loop: gt and ct are constants in each call below, so the
 * conversions inline into the update (MIXED: the 16-bit pairs of mixed precision) */
#define ADAM_CASES(LOOP, MIXED)                                                                    \
    do {                                                                                           \
        if (copy == NULL) {                                                                        \
            if (gt == ZERO_F32)                                                                    \
                LOOP(ZERO_F32, NULL, NO_COPY);                                                     \
            else if (gt == ZERO_BF16)                                                              \
                LOOP(ZERO_BF16, NULL, NO_COPY);                                                    \
            else                                                                                   \
                LOOP(ZERO_F16, NULL, NO_COPY);                                                     \
        } else if (gt == ZERO_F32 && ct == ZERO_BF16)                                              \
            LOOP(ZERO_F32, copy, ZERO_BF16);                                                       \
        else if (gt == ZERO_BF16 && ct == ZERO_BF16)                                               \
            MIXED(ZERO_BF16, copy, ZERO_BF16);                                                     \
        else if (gt == ZERO_F32 && ct == ZERO_F16)                                                 \
            LOOP(ZERO_F32, copy, ZERO_F16);                                                        \
        else if (gt == ZERO_F16 && ct == ZERO_F16)                                                 \
            MIXED(ZERO_F16, copy, ZERO_F16);                                                       \
        else                                                                                       \
            LOOP(gt, copy, ct); /* the other pairs (no mixed-precision run uses them) */           \
    } while (0)

ALWAYS_INLINE void adam_body(const struct zero_adam_consts *k, float *param, const void *grad,
                             enum zero_dtype gt, float *m, float *v, size_t n, void *copy,
                             enum zero_dtype ct)
{
    if (!overlaps(grad, gt, copy, ct, n)) {
#define ADAM_FUSED(G, C, T) adam_loop(k, param, grad, G, m, v, n, C, T, DECAY_SELECTED)
#define ADAM_MIXED(G, C, T) adam_loop_per_decay(k, param, grad, G, m, v, n, C, T)
        ADAM_CASES(ADAM_FUSED, ADAM_MIXED);
#undef ADAM_FUSED
#undef ADAM_MIXED
        return;
    }
    float gbuf[CHUNK];
    size_t gsize = zero_dtype_size(gt), csize = zero_dtype_size(ct);
    for (size_t i0 = 0; i0 < n; i0 += CHUNK) {
        size_t len = n - i0 < CHUNK ? n - i0 : CHUNK;
        const float *g = chunk_grad(gbuf, grad, gt, i0 * gsize, len);
        adam_loop(k, param + i0, g, ZERO_F32, m + i0, v + i0, len, NULL, NO_COPY, DECAY_SELECTED);
        narrow((char *)copy + i0 * csize, ct, param + i0, len);
    }
}

/* torch.optim.SGD, one element in fp32:
 *
 *   g = grad / grad_div
 *   g = g + wd * p                                   (when wd != 0)
 *   with momentum mu != 0:
 *     buf = g                                        (first step)
 *     buf = mu * buf + (1 - dampening) * g           (later steps)
 *     g   = nesterov ? g + mu * buf : buf
 *   p = p - lr * g */
ALWAYS_INLINE void sgd_f32(const struct zero_sgd_args *a, float *restrict p,
                           const float *restrict g, float *restrict buf, size_t n)
{
    const float mu = a->momentum, wd = a->weight_decay, lr = a->lr;
    const float undamped = 1.0f - a->dampening, div = a->grad_div;
    const int first = a->step == 1, nesterov = a->nesterov;
    for (size_t i = 0; i < n; i++) {
        float pi = p[i], gi = g[i] / div;
        if (wd != 0.0f)
            gi = gi + wd * pi;
        if (mu != 0.0f) {
            float b = first ? gi : mu * buf[i] + undamped * gi;
            buf[i] = b;
            gi = nesterov ? gi + mu * b : b;
        }
        p[i] = pi - lr * gi;
    }
}

/* SGD has no divisions for the conversions to hide behind: it stays in chunks */
ALWAYS_INLINE void sgd_body(const struct zero_sgd_args *a, float *param, const void *grad,
                            enum zero_dtype gt, float *momentum, size_t n, void *copy,
                            enum zero_dtype ct)
{
    float gbuf[CHUNK];
    size_t gsize = zero_dtype_size(gt), csize = zero_dtype_size(ct);
    for (size_t i0 = 0; i0 < n; i0 += CHUNK) {
        size_t len = n - i0 < CHUNK ? n - i0 : CHUNK;
        const float *g = chunk_grad(gbuf, grad, gt, i0 * gsize, len);
        sgd_f32(a, param + i0, g, momentum ? momentum + i0 : NULL, len);
        if (copy != NULL)
            narrow((char *)copy + i0 * csize, ct, param + i0, len);
    }
}

/* ---- the variants: the same bodies compiled for each instruction set ---- */

#define ADAM_ARGS                                                                                  \
    const struct zero_adam_consts *k, float *param, const void *grad, enum zero_dtype gt,          \
        float *m, float *v, size_t n, void *copy, enum zero_dtype ct
#define SGD_ARGS                                                                                   \
    const struct zero_sgd_args *a, float *param, const void *grad, enum zero_dtype gt,             \
        float *momentum, size_t n, void *copy, enum zero_dtype ct
#define VARIANT(attr, suffix)                                                                      \
    attr static void adam_##suffix(ADAM_ARGS)                                                      \
    {                                                                                              \
        adam_body(k, param, grad, gt, m, v, n, copy, ct);                                          \
    }                                                                                              \
    attr static void sgd_##suffix(SGD_ARGS)                                                        \
    {                                                                                              \
        sgd_body(a, param, grad, gt, momentum, n, copy, ct);                                       \
    }
ZERO_HOST_VARIANTS(VARIANT)

typedef void (*adam_fn)(ADAM_ARGS);
typedef void (*sgd_fn)(SGD_ARGS);

/* An unsupported isa falls back to a narrower one: same bits, narrower vectors. */
void zero_host_adam(enum zero_host_isa isa, const struct zero_adam_consts *k, float *param,
                    const void *grad, enum zero_dtype grad_type, float *exp_avg, float *exp_avg_sq,
                    size_t n, void *param_copy, enum zero_dtype copy_type)
{
    const enum zero_host_isa use = zero_host_isa_usable(isa);
    const adam_fn adam = ZERO_HOST_PICK(use, adam);
    adam(k, param, grad, grad_type, exp_avg, exp_avg_sq, n, param_copy, copy_type);
}

void zero_host_sgd(enum zero_host_isa isa, const struct zero_sgd_args *args, float *param,
                   const void *grad, enum zero_dtype grad_type, float *momentum, size_t n,
                   void *param_copy, enum zero_dtype copy_type)
{
    const enum zero_host_isa use = zero_host_isa_usable(isa);
    const sgd_fn sgd = ZERO_HOST_PICK(use, sgd);
    sgd(args, param, grad, grad_type, momentum, n, param_copy, copy_type);
}

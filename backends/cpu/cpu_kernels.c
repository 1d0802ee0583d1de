/* Elementwise kernels, the fused optimizers and the reductions of the cpu backend.
 * Plain loops over restrict pointers that gcc -O2 vectorizes where the types allow;
 * fp16/bf16 elements go through the scalar conversions of src/dtype.c. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "optim_consts.h"
#include "cpu_ops.h"

static int is_float_type(enum zero_dtype t)
{
    return t == ZERO_F32 || t == ZERO_F16 || t == ZERO_BF16 || t == ZERO_F64;
}

static int is_narrow_float(enum zero_dtype t)
{
    return t == ZERO_F32 || t == ZERO_F16 || t == ZERO_BF16;
}

/* Element i of an fp32/fp16/bf16 array as fp32 (exact). */
static inline float load_f32(const void *x, enum zero_dtype t, size_t i)
{
    switch (t) {
    case ZERO_F16:
        return zero_f16_to_f32(((const uint16_t *)x)[i]);
    case ZERO_BF16:
        return zero_bf16_to_f32(((const uint16_t *)x)[i]);
    default:
        return ((const float *)x)[i];
    }
}

/* Stores v as element i of an fp32/fp16/bf16 array (rounded to nearest even). */
static inline void store_f32(void *x, enum zero_dtype t, size_t i, float v)
{
    switch (t) {
    case ZERO_F16:
        ((uint16_t *)x)[i] = zero_f32_to_f16(v);
        break;
    case ZERO_BF16:
        ((uint16_t *)x)[i] = zero_f32_to_bf16(v);
        break;
    default:
        ((float *)x)[i] = v;
        break;
    }
}

int cpu_cast(void *self, void *dst, enum zero_dtype dst_type, const void *src,
             enum zero_dtype src_type, size_t n)
{
    if (!is_float_type(dst_type) || !is_float_type(src_type))
        return cpu_fail(self, ZERO_ENOTSUP, "cast: %s -> %s is not supported",
                        zero_dtype_name(src_type), zero_dtype_name(dst_type));
    if (dst_type == src_type) {
        if (n > 0)
            memmove(dst, src, n * zero_dtype_size(src_type));
        return ZERO_OK;
    }
    if (src_type == ZERO_F64) {
        /* fp64 -> fp16 through fp32 would round twice; nothing needs it yet */
        if (dst_type != ZERO_F32)
            return cpu_fail(self, ZERO_ENOTSUP, "cast: fp64 -> %s is not supported",
                            zero_dtype_name(dst_type));
        const double *restrict s = src;
        float *restrict d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] = (float)s[i];
        return ZERO_OK;
    }
    if (dst_type == ZERO_F64) {
        double *restrict d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] = (double)load_f32(src, src_type, i);
        return ZERO_OK;
    }
    for (size_t i = 0; i < n; i++)
        store_f32(dst, dst_type, i, load_f32(src, src_type, i));
    return ZERO_OK;
}

/* y and x must not overlap */
int cpu_axpy(void *self, float a, const float *x, float *y, size_t n)
{
    (void)self;
    const float *restrict xr = x;
    float *restrict yr = y;
    for (size_t i = 0; i < n; i++)
        yr[i] += a * xr[i];
    return ZERO_OK;
}

int cpu_scale(void *self, float a, float *x, size_t n)
{
    (void)self;
    for (size_t i = 0; i < n; i++)
        x[i] *= a;
    return ZERO_OK;
}

/* out may be a or b (in place); gcc checks the overlap at run time and still
 * takes the vector loop. */
int cpu_add(void *self, float *out, const float *a, const float *b, size_t n)
{
    (void)self;
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
    return ZERO_OK;
}

static int check_optimizer_types(struct cpu_state *s, const char *what, enum zero_dtype grad_type,
                                 const void *param_copy, enum zero_dtype copy_type)
{
    if (!is_narrow_float(grad_type))
        return cpu_fail(s, ZERO_ENOTSUP, "%s: gradient dtype %s; fp32, fp16 or bf16 expected", what,
                        zero_dtype_name(grad_type));
    if (param_copy != NULL && !is_narrow_float(copy_type))
        return cpu_fail(s, ZERO_ENOTSUP, "%s: parameter copy dtype %s; fp32, fp16 or bf16 expected",
                        what, zero_dtype_name(copy_type));
    return ZERO_OK;
}

/* Per-step constants of Adam, computed once in the order the formula below uses. */
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
 * denom = sqrt(v) / sqrt(bc2) + eps), so agreement with it is to rounding, not bits. */
static inline float adam_element(const struct zero_adam_consts *k, float p, float g, float *m,
                                 float *v)
{
    g = g / k->grad_div;
    if (k->l2 != 0.0f)
        g = g + k->l2 * p;
    if (k->decay != 0.0f)
        p = p - k->decay * p;
    float mt = k->beta1 * *m + k->one_minus_beta1 * g;
    float vt = k->beta2 * *v + k->one_minus_beta2 * g * g;
    *m = mt;
    *v = vt;
    float m_hat = mt / k->bias_correction1;
    float v_hat = vt / k->bias_correction2;
    return p - k->lr * (m_hat / (sqrtf(v_hat) + k->eps));
}

int cpu_adam(void *self, float *param, const void *grad, enum zero_dtype grad_type, float *exp_avg,
             float *exp_avg_sq, size_t n, const struct zero_adam_args *args, void *param_copy,
             enum zero_dtype copy_type)
{
    struct cpu_state *s = self;
    int rc = check_optimizer_types(s, "adam", grad_type, param_copy, copy_type);
    if (rc != ZERO_OK)
        return rc;
    struct zero_adam_consts k;
    char why[128];
    if (zero_adam_prepare(args, &k, why, sizeof why))
        return cpu_fail(s, ZERO_EINVAL, "adam: %s", why);

    /* One pass over memory: each element's p, g, m, v are read once and written once. */
    if (grad_type == ZERO_F32 && param_copy == NULL) {
        float *restrict p = param, *restrict m = exp_avg, *restrict v = exp_avg_sq;
        const float *restrict g = grad;
        for (size_t i = 0; i < n; i++)
            p[i] = adam_element(&k, p[i], g[i], &m[i], &v[i]);
        return ZERO_OK;
    }
    for (size_t i = 0; i < n; i++) {
        float p =
            adam_element(&k, param[i], load_f32(grad, grad_type, i), &exp_avg[i], &exp_avg_sq[i]);
        param[i] = p;
        if (param_copy != NULL)
            store_f32(param_copy, copy_type, i, p);
    }
    return ZERO_OK;
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
int cpu_sgd(void *self, float *param, const void *grad, enum zero_dtype grad_type, float *momentum,
            size_t n, const struct zero_sgd_args *args, void *param_copy, enum zero_dtype copy_type)
{
    struct cpu_state *s = self;
    int rc = check_optimizer_types(s, "sgd", grad_type, param_copy, copy_type);
    if (rc != ZERO_OK)
        return rc;
    char why[160];
    if (zero_sgd_check(args, momentum != NULL, why, sizeof why))
        return cpu_fail(s, ZERO_EINVAL, "sgd: %s", why);
    const float mu = args->momentum, wd = args->weight_decay, lr = args->lr;
    const float undamped = 1.0f - args->dampening, div = args->grad_div;
    const int first = args->step == 1;

    for (size_t i = 0; i < n; i++) {
        float p = param[i];
        float g = load_f32(grad, grad_type, i) / div;
        if (wd != 0.0f)
            g = g + wd * p;
        if (mu != 0.0f) {
            float buf = first ? g : mu * momentum[i] + undamped * g;
            momentum[i] = buf;
            g = args->nesterov ? g + mu * buf : buf;
        }
        p = p - lr * g;
        param[i] = p;
        if (param_copy != NULL)
            store_f32(param_copy, copy_type, i, p);
    }
    return ZERO_OK;
}

int cpu_sumsq_blocks(void *self, const void *x, enum zero_dtype t, size_t n, size_t block,
                     double *out)
{
    if (!is_float_type(t))
        return cpu_fail(self, ZERO_ENOTSUP, "sumsq_blocks: dtype %s is not a float type",
                        zero_dtype_name(t));
    if (block == 0)
        return cpu_fail(self, ZERO_EINVAL, "sumsq_blocks: block size is 0");
    size_t blocks = (n + block - 1) / block;
    for (size_t b = 0; b < blocks; b++) {
        size_t end = (b + 1) * block < n ? (b + 1) * block : n;
        double sum = 0.0;
        /* sequential on purpose: the order of this sum is part of the exactness contract */
        for (size_t i = b * block; i < end; i++) {
            double v = t == ZERO_F64 ? ((const double *)x)[i] : (double)load_f32(x, t, i);
            sum += v * v;
        }
        out[b] = sum;
    }
    return ZERO_OK;
}

int cpu_nonfinite(void *self, const void *x, enum zero_dtype t, size_t n, int *host_flag)
{
    int bad = 0;
    switch (t) {
    case ZERO_F32: {
        const float *p = x;
        for (size_t i = 0; i < n; i++) /* false for NaN as well as for +-inf */
            bad |= !(fabsf(p[i]) <= FLT_MAX);
        break;
    }
    case ZERO_F64: {
        const double *p = x;
        for (size_t i = 0; i < n; i++)
            bad |= !(fabs(p[i]) <= DBL_MAX);
        break;
    }
    case ZERO_F16:
    case ZERO_BF16: {
        /* all exponent bits set: inf or NaN */
        const uint16_t *p = x, exp_mask = t == ZERO_F16 ? 0x7c00 : 0x7f80;
        for (size_t i = 0; i < n; i++)
            bad |= (p[i] & exp_mask) == exp_mask;
        break;
    }
    default:
        return cpu_fail(self, ZERO_ENOTSUP, "nonfinite: dtype %s is not a float type",
                        zero_dtype_name(t));
    }
    *host_flag = bad;
    return ZERO_OK;
}

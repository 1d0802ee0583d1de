/* Elementwise kernels, the fused optimizers and the reductions of the cpu backend.
 * Plain loops over restrict pointers that gcc -O2 vectorizes where the types allow;
 * fp16/bf16 elements go through src/base/dtype_convert.h's inline conversions (cast's
 * loops compiled per instruction set). The optimizers are src/base/host_optim.c's. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "cpu_ops.h"
#include "cpu_sumsq.h"
#include "base/backend_contract.h"
#include "base/dtype_convert.h"
#include "base/host_optim.h"
#include "base/optim_consts.h"

/* The fp32 <-> fp16/bf16 loops of cast: src/base/dtype_convert.h's inline
 * conversions, compiled for each instruction set as host_optim.c compiles the
 * optimizers (a conversion's bits do not depend on the vector width), so the
 * compiler vectorizes them; one call per element through src/base/dtype.c was most
 * of a bf16 step. */
#define CAST_ARGS                                                                                  \
    void *dst, enum zero_dtype dst_type, const void *src, enum zero_dtype src_type, size_t n

static inline __attribute__((always_inline)) void cast_body(CAST_ARGS)
{
    const float *restrict f = src;
    const uint16_t *restrict h = src;
    float *restrict df = dst;
    uint16_t *restrict dh = dst;
    if (src_type == ZERO_F32 && dst_type == ZERO_BF16)
        for (size_t i = 0; i < n; i++)
            dh[i] = dtype_f32_to_bf16(f[i]);
    else if (src_type == ZERO_BF16 && dst_type == ZERO_F32)
        for (size_t i = 0; i < n; i++)
            df[i] = dtype_bf16_to_f32(h[i]);
    else if (src_type == ZERO_F32 && dst_type == ZERO_F16)
        for (size_t i = 0; i < n; i++)
            dh[i] = dtype_f32_to_f16(f[i]);
    else if (src_type == ZERO_F16 && dst_type == ZERO_F32)
        for (size_t i = 0; i < n; i++)
            df[i] = dtype_f16_to_f32(h[i]);
    else /* fp16 <-> bf16, through the exact fp32 value */
        for (size_t i = 0; i < n; i++)
            dtype_store_f32(dst, dst_type, i, dtype_load_f32(src, src_type, i));
}

#define CAST_VARIANT(attr, suffix)                                                                 \
    attr static void cast_##suffix(CAST_ARGS)                                                      \
    {                                                                                              \
        cast_body(dst, dst_type, src, src_type, n);                                                \
    }

ZERO_HOST_VARIANTS(CAST_VARIANT)

static void cast_narrow(CAST_ARGS)
{
    ZERO_HOST_PICK(zero_host_isa_best(), cast)(dst, dst_type, src, src_type, n);
}

int cpu_cast(void *self, void *dst, enum zero_dtype dst_type, const void *src,
             enum zero_dtype src_type, size_t n)
{
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_cast(dst_type, src_type, why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(self, rc, "%s", why);
    if (dst_type == src_type) {
        if (n > 0)
            memmove(dst, src, n * zero_dtype_size(src_type));
        return ZERO_OK;
    }
    if (src_type == ZERO_F64) { /* to fp32: the contract allows no other */
        const double *restrict s = src;
        float *restrict d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] = (float)s[i];
        return ZERO_OK;
    }
    if (dst_type == ZERO_F64) {
        double *restrict d = dst;
        for (size_t i = 0; i < n; i++)
            d[i] = (double)dtype_load_f32(src, src_type, i);
        return ZERO_OK;
    }
    cast_narrow(dst, dst_type, src, src_type, n);
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

/* The updates themselves are src/base/host_optim.c's, shared with the engine's
 * offloaded optimizer: the formulas and their order are written there. */
int cpu_adam(void *self, float *param, const void *grad, enum zero_dtype grad_type, float *exp_avg,
             float *exp_avg_sq, size_t n, const struct zero_adam_args *args, void *param_copy,
             enum zero_dtype copy_type)
{
    struct zero_adam_consts k;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_adam(args, grad_type, param_copy, copy_type, &k, why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(self, rc, "%s", why);
    zero_host_adam(zero_host_isa_best(), &k, param, grad, grad_type, exp_avg, exp_avg_sq, n,
                   param_copy, copy_type);
    return ZERO_OK;
}

int cpu_sgd(void *self, float *param, const void *grad, enum zero_dtype grad_type, float *momentum,
            size_t n, const struct zero_sgd_args *args, void *param_copy, enum zero_dtype copy_type)
{
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_sgd(args, momentum != NULL, grad_type, param_copy, copy_type, why,
                               sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(self, rc, "%s", why);
    zero_host_sgd(zero_host_isa_best(), args, param, grad, grad_type, momentum, n, param_copy,
                  copy_type);
    return ZERO_OK;
}

/* Sum of squares per block of `block` elements, each block's sum sequential in
 * double (that order is part of the exactness contract). GROUP consecutive blocks
 * advance side by side: their sums are independent dependency chains, so the
 * core (and the vectorizer, across blocks) overlaps them; no sum is reassociated.
 * 16-bit elements are first widened to fp32 a contiguous run of each block at a time
 * (a vectorized loop), so the side-by-side sums read fp32 values as in fp32 training
 * instead of gathering 16-bit ones. Specialized per dtype and compiled per
 * instruction set, like cast. On AVX-512 the whole groups of 16 blocks are
 * cpu_sumsq_avx512.c's (the same sums in the same order, two to three times the
 * rate) and this loop sums the blocks after them. */
enum { SUMSQ_GROUP = 8, SUMSQ_RUN = 256 };

static inline __attribute__((always_inline)) double sumsq_load(const void *x, enum zero_dtype t,
                                                               size_t i)
{
    double v = t == ZERO_F64 ? ((const double *)x)[i] : (double)dtype_load_f32(x, t, i);
    return v * v;
}

/* acc[j] += x[j * stride + i]^2 for i = 0..len-1 in that order, j < GROUP */
static inline __attribute__((always_inline)) void
sumsq_group(const void *x, enum zero_dtype t, size_t stride, size_t len, double *acc)
{
    for (size_t i = 0; i < len; i++)
        for (int j = 0; j < SUMSQ_GROUP; j++)
            acc[j] += sumsq_load(x, t, (size_t)j * stride + i);
}

/* blocks first.. (first: a multiple of SUMSQ_GROUP, the blocks before it summed already) */
static inline __attribute__((always_inline)) void
sumsq_typed(const void *x, enum zero_dtype t, size_t n, size_t block, double *out, size_t first)
{
    size_t full = n / block, b = first;
    for (; b + SUMSQ_GROUP <= full; b += SUMSQ_GROUP) {
        double acc[SUMSQ_GROUP] = {0};
        const size_t base = b * block;
        if (t == ZERO_F32 || t == ZERO_F64)
            sumsq_group((const char *)x + base * zero_dtype_size(t), t, block, block, acc);
        else
            for (size_t i0 = 0; i0 < block; i0 += SUMSQ_RUN) {
                float run[SUMSQ_GROUP][SUMSQ_RUN]; /* (GROUP, len): the blocks' runs in fp32 */
                size_t len = block - i0 < SUMSQ_RUN ? block - i0 : SUMSQ_RUN;
                for (int j = 0; j < SUMSQ_GROUP; j++)
                    for (size_t i = 0; i < len; i++)
                        run[j][i] = dtype_load_f32(x, t, base + (size_t)j * block + i0 + i);
                sumsq_group(run, ZERO_F32, SUMSQ_RUN, len, acc);
            }
        for (int j = 0; j < SUMSQ_GROUP; j++)
            out[b + (size_t)j] = acc[j];
    }
    for (; b * block < n; b++) { /* the last blocks, one at a time */
        size_t end = (b + 1) * block < n ? (b + 1) * block : n;
        double sum = 0.0;
        for (size_t i = b * block; i < end; i++)
            sum += sumsq_load(x, t, i);
        out[b] = sum;
    }
}

#define SUMSQ_ARGS                                                                                 \
    const void *x, enum zero_dtype t, size_t n, size_t block, double *out, size_t first
static inline __attribute__((always_inline)) void sumsq_body(SUMSQ_ARGS)
{
    switch (t) { /* a constant dtype per loop: no dispatch per element */
    case ZERO_F16:
        sumsq_typed(x, ZERO_F16, n, block, out, first);
        break;
    case ZERO_BF16:
        sumsq_typed(x, ZERO_BF16, n, block, out, first);
        break;
    case ZERO_F64:
        sumsq_typed(x, ZERO_F64, n, block, out, first);
        break;
    default:
        sumsq_typed(x, ZERO_F32, n, block, out, first);
        break;
    }
}

#define SUMSQ_VARIANT(attr, suffix)                                                                \
    attr static void sumsq_##suffix(SUMSQ_ARGS)                                                    \
    {                                                                                              \
        sumsq_body(x, t, n, block, out, first);                                                    \
    }

ZERO_HOST_VARIANTS(SUMSQ_VARIANT)

int cpu_sumsq_blocks(void *self, const void *x, enum zero_dtype t, size_t n, size_t block,
                     double *out)
{
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_float_input("sumsq_blocks", t, why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(self, rc, "%s", why);
    if (block == 0)
        return cpu_fail(self, ZERO_EINVAL, "sumsq_blocks: block size is 0");
    const enum zero_host_isa isa = zero_host_isa_best();
    size_t first = 0;
#ifdef CPU_SUMSQ_X86
    if (isa == ZERO_ISA_AVX512) /* whole groups of 16 blocks by hand (cpu_sumsq_avx512.c) */
        first = cpu_sumsq_groups_avx512(x, t, n, block, out);
#endif
    ZERO_HOST_PICK(isa, sumsq)(x, t, n, block, out, first); /* the rest here */
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

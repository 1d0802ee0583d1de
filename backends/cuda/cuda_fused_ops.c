/* The cuda backend's optional fused entries (include/zero/backend.h: xent_fused,
 * residual_layernorm_forward, layernorm_forward_stored): the paths that need a check, a workspace
 * or a fallback around their kernels. Native mode runs one fused kernel each
 * (cuda_fast_kernels.cu); exact mode runs the reference entries in sequence, so a fused call gives
 * the bits of the cpu backend's unfused calls and src/nn may take the fused path in either mode. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "cuda_launch.h"
#include "cuda_ops.h"
#include "zero_cuda_profile.h"

/* [p, p + bytes) and [q, q + bytes2) share a byte */
static int overlaps(const void *p, size_t bytes, const void *q, size_t bytes2)
{
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)q;
    return bytes > 0 && bytes2 > 0 && a < b + bytes2 && b < a + bytes;
}

/* ---- the fused classifier ---- */

/* xent_forward with the probabilities in dlogits (a workspace when dlogits is logits),
 * then xent_backward in place: in exact mode the reference kernels, the cpu's bits */
static int xent_fused_reference(struct cuda_state *s, float *losses, float *dlogits,
                                const float *logits, const int32_t *labels, int64_t rows,
                                int64_t classes, float dloss)
{
    float *probs = dlogits;
    void *ws = NULL;
    int rc = ZERO_OK;
    if ((const float *)dlogits == logits) {
        rc = cuda_alloc(s, (size_t)rows * (size_t)classes * sizeof(float), ZERO_TAG_WORKSPACE, &ws);
        probs = ws;
    }
    if (rc == ZERO_OK)
        rc = cuda_xent_forward(s, losses, probs, logits, labels, rows, classes);
    if (rc == ZERO_OK)
        rc = cuda_xent_backward(s, dlogits, probs, labels, rows, classes, dloss);
    if (ws != NULL)
        cuda_free(s, ws); /* back to the cache; the stream order keeps it for the kernels */
    return rc;
}

/* bf16 logits: widened exactly into an fp32 workspace, xent_fused_reference in place
 * there, each dlogit rounded once into dlogits: the bits of the cpu's xent_fused */
static int xent_fused_reference_bf16(struct cuda_state *s, float *losses, void *dlogits,
                                     const void *logits, const int32_t *labels, int64_t rows,
                                     int64_t classes, float dloss)
{
    const size_t n = (size_t)rows * (size_t)classes;
    if (n == 0)
        return ZERO_OK;
    void *ws = NULL; /* (rows, classes) fp32 */
    int rc = cuda_alloc(s, n * sizeof(float), ZERO_TAG_WORKSPACE, &ws);
    if (rc == ZERO_OK)
        rc = cuda_cast(s, ws, ZERO_F32, logits, ZERO_BF16, n);
    if (rc == ZERO_OK)
        rc = xent_fused_reference(s, losses, ws, ws, labels, rows, classes, dloss);
    if (rc == ZERO_OK)
        rc = cuda_cast(s, dlogits, ZERO_BF16, ws, ZERO_F32, n);
    const int frc = cuda_free(s, ws); /* NULL passes; the stream order keeps it for the kernels */
    return rc == ZERO_OK ? frc : rc;
}

int cuda_xent_fused(void *self, float *losses, void *dlogits, const void *logits, enum zero_dtype t,
                    const int32_t *labels, int64_t rows, int64_t classes, float dloss)
{
    struct cuda_state *s = self;
    if (classes < 1)
        return cuda_fail(s, ZERO_EINVAL, "xent_fused: %lld classes", (long long)classes);
    if (rows < 0)
        return cuda_fail(s, ZERO_EINVAL, "xent_fused: %lld rows", (long long)rows);
    if (t != ZERO_F32 && t != ZERO_BF16)
        return cuda_fail(s, ZERO_ENOTSUP, "xent_fused: logits dtype %s; fp32 or bf16 expected",
                         zero_dtype_name(t));
    if (rows > INT_MAX || classes > INT64_MAX / (rows > 0 ? rows : 1) / 4)
        return cuda_fail(s, ZERO_ENOTSUP, "xent_fused: %lld rows of %lld classes exceed the grid",
                         (long long)rows, (long long)classes);
    const size_t bytes = (size_t)rows * (size_t)classes * zero_dtype_size(t);
    if (dlogits != logits && overlaps(dlogits, bytes, logits, bytes))
        return cuda_fail(s, ZERO_EINVAL, "xent_fused: dlogits overlaps logits without being them");
    if (s->mode != ZERO_COLL_NATIVE || cuda_fused_disabled()) {
        if (t == ZERO_F32)
            return xent_fused_reference(s, losses, dlogits, logits, labels, rows, classes, dloss);
        return xent_fused_reference_bf16(s, losses, dlogits, logits, labels, rows, classes, dloss);
    }
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_XENT);
    int rc = cuda_check_ids(s, "xent_fused", "label", labels, rows, classes);
    if (rc == ZERO_OK) /* logits read twice, dlogits written once */
        rc = cuda_check(s,
                        cuda_launch_xent_fused(s->compute, losses, dlogits, logits, t, labels, rows,
                                               classes, dloss),
                        "xent_fused");
    return cuda_prof_end(s, &pm, 0, 3.0 * (double)bytes, rc);
}

/* ---- the residual add fused with LayerNorm ---- */

int cuda_residual_layernorm_forward(void *self, float *res, float *y, float *mean, float *rstd,
                                    const float *a, const float *b, const float *weight,
                                    const float *bias, int64_t rows, int64_t cols, float eps)
{
    struct cuda_state *s = self;
    if (rows < 0 || cols < 0)
        return cuda_fail(s, ZERO_EINVAL, "residual_layernorm_forward: %lld rows of %lld columns",
                         (long long)rows, (long long)cols);
    if (rows == 0 || cols == 0)
        return ZERO_OK;
    if (cols > INT64_MAX / rows / (int64_t)sizeof(float))
        return cuda_fail(s, ZERO_ENOTSUP,
                         "residual_layernorm_forward: %lld rows of %lld columns exceed memory",
                         (long long)rows, (long long)cols);
    const size_t n = (size_t)rows * (size_t)cols, bytes = n * sizeof(float);
    if ((res != a && overlaps(res, bytes, a, bytes)) ||
        (res != b && overlaps(res, bytes, b, bytes)))
        return cuda_fail(s, ZERO_EINVAL,
                         "residual_layernorm_forward: res overlaps an addend without being it");
    if (overlaps(y, bytes, res, bytes) || overlaps(y, bytes, a, bytes) ||
        overlaps(y, bytes, b, bytes))
        return cuda_fail(s, ZERO_EINVAL,
                         "residual_layernorm_forward: y overlaps the residual or its addends");
    /* add, then the LayerNorm entry: the cpu's bits in exact mode */
    if (s->mode != ZERO_COLL_NATIVE || cuda_fused_disabled()) {
        int rc = cuda_add(s, res, a, b, n);
        return rc != ZERO_OK
                   ? rc
                   : cuda_layernorm_forward(s, y, mean, rstd, res, weight, bias, rows, cols, eps);
    }
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_LAYERNORM);
    /* a, b read; res and y written (res read back from cache) */
    return cuda_prof_end(
        s, &pm, 0, 16.0 * (double)n,
        cuda_check(s,
                   cuda_launch_residual_layernorm_forward_fast(s->compute, res, y, mean, rstd, a, b,
                                                               weight, bias, rows, cols, eps),
                   "residual_layernorm_forward"));
}

/* ---- LayerNorm with a 16-bit store (stored activations) ---- */

int cuda_layernorm_forward_stored(void *self, void *y, enum zero_dtype y_type, float *mean,
                                  float *rstd, const float *x, float *res, const float *a,
                                  const float *b, const float *weight, const float *bias,
                                  int64_t rows, int64_t cols, float eps)
{
    struct cuda_state *s = self;
    if (y_type != ZERO_F32 && y_type != ZERO_F16 && y_type != ZERO_BF16)
        return cuda_fail(s, ZERO_ENOTSUP, "layernorm_forward_stored: y must be fp32, fp16 or bf16");
    if (x == NULL && (res == NULL || a == NULL || b == NULL))
        return cuda_fail(s, ZERO_EINVAL, "layernorm_forward_stored: no x and no res = a + b");
    if (rows < 0 || cols < 0 || (rows > 0 && cols > INT64_MAX / rows / (int64_t)sizeof(float)))
        return cuda_fail(s, ZERO_EINVAL, "layernorm_forward_stored: %lld rows of %lld columns",
                         (long long)rows, (long long)cols);
    if (rows == 0 || cols == 0)
        return ZERO_OK;
    const size_t n = (size_t)rows * (size_t)cols;
    if (y_type == ZERO_F32)
        return x != NULL
                   ? cuda_layernorm_forward(s, y, mean, rstd, x, weight, bias, rows, cols, eps)
                   : cuda_residual_layernorm_forward(s, res, y, mean, rstd, a, b, weight, bias,
                                                     rows, cols, eps);
    /* exact mode (and ZERO_CUDA_FUSED=off): the fp32 entry into a workspace, then the
     * cast, the steps src/nn takes without this entry: the cpu's bits */
    if (s->mode != ZERO_COLL_NATIVE || cuda_fused_disabled()) {
        void *y32 = NULL;
        int rc = cuda_alloc(s, n * sizeof(float), ZERO_TAG_WORKSPACE, &y32);
        if (rc == ZERO_OK)
            rc = cuda_layernorm_forward_stored(s, y32, ZERO_F32, mean, rstd, x, res, a, b, weight,
                                               bias, rows, cols, eps);
        if (rc == ZERO_OK)
            rc = cuda_cast(s, y, y_type, y32, ZERO_F32, n);
        cuda_free(s, y32);
        return rc;
    }
    const size_t in_bytes = n * sizeof(float), y_bytes = n * 2;
    if (x == NULL && ((res != a && overlaps(res, in_bytes, a, in_bytes)) ||
                      (res != b && overlaps(res, in_bytes, b, in_bytes))))
        return cuda_fail(s, ZERO_EINVAL,
                         "layernorm_forward_stored: res overlaps an addend without being it");
    if (overlaps(y, y_bytes, x != NULL ? x : res, in_bytes) ||
        (x == NULL && (overlaps(y, y_bytes, a, in_bytes) || overlaps(y, y_bytes, b, in_bytes))))
        return cuda_fail(s, ZERO_EINVAL, "layernorm_forward_stored: y overlaps its inputs");
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_LAYERNORM);
    /* the row read (a and b, res written) and y written in 16 bits */
    const double bytes = (x != NULL ? 4.0 : 12.0) * (double)n + 2.0 * (double)n;
    return cuda_prof_end(s, &pm, 0, bytes,
                         cuda_check(s,
                                    cuda_launch_layernorm_forward_stored_fast(
                                        s->compute, y, y_type, mean, rstd, x, res, a, b, weight,
                                        bias, rows, cols, eps),
                                    "layernorm_forward_stored"));
}

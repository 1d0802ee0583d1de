/* Elementwise kernels, the fused optimizers and the reductions of the cuda backend:
 * the cpu backend's argument checks and messages, then a launch on the compute stream
 * (cuda_kernels.cu). The optimizers' per-step constants come from src/base/optim_consts.c,
 * as the cpu backend's do, so the updates match its bits. */
#include <math.h>

#include "cuda_launch.h"
#include "cuda_ops.h"
#include "base/backend_contract.h"
#include "zero_cuda_profile.h"

int cuda_cast(void *self, void *dst, enum zero_dtype dst_type, const void *src,
              enum zero_dtype src_type, size_t n)
{
    struct cuda_state *s = self;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_cast(dst_type, src_type, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    double bytes = (double)n * (double)(zero_dtype_size(src_type) + zero_dtype_size(dst_type));
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_CAST);
    if (dst_type == src_type)
        return cuda_prof_end(s, &pm, 0, bytes,
                             cuda_copy(s, dst, src, n * zero_dtype_size(src_type)));
    return cuda_prof_end(
        s, &pm, 0, bytes,
        cuda_check(s, cuda_launch_cast(s->compute, dst, dst_type, src, src_type, 1, n, n, n),
                   "cast"));
}

int cuda_axpy(void *self, float a, const float *x, float *y, size_t n)
{
    struct cuda_state *s = self;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_ELEMENTWISE);
    return cuda_prof_end(s, &pm, 0, 12.0 * (double)n,
                         cuda_check(s, cuda_launch_axpy(s->compute, a, x, y, n), "axpy"));
}

int cuda_scale(void *self, float a, float *x, size_t n)
{
    struct cuda_state *s = self;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_ELEMENTWISE);
    return cuda_prof_end(s, &pm, 0, 8.0 * (double)n,
                         cuda_check(s, cuda_launch_scale(s->compute, a, x, n), "scale"));
}

int cuda_add(void *self, float *out, const float *a, const float *b, size_t n)
{
    struct cuda_state *s = self;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_ELEMENTWISE);
    return cuda_prof_end(s, &pm, 0, 12.0 * (double)n,
                         cuda_check(s, cuda_launch_add(s->compute, out, a, b, n), "add"));
}

int cuda_adam(void *self, float *param, const void *grad, enum zero_dtype grad_type, float *exp_avg,
              float *exp_avg_sq, size_t n, const struct zero_adam_args *args, void *param_copy,
              enum zero_dtype copy_type)
{
    struct cuda_state *s = self;
    struct zero_adam_consts k;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_adam(args, grad_type, param_copy, copy_type, &k, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    /* param, exp_avg, exp_avg_sq read and written; the gradient read; the copy written */
    double bytes = (double)n * (24.0 + (double)zero_dtype_size(grad_type) +
                                (param_copy ? (double)zero_dtype_size(copy_type) : 0.0));
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_OPTIMIZER);
    return cuda_prof_end(s, &pm, 0, bytes,
                         cuda_check(s,
                                    cuda_launch_adam(s->compute, param, grad, grad_type, exp_avg,
                                                     exp_avg_sq, n, k, param_copy, copy_type),
                                    "adam"));
}

int cuda_sgd(void *self, float *param, const void *grad, enum zero_dtype grad_type, float *momentum,
             size_t n, const struct zero_sgd_args *args, void *param_copy,
             enum zero_dtype copy_type)
{
    struct cuda_state *s = self;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_sgd(args, momentum != NULL, grad_type, param_copy, copy_type, why,
                               sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    struct cuda_sgd_consts k = {
        .lr = args->lr,
        .momentum = args->momentum,
        .weight_decay = args->weight_decay,
        .undamped = 1.0f - args->dampening,
        .grad_div = args->grad_div,
        .nesterov = args->nesterov,
        .first = args->step == 1,
    };
    double bytes = (double)n * (8.0 + (momentum ? 8.0 : 0.0) + (double)zero_dtype_size(grad_type) +
                                (param_copy ? (double)zero_dtype_size(copy_type) : 0.0));
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_OPTIMIZER);
    return cuda_prof_end(s, &pm, 0, bytes,
                         cuda_check(s,
                                    cuda_launch_sgd(s->compute, param, grad, grad_type, momentum, n,
                                                    k, param_copy, copy_type),
                                    "sgd"));
}

int cuda_sumsq_blocks(void *self, const void *x, enum zero_dtype t, size_t n, size_t block,
                      double *out)
{
    struct cuda_state *s = self;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_float_input("sumsq_blocks", t, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    if (block == 0)
        return cuda_fail(s, ZERO_EINVAL, "sumsq_blocks: block size is 0");
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_REDUCTION);
    return cuda_prof_end(
        s, &pm, 0, (double)n * (double)zero_dtype_size(t),
        cuda_check(s, cuda_launch_sumsq_blocks(s->compute, x, t, n, block, out), "sumsq_blocks"));
}

int cuda_nonfinite(void *self, const void *x, enum zero_dtype t, size_t n, int *host_flag)
{
    struct cuda_state *s = self;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_float_input("nonfinite", t, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_REDUCTION);
    rc = cuda_prof_end(
        s, &pm, 0, (double)n * (double)zero_dtype_size(t),
        cuda_check(s, cuda_launch_nonfinite(s->compute, x, t, n, s->flag_dev), "nonfinite"));
    unsigned long long flag = 0;
    if (rc == ZERO_OK)
        rc = cuda_read_flag(s, "nonfinite", &flag);
    if (rc == ZERO_OK)
        *host_flag = flag != 0;
    return rc;
}

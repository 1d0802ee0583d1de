/* See optim_consts.h. */
#include <stdio.h>

#include "exact_math.h"
#include "optim_consts.h"

int zero_adam_prepare(const struct zero_adam_args *a, struct zero_adam_consts *k, char *why,
                      size_t why_len)
{
    if (a->step < 1) {
        snprintf(why, why_len, "step is %lld; steps count from 1", (long long)a->step);
        return -1;
    }
    if (a->grad_div == 0.0f) {
        snprintf(why, why_len, "grad_div is 0");
        return -1;
    }
    *k = (struct zero_adam_consts){
        .lr = a->lr,
        .beta1 = a->beta1,
        .beta2 = a->beta2,
        .eps = a->eps,
        .one_minus_beta1 = 1.0f - a->beta1,
        .one_minus_beta2 = 1.0f - a->beta2,
        .bias_correction1 = 1.0f,
        .bias_correction2 = 1.0f,
        .l2 = a->adamw ? 0.0f : a->weight_decay,
        .decay = a->adamw ? a->lr * a->weight_decay : 0.0f,
        .grad_div = a->grad_div,
    };
    if (a->bias_correction) {
        /* beta^step by squaring in double-double: correctly rounded, on every machine */
        k->bias_correction1 = (float)(1.0 - exact_powi(a->beta1, (uint64_t)a->step));
        k->bias_correction2 = (float)(1.0 - exact_powi(a->beta2, (uint64_t)a->step));
    }
    return 0;
}

int zero_sgd_check(const struct zero_sgd_args *a, int has_buffer, char *why, size_t why_len)
{
    if (a->step < 1)
        snprintf(why, why_len, "step is %lld; steps count from 1", (long long)a->step);
    else if (a->grad_div == 0.0f)
        snprintf(why, why_len, "grad_div is 0");
    else if (a->nesterov && (a->momentum <= 0.0f || a->dampening != 0.0f))
        snprintf(why, why_len, "nesterov needs momentum > 0 and dampening 0 (got %g, %g)",
                 (double)a->momentum, (double)a->dampening);
    else if (a->momentum != 0.0f && !has_buffer)
        snprintf(why, why_len, "momentum %g needs a momentum buffer", (double)a->momentum);
    else
        return 0;
    return -1;
}

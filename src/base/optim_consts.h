/* The per-call constants and argument checks of the fused optimizer updates,
 * derived once from zero_adam_args / zero_sgd_args so that every backend's
 * kernel starts from the same fp32 numbers and refuses the same arguments
 * with the same words (the cpu and cuda backends agree to the bit only if
 * they do).
 * Pure arithmetic; included by the backends (and CUDA C++), not installed. */
#ifndef ZERO_OPTIM_CONSTS_H
#define ZERO_OPTIM_CONSTS_H

#include <stddef.h>

#include "zero/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

struct zero_adam_consts {
    float lr, beta1, beta2, eps;
    float one_minus_beta1, one_minus_beta2;
    float bias_correction1, bias_correction2; /* 1 - beta^t in double, then fp32; 1 if off */
    float l2;                                 /* Adam: g += l2 * p */
    float decay;                              /* AdamW: p -= decay * p, decay = lr * weight_decay */
    float grad_div;
};

/* Fills k from a. Returns 0, or -1 with why naming the bad argument ("step is
 * 0; steps count from 1", "grad_div is 0"). */
int zero_adam_prepare(const struct zero_adam_args *a, struct zero_adam_consts *k, char *why,
                      size_t why_len);

/* Checks a: returns 0, or -1 with why ("step is 0; steps count from 1",
 * "nesterov needs momentum > 0 and dampening 0 (got ...)", "momentum 0.9 needs
 * a momentum buffer" when has_buffer is 0). */
int zero_sgd_check(const struct zero_sgd_args *a, int has_buffer, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif

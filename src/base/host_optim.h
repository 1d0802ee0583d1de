/* The fused optimizers on host memory, compiled for several x86 instruction
 * sets and dispatched at run time. The cpu backend's adam/sgd entries and the
 * engine's offloaded optimizer (ZeRO-Offload: master and optimizer state in host
 * memory) both run these loops, so an offloaded step gives the bits a cpu-backend
 * step gives. The variants (host_isa.h) agree to the bit. Not installed. */
#ifndef ZERO_HOST_OPTIM_H
#define ZERO_HOST_OPTIM_H

#include <stddef.h>

#include "host_isa.h"
#include "optim_consts.h"
#include "zero/backend.h"

/* One Adam/AdamW update of n elements with the formula of optim_consts.h:
 * param (n) fp32 master, grad (n) in grad_type (fp32/fp16/bf16), exp_avg and
 * exp_avg_sq (n) fp32; the new value is also written to param_copy (n) in
 * copy_type when param_copy != NULL. param_copy may be grad itself (the same
 * address; the offload path narrows into the buffer the gradient came in):
 * each chunk of the gradient is read whole before the chunk's copy is written,
 * and a copy element is never wider than a gradient element. Types are the
 * caller's to check. */
void zero_host_adam(enum zero_host_isa isa, const struct zero_adam_consts *k, float *param,
                    const void *grad, enum zero_dtype grad_type, float *exp_avg, float *exp_avg_sq,
                    size_t n, void *param_copy, enum zero_dtype copy_type);

/* One SGD update (torch.optim.SGD's formula, written out in host_optim.c); momentum may be
 * NULL when args->momentum == 0; param_copy may be grad, as for Adam.
 * Arguments are the caller's to check. */
void zero_host_sgd(enum zero_host_isa isa, const struct zero_sgd_args *args, float *param,
                   const void *grad, enum zero_dtype grad_type, float *momentum, size_t n,
                   void *param_copy, enum zero_dtype copy_type);

#endif

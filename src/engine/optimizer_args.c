/* The update's arguments of this step, from the optimizer config: the same on
 * the device (optimizer.c) and on the host (offload.c). */
#include "optimizer_args.h"

#include "engine_internal.h"

struct zero_sgd_args optimizer_sgd_args(const struct zero_engine *e, float lr, float grad_div)
{
    const struct zero_optimizer_config *o = &e->cfg.optimizer;
    return (struct zero_sgd_args){
        .lr = lr,
        .momentum = (float)o->momentum,
        .dampening = (float)o->dampening,
        .weight_decay = (float)o->weight_decay,
        .nesterov = o->nesterov,
        .step = e->applied_steps + 1,
        .grad_div = grad_div,
    };
}

struct zero_adam_args optimizer_adam_args(const struct zero_engine *e, float lr, float grad_div)
{
    const struct zero_optimizer_config *o = &e->cfg.optimizer;
    return (struct zero_adam_args){
        .lr = lr,
        .beta1 = (float)o->betas[0],
        .beta2 = (float)o->betas[1],
        .eps = (float)o->eps,
        .weight_decay = (float)o->weight_decay,
        .step = e->applied_steps + 1,
        .adamw = o->type == ZERO_OPTIM_ADAMW || o->adam_w_mode,
        .bias_correction = o->bias_correction,
        .grad_div = grad_div,
    };
}

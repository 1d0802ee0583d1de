/* Learning-rate schedules: DeepSpeed's WarmupLR, WarmupDecayLR and
 * WarmupCosineLR (deepspeed/runtime/lr_schedules.py), with the floating-point
 * operations in DeepSpeed's order so that the doubles come out the same.
 *
 * Which lr does which update use?  DeepSpeed's scheduler constructor sets the
 * optimizer's lr from get_lr() at last_batch_iteration = -1, the "not started"
 * value (warmup_min_lr for WarmupLR and WarmupDecayLR, 0 for WarmupCosineLR).
 * The engine then calls scheduler.step() after every applied optimizer step
 * (not after overflow-skipped ones), and each call increments
 * last_batch_iteration and sets the lr for the next update. So the k-th update
 * (1-based) runs with get_lr(k - 2), and after `step` applied updates the next
 * one uses get_lr(step - 1):
 *   step 0, the first update:  the not-started value;
 *   step 1, the second update: get_lr(0), which is warmup_min_lr again
 *                              (log(0 + 1) = 0 and 0 / warmup_num_steps = 0);
 *   step warmup_num_steps + 1 is the first update past the warmup (gamma exactly 1).
 * The engine passes the count of applied updates, so skipped steps do not
 * advance the schedule, as in DeepSpeed. log and cos are src/base/exact_math.h's (within
 * an ulp of Python's, and the same bits on every machine). */
#include "zero/config.h"

#include <stdint.h>

#include "base/exact_math.h"

/* Python's math.pi (M_PI is not part of C11). */
static const double pi = 3.14159265358979323846;

/* DeepSpeed raises warmup_num_steps to at least 2: log(1) would divide by 0. */
static int64_t warmup_steps(const struct zero_scheduler_config *s)
{
    return s->warmup_num_steps < 2 ? 2 : s->warmup_num_steps;
}

/* The warmup's progress in [0, 1) at iteration `it` < warmup_steps. */
static double warmup_gamma(const struct zero_scheduler_config *s, int64_t it)
{
    int64_t w = warmup_steps(s);
    if (s->warmup_type == ZERO_WARMUP_LINEAR)
        return (double)it / (double)w;
    double inverse_log_warm_up = 1.0 / exact_log((double)w);
    return inverse_log_warm_up * exact_log((double)(it + 1));
}

/* Python's max(0.0, x): 0 unless x is greater (NaN gives 0 too). */
static double at_least_zero(double x)
{
    return x > 0.0 ? x : 0.0;
}

/* WarmupLR and WarmupDecayLR: min + (max - min) * gamma. */
static double warmup_lr(const struct zero_scheduler_config *s, int64_t it, int decay)
{
    if (it < 0)
        return s->warmup_min_lr;
    int64_t w = warmup_steps(s);
    double gamma;
    if (it < w) {
        gamma = warmup_gamma(s, it);
    } else if (decay) {
        /* linear from 1 at it = w to 0 at it = total (so the lr ends at warmup_min_lr) */
        double span = (double)(s->total_num_steps - w);
        gamma = at_least_zero((double)(s->total_num_steps - it) / (span > 1.0 ? span : 1.0));
    } else {
        gamma = 1.0;
    }
    double delta = s->warmup_max_lr - s->warmup_min_lr;
    return s->warmup_min_lr + delta * gamma;
}

/* WarmupCosineLR: the optimizer's lr times a ratio. */
static double warmup_cosine_lr(const struct zero_scheduler_config *s, double lr, int64_t it)
{
    if (it < 0)
        return 0.0;
    int64_t w = warmup_steps(s);
    double ratio;
    if (it < w) {
        ratio = s->warmup_min_ratio + warmup_gamma(s, it) * (1.0 - s->warmup_min_ratio);
        return lr * ratio;
    }
    int64_t real_last_step = it - w + 1;
    int64_t real_total_steps = s->total_num_steps - w > 1 ? s->total_num_steps - w : 1;
    /* DeepSpeed 0.19 clamps the progress at 1 (lr_schedules.py, WarmupCosineLR
     * get_lr_ratio): past total_num_steps the lr stays at cos_min_ratio instead of
     * rising again as it did before, and a decay of no length is over at once. */
    double progress = (double)real_last_step / (double)real_total_steps;
    progress = progress < 1.0 ? progress : 1.0;
    ratio = (1.0 + exact_cos(pi * progress)) / 2.0;
    ratio = at_least_zero(s->cos_min_ratio + (1.0 - s->cos_min_ratio) * ratio);
    return lr * ratio;
}

double zero_lr_at(const struct zero_config *c, int64_t step)
{
    const struct zero_scheduler_config *s = &c->scheduler;
    /* DeepSpeed's last_batch_iteration when the update after `step` updates runs */
    int64_t it = step < 1 ? -1 : step - 1;
    switch (s->type) {
    case ZERO_SCHED_WARMUP_LR:
        return warmup_lr(s, it, 0);
    case ZERO_SCHED_WARMUP_DECAY_LR:
        return warmup_lr(s, it, 1);
    case ZERO_SCHED_WARMUP_COSINE_LR:
        return warmup_cosine_lr(s, c->optimizer.lr, it);
    case ZERO_SCHED_NONE:
    default:
        return c->optimizer.lr;
    }
}

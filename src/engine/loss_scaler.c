/* DeepSpeed's dynamic loss scaler; see include/zero/loss_scaler.h. */
#include <math.h>

#include "zero/loss_scaler.h"

void zero_loss_scaler_init(struct zero_loss_scaler *s, const struct zero_fp16_config *c)
{
    s->dynamic = c->loss_scale <= 0.0;
    s->scale = s->dynamic ? ldexp(1.0, c->initial_scale_power) : c->loss_scale;
    s->factor = 2.0;
    s->window = c->loss_scale_window > 0 ? c->loss_scale_window : 1;
    s->min_scale = c->min_loss_scale;
    s->delayed_shift = c->hysteresis > 0 ? c->hysteresis : 1;
    s->cur_hysteresis = s->delayed_shift;
    s->consecutive_hysteresis = c->consecutive_hysteresis;
    s->cur_iter = 0;
    s->last_overflow_iter = -1;
}

void zero_loss_scaler_resume(struct zero_loss_scaler *s, const struct zero_loss_scaler *saved)
{
    if (!s->dynamic || !saved->dynamic)
        return;
    s->scale = saved->scale;
    s->cur_hysteresis = saved->cur_hysteresis;
    s->cur_iter = saved->cur_iter;
    s->last_overflow_iter = saved->last_overflow_iter;
}

int zero_loss_scaler_update(struct zero_loss_scaler *s, int overflow, struct zero_error *err)
{
    if (!s->dynamic)
        return ZERO_OK;
    if (overflow) {
        if (s->delayed_shift == 1 || s->cur_hysteresis == 1) {
            if (s->scale == s->min_scale)
                return zero_fail(err, ZERO_EINVAL,
                                 "fp16: gradients overflow at the minimum loss scale %g "
                                 "(fp16.min_loss_scale): cannot decrease the scale any further",
                                 s->min_scale);
            double next = s->scale / s->factor;
            s->scale = next > s->min_scale ? next : s->min_scale;
        } else {
            s->cur_hysteresis--;
        }
        s->last_overflow_iter = s->cur_iter;
    } else {
        if (s->consecutive_hysteresis)
            s->cur_hysteresis = s->delayed_shift;
        if ((s->cur_iter - s->last_overflow_iter) % s->window == 0) {
            if (!s->consecutive_hysteresis)
                s->cur_hysteresis = s->delayed_shift;
            s->scale *= s->factor;
        }
    }
    s->cur_iter++;
    return ZERO_OK;
}

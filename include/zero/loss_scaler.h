/* fp16 loss scaling with DeepSpeed's rules (runtime/fp16/loss_scaler.py).
 *
 * The loss is multiplied by `scale` before backward so small fp16 gradients
 * do not flush to zero. A step whose gradients overflow (inf or NaN on any
 * rank) is skipped on every rank. Dynamic scaling then halves the scale once
 * `hysteresis` overflows have been absorbed, and doubles it after
 * `loss_scale_window` iterations without one. A static scale (loss_scale > 0)
 * never changes; overflowing steps are still skipped, as DeepSpeed's ZeRO
 * optimizers do. */
#ifndef ZERO_LOSS_SCALER_H
#define ZERO_LOSS_SCALER_H

#include <stdint.h>

#include "zero/config.h"
#include "zero/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct zero_loss_scaler {
    int dynamic;
    double scale;
    double factor;     /* 2 */
    int64_t window;    /* loss_scale_window */
    double min_scale;  /* min_loss_scale */
    int delayed_shift; /* hysteresis */
    int cur_hysteresis;
    int consecutive_hysteresis;
    int64_t cur_iter, last_overflow_iter;
};

/* From the fp16 section (static when loss_scale > 0). */
void zero_loss_scaler_init(struct zero_loss_scaler *s, const struct zero_fp16_config *c);

/* A resumed run's running state (scale, hysteresis, iterations) from a saved scaler;
 * the settings (window, factor, minimum) stay s's own config. Nothing when either is
 * static. */
void zero_loss_scaler_resume(struct zero_loss_scaler *s, const struct zero_loss_scaler *saved);

/* Records one step's verdict. Fails (EINVAL, message says so) on an overflow
 * at the minimum scale, as DeepSpeed raises then. */
int zero_loss_scaler_update(struct zero_loss_scaler *s, int overflow, struct zero_error *err);

#ifdef __cplusplus
}
#endif

#endif

/* DeepSpeed's learning-rate schedules (deepspeed/runtime/lr_schedules.py).
 *
 * `step` counts the optimizer updates applied so far; zero_lr_at(c, step) is
 * the lr of the next update. DeepSpeed sets the first update's lr in the
 * scheduler's constructor (last_batch_iteration = -1) and calls
 * scheduler.step() after each update, so update step + 1 runs at DeepSpeed's
 * last_batch_iteration i = step - 1. With W = max(2, warmup_num_steps):
 *   warmup fraction f(i) = log(i + 1) / log(W)   (log)   or   i / W   (linear), for i < W
 *   WarmupLR:       step 0: min;  else min + (max - min) * (i < W ? f(i) : 1)
 *   WarmupDecayLR:  as WarmupLR during warmup, then
 *                   min + (max - min) * max(0, (T - i) / max(1, T - W))
 *   WarmupCosineLR: step 0: 0;  else lr * (i < W ? wmin + (1 - wmin) * f(i)
 *                   : max(0, cmin + (1 - cmin) * (1 + cos(pi * min(1, (i - W + 1) / max(1, T -
 * W)))) / 2))
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "zero/config.h"

static const double pi = 3.14159265358979323846;

static struct zero_config warmup(enum zero_sched_type type, enum zero_warmup_type wtype,
                                 double min_lr, double max_lr, int64_t w, int64_t total)
{
    struct zero_config c;
    zero_config_defaults(&c);
    c.scheduler.type = type;
    c.scheduler.warmup_type = wtype;
    c.scheduler.warmup_min_lr = min_lr;
    c.scheduler.warmup_max_lr = max_lr;
    c.scheduler.warmup_num_steps = w;
    c.scheduler.total_num_steps = total;
    return c;
}

static struct zero_config cosine(enum zero_warmup_type wtype, double lr, double wmin, double cmin,
                                 int64_t w, int64_t total)
{
    struct zero_config c;
    zero_config_defaults(&c);
    c.optimizer.lr = lr;
    c.scheduler.type = ZERO_SCHED_WARMUP_COSINE_LR;
    c.scheduler.warmup_type = wtype;
    c.scheduler.warmup_min_ratio = wmin;
    c.scheduler.cos_min_ratio = cmin;
    c.scheduler.warmup_num_steps = w;
    c.scheduler.total_num_steps = total;
    return c;
}

/* The formulas of the header comment, written out again. */
static double expected_lr(const struct zero_config *c, int64_t step)
{
    const struct zero_scheduler_config *s = &c->scheduler;
    if (s->type == ZERO_SCHED_NONE)
        return c->optimizer.lr;
    int64_t i = step - 1;
    double w = s->warmup_num_steps < 2 ? 2.0 : (double)s->warmup_num_steps;
    double t = (double)s->total_num_steps;
    if (s->type == ZERO_SCHED_WARMUP_COSINE_LR) {
        if (step == 0)
            return 0.0;
        if (i < w) {
            double f = s->warmup_type == ZERO_WARMUP_LOG ? log(i + 1.0) / log(w) : i / w;
            return c->optimizer.lr * (s->warmup_min_ratio + (1 - s->warmup_min_ratio) * f);
        }
        double half = (1 + cos(pi * fmin(1.0, (i - w + 1) / fmax(1.0, t - w)))) / 2;
        return c->optimizer.lr * fmax(0.0, s->cos_min_ratio + (1 - s->cos_min_ratio) * half);
    }
    double gamma;
    if (step == 0)
        gamma = 0;
    else if (i < w)
        gamma = s->warmup_type == ZERO_WARMUP_LOG ? log(i + 1.0) / log(w) : i / w;
    else if (s->type == ZERO_SCHED_WARMUP_DECAY_LR)
        gamma = fmax(0.0, (t - i) / fmax(1.0, t - w));
    else
        gamma = 1;
    return s->warmup_min_lr + (s->warmup_max_lr - s->warmup_min_lr) * gamma;
}

static void assert_lr_near(double got, double want, double rel, const char *what, int64_t step)
{
    double tol = rel * fmax(fabs(want), 1e-300);
    ck_assert_msg(fabs(got - want) <= tol, "%s step %lld: lr %.17g, expected %.17g", what,
                  (long long)step, got, want);
}

/* Every schedule kind at the boundaries: 0, 1, W-1, W, W+1, W+2, T-1, T, T+1, beyond. */
START_TEST(test_schedules_follow_the_formulas_at_the_boundaries)
{
    struct {
        const char *name;
        struct zero_config c;
    } cases[] = {
        {"WarmupLR log", warmup(ZERO_SCHED_WARMUP_LR, ZERO_WARMUP_LOG, 0.01, 0.05, 10, 0)},
        {"WarmupLR linear", warmup(ZERO_SCHED_WARMUP_LR, ZERO_WARMUP_LINEAR, 0.0, 3e-4, 7, 0)},
        {"WarmupDecayLR log", warmup(ZERO_SCHED_WARMUP_DECAY_LR, ZERO_WARMUP_LOG, 0, 1e-3, 10, 30)},
        {"WarmupDecayLR linear",
         warmup(ZERO_SCHED_WARMUP_DECAY_LR, ZERO_WARMUP_LINEAR, 1e-4, 1e-3, 8, 50)},
        {"WarmupCosineLR log", cosine(ZERO_WARMUP_LOG, 0.1, 0.1, 0.01, 10, 30)},
        {"WarmupCosineLR linear", cosine(ZERO_WARMUP_LINEAR, 2e-3, 0.0, 1e-4, 5, 40)},
        {"none", warmup(ZERO_SCHED_NONE, ZERO_WARMUP_LOG, 0.01, 0.05, 10, 30)},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const struct zero_config *c = &cases[k].c;
        int64_t w = c->scheduler.warmup_num_steps;
        int64_t t = c->scheduler.total_num_steps > 0 ? c->scheduler.total_num_steps : 3 * w;
        /* the total only matters once the warmup is over: do not go past 2T - W */
        int64_t steps[] = {0,           1,     2, w - 1, w,     w + 1,    w + 2,
                           (w + t) / 2, t - 1, t, t + 1, t + 2, 2 * t - w};
        for (size_t j = 0; j < sizeof(steps) / sizeof(steps[0]); j++)
            assert_lr_near(zero_lr_at(c, steps[j]), expected_lr(c, steps[j]), 1e-12, cases[k].name,
                           steps[j]);
    }
}
END_TEST

/* Values printed by DeepSpeed's own lr_schedules.py (commit 38327e07, Feb 2025;
 * WarmupCosineLR past total_num_steps by 0.19.6, commit edaa72212, which clamps the
 * cosine there), driven as its engine drives it: construct the scheduler, then for each
 * update read param_groups[0]['lr'] and call scheduler.step(). The optimizer
 * lr is 0.1 (it matters only to WarmupCosineLR). */
enum ds_case { WLR_LOG, WLR_LIN, WLR_W1, WDL_LOG, WDL_LIN, WCL_LOG, WCL_LIN };

static struct zero_config ds_config(enum ds_case k)
{
    switch (k) {
    case WLR_LOG:
        return warmup(ZERO_SCHED_WARMUP_LR, ZERO_WARMUP_LOG, 0.01, 0.05, 10, 0);
    case WLR_LIN:
        return warmup(ZERO_SCHED_WARMUP_LR, ZERO_WARMUP_LINEAR, 0.01, 0.05, 10, 0);
    case WLR_W1:
        return warmup(ZERO_SCHED_WARMUP_LR, ZERO_WARMUP_LINEAR, 0.0, 0.002, 1, 0);
    case WDL_LOG:
        return warmup(ZERO_SCHED_WARMUP_DECAY_LR, ZERO_WARMUP_LOG, 0.0, 0.001, 10, 30);
    case WDL_LIN:
        return warmup(ZERO_SCHED_WARMUP_DECAY_LR, ZERO_WARMUP_LINEAR, 0.0001, 0.001, 10, 30);
    case WCL_LOG:
        return cosine(ZERO_WARMUP_LOG, 0.1, 0.1, 0.01, 10, 30);
    case WCL_LIN:
    default:
        return cosine(ZERO_WARMUP_LINEAR, 0.1, 0.0, 0.0001, 10, 30);
    }
}

static const struct {
    enum ds_case k;
    int64_t step;
    double lr;
} deepspeed_table[] = {
    {WLR_LOG, 0, 0.01},
    {WLR_LOG, 1, 0.01},
    {WLR_LOG, 2, 0.022041199826559246},
    {WLR_LOG, 9, 0.048169700377572996},
    {WLR_LOG, 10, 0.049999999999999996},
    {WLR_LOG, 11, 0.05},
    {WLR_LOG, 12, 0.05},
    {WLR_LOG, 50, 0.05},
    {WLR_LIN, 0, 0.01},
    {WLR_LIN, 1, 0.01},
    {WLR_LIN, 2, 0.014},
    {WLR_LIN, 9, 0.042},
    {WLR_LIN, 10, 0.046000000000000006},
    {WLR_LIN, 11, 0.05},
    {WLR_LIN, 12, 0.05},
    {WLR_LIN, 50, 0.05},
    {WLR_W1, 0, 0.0},
    {WLR_W1, 1, 0.0},
    {WLR_W1, 2, 0.001},
    {WLR_W1, 3, 0.002},
    {WLR_W1, 4, 0.002},
    {WDL_LOG, 0, 0.0},
    {WDL_LOG, 1, 0.0},
    {WDL_LOG, 2, 0.00030102999566398113},
    {WDL_LOG, 9, 0.0009542425094393248},
    {WDL_LOG, 10, 0.0009999999999999998},
    {WDL_LOG, 11, 0.001},
    {WDL_LOG, 12, 0.00095},
    {WDL_LOG, 20, 0.00055},
    {WDL_LOG, 29, 0.0001},
    {WDL_LOG, 30, 5e-05},
    {WDL_LOG, 31, 0.0},
    {WDL_LOG, 32, 0.0},
    {WDL_LOG, 100, 0.0},
    {WDL_LIN, 0, 0.0001},
    {WDL_LIN, 1, 0.0001},
    {WDL_LIN, 10, 0.00091},
    {WDL_LIN, 11, 0.001},
    {WDL_LIN, 30, 0.000145},
    {WDL_LIN, 31, 0.0001},
    {WDL_LIN, 32, 0.0001},
    {WCL_LOG, 0, 0.0},
    {WCL_LOG, 1, 0.010000000000000002},
    {WCL_LOG, 2, 0.037092699609758306},
    {WCL_LOG, 9, 0.09588182584953923},
    {WCL_LOG, 10, 0.09999999999999999},
    {WCL_LOG, 11, 0.09939057285945933},
    {WCL_LOG, 12, 0.09757729755661011},
    {WCL_LOG, 20, 0.0505},
    {WCL_LOG, 29, 0.001609427140540686},
    {WCL_LOG, 30, 0.001},
    {WCL_LOG, 31, 0.001},
    {WCL_LOG, 32, 0.001},
    {WCL_LOG, 50, 0.001},
    {WCL_LIN, 0, 0.0},
    {WCL_LIN, 1, 0.0},
    {WCL_LIN, 2, 0.010000000000000002},
    {WCL_LIN, 10, 0.09000000000000001},
    {WCL_LIN, 11, 0.09938447858805392},
    {WCL_LIN, 30, 1e-05},
    {WCL_LIN, 31, 1e-05},
};

START_TEST(test_schedules_match_values_printed_by_deepspeed)
{
    for (size_t j = 0; j < sizeof(deepspeed_table) / sizeof(deepspeed_table[0]); j++) {
        struct zero_config c = ds_config(deepspeed_table[j].k);
        char what[32];
        snprintf(what, sizeof(what), "DeepSpeed case %d", (int)deepspeed_table[j].k);
        /* same operations in the same order: equal up to libm's last bit */
        assert_lr_near(zero_lr_at(&c, deepspeed_table[j].step), deepspeed_table[j].lr, 4e-16, what,
                       deepspeed_table[j].step);
    }
}
END_TEST

START_TEST(test_first_two_updates_use_warmup_min_lr)
{
    struct zero_config c = warmup(ZERO_SCHED_WARMUP_LR, ZERO_WARMUP_LINEAR, 0.25, 1.0, 4, 0);
    ck_assert(zero_lr_at(&c, 0) == 0.25);   /* set by the constructor */
    ck_assert(zero_lr_at(&c, 1) == 0.25);   /* last_batch_iteration 0: 0 / 4 */
    ck_assert(zero_lr_at(&c, 2) == 0.4375); /* 0.25 + 0.75 * 1/4 */
    ck_assert(zero_lr_at(&c, 4) == 0.8125); /* 0.25 + 0.75 * 3/4 */
    ck_assert(zero_lr_at(&c, 5) == 1.0);    /* warmup over */
}
END_TEST

START_TEST(test_cosine_first_update_uses_zero_lr)
{
    struct zero_config c = cosine(ZERO_WARMUP_LINEAR, 0.5, 0.5, 0.0, 4, 8);
    ck_assert(zero_lr_at(&c, 0) == 0.0);   /* not warmup_min_ratio * lr */
    ck_assert(zero_lr_at(&c, 1) == 0.25);  /* 0.5 * (0.5 + 0.5 * 0/4) */
    ck_assert(zero_lr_at(&c, 3) == 0.375); /* 0.5 * (0.5 + 0.5 * 2/4) */
}
END_TEST

START_TEST(test_log_warmup_reaches_max_a_step_before_linear)
{
    struct zero_config log_c = warmup(ZERO_SCHED_WARMUP_LR, ZERO_WARMUP_LOG, 0.0, 1.0, 8, 0);
    struct zero_config lin_c = warmup(ZERO_SCHED_WARMUP_LR, ZERO_WARMUP_LINEAR, 0.0, 1.0, 8, 0);
    /* step 8: last_batch_iteration 7, log(8) / log(8) = 1 but 7 / 8 */
    assert_lr_near(zero_lr_at(&log_c, 8), 1.0, 1e-15, "log", 8);
    ck_assert(zero_lr_at(&lin_c, 8) == 0.875);
    ck_assert(zero_lr_at(&lin_c, 9) == 1.0);
}
END_TEST

START_TEST(test_warmup_num_steps_below_two_count_as_two)
{
    for (int64_t w = -3; w <= 2; w++) {
        struct zero_config c = warmup(ZERO_SCHED_WARMUP_LR, ZERO_WARMUP_LINEAR, 0.0, 1.0, w, 0);
        ck_assert(zero_lr_at(&c, 1) == 0.0);
        ck_assert(zero_lr_at(&c, 2) == 0.5);
        ck_assert(zero_lr_at(&c, 3) == 1.0);
        /* log warmup over 1 step would divide by log(1) = 0 */
        c.scheduler.warmup_type = ZERO_WARMUP_LOG;
        assert_lr_near(zero_lr_at(&c, 2), 1.0, 1e-15, "log over W = 2", 2);
        ck_assert(isfinite(zero_lr_at(&c, 1)) && zero_lr_at(&c, 1) == 0.0);
    }
}
END_TEST

START_TEST(test_warmup_decay_ends_at_warmup_min_lr_not_zero)
{
    struct zero_config c = warmup(ZERO_SCHED_WARMUP_DECAY_LR, ZERO_WARMUP_LINEAR, 0.5, 1.5, 2, 6);
    ck_assert(zero_lr_at(&c, 3) == 1.5);  /* i = 2 = W: (6 - 2) / 4 */
    ck_assert(zero_lr_at(&c, 4) == 1.25); /* i = 3: 0.5 + 1.0 * 3/4 */
    ck_assert(zero_lr_at(&c, 7) == 0.5);  /* i = 6 = T */
    ck_assert(zero_lr_at(&c, 1000) == 0.5);
}
END_TEST

START_TEST(test_warmup_decay_total_below_warmup_drops_to_min)
{
    /* DeepSpeed only warns; max(1, T - W) keeps the division finite */
    struct zero_config c = warmup(ZERO_SCHED_WARMUP_DECAY_LR, ZERO_WARMUP_LINEAR, 0.1, 1.0, 10, 4);
    assert_lr_near(zero_lr_at(&c, 10), 0.1 + 0.9 * 0.9, 1e-15, "warmup", 10);
    ck_assert(zero_lr_at(&c, 11) == 0.1);
}
END_TEST

START_TEST(test_cosine_bottoms_out_at_total_and_stays_there)
{
    /* W = 4, T = 8: i = 7 gives cos(pi) = -1; DeepSpeed 0.19 clamps the progress at 1, so
     * i = 11 stays at the bottom (before it, cos(2 pi) = 1 restarted the full lr) */
    struct zero_config c = cosine(ZERO_WARMUP_LINEAR, 1.0, 0.0, 0.1, 4, 8);
    assert_lr_near(zero_lr_at(&c, 8), 0.1, 1e-15, "bottom", 8);
    ck_assert(zero_lr_at(&c, 9) == zero_lr_at(&c, 8));
    assert_lr_near(zero_lr_at(&c, 6), 0.1 + 0.9 * 0.5, 1e-15, "middle", 6); /* cos(pi/2) */
    ck_assert(zero_lr_at(&c, 12) == zero_lr_at(&c, 8));
}
END_TEST

START_TEST(test_cosine_total_equal_to_warmup_stays_finite)
{
    /* DeepSpeed raises ZeroDivisionError here; we hold the final ratio */
    struct zero_config c = cosine(ZERO_WARMUP_LINEAR, 2.0, 0.0, 0.25, 5, 5);
    ck_assert(zero_lr_at(&c, 6) == 0.5);
    ck_assert(zero_lr_at(&c, 60) == 0.5);
}
END_TEST

START_TEST(test_no_schedule_is_the_optimizer_lr)
{
    struct zero_config c;
    zero_config_defaults(&c);
    c.optimizer.lr = 3e-4;
    ck_assert(zero_lr_at(&c, 0) == 3e-4);
    ck_assert(zero_lr_at(&c, 12345) == 3e-4);
}
END_TEST

static Suite *lr_schedule_suite(void)
{
    Suite *s = suite_create("lr_schedule");
    TCase *tc = tcase_create("schedules");
    tcase_add_test(tc, test_schedules_follow_the_formulas_at_the_boundaries);
    tcase_add_test(tc, test_schedules_match_values_printed_by_deepspeed);
    tcase_add_test(tc, test_first_two_updates_use_warmup_min_lr);
    tcase_add_test(tc, test_cosine_first_update_uses_zero_lr);
    tcase_add_test(tc, test_log_warmup_reaches_max_a_step_before_linear);
    tcase_add_test(tc, test_warmup_num_steps_below_two_count_as_two);
    tcase_add_test(tc, test_warmup_decay_ends_at_warmup_min_lr_not_zero);
    tcase_add_test(tc, test_warmup_decay_total_below_warmup_drops_to_min);
    tcase_add_test(tc, test_cosine_bottoms_out_at_total_and_stays_there);
    tcase_add_test(tc, test_cosine_total_equal_to_warmup_stays_finite);
    tcase_add_test(tc, test_no_schedule_is_the_optimizer_lr);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(lr_schedule_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* The loss scaler against tables worked out by hand from DeepSpeed's rules
 * (runtime/fp16/loss_scaler.py: hysteresis, window, consecutive_hysteresis,
 * the minimum). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "zero/loss_scaler.h"

static struct zero_fp16_config fp16(int power, int window, int hysteresis, int consecutive)
{
    struct zero_fp16_config c = {.enabled = 1,
                                 .loss_scale = 0.0,
                                 .initial_scale_power = power,
                                 .loss_scale_window = window,
                                 .hysteresis = hysteresis,
                                 .consecutive_hysteresis = consecutive,
                                 .min_loss_scale = 1.0};
    return c;
}

/* Runs the overflow pattern; scale_used[i] is the scale step i ran with. */
static void run(struct zero_loss_scaler *s, const int *overflow, int n, double *scale_used)
{
    struct zero_error err = {0};
    for (int i = 0; i < n; i++) {
        scale_used[i] = s->scale;
        ck_assert_int_eq(zero_loss_scaler_update(s, overflow[i], &err), ZERO_OK);
    }
}

static const int pattern[9] = {0, 1, 1, 0, 0, 0, 1, 0, 1};

START_TEST(test_hysteresis_two_window_three)
{
    /* iter 1 spends the hysteresis, iter 2 halves; three clean iterations after
     * the last overflow double and refill; iter 6 spends it, iter 8 halves */
    struct zero_fp16_config c = fp16(4, 3, 2, 0);
    struct zero_loss_scaler s;
    zero_loss_scaler_init(&s, &c);
    double used[9], expect[9] = {16, 16, 16, 8, 8, 8, 16, 16, 16};
    run(&s, pattern, 9, used);
    for (int i = 0; i < 9; i++)
        ck_assert_msg(used[i] == expect[i], "step %d: scale %g, expected %g", i, used[i],
                      expect[i]);
    ck_assert(s.scale == 8.0);
}
END_TEST

START_TEST(test_consecutive_hysteresis_refills_on_every_clean_step)
{
    /* same pattern: iter 7 is clean and refills, so iter 8's overflow only spends it */
    struct zero_fp16_config c = fp16(4, 3, 2, 1);
    struct zero_loss_scaler s;
    zero_loss_scaler_init(&s, &c);
    double used[9], expect[9] = {16, 16, 16, 8, 8, 8, 16, 16, 16};
    run(&s, pattern, 9, used);
    for (int i = 0; i < 9; i++)
        ck_assert(used[i] == expect[i]);
    ck_assert(s.scale == 16.0);
    ck_assert_int_eq(s.cur_hysteresis, 1);
}
END_TEST

START_TEST(test_window_doubles_after_clean_iterations_from_the_start)
{
    /* no overflow: (iter - (-1)) % 2 == 0 at iters 1, 3, 5 */
    struct zero_fp16_config c = fp16(1, 2, 1, 0);
    struct zero_loss_scaler s;
    zero_loss_scaler_init(&s, &c);
    int clean[6] = {0};
    double used[6], expect[6] = {2, 2, 4, 4, 8, 8};
    run(&s, clean, 6, used);
    for (int i = 0; i < 6; i++)
        ck_assert(used[i] == expect[i]);
}
END_TEST

START_TEST(test_overflow_at_the_minimum_is_an_error_that_says_so)
{
    struct zero_fp16_config c = fp16(1, 1000, 1, 0);
    struct zero_loss_scaler s;
    zero_loss_scaler_init(&s, &c);
    struct zero_error err = {0};
    ck_assert_int_eq(zero_loss_scaler_update(&s, 1, &err), ZERO_OK);
    ck_assert(s.scale == 1.0);
    ck_assert_int_eq(zero_loss_scaler_update(&s, 1, &err), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "minimum loss scale"));
}
END_TEST

START_TEST(test_scale_never_goes_below_the_minimum)
{
    struct zero_fp16_config c = fp16(3, 1000, 1, 0);
    c.min_loss_scale = 3.0;
    struct zero_loss_scaler s;
    zero_loss_scaler_init(&s, &c);
    struct zero_error err = {0};
    ck_assert_int_eq(zero_loss_scaler_update(&s, 1, &err), ZERO_OK); /* 8 -> 4 */
    ck_assert_int_eq(zero_loss_scaler_update(&s, 1, &err), ZERO_OK); /* 4 -> max(2, 3) */
    ck_assert(s.scale == 3.0);
}
END_TEST

START_TEST(test_static_scale_never_changes)
{
    struct zero_fp16_config c = fp16(16, 1000, 2, 0);
    c.loss_scale = 128.0;
    struct zero_loss_scaler s;
    zero_loss_scaler_init(&s, &c);
    double used[9];
    run(&s, pattern, 9, used);
    for (int i = 0; i < 9; i++)
        ck_assert(used[i] == 128.0);
    ck_assert_int_eq(s.dynamic, 0);
}
END_TEST

START_TEST(test_deepspeed_default_when_no_dynamic_key_is_given)
{
    struct zero_config cfg;
    zero_config_defaults(&cfg);
    struct zero_loss_scaler s;
    zero_loss_scaler_init(&s, &cfg.fp16);
    ck_assert(s.scale == 4294967296.0); /* 2^32 */
    ck_assert_int_eq(s.delayed_shift, 1);
    ck_assert_int_eq(s.window, 1000);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("loss_scaler");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_hysteresis_two_window_three);
    tcase_add_test(tc, test_consecutive_hysteresis_refills_on_every_clean_step);
    tcase_add_test(tc, test_window_doubles_after_clean_iterations_from_the_start);
    tcase_add_test(tc, test_overflow_at_the_minimum_is_an_error_that_says_so);
    tcase_add_test(tc, test_scale_never_goes_below_the_minimum);
    tcase_add_test(tc, test_static_scale_never_changes);
    tcase_add_test(tc, test_deepspeed_default_when_no_dynamic_key_is_given);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

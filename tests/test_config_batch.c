/* DeepSpeed's configuration defaults and its batch-size rule
 * (deepspeed/runtime/config.py: _set_batch_related_parameters, _batch_assertion):
 * train_batch_size = train_micro_batch_size_per_gpu * gradient_accumulation_steps * world. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zero/config.h"
#include "zero/error.h"

/* A config with only the three batch values set (0 = not given). */
static struct zero_config batch(int64_t train, int64_t micro, int64_t acc)
{
    struct zero_config c;
    zero_config_defaults(&c);
    c.train_batch_size = train;
    c.train_micro_batch_size_per_gpu = micro;
    c.gradient_accumulation_steps = acc;
    return c;
}

static void expect_resolves(int64_t train, int64_t micro, int64_t acc, int world,
                            int64_t want_train, int64_t want_micro, int64_t want_acc)
{
    struct zero_config c = batch(train, micro, acc);
    struct zero_error err = {0};
    int rc = zero_config_resolve_batch(&c, world, &err);
    ck_assert_msg(rc == ZERO_OK, "train %lld micro %lld acc %lld world %d: %s", (long long)train,
                  (long long)micro, (long long)acc, world, err.msg);
    ck_assert_int_eq(c.train_batch_size, want_train);
    ck_assert_int_eq(c.train_micro_batch_size_per_gpu, want_micro);
    ck_assert_int_eq(c.gradient_accumulation_steps, want_acc);
}

/* Fails with EINVAL, names the arithmetic, and leaves the config as it was. */
static void expect_fails(int64_t train, int64_t micro, int64_t acc, int world, const char *msg)
{
    struct zero_config c = batch(train, micro, acc);
    struct zero_error err = {0};
    int rc = zero_config_resolve_batch(&c, world, &err);
    ck_assert_int_eq(rc, ZERO_EINVAL);
    ck_assert_int_eq(err.code, ZERO_EINVAL);
    ck_assert_msg(strstr(err.msg, msg) != NULL, "message \"%s\" lacks \"%s\"", err.msg, msg);
    ck_assert_int_eq(c.train_batch_size, train);
    ck_assert_int_eq(c.train_micro_batch_size_per_gpu, micro);
    ck_assert_int_eq(c.gradient_accumulation_steps, acc);
}

START_TEST(test_defaults_are_deepspeeds)
{
    struct zero_config c;
    memset(&c, 0xff, sizeof(c)); /* every field must be written */
    zero_config_defaults(&c);
    ck_assert_int_eq(c.train_batch_size, 0);
    ck_assert_int_eq(c.train_micro_batch_size_per_gpu, 0);
    ck_assert_int_eq(c.gradient_accumulation_steps, 0);
    ck_assert(c.gradient_clipping == 1.0); /* GRADIENT_CLIPPING_DEFAULT */
    ck_assert_int_eq(c.steps_per_print, 0);
    ck_assert_int_eq(c.wall_clock_breakdown, 0);

    ck_assert_int_eq(c.optimizer.type, ZERO_OPTIM_ADAM);
    ck_assert(c.optimizer.lr == 1e-3);
    ck_assert(c.optimizer.betas[0] == 0.9 && c.optimizer.betas[1] == 0.999);
    ck_assert(c.optimizer.eps == 1e-8);
    ck_assert(c.optimizer.weight_decay == 0.0);
    ck_assert_int_eq(c.optimizer.adam_w_mode, 1);
    ck_assert_int_eq(c.optimizer.bias_correction, 1);
    ck_assert(c.optimizer.momentum == 0.0 && c.optimizer.dampening == 0.0);
    ck_assert_int_eq(c.optimizer.nesterov, 0);

    ck_assert_int_eq(c.scheduler.type, ZERO_SCHED_NONE);
    ck_assert(c.scheduler.warmup_min_lr == 0.0);
    ck_assert(c.scheduler.warmup_max_lr == 0.001);
    ck_assert_int_eq(c.scheduler.warmup_num_steps, 1000);
    ck_assert_int_eq(c.scheduler.warmup_type, ZERO_WARMUP_LOG);
    ck_assert_int_eq(c.scheduler.total_num_steps, 0);
    ck_assert(c.scheduler.warmup_min_ratio == 0.0);
    ck_assert(c.scheduler.cos_min_ratio == 0.0001);

    ck_assert_int_eq(c.zero_optimization.stage, 0);
    ck_assert_int_eq(c.zero_optimization.contiguous_gradients, 1);
    ck_assert_int_eq(c.zero_optimization.reduce_scatter, 1);
    ck_assert_int_eq(c.zero_optimization.reduce_bucket_size, 500000000);
    ck_assert_int_eq(c.zero_optimization.allgather_partitions, 1);
    ck_assert_int_eq(c.zero_optimization.allgather_bucket_size, 500000000);
    ck_assert_int_eq(c.zero_optimization.overlap_comm, 0);
    ck_assert_int_eq(c.zero_optimization.stage3_prefetch_bucket_size, 50000000);
    ck_assert_int_eq(c.zero_optimization.stage3_param_persistence_threshold, 100000);
    ck_assert_int_eq(c.zero_optimization.stage3_max_live_parameters, 1000000000);
    ck_assert_int_eq(c.zero_optimization.stage3_max_reuse_distance, 1000000000);

    ck_assert_str_eq(c.libzero.backend, "cpu");
    ck_assert_int_eq(c.libzero.coll_mode, ZERO_COLL_EXACT);
    ck_assert_int_eq(c.libzero.align, 2048);
    ck_assert(c.libzero.seed == 1234);
}
END_TEST

START_TEST(test_all_three_consistent_are_kept)
{
    expect_resolves(96, 4, 12, 2, 96, 4, 12);
    expect_resolves(7, 7, 1, 1, 7, 7, 1);
}
END_TEST

START_TEST(test_train_and_micro_derive_accumulation)
{
    expect_resolves(96, 4, 0, 2, 96, 4, 12);
    expect_resolves(24, 8, 0, 3, 24, 8, 1);
}
END_TEST

START_TEST(test_train_and_accumulation_derive_micro)
{
    expect_resolves(96, 0, 3, 2, 96, 16, 3);
    expect_resolves(6, 0, 6, 1, 6, 1, 6);
}
END_TEST

START_TEST(test_micro_and_accumulation_derive_train)
{
    expect_resolves(0, 4, 3, 2, 24, 4, 3);
}
END_TEST

START_TEST(test_train_alone_means_no_accumulation)
{
    expect_resolves(96, 0, 0, 4, 96, 24, 1);
}
END_TEST

START_TEST(test_micro_alone_means_no_accumulation)
{
    expect_resolves(0, 4, 0, 3, 12, 4, 1);
}
END_TEST

START_TEST(test_resolving_twice_changes_nothing)
{
    struct zero_config c = batch(96, 4, 0);
    struct zero_error err = {0};
    ck_assert_int_eq(zero_config_resolve_batch(&c, 2, &err), ZERO_OK);
    ck_assert_int_eq(zero_config_resolve_batch(&c, 2, &err), ZERO_OK);
    ck_assert_int_eq(c.gradient_accumulation_steps, 12);
    /* ...but the resolved values pin the world size */
    ck_assert_int_eq(zero_config_resolve_batch(&c, 4, &err), ZERO_EINVAL);
}
END_TEST

START_TEST(test_all_three_inconsistent_show_the_product)
{
    expect_fails(96, 4, 3, 2,
                 "train_batch_size 96 != train_micro_batch_size_per_gpu 4 * "
                 "gradient_accumulation_steps 3 * world size 2 = 24");
}
END_TEST

START_TEST(test_train_not_divisible_by_micro_times_world)
{
    /* DeepSpeed derives accumulation 10 // 4 // 1 = 2 and then finds 4 * 2 * 1 != 10 */
    expect_fails(10, 4, 0, 1,
                 "train_batch_size 10 is not divisible by train_micro_batch_size_per_gpu 4 * "
                 "world size 1 = 4");
    /* DeepSpeed derives accumulation 0 and asserts it has to be greater than 0 */
    expect_fails(4, 4, 0, 2,
                 "train_batch_size 4 is not divisible by train_micro_batch_size_per_gpu 4 * "
                 "world size 2 = 8");
}
END_TEST

START_TEST(test_train_not_divisible_by_accumulation_times_world)
{
    expect_fails(10, 0, 3, 2,
                 "train_batch_size 10 is not divisible by gradient_accumulation_steps 3 * "
                 "world size 2 = 6");
}
END_TEST

START_TEST(test_train_alone_not_divisible_by_world)
{
    expect_fails(10, 0, 0, 3, "train_batch_size 10 is not divisible by world size 3");
    expect_fails(2, 0, 0, 4, "train_batch_size 2 is not divisible by world size 4");
}
END_TEST

START_TEST(test_neither_train_nor_micro_given_fails)
{
    const char *msg = "either train_batch_size or train_micro_batch_size_per_gpu needs to be "
                      "provided";
    expect_fails(0, 0, 0, 1, msg);
    expect_fails(0, 0, 4, 2, msg);
}
END_TEST

START_TEST(test_negative_values_name_the_key)
{
    expect_fails(-8, 0, 0, 1, "train_batch_size -8 has to be greater than 0");
    expect_fails(8, -2, 0, 1, "train_micro_batch_size_per_gpu -2 has to be greater than 0");
    expect_fails(8, 2, -1, 1, "gradient_accumulation_steps -1 has to be greater than 0");
}
END_TEST

START_TEST(test_world_size_below_one_fails)
{
    expect_fails(8, 0, 0, 0, "world size 0 has to be at least 1");
}
END_TEST

START_TEST(test_product_overflow_is_an_error)
{
    expect_fails(0, INT64_MAX / 2, 3, 1, "overflows");
    expect_fails(96, INT64_MAX / 2, 3, 2, "overflows");
    expect_fails(96, INT64_MAX / 2, 0, 4,
                 "train_micro_batch_size_per_gpu 4611686018427387903 * "
                 "world size 4 overflows");
    expect_fails(96, 0, INT64_MAX / 2, 4, "overflows");
}
END_TEST

static Suite *config_batch_suite(void)
{
    Suite *s = suite_create("config_batch");
    TCase *tc = tcase_create("batch");
    tcase_add_test(tc, test_defaults_are_deepspeeds);
    tcase_add_test(tc, test_all_three_consistent_are_kept);
    tcase_add_test(tc, test_train_and_micro_derive_accumulation);
    tcase_add_test(tc, test_train_and_accumulation_derive_micro);
    tcase_add_test(tc, test_micro_and_accumulation_derive_train);
    tcase_add_test(tc, test_train_alone_means_no_accumulation);
    tcase_add_test(tc, test_micro_alone_means_no_accumulation);
    tcase_add_test(tc, test_resolving_twice_changes_nothing);
    tcase_add_test(tc, test_all_three_inconsistent_show_the_product);
    tcase_add_test(tc, test_train_not_divisible_by_micro_times_world);
    tcase_add_test(tc, test_train_not_divisible_by_accumulation_times_world);
    tcase_add_test(tc, test_train_alone_not_divisible_by_world);
    tcase_add_test(tc, test_neither_train_nor_micro_given_fails);
    tcase_add_test(tc, test_negative_values_name_the_key);
    tcase_add_test(tc, test_world_size_below_one_fails);
    tcase_add_test(tc, test_product_overflow_is_an_error);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_batch_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* The canonical summation tree: split points, the exact order of additions for small n,
 * and the online binary counter reproducing tree(0, n) bit for bit. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/tree.h"

START_TEST(test_split_is_largest_power_of_two_below_n)
{
    ck_assert_uint_eq(zero_tree_split(0), 0);
    ck_assert_uint_eq(zero_tree_split(1), 0);
    ck_assert_uint_eq(zero_tree_split(2), 1);
    ck_assert_uint_eq(zero_tree_split(3), 2);
    ck_assert_uint_eq(zero_tree_split(4), 2);
    ck_assert_uint_eq(zero_tree_split(5), 4);
    ck_assert_uint_eq(zero_tree_split(7), 4);
    ck_assert_uint_eq(zero_tree_split(8), 4);
    ck_assert_uint_eq(zero_tree_split(9), 8);
    ck_assert_uint_eq(zero_tree_split(1000), 512);
}
END_TEST

/* Values where the order of additions changes the fp32 result: a big value cancels only
 * if it meets its negation before the small ones are absorbed. */
static const float big = 1.0e8f, small = 3.0f;

START_TEST(test_tree_sum_n2_n3_n4_n7_follow_the_documented_order)
{
    float x2[] = {big, small};
    ck_assert(zero_tree_sum(x2, 2) == big + small);

    float x3[] = {big, small, -big};
    float want3 = (big + small) + -big; /* 0: small is absorbed before the cancellation */
    ck_assert(zero_tree_sum(x3, 3) == want3);
    ck_assert(want3 != (big + -big) + small); /* the order matters for these values */

    float x4[] = {small, big, -big, small};
    float want4 = (small + big) + (-big + small);
    ck_assert(zero_tree_sum(x4, 4) == want4);
    ck_assert(want4 != ((small + big) + -big) + small);

    float x7[] = {big, small, small, small, -big, small, small};
    float want7 = ((x7[0] + x7[1]) + (x7[2] + x7[3])) + ((x7[4] + x7[5]) + x7[6]);
    ck_assert(zero_tree_sum(x7, 7) == want7);
    float left_to_right = 0.0f;
    for (int i = 0; i < 7; i++)
        left_to_right += x7[i];
    ck_assert(want7 != left_to_right);
}
END_TEST

START_TEST(test_tree_sum_of_zero_and_one_leaves)
{
    float x = 42.5f;
    ck_assert(zero_tree_sum(&x, 0) == 0.0f);
    ck_assert(zero_tree_sum(&x, 1) == 42.5f);
}
END_TEST

START_TEST(test_merges_after_counts_trailing_ones)
{
    ck_assert_uint_eq(zero_tree_merges_after(0), 0);
    ck_assert_uint_eq(zero_tree_merges_after(1), 1);
    ck_assert_uint_eq(zero_tree_merges_after(2), 0);
    ck_assert_uint_eq(zero_tree_merges_after(3), 2);
    ck_assert_uint_eq(zero_tree_merges_after(7), 3);
    ck_assert_uint_eq(zero_tree_merges_after(11), 2);
}
END_TEST

/* The online counter as tree.h describes it. */
static float counter_sum(const float *x, size_t n)
{
    float stack[64];
    int top = 0;
    if (n == 0)
        return 0.0f;
    for (size_t k = 0; k < n; k++) {
        stack[top++] = x[k];
        for (unsigned m = zero_tree_merges_after(k); m > 0; m--) {
            stack[top - 2] = stack[top - 2] + stack[top - 1];
            top--;
        }
    }
    float acc = stack[--top];
    while (top > 0)
        acc = stack[--top] + acc;
    return acc;
}

START_TEST(test_online_counter_equals_tree_for_every_n_up_to_100)
{
    float x[100];
    uint32_t state = 12345;
    int differs_from_sequential = 0;
    for (int trial = 0; trial < 20; trial++) {
        for (int i = 0; i < 100; i++) {
            state = state * 1664525u + 1013904223u;
            /* spread exponents so that rounding depends on the order */
            x[i] = (float)((int32_t)state >> 8) * (i % 3 == 0 ? 1.0e-3f : 1.0f);
        }
        for (size_t n = 1; n <= 100; n++) {
            float want = zero_tree_sum(x, n);
            ck_assert_msg(counter_sum(x, n) == want, "n=%zu trial=%d", n, trial);
            float seq = 0.0f;
            for (size_t i = 0; i < n; i++)
                seq += x[i];
            differs_from_sequential |= seq != want;
        }
    }
    ck_assert(differs_from_sequential); /* the inputs do exercise the order */
}
END_TEST

int main(void)
{
    Suite *suite = suite_create("tree");
    TCase *tc = tcase_create("canonical order");
    tcase_add_test(tc, test_split_is_largest_power_of_two_below_n);
    tcase_add_test(tc, test_tree_sum_n2_n3_n4_n7_follow_the_documented_order);
    tcase_add_test(tc, test_tree_sum_of_zero_and_one_leaves);
    tcase_add_test(tc, test_merges_after_counts_trailing_ones);
    tcase_add_test(tc, test_online_counter_equals_tree_for_every_n_up_to_100);
    suite_add_tcase(suite, tc);
    SRunner *sr = srunner_create(suite);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

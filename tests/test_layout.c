/* Partition math, without MPI: shards cover a unit exactly once, are
 * block-aligned and equal; parameters start aligned; padding is where the
 * layout says; bucket plans cover every item once and respect the limit. */
#include <check.h>
#include <stdlib.h>

#include "zero/layout.h"

static const int64_t sizes[][5] = {
    {4096 * 1024, 4096, 1024 * 4096, 1024, 0}, /* an MLP block */
    {7, 1, 13, 0, 0},                          /* tiny, odd sizes */
    {1, 0, 0, 0, 0},
    {2049, 2047, 3, 5, 0},
};
static const int nparams[] = {4, 3, 1, 4};

START_TEST(test_shards_cover_the_unit_exactly_once_and_are_block_aligned)
{
    for (size_t c = 0; c < sizeof nparams / sizeof nparams[0]; c++)
        for (int world = 1; world <= 8; world++)
            for (int64_t align = 1; align <= 4096; align *= 8) {
                struct zero_unit_layout l;
                struct zero_error err = {0};
                ck_assert_int_eq(zero_layout_unit(&l, sizes[c], nparams[c], world, align, &err),
                                 ZERO_OK);
                ck_assert_int_eq(l.padded % ((int64_t)world * align), 0);
                ck_assert_int_ge(l.padded, l.used);
                ck_assert_int_lt(l.padded - l.used, (int64_t)world * align);
                ck_assert_int_eq(l.shard * world, l.padded);
                int64_t next = 0;
                for (int r = 0; r < world; r++) {
                    int64_t b, e;
                    zero_layout_shard(&l, r, &b, &e);
                    ck_assert_int_eq(b, next); /* contiguous, no gap, no overlap */
                    ck_assert_int_eq(b % align, 0);
                    ck_assert_int_eq(e - b, l.shard);
                    next = e;
                }
                ck_assert_int_eq(next, l.padded);
            }
}
END_TEST

START_TEST(test_parameters_are_aligned_disjoint_and_in_order)
{
    for (size_t c = 0; c < sizeof nparams / sizeof nparams[0]; c++) {
        struct zero_unit_layout l;
        struct zero_error err = {0};
        ck_assert_int_eq(zero_layout_unit(&l, sizes[c], nparams[c], 3, 64, &err), ZERO_OK);
        int64_t end = 0;
        for (int p = 0; p < l.nparams; p++) {
            ck_assert_int_eq(l.offset[p] % ZERO_PARAM_ALIGN, 0);
            ck_assert_int_ge(l.offset[p], end);
            ck_assert_int_lt(l.offset[p] - end, ZERO_PARAM_ALIGN);
            ck_assert_int_eq(l.numel[p], sizes[c][p]);
            end = l.offset[p] + l.numel[p];
        }
        ck_assert_int_eq(l.used, end);
    }
}
END_TEST

START_TEST(test_each_parameter_element_lies_in_exactly_one_shard)
{
    for (size_t c = 0; c < sizeof nparams / sizeof nparams[0]; c++)
        for (int world = 1; world <= 5; world++) {
            struct zero_unit_layout l;
            struct zero_error err = {0};
            ck_assert_int_eq(zero_layout_unit(&l, sizes[c], nparams[c], world, 8, &err), ZERO_OK);
            for (int p = 0; p < l.nparams; p++) {
                int64_t covered = 0, next = l.offset[p];
                for (int r = 0; r < world; r++) {
                    int64_t b, e;
                    zero_layout_param_in_shard(&l, p, r, &b, &e);
                    ck_assert_int_le(b, e);
                    if (e > b) {
                        ck_assert_int_eq(b, next);
                        next = e;
                    }
                    covered += e - b;
                }
                ck_assert_int_eq(covered, l.numel[p]);
            }
        }
}
END_TEST

START_TEST(test_a_unit_without_parameters_has_an_empty_buffer)
{
    struct zero_unit_layout l;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_layout_unit(&l, NULL, 0, 4, 64, &err), ZERO_OK);
    ck_assert_int_eq(l.padded, 0);
    ck_assert_int_eq(l.shard, 0);
}
END_TEST

START_TEST(test_bad_layout_arguments_are_errors)
{
    struct zero_unit_layout l;
    struct zero_error err = {0};
    int64_t neg[1] = {-3};
    ck_assert_int_eq(zero_layout_unit(&l, neg, 1, 2, 64, &err), ZERO_EINVAL);
    ck_assert_int_eq(zero_layout_unit(&l, sizes[0], 4, 0, 64, &err), ZERO_EINVAL);
    ck_assert_int_eq(zero_layout_unit(&l, sizes[0], 4, 2, 0, &err), ZERO_EINVAL);
    ck_assert_int_eq(zero_layout_unit(&l, sizes[0], 99, 2, 64, &err), ZERO_EINVAL);
}
END_TEST

START_TEST(test_bucket_plans_cover_items_once_within_the_limit)
{
    int64_t size[9] = {5, 5, 5, 20, 1, 1, 1, 9, 30};
    int first[10];
    for (int64_t limit = 1; limit <= 64; limit++) {
        int n = zero_plan_buckets(size, 9, limit, first);
        ck_assert_int_eq(first[0], 0);
        ck_assert_int_eq(first[n], 9);
        for (int b = 0; b < n; b++) {
            ck_assert_int_lt(first[b], first[b + 1]);
            int64_t sum = 0;
            for (int i = first[b]; i < first[b + 1]; i++)
                sum += size[i];
            /* within the limit, or a single item larger than it */
            ck_assert(sum <= limit || first[b + 1] - first[b] == 1);
            /* greedy: the next item would not have fit */
            if (b + 1 < n)
                ck_assert_int_gt(sum + size[first[b + 1]], limit);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("layout");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_shards_cover_the_unit_exactly_once_and_are_block_aligned);
    tcase_add_test(tc, test_parameters_are_aligned_disjoint_and_in_order);
    tcase_add_test(tc, test_each_parameter_element_lies_in_exactly_one_shard);
    tcase_add_test(tc, test_a_unit_without_parameters_has_an_empty_buffer);
    tcase_add_test(tc, test_bad_layout_arguments_are_errors);
    tcase_add_test(tc, test_bucket_plans_cover_items_once_within_the_limit);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* The stage table (src/engine/stage.c) says what the ZeRO paper says each stage
 * does: what it partitions, how it reduces gradients, what follows the update, and
 * the per-rank model-state bytes (the paper's 16Ψ, 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N, 16Ψ/N
 * in mixed precision with Adam). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "engine/stage.h"
#include "zero/estimate.h"

START_TEST(test_each_number_has_its_entry_and_no_other_number_has_one)
{
    for (int n = 0; n < ZERO_STAGE_COUNT; n++) {
        ck_assert_ptr_nonnull(zero_stage_get(n));
        ck_assert_int_eq(zero_stage_get(n)->number, n);
    }
    ck_assert_ptr_null(zero_stage_get(-1));
    ck_assert_ptr_null(zero_stage_get(ZERO_STAGE_COUNT));
}
END_TEST

START_TEST(test_stage_k_partitions_the_first_k_of_optimizer_grads_params)
{
    for (int n = 0; n < ZERO_STAGE_COUNT; n++) {
        const struct zero_stage *s = zero_stage_get(n);
        ck_assert_int_eq(s->shards_optim, n >= 1);
        ck_assert_int_eq(s->shards_grads, n >= 2);
        ck_assert_int_eq(s->shards_params, n >= 3);
    }
    ck_assert_str_eq(zero_stage_get(0)->name, "DP");
    ck_assert_str_eq(zero_stage_get(3)->name, "Pos+g+p");
}
END_TEST

START_TEST(test_dp_all_reduces_and_the_others_reduce_scatter)
{
    ck_assert_int_eq(zero_stage_get(0)->reduce, ZERO_STAGE_ALL_REDUCE);
    for (int n = 1; n < ZERO_STAGE_COUNT; n++)
        ck_assert_int_eq(zero_stage_get(n)->reduce, ZERO_STAGE_REDUCE_SCATTER);
}
END_TEST

START_TEST(test_stages_1_2_all_gather_after_the_update_3_gathers_on_use)
{
    ck_assert_int_eq(zero_stage_get(0)->after, ZERO_STAGE_UPDATED_WHOLE);
    ck_assert_int_eq(zero_stage_get(1)->after, ZERO_STAGE_ALL_GATHER_PARAMS);
    ck_assert_int_eq(zero_stage_get(2)->after, ZERO_STAGE_ALL_GATHER_PARAMS);
    ck_assert_int_eq(zero_stage_get(3)->after, ZERO_STAGE_GATHER_PER_UNIT_USE);
}
END_TEST

static void check_formula(int n, int param, int grad, int optim, const char *want)
{
    int whole, shard;
    char got[64];
    zero_stage_coefficients(zero_stage_get(n), param, grad, optim, &whole, &shard);
    zero_estimate_formula(got, sizeof got, whole, shard);
    ck_assert_msg(strcmp(got, want) == 0, "stage %d: %s, want %s", n, got, want);
}

START_TEST(test_ledger_is_the_papers_16_4_12_2_14_16_over_n_in_mixed_precision)
{
    const char *want[ZERO_STAGE_COUNT] = {"16Ψ", "4Ψ + 12Ψ/N", "2Ψ + 14Ψ/N", "16Ψ/N"};
    for (int n = 0; n < ZERO_STAGE_COUNT; n++)
        check_formula(n, 2, 2, 12, want[n]);
}
END_TEST

START_TEST(test_ledger_in_fp32_is_16_8_8_4_12_16_over_n)
{
    const char *want[ZERO_STAGE_COUNT] = {"16Ψ", "8Ψ + 8Ψ/N", "4Ψ + 12Ψ/N", "16Ψ/N"};
    for (int n = 0; n < ZERO_STAGE_COUNT; n++)
        check_formula(n, 4, 4, 8, want[n]);
}
END_TEST

START_TEST(test_ledger_text_divides_by_n_exactly_what_is_sharded)
{
    for (int n = 0; n < ZERO_STAGE_COUNT; n++) {
        const struct zero_stage *s = zero_stage_get(n);
        int divides = strstr(s->ledger, "/N") != NULL;
        ck_assert_int_eq(divides, s->shards_optim);
        ck_assert_ptr_nonnull(strstr(s->ledger, "K"));
    }
}
END_TEST

START_TEST(test_a_shard_inside_a_whole_buffer_starts_at_shard_begin)
{
    ck_assert_int_eq(zero_stage_offset_in(1, 0, 640), 640);
    ck_assert_int_eq(zero_stage_offset_in(1, 1, 640), 0);
    ck_assert_int_eq(zero_stage_offset_in(0, 0, 640), 0);
    ck_assert_int_eq(zero_stage_part(1, 2048, 512), 512);
    ck_assert_int_eq(zero_stage_part(0, 2048, 512), 2048);
    ck_assert_int_eq(zero_stage_part_begin(1, 1536), 1536);
    ck_assert_int_eq(zero_stage_part_begin(0, 1536), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stage_table");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, test_each_number_has_its_entry_and_no_other_number_has_one);
    tcase_add_test(tc, test_stage_k_partitions_the_first_k_of_optimizer_grads_params);
    tcase_add_test(tc, test_dp_all_reduces_and_the_others_reduce_scatter);
    tcase_add_test(tc, test_stages_1_2_all_gather_after_the_update_3_gathers_on_use);
    tcase_add_test(tc, test_ledger_is_the_papers_16_4_12_2_14_16_over_n_in_mixed_precision);
    tcase_add_test(tc, test_ledger_in_fp32_is_16_8_8_4_12_16_over_n);
    tcase_add_test(tc, test_ledger_text_divides_by_n_exactly_what_is_sharded);
    tcase_add_test(tc, test_a_shard_inside_a_whole_buffer_starts_at_shard_begin);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Checked size arithmetic (include/zero/size.h): products and sums that overflow
 * 64 bits, negative sizes and impossible allocations are errors naming `what`. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zero/nn.h"
#include "zero/size.h"
#include "zero/tokens.h"

START_TEST(test_mul_returns_the_product_when_it_fits)
{
    struct zero_error err = {0};
    int64_t n = -1;
    ck_assert_int_eq(zero_size_mul(&n, 1 << 20, 1 << 20, "x", &err), ZERO_OK);
    ck_assert_int_eq(n, (int64_t)1 << 40);
    ck_assert_int_eq(zero_size_mul(&n, 0, INT64_MAX, "x", &err), ZERO_OK);
    ck_assert_int_eq(n, 0);
}
END_TEST

START_TEST(test_mul_overflow_names_what_and_leaves_out_untouched)
{
    struct zero_error err = {0};
    int64_t n = 7;
    ck_assert_int_eq(zero_size_mul(&n, 4611686018427387904LL, 4, "--batch * --hidden", &err),
                     ZERO_EINVAL);
    ck_assert_int_eq(n, 7);
    ck_assert_str_eq(err.msg, "--batch * --hidden: 4611686018427387904 * 4 overflows 64 bits");
    ck_assert_int_eq(zero_size_mul(&n, -1, 4, "rows", &err), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "rows: negative size"));
    ck_assert_int_eq(n, 7);
}
END_TEST

START_TEST(test_add_overflow_and_negative_are_errors)
{
    struct zero_error err = {0};
    int64_t n = 0;
    ck_assert_int_eq(zero_size_add(&n, INT64_MAX - 1, 1, "a", &err), ZERO_OK);
    ck_assert_int_eq(n, INT64_MAX);
    ck_assert_int_eq(zero_size_add(&n, INT64_MAX, 1, "offset", &err), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "offset: 9223372036854775807 + 1 overflows"));
    ck_assert_int_eq(zero_size_add(&n, 3, -4, "offset", &err), ZERO_EINVAL);
}
END_TEST

START_TEST(test_bytes_and_alloc_check_the_element_size_product)
{
    struct zero_error err = {0};
    size_t b = 0;
    ck_assert_int_eq(zero_size_bytes(&b, 1000, sizeof(float), "x", &err), ZERO_OK);
    ck_assert_uint_eq(b, 4000);
    ck_assert_int_eq(zero_size_bytes(&b, INT64_MAX / 2, 4, "inputs", &err), ZERO_EINVAL);
    ck_assert_ptr_null(zero_size_alloc(INT64_MAX / 2, 4, "inputs", &err));
    ck_assert_int_eq(err.code, ZERO_EINVAL);
    /* fits 64 bits, fits no machine */
    ck_assert_ptr_null(zero_size_alloc((int64_t)1 << 60, 4, "inputs", &err));
    ck_assert_int_eq(err.code, ZERO_ENOMEM);
    ck_assert_str_eq(err.msg, "inputs: no memory for 1152921504606846976 x 4 = "
                              "4611686018427387904 bytes");
    void *p = zero_size_alloc(0, 4, "empty", &err); /* never NULL for a zero size */
    ck_assert_ptr_nonnull(p);
    free(p);
}
END_TEST

/* A negative first sequence (a corrupt data position) wraps like any other epoch
 * instead of reading before the stream. */
START_TEST(test_token_split_fill_wraps_a_negative_first_sequence)
{
    int32_t ids[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    struct zero_tokens t = {.ids = ids, .n = 9};
    struct zero_token_split s;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_token_split_init(&s, &t, 0, 9, 2, "split", &err), ZERO_OK);
    ck_assert_int_eq(s.windows, 4);
    int32_t tok[2], lab[2], want_tok[2], want_lab[2];
    zero_token_split_fill(&s, -1, 1, tok, lab);
    zero_token_split_fill(&s, 3, 1, want_tok, want_lab);
    ck_assert_mem_eq(tok, want_tok, sizeof tok);
    ck_assert_mem_eq(lab, want_lab, sizeof lab);
}
END_TEST

/* Model sizes come from flags: an overflowing width or a unit beyond 2^56
 * elements is refused naming the unit and parameter. */
START_TEST(test_model_builders_refuse_overflowing_sizes)
{
    struct zero_error err = {0};
    struct zero_model *m = NULL;
    ck_assert_int_eq(zero_nn_build_mlp(&m, 4611686018427387904LL, 1, 10, &err), ZERO_EINVAL);
    ck_assert_str_eq(
        err.msg, "mlp model: inner width 4 * hidden: 4611686018427387904 * 4 overflows 64 bits");
    ck_assert_int_eq(zero_nn_build_mlp(&m, 4, 1, 4611686018427387904LL, &err), ZERO_EINVAL);
    ck_assert_str_eq(err.msg, "unit classifier: parameter weight: 4611686018427387904 * 4 "
                              "overflows 64 bits");
    ck_assert_int_eq(zero_nn_build_mlp(&m, 4, 0, (int64_t)1 << 55, &err), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "more than 2^56"));
    ck_assert_ptr_null(m);
    ck_assert_int_eq(zero_nn_build_mlp(&m, 4, 1, 3, &err), ZERO_OK);
    zero_model_destroy(m);
}
END_TEST

int main(void)
{
    Suite *suite = suite_create("size");
    TCase *tc = tcase_create("checked arithmetic");
    tcase_add_test(tc, test_mul_returns_the_product_when_it_fits);
    tcase_add_test(tc, test_mul_overflow_names_what_and_leaves_out_untouched);
    tcase_add_test(tc, test_add_overflow_and_negative_are_errors);
    tcase_add_test(tc, test_bytes_and_alloc_check_the_element_size_product);
    tcase_add_test(tc, test_token_split_fill_wraps_a_negative_first_sequence);
    tcase_add_test(tc, test_model_builders_refuse_overflowing_sizes);
    suite_add_tcase(suite, tc);
    SRunner *sr = srunner_create(suite);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

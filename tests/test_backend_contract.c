/* The interface's contract checks (src/base/backend_contract.h), the one text every
 * backend calls: what each refuses, with which status, and the words of the message.
 * Single process, no MPI, no backend. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/backend_contract.h"
#include "zero/error.h"

static char why[ZERO_ERRMSG_LEN];

#define CK_REFUSED(call, status, words)                                                            \
    do {                                                                                           \
        why[0] = '\0';                                                                             \
        ck_assert_int_eq((call), (status));                                                        \
        ck_assert_msg(strstr(why, (words)) != NULL, "message \"%s\" lacks \"%s\"", why, (words));  \
    } while (0)

START_TEST(test_open_needs_ledgers_stats_communicator_and_a_known_mode)
{
    struct zero_ledger *ledger = (void *)&why[0], *host = (void *)&why[1];
    struct zero_comm_stats *stats = (void *)&why[2];
    int comm = 0;
    struct zero_backend_options ok = {
        .coll_mode = ZERO_COLL_NATIVE, .ledger = ledger, .host_ledger = host, .comm_stats = stats};
    ck_assert_int_eq(zero_contract_open("cpu", &ok, &comm, why, sizeof why), ZERO_OK);
    CK_REFUSED(zero_contract_open("cuda", NULL, &comm, why, sizeof why), ZERO_EINVAL,
               "cuda backend: open needs options with ledgers");
    struct zero_backend_options no_host = ok;
    no_host.host_ledger = NULL;
    CK_REFUSED(zero_contract_open("cpu", &no_host, &comm, why, sizeof why), ZERO_EINVAL,
               "cpu backend: open needs");
    CK_REFUSED(zero_contract_open("cpu", &ok, NULL, why, sizeof why), ZERO_EINVAL, "MPI_Comm *");
    struct zero_backend_options bad_mode = ok;
    bad_mode.coll_mode = (enum zero_coll_mode)7;
    CK_REFUSED(zero_contract_open("cpu", &bad_mode, &comm, why, sizeof why), ZERO_EINVAL,
               "cpu backend: unknown collective mode 7");
    ck_assert_int_eq(zero_contract_coll_mode(ZERO_COLL_EXACT, why, sizeof why), ZERO_OK);
    CK_REFUSED(zero_contract_coll_mode((enum zero_coll_mode)7, why, sizeof why), ZERO_EINVAL,
               "set_coll_mode: unknown mode 7");
}
END_TEST

START_TEST(test_gemm_checks_shapes_dtypes_and_leading_dimensions)
{
    /* C (2, 3) = A (2, 4) B (4, 3); transposed A is stored (4, 2), B^T (3, 4) */
    ck_assert_int_eq(
        zero_contract_gemm(0, 0, 2, 3, 4, ZERO_F32, 4, ZERO_BF16, 3, ZERO_F16, 3, why, sizeof why),
        ZERO_OK);
    ck_assert_int_eq(
        zero_contract_gemm(1, 1, 2, 3, 4, ZERO_F32, 2, ZERO_F32, 4, ZERO_F32, 3, why, sizeof why),
        ZERO_OK);
    ck_assert_int_eq(
        zero_contract_gemm(0, 0, 0, 0, 0, ZERO_F32, 1, ZERO_F32, 1, ZERO_F32, 1, why, sizeof why),
        ZERO_OK);
    CK_REFUSED(
        zero_contract_gemm(0, 0, -1, 3, 4, ZERO_F32, 4, ZERO_F32, 3, ZERO_F32, 3, why, sizeof why),
        ZERO_EINVAL, "gemm: bad shape m=-1 n=3 k=4");
    CK_REFUSED(
        zero_contract_gemm(0, 0, 2, 3, 4, ZERO_F64, 4, ZERO_F32, 3, ZERO_F32, 3, why, sizeof why),
        ZERO_ENOTSUP, "gemm: a has dtype fp64; fp32, fp16 or bf16 expected");
    CK_REFUSED(
        zero_contract_gemm(1, 0, 2, 3, 4, ZERO_F32, 1, ZERO_F32, 3, ZERO_F32, 3, why, sizeof why),
        ZERO_EINVAL, "gemm: lda = 1 for a stored (4, 2) matrix; need 2..INT_MAX");
    CK_REFUSED(
        zero_contract_gemm(0, 0, 2, 3, 4, ZERO_F32, 4, ZERO_F32, 3, ZERO_F32, 2, why, sizeof why),
        ZERO_EINVAL, "gemm: ldc = 2 for a stored (2, 3) matrix");
}
END_TEST

START_TEST(test_cast_takes_float_types_and_fp64_only_to_fp32_or_itself)
{
    ck_assert_int_eq(zero_contract_cast(ZERO_BF16, ZERO_F16, why, sizeof why), ZERO_OK);
    ck_assert_int_eq(zero_contract_cast(ZERO_F32, ZERO_F64, why, sizeof why), ZERO_OK);
    ck_assert_int_eq(zero_contract_cast(ZERO_F64, ZERO_F64, why, sizeof why), ZERO_OK);
    ck_assert_int_eq(zero_contract_cast(ZERO_F64, ZERO_BF16, why, sizeof why), ZERO_OK);
    CK_REFUSED(zero_contract_cast(ZERO_F16, ZERO_F64, why, sizeof why), ZERO_ENOTSUP,
               "cast: fp64 -> fp16 is not supported");
    CK_REFUSED(zero_contract_cast(ZERO_F32, ZERO_I32, why, sizeof why), ZERO_ENOTSUP,
               "is not supported");
}
END_TEST

START_TEST(test_optimizers_check_dtypes_then_their_arguments)
{
    struct zero_adam_args adam = {
        .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .step = 1, .grad_div = 1.0f};
    struct zero_adam_consts k;
    ck_assert_int_eq(zero_contract_adam(&adam, ZERO_BF16, NULL, ZERO_I32, &k, why, sizeof why),
                     ZERO_OK);
    CK_REFUSED(zero_contract_adam(&adam, ZERO_F64, NULL, ZERO_F32, &k, why, sizeof why),
               ZERO_ENOTSUP, "adam: gradient dtype fp64; fp32, fp16 or bf16 expected");
    CK_REFUSED(zero_contract_adam(&adam, ZERO_F32, why, ZERO_I64, &k, why, sizeof why),
               ZERO_ENOTSUP, "adam: parameter copy dtype");
    adam.step = 0;
    CK_REFUSED(zero_contract_adam(&adam, ZERO_F32, NULL, ZERO_F32, &k, why, sizeof why),
               ZERO_EINVAL, "adam: step is 0; steps count from 1");
    struct zero_sgd_args sgd = {.lr = 0.1f, .momentum = 0.9f, .step = 1, .grad_div = 1.0f};
    ck_assert_int_eq(zero_contract_sgd(&sgd, 1, ZERO_F16, NULL, ZERO_F32, why, sizeof why),
                     ZERO_OK);
    CK_REFUSED(zero_contract_sgd(&sgd, 0, ZERO_F16, NULL, ZERO_F32, why, sizeof why), ZERO_EINVAL,
               "sgd: momentum");
}
END_TEST

START_TEST(test_reductions_take_float_inputs)
{
    ck_assert_int_eq(zero_contract_float_input("sumsq_blocks", ZERO_F64, why, sizeof why), ZERO_OK);
    CK_REFUSED(zero_contract_float_input("nonfinite", ZERO_I64, why, sizeof why), ZERO_ENOTSUP,
               "nonfinite: dtype ");
}
END_TEST

START_TEST(test_stored_activations_take_fp32_fp16_or_bf16)
{
    ck_assert_int_eq(
        zero_contract_stored_type("gemm_bias_stored: out_type", ZERO_BF16, why, sizeof why),
        ZERO_OK);
    ck_assert_int_eq(
        zero_contract_stored_type("gemm_bias_stored: out_type", ZERO_F16, why, sizeof why),
        ZERO_OK);
    ck_assert_int_eq(
        zero_contract_stored_type("gemm_bias_stored: out_type", ZERO_F32, why, sizeof why),
        ZERO_OK);
    CK_REFUSED(zero_contract_stored_type("gemm_dgelu_stored: pre_type", ZERO_F64, why, sizeof why),
               ZERO_ENOTSUP, "gemm_dgelu_stored: pre_type fp64; fp32, fp16 or bf16 expected");
}
END_TEST

START_TEST(test_stored_attention_takes_stored_activation_dtypes)
{
    ck_assert_int_eq(zero_contract_stored_type("attention_forward_stored: qkv dtype", ZERO_BF16,
                                               why, sizeof why),
                     ZERO_OK);
    ck_assert_int_eq(zero_contract_stored_type("attention_backward_stored: qkv dtype", ZERO_F16,
                                               why, sizeof why),
                     ZERO_OK);
    ck_assert_int_eq(
        zero_contract_stored_type("attention_forward_stored: qkv dtype", ZERO_F32, why, sizeof why),
        ZERO_OK);
    CK_REFUSED(zero_contract_stored_type("attention_backward_stored: qkv dtype", ZERO_F64, why,
                                         sizeof why),
               ZERO_ENOTSUP, "attention_backward_stored: qkv dtype fp64; fp32, fp16 or bf16");
}
END_TEST

static Suite *contract_suite(void)
{
    Suite *s = suite_create("backend_contract");
    TCase *tc = tcase_create("contract");
    tcase_add_test(tc, test_open_needs_ledgers_stats_communicator_and_a_known_mode);
    tcase_add_test(tc, test_gemm_checks_shapes_dtypes_and_leading_dimensions);
    tcase_add_test(tc, test_cast_takes_float_types_and_fp64_only_to_fp32_or_itself);
    tcase_add_test(tc, test_optimizers_check_dtypes_then_their_arguments);
    tcase_add_test(tc, test_reductions_take_float_inputs);
    tcase_add_test(tc, test_stored_activations_take_fp32_fp16_or_bf16);
    tcase_add_test(tc, test_stored_attention_takes_stored_activation_dtypes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(contract_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

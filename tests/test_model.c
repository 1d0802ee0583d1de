/* The model container: what zero_model_add rejects (and how it names the unit),
 * parameter counting and lookup by full name, and the shape of the toy MLP. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zero/nn.h"

static struct zero_model *new_model(void)
{
    struct zero_model *m;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_model_create(&m, &err), ZERO_OK);
    return m;
}

static struct zero_unit *linear(const char *name, int64_t in, int64_t out, int bias)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    ck_assert_msg(zero_nn_linear(&u, name, in, out, bias, &err) == ZERO_OK, "%s", err.msg);
    return u;
}

static void add_ok(struct zero_model *m, struct zero_unit *u)
{
    struct zero_error err = {0};
    ck_assert_msg(zero_model_add(m, u, &err) == ZERO_OK, "%s", err.msg);
}

/* Adds u, expects EINVAL, and that the message contains each of the given words. */
static void add_rejected(struct zero_model *m, struct zero_unit *u, const char *w1, const char *w2)
{
    struct zero_error err = {0};
    int before = m->nunits;
    ck_assert_int_eq(zero_model_add(m, u, &err), ZERO_EINVAL);
    ck_assert_int_eq(m->nunits, before);
    ck_assert_msg(strstr(err.msg, w1) != NULL, "message \"%s\" lacks \"%s\"", err.msg, w1);
    ck_assert_msg(strstr(err.msg, w2) != NULL, "message \"%s\" lacks \"%s\"", err.msg, w2);
}

START_TEST(test_width_mismatch_is_rejected_naming_both_units)
{
    struct zero_model *m = new_model();
    add_ok(m, linear("encoder", 5, 7, 1));
    add_rejected(m, linear("decoder", 6, 3, 1), "unit decoder", "encoder");
    add_ok(m, linear("decoder", 7, 3, 1));
    ck_assert_int_eq(m->nunits, 2);
    zero_model_destroy(m);
}
END_TEST

START_TEST(test_duplicate_unit_name_is_rejected)
{
    struct zero_model *m = new_model();
    add_ok(m, linear("fc", 5, 5, 1));
    add_rejected(m, linear("fc", 5, 5, 1), "unit fc", "already used");
    zero_model_destroy(m);
}
END_TEST

START_TEST(test_unit_after_the_loss_unit_is_rejected)
{
    struct zero_model *m = new_model();
    struct zero_unit *head;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_nn_classifier(&head, "head", 5, 3, &err), ZERO_OK);
    ck_assert_int_eq(head->is_loss, 1);
    ck_assert_int_eq(head->out_width, 1);
    add_ok(m, head);
    add_rejected(m, linear("after", 1, 4, 1), "unit after", "loss unit head");
    zero_model_destroy(m);
}
END_TEST

START_TEST(test_external_refs_must_name_an_earlier_unit_and_a_real_param)
{
    struct zero_model *m = new_model();
    add_ok(m, linear("embed", 5, 5, 0)); /* one parameter: weight */

    struct zero_unit *u = linear("head", 5, 5, 0);
    u->nexternal = 1;
    u->external[0] = (struct zero_external_ref){.unit = 1, .param = 0}; /* itself */
    add_rejected(m, u, "unit head", "external 0");

    u = linear("head", 5, 5, 0);
    u->nexternal = 1;
    u->external[0] = (struct zero_external_ref){.unit = -1, .param = 0};
    add_rejected(m, u, "unit head", "unit -1");

    u = linear("head", 5, 5, 0);
    u->nexternal = 1;
    u->external[0] = (struct zero_external_ref){.unit = 0, .param = 1}; /* embed has no bias */
    add_rejected(m, u, "unit head", "parameter 1 of unit embed");

    u = linear("head", 5, 5, 0);
    u->nexternal = 1;
    u->external[0] = (struct zero_external_ref){.unit = 0, .param = 0};
    add_ok(m, u);
    /* A tied weight counts once. */
    ck_assert_int_eq(zero_model_numel(m), 2 * 25);
    zero_model_destroy(m);
}
END_TEST

START_TEST(test_unit_params_are_validated_as_declared)
{
    struct zero_unit *u = linear("fc", 4, 3, 1);
    struct zero_error err = {0};
    const int64_t shape[2] = {3, 4}, zero[1] = {0};
    ck_assert_int_eq(zero_unit_add_param(u, "weight", 2, shape, ZERO_INIT_ZEROS, 0, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "weight declared twice"));
    ck_assert_int_eq(zero_unit_add_param(u, "scale", 5, shape, ZERO_INIT_ONES, 0, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "ndim 5"));
    ck_assert_int_eq(zero_unit_add_param(u, "scale", 1, zero, ZERO_INIT_ONES, 0, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "unit fc: parameter scale"));
    ck_assert_int_eq(zero_unit_add_param(u, "scale", 1, shape, ZERO_INIT_ONES, 0, &err), 2);
    ck_assert_int_eq(zero_param_numel(&u->params[2]), 3);
    struct zero_model *m = new_model();
    add_ok(m, u);
    zero_model_destroy(m);
}
END_TEST

START_TEST(test_numel_counts_own_params_and_find_param_uses_full_names)
{
    struct zero_model *m = new_model();
    add_ok(m, linear("layers.0", 5, 7, 1));
    add_ok(m, linear("layers.1", 7, 3, 0));
    ck_assert_int_eq(zero_model_numel(m), 5 * 7 + 7 + 7 * 3);

    int unit = -1, param = -1;
    ck_assert_int_eq(zero_model_find_param(m, "layers.0.bias", &unit, &param), 0);
    ck_assert_int_eq(unit, 0);
    ck_assert_int_eq(param, 1);
    ck_assert_int_eq(zero_model_find_param(m, "layers.1.weight", &unit, &param), 0);
    ck_assert_int_eq(unit, 1);
    ck_assert_int_eq(param, 0);
    ck_assert_int_eq(zero_model_find_param(m, "layers.1.bias", &unit, &param), -1);
    ck_assert_int_eq(zero_model_find_param(m, "layers.0", &unit, &param), -1);
    ck_assert_int_eq(zero_model_find_param(m, "layers.weight", &unit, &param), -1);
    ck_assert_int_eq(zero_model_find_param(m, "", &unit, &param), -1);
    zero_model_destroy(m);
}
END_TEST

START_TEST(test_first_unit_may_take_token_input_of_width_zero)
{
    struct zero_model *m = new_model();
    struct zero_unit *u;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_nn_gelu(&u, "act", 5, ZERO_GELU_TANH, &err), ZERO_OK);
    u->in_width = 0; /* as an embedding would declare */
    add_ok(m, u);
    ck_assert_int_eq(zero_model_numel(m), 0);
    zero_model_destroy(m);
}
END_TEST

START_TEST(test_build_mlp_1024x12_has_pytorch_names_and_count)
{
    struct zero_model *m;
    struct zero_error err = {0};
    ck_assert_msg(zero_nn_build_mlp(&m, 1024, 12, 10, &err) == ZERO_OK, "%s", err.msg);
    ck_assert_int_eq(m->nunits, 13);
    const int64_t want = 12 * (1024LL * 4096 * 2 + 4096 + 1024) + 1024 * 10 + 10;
    ck_assert_int_eq(zero_model_numel(m), want);

    ck_assert_str_eq(m->units[0]->name, "layers.0");
    ck_assert_str_eq(m->units[0]->ops->kind, "mlp_block");
    ck_assert_str_eq(m->units[11]->name, "layers.11");
    ck_assert_str_eq(m->units[12]->name, "classifier");
    ck_assert_int_eq(m->units[12]->is_loss, 1);

    static const char *const names[] = {
        "layers.0.0.weight",  "layers.0.0.bias",  "layers.0.2.weight", "layers.0.2.bias",
        "layers.11.0.weight", "layers.11.2.bias", "classifier.weight", "classifier.bias",
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        int unit, param;
        ck_assert_msg(zero_model_find_param(m, names[i], &unit, &param) == 0, "%s", names[i]);
    }

    const struct zero_param_spec *w1 = &m->units[0]->params[0], *w2 = &m->units[0]->params[2];
    ck_assert_int_eq(w1->ndim, 2);
    ck_assert_int_eq(w1->shape[0], 4096);
    ck_assert_int_eq(w1->shape[1], 1024);
    ck_assert_int_eq(w2->shape[0], 1024);
    ck_assert_int_eq(w2->shape[1], 4096);
    /* torch.nn.Linear init: U(-1/sqrt(in), 1/sqrt(in)) */
    ck_assert_int_eq(w1->init, ZERO_INIT_UNIFORM);
    ck_assert(fabsf(w1->init_a - 1.0f / 32) < 1e-7f);
    ck_assert(fabsf(w2->init_a - 1.0f / 64) < 1e-7f);
    const struct zero_param_spec *cw = &m->units[12]->params[0];
    ck_assert_int_eq(cw->shape[0], 10);
    ck_assert_int_eq(cw->shape[1], 1024);
    zero_model_destroy(m);
}
END_TEST

START_TEST(test_build_mlp_rejects_nonpositive_sizes)
{
    struct zero_model *m = (struct zero_model *)&m;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_nn_build_mlp(&m, 0, 2, 10, &err), ZERO_EINVAL);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(err.msg, "hidden"));
}
END_TEST

/* ZERO_MAX_UNITS mlp blocks of width 1 build (each new name is checked against the
 * others: quadratic, but a fraction of a second at this many); one more is refused */
START_TEST(test_a_model_holds_at_most_max_units)
{
    struct zero_model *m = NULL;
    struct zero_error err = {0};
    ck_assert_msg(zero_nn_build_mlp(&m, 1, ZERO_MAX_UNITS - 1, 2, &err) == ZERO_OK, "%s", err.msg);
    ck_assert_int_eq(m->nunits, ZERO_MAX_UNITS);
    zero_model_destroy(m);
    ck_assert_int_eq(zero_nn_build_mlp(&m, 1, ZERO_MAX_UNITS, 2, &err), ZERO_EINVAL);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(err.msg, "unit classifier: a model holds at most 4096 units"), "%s",
                  err.msg);
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, test_width_mismatch_is_rejected_naming_both_units);
    tcase_add_test(tc, test_duplicate_unit_name_is_rejected);
    tcase_add_test(tc, test_unit_after_the_loss_unit_is_rejected);
    tcase_add_test(tc, test_external_refs_must_name_an_earlier_unit_and_a_real_param);
    tcase_add_test(tc, test_unit_params_are_validated_as_declared);
    tcase_add_test(tc, test_numel_counts_own_params_and_find_param_uses_full_names);
    tcase_add_test(tc, test_first_unit_may_take_token_input_of_width_zero);
    tcase_add_test(tc, test_build_mlp_1024x12_has_pytorch_names_and_count);
    tcase_add_test(tc, test_build_mlp_rejects_nonpositive_sizes);
    tcase_add_test(tc, test_a_model_holds_at_most_max_units);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(model_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

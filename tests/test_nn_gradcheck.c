/* The built-in layers against plain float64 math: each layer's fp32 forward must
 * match a reference forward written here without the backend, and each
 * hand-written gradient (parameters and dx) must match central finite
 * differences of that reference for L = sum(y * r) (r fixed and random; for the
 * loss unit r = dloss = 1/rows, i.e. L is the mean loss). Also: gradients are
 * written fresh unless grad_accumulate asks to add, saved/scratch sizes are
 * what the layer needs, and bad labels are reported. Runs on the cpu backend. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck_rig.h"
#include "zero/nn.h"

/* ---- float64 references, written without the backend ---- */

static double gelu_erf(double x)
{
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

static double gelu_tanh(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* y (rows, out) = x (rows, in) @ w^T + b; b may be NULL */
static void ref_affine(const double *x, const double *w, const double *b, double *y, int64_t rows,
                       int64_t in, int64_t out)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t o = 0; o < out; o++) {
            double s = b != NULL ? b[o] : 0.0;
            for (int64_t k = 0; k < in; k++)
                s += x[i * in + k] * w[o * in + k];
            y[i * out + o] = s;
        }
}

/* What a reference forward sees: parameters and input in float64. */
struct ref_args {
    const struct zero_unit *u;
    double *const *p; /* the rig's float64 parameters (rig.pd) */
    const double *x;
    const int32_t *labels;
    int64_t rows;
};

static void ref_linear(const struct ref_args *a, double *y)
{
    ref_affine(a->x, a->p[0], a->u->nparams == 2 ? a->p[1] : NULL, y, a->rows, a->u->in_width,
               a->u->out_width);
}

static void ref_gelu_erf(const struct ref_args *a, double *y)
{
    for (int64_t i = 0; i < a->rows * a->u->in_width; i++)
        y[i] = gelu_erf(a->x[i]);
}

static void ref_gelu_tanh(const struct ref_args *a, double *y)
{
    for (int64_t i = 0; i < a->rows * a->u->in_width; i++)
        y[i] = gelu_tanh(a->x[i]);
}

static void ref_mlp_block(const struct ref_args *a, double *y)
{
    const int64_t rows = a->rows, width = a->u->in_width, hidden = a->u->params[0].shape[0];
    double *h = malloc((size_t)(rows * hidden) * sizeof(double)); /* (rows, hidden) */
    ck_assert_ptr_nonnull(h);
    ref_affine(a->x, a->p[0], a->p[1], h, rows, width, hidden);
    for (int64_t i = 0; i < rows * hidden; i++)
        h[i] = gelu_erf(h[i]);
    ref_affine(h, a->p[2], a->p[3], y, rows, hidden, width);
    for (int64_t i = 0; i < rows * width; i++)
        y[i] += a->x[i];
    free(h);
}

static void ref_classifier(const struct ref_args *a, double *y)
{
    const int64_t rows = a->rows, classes = a->u->params[0].shape[0];
    double *logits = malloc((size_t)(rows * classes) * sizeof(double)); /* (rows, classes) */
    ck_assert_ptr_nonnull(logits);
    ref_affine(a->x, a->p[0], a->p[1], logits, rows, a->u->in_width, classes);
    for (int64_t i = 0; i < rows; i++) {
        const double *l = logits + i * classes;
        double max = l[0], sum = 0.0;
        for (int64_t c = 1; c < classes; c++)
            max = l[c] > max ? l[c] : max;
        for (int64_t c = 0; c < classes; c++)
            sum += exp(l[c] - max);
        y[i] = max + log(sum) - l[a->labels[i]];
    }
    free(logits);
}

/* fp32 rounding of these forwards measures below 1e-7 */
static const double fwd_rtol = 2e-6;

/* The whole specification for one unit (gradcheck_rig.h). */
static void check_unit(struct zero_unit *u, ref_forward_fn ref, int64_t rows, double x_range,
                       const int32_t *labels, uint64_t seed)
{
    rig_seed(seed);
    struct rig g;
    rig_open(&g, u, rows, &(struct rig_inputs){.x_range = x_range, .labels = labels});
    const struct ref_args a = {.u = u, .p = g.pd, .x = g.xd, .labels = labels, .rows = rows};
    rig_check_unit(&g, ref, &a, fwd_rtol);
    rig_close(&g);
}

static void must(int rc, const struct zero_error *err)
{
    ck_assert_msg(rc == ZERO_OK, "%s", err->msg);
}

/* what the sizing entries see for 3 rows of fp32, no backend */
static const struct zero_unit_ctx three_rows = {
    .rows = 3, .matmul_type = ZERO_F32, .act_type = ZERO_F32};

START_TEST(test_linear_with_bias_matches_reference_and_finite_differences)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_linear(&u, "fc", 5, 7, 1, &err), &err);
    ck_assert_int_eq(u->nparams, 2);
    ck_assert_uint_eq(u->ops->saved_bytes(u, &three_rows), 0);
    ck_assert_uint_eq(u->ops->scratch_bytes(u, &three_rows), 0);
    check_unit(u, ref_linear, 3, 1.0, NULL, 11);
}
END_TEST

START_TEST(test_linear_without_bias_matches_reference_and_finite_differences)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_linear(&u, "fc", 7, 5, 0, &err), &err);
    ck_assert_int_eq(u->nparams, 1);
    check_unit(u, ref_linear, 3, 1.0, NULL, 12);
}
END_TEST

START_TEST(test_gelu_erf_matches_reference_and_finite_differences)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_gelu(&u, "act", 7, ZERO_GELU_ERF, &err), &err);
    ck_assert_int_eq(u->nparams, 0);
    check_unit(u, ref_gelu_erf, 3, 3.0, NULL, 13);
}
END_TEST

START_TEST(test_gelu_tanh_matches_reference_and_finite_differences)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_gelu(&u, "act", 5, ZERO_GELU_TANH, &err), &err);
    check_unit(u, ref_gelu_tanh, 3, 3.0, NULL, 14);
}
END_TEST

START_TEST(test_mlp_block_matches_reference_and_finite_differences)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_mlp_block(&u, "layers.0", 5, 7, &err), &err);
    ck_assert_str_eq(u->params[0].name, "0.weight");
    ck_assert_str_eq(u->params[3].name, "2.bias");
    /* saved h and gelu(h), scratch one (rows, hidden) buffer */
    ck_assert_uint_eq(u->ops->saved_bytes(u, &three_rows), 2 * 3 * 7 * sizeof(float));
    ck_assert_uint_eq(u->ops->scratch_bytes(u, &three_rows), 3 * 7 * sizeof(float));
    check_unit(u, ref_mlp_block, 3, 1.0, NULL, 15);
}
END_TEST

START_TEST(test_classifier_matches_reference_and_finite_differences_of_mean_loss)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_classifier(&u, "classifier", 5, 7, &err), &err);
    ck_assert_int_eq(u->is_loss, 1);
    ck_assert_uint_eq(u->ops->saved_bytes(u, &three_rows), 3 * 7 * sizeof(float));
    ck_assert_uint_eq(u->ops->scratch_bytes(u, &three_rows), 3 * 7 * sizeof(float));
    const int32_t labels[3] = {2, 0, 6};
    check_unit(u, ref_classifier, 3, 1.0, labels, 16);
}
END_TEST

START_TEST(test_classifier_label_out_of_range_fails_naming_the_label)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_classifier(&u, "classifier", 5, 7, &err), &err);
    const int32_t labels[3] = {1, 7, 0};
    rig_seed(17);
    struct rig g;
    rig_open(&g, u, 3, &(struct rig_inputs){.x_range = 1.0, .labels = labels});
    int rc = u->ops->forward(u, &g.ctx, g.x, g.y);
    ck_assert_int_ne(rc, ZERO_OK);
    ck_assert_msg(strstr(g.errmsg, "label 7") != NULL, "message \"%s\" does not name label 7",
                  g.errmsg);
    rig_close(&g);
}
END_TEST

static Suite *gradcheck_suite(void)
{
    Suite *s = suite_create("nn_gradcheck");
    TCase *tc = tcase_create("layers");
    tcase_add_test(tc, test_linear_with_bias_matches_reference_and_finite_differences);
    tcase_add_test(tc, test_linear_without_bias_matches_reference_and_finite_differences);
    tcase_add_test(tc, test_gelu_erf_matches_reference_and_finite_differences);
    tcase_add_test(tc, test_gelu_tanh_matches_reference_and_finite_differences);
    tcase_add_test(tc, test_mlp_block_matches_reference_and_finite_differences);
    tcase_add_test(tc, test_classifier_matches_reference_and_finite_differences_of_mean_loss);
    tcase_add_test(tc, test_classifier_label_out_of_range_fails_naming_the_label);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return rig_main(argc, argv, "test_nn_gradcheck", gradcheck_suite);
}

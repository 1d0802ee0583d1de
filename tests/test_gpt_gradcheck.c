/* The GPT units against plain float64 math: each unit's fp32 forward must match
 * a reference forward written here without the backend, and each hand-written
 * gradient (own parameters, the head's external wte, and dx) must match central
 * finite differences of that reference for L = sum(y * r) (r fixed and random;
 * for the loss unit r = dloss = 1/rows, i.e. L is the mean loss). Also:
 * parameter gradients are written fresh unless grad_accumulate asks to add,
 * saved/scratch are exactly what the unit asks for (overruns show under the
 * sanitizers), bad token ids and partial sequences are reported. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck_rig.h"
#include "zero/gpt.h"

/* ---- float64 references, written without the backend ---- */

/* What a reference forward sees: parameters (own, then external) and input in float64. */
struct ref_args {
    int64_t rows, C, NH, T, V;
    double *const *p;      /* the rig's float64 parameters (rig.pd) */
    const double *x;       /* (rows, C) or NULL */
    const int32_t *tokens; /* (rows) or NULL */
    const int32_t *labels; /* (rows) or NULL */
};

/* y (rows, out) = x (rows, in) @ w (in, out) + b (out): GPT-2's Conv1D */
static void ref_conv1d(const double *x, const double *w, const double *b, double *y, int64_t rows,
                       int64_t in, int64_t out)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t o = 0; o < out; o++) {
            double s = b[o];
            for (int64_t k = 0; k < in; k++)
                s += x[i * in + k] * w[k * out + o];
            y[i * out + o] = s;
        }
}

static void ref_layernorm_rows(const double *x, const double *w, const double *b, double *y,
                               int64_t rows, int64_t C)
{
    for (int64_t i = 0; i < rows; i++) {
        const double *xr = x + i * C;
        double mean = 0.0, var = 0.0;
        for (int64_t c = 0; c < C; c++)
            mean += xr[c];
        mean /= (double)C;
        for (int64_t c = 0; c < C; c++)
            var += (xr[c] - mean) * (xr[c] - mean);
        const double rstd = 1.0 / sqrt(var / (double)C + 1e-5);
        for (int64_t c = 0; c < C; c++)
            y[i * C + c] = (xr[c] - mean) * rstd * w[c] + b[c];
    }
}

static double gelu_tanh(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* y (rows, C) = c_proj(attention(c_attn(x))) with params p[0..3] */
static void ref_attention_params(const struct ref_args *a, double *const *p, const double *x,
                                 double *y)
{
    const int64_t rows = a->rows, C = a->C, T = a->T, NH = a->NH, hs = C / NH;
    double *qkv = rig_xmalloc((size_t)(rows * 3 * C) * sizeof(double));
    double *atty = rig_xmalloc((size_t)(rows * C) * sizeof(double));
    double *s = rig_xmalloc((size_t)T * sizeof(double));
    ref_conv1d(x, p[0], p[1], qkv, rows, C, 3 * C);
    for (int64_t b = 0; b < rows / T; b++)
        for (int64_t h = 0; h < NH; h++)
            for (int64_t i = 0; i < T; i++) {
                const double *q = qkv + (b * T + i) * 3 * C + h * hs;
                double max = -INFINITY, sum = 0.0;
                for (int64_t j = 0; j <= i; j++) {
                    const double *k = qkv + (b * T + j) * 3 * C + C + h * hs;
                    double dot = 0.0;
                    for (int64_t e = 0; e < hs; e++)
                        dot += q[e] * k[e];
                    s[j] = dot / sqrt((double)hs);
                    max = s[j] > max ? s[j] : max;
                }
                for (int64_t j = 0; j <= i; j++) {
                    s[j] = exp(s[j] - max);
                    sum += s[j];
                }
                for (int64_t e = 0; e < hs; e++) {
                    double acc = 0.0;
                    for (int64_t j = 0; j <= i; j++)
                        acc += s[j] / sum * qkv[(b * T + j) * 3 * C + 2 * C + h * hs + e];
                    atty[(b * T + i) * C + h * hs + e] = acc;
                }
            }
    ref_conv1d(atty, p[2], p[3], y, rows, C, C);
    free(qkv);
    free(atty);
    free(s);
}

static void ref_layernorm(const struct ref_args *a, double *y)
{
    ref_layernorm_rows(a->x, a->p[0], a->p[1], y, a->rows, a->C);
}

static void ref_attention(const struct ref_args *a, double *y)
{
    ref_attention_params(a, a->p, a->x, y);
}

static void ref_block(const struct ref_args *a, double *y)
{
    const int64_t rows = a->rows, C = a->C, n = rows * C;
    double *ln = rig_xmalloc((size_t)n * sizeof(double));
    double *x2 = rig_xmalloc((size_t)n * sizeof(double));
    double *fc = rig_xmalloc((size_t)(4 * n) * sizeof(double));
    ref_layernorm_rows(a->x, a->p[0], a->p[1], ln, rows, C);
    ref_attention_params(a, a->p + 2, ln, x2);
    for (int64_t i = 0; i < n; i++)
        x2[i] += a->x[i];
    ref_layernorm_rows(x2, a->p[6], a->p[7], ln, rows, C);
    ref_conv1d(ln, a->p[8], a->p[9], fc, rows, C, 4 * C);
    for (int64_t i = 0; i < 4 * n; i++)
        fc[i] = gelu_tanh(fc[i]);
    ref_conv1d(fc, a->p[10], a->p[11], y, rows, 4 * C, C);
    for (int64_t i = 0; i < n; i++)
        y[i] += x2[i];
    free(ln);
    free(x2);
    free(fc);
}

static void ref_token_embedding(const struct ref_args *a, double *y)
{
    for (int64_t i = 0; i < a->rows; i++)
        for (int64_t c = 0; c < a->C; c++)
            y[i * a->C + c] = a->p[0][a->tokens[i] * a->C + c];
}

static void ref_position_embedding(const struct ref_args *a, double *y)
{
    for (int64_t i = 0; i < a->rows; i++)
        for (int64_t c = 0; c < a->C; c++)
            y[i * a->C + c] = a->x[i * a->C + c] + a->p[0][(i % a->T) * a->C + c];
}

/* loss (rows) = cross_entropy(ln_f(x) @ wte^T, label); wte is slot 2 */
static void ref_head(const struct ref_args *a, double *y)
{
    const int64_t rows = a->rows, C = a->C, V = a->V;
    double *h = rig_xmalloc((size_t)(rows * C) * sizeof(double));
    double *logits = rig_xmalloc((size_t)V * sizeof(double));
    ref_layernorm_rows(a->x, a->p[0], a->p[1], h, rows, C);
    for (int64_t i = 0; i < rows; i++) {
        double max = -INFINITY, sum = 0.0;
        for (int64_t v = 0; v < V; v++) {
            double s = 0.0;
            for (int64_t c = 0; c < C; c++)
                s += h[i * C + c] * a->p[2][v * C + c];
            logits[v] = s;
            max = s > max ? s : max;
        }
        for (int64_t v = 0; v < V; v++)
            sum += exp(logits[v] - max);
        y[i] = max + log(sum) - logits[a->labels[i]];
    }
    free(h);
    free(logits);
}

/* a block is LayerNorm, attention and MLP in a row: fp32 rounding measures ~1e-6 */
static const double fwd_rtol = 1e-5;

/* The shape of the data a unit sees. */
struct shape {
    int64_t B, T, C, NH, V;
};

/* The whole specification for one unit (gradcheck_rig.h). */
static void check_unit(struct zero_unit *u, ref_forward_fn ref, struct shape sh, uint64_t seed)
{
    rig_seed(seed);
    const int64_t rows = sh.B * sh.T;
    int32_t *tokens = rig_xmalloc((size_t)rows * sizeof(int32_t));
    int32_t *labels = rig_xmalloc((size_t)rows * sizeof(int32_t));
    for (int64_t i = 0; i < rows; i++) {
        tokens[i] = (int32_t)((rig_uniform(0.5) + 0.5) * (double)sh.V) % (int32_t)sh.V;
        labels[i] = (int32_t)((i * 7 + 3) % sh.V);
    }
    const int64_t wte_len = sh.V * sh.C;
    struct rig g;
    rig_open(&g, u, rows,
             &(struct rig_inputs){
                 .x_range = 1.0, .external_len = &wte_len, .tokens = tokens, .labels = labels});
    const struct ref_args a = {.rows = rows,
                               .C = sh.C,
                               .NH = sh.NH,
                               .T = sh.T,
                               .V = sh.V,
                               .p = g.pd,
                               .x = g.in > 0 ? g.xd : NULL,
                               .tokens = tokens,
                               .labels = labels};
    rig_check_unit(&g, ref, &a, fwd_rtol);
    free(tokens);
    free(labels);
    rig_close(&g);
}

static void must(int rc, const struct zero_error *err)
{
    ck_assert_msg(rc == ZERO_OK, "%s", err->msg);
}

static const struct shape small = {.B = 2, .T = 3, .C = 8, .NH = 2, .V = 11};

START_TEST(test_layernorm_matches_reference_and_finite_differences)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_layernorm(&u, "ln", small.C, &err), &err);
    ck_assert_str_eq(u->params[0].name, "weight");
    ck_assert_str_eq(u->params[1].name, "bias");
    check_unit(u, ref_layernorm, small, 21);
}
END_TEST

START_TEST(test_token_embedding_matches_reference_and_finite_differences)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_token_embedding(&u, "wte", small.V, small.C, &err), &err);
    ck_assert_int_eq(u->in_width, 0);
    check_unit(u, ref_token_embedding, small, 22);
}
END_TEST

START_TEST(test_position_embedding_matches_reference_and_finite_differences)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_position_embedding(&u, "wpe", small.T, small.C, &err), &err);
    ck_assert_int_eq(u->params[0].shape[0], small.T);
    check_unit(u, ref_position_embedding, small, 23);
}
END_TEST

START_TEST(test_attention_matches_reference_and_finite_differences)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_causal_self_attention(&u, "attn", small.C, (int)small.NH, small.T, &err), &err);
    ck_assert_str_eq(u->params[0].name, "c_attn.weight");
    ck_assert_int_eq(u->params[0].shape[0], small.C); /* [in, out] as GPT-2's Conv1D */
    ck_assert_int_eq(u->params[0].shape[1], 3 * small.C);
    check_unit(u, ref_attention, small, 24);
}
END_TEST

START_TEST(test_attention_with_one_head_and_longer_sequences_matches_reference)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    const struct shape sh = {.B = 1, .T = 5, .C = 4, .NH = 1, .V = 3};
    must(zero_nn_causal_self_attention(&u, "attn", sh.C, (int)sh.NH, sh.T, &err), &err);
    check_unit(u, ref_attention, sh, 25);
}
END_TEST

START_TEST(test_block_matches_reference_and_finite_differences)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_gpt_block(&u, "h.0", small.C, (int)small.NH, small.T, 2, &err), &err);
    const char *names[12] = {"ln_1.weight",      "ln_1.bias",          "attn.c_attn.weight",
                             "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
                             "ln_2.weight",      "ln_2.bias",          "mlp.c_fc.weight",
                             "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias"};
    ck_assert_int_eq(u->nparams, 12);
    for (int p = 0; p < 12; p++)
        ck_assert_str_eq(u->params[p].name, names[p]);
    check_unit(u, ref_block, small, 26);
}
END_TEST

START_TEST(test_head_matches_reference_and_finite_differences_of_mean_loss)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_gpt_head(&u, "ln_f", small.C, small.V, 0, 0, &err), &err);
    ck_assert_int_eq(u->is_loss, 1);
    ck_assert_int_eq(u->nexternal, 1);
    ck_assert_int_eq(u->predict_width, small.V);
    check_unit(u, ref_head, small, 27);
}
END_TEST

START_TEST(test_head_predict_gives_the_logits)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_gpt_head(&u, "ln_f", small.C, small.V, 0, 0, &err), &err);
    rig_seed(28);
    const int64_t rows = small.B * small.T, wte_len = small.V * small.C;
    struct rig g;
    rig_open(&g, u, rows, &(struct rig_inputs){.x_range = 1.0, .external_len = &wte_len});
    float *logits = rig_dev_alloc((size_t)(rows * small.V) * sizeof(float), ZERO_TAG_ACTIVATIONS);
    ck_assert_msg(u->ops->predict(u, &g.ctx, g.x, logits) == ZERO_OK, "%s", g.errmsg);
    float *got = rig_xmalloc((size_t)(rows * small.V) * sizeof(float));
    rig_download(got, logits, (size_t)(rows * small.V) * sizeof(float));
    /* the loss of label v at row i is logsumexp - logit v: check via the reference */
    const struct ref_args a = {.rows = rows, .C = small.C, .V = small.V, .p = g.pd, .x = g.xd};
    double *h = rig_xmalloc((size_t)(rows * small.C) * sizeof(double));
    ref_layernorm_rows(a.x, a.p[0], a.p[1], h, rows, small.C);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t v = 0; v < small.V; v++) {
            double s = 0.0;
            for (int64_t c = 0; c < small.C; c++)
                s += h[i * small.C + c] * a.p[2][v * small.C + c];
            ck_assert_msg(fabs(got[i * small.V + v] - s) <= fwd_rtol * fmax(1.0, fabs(s)),
                          "logit [%lld, %lld] = %.9g, reference %.9g", (long long)i, (long long)v,
                          got[i * small.V + v], s);
        }
    free(h);
    free(got);
    rig_dev->be->free(rig_dev->self, logits);
    rig_close(&g);
}
END_TEST

START_TEST(test_token_id_out_of_range_fails_naming_the_id)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_token_embedding(&u, "wte", 5, 4, &err), &err);
    const int32_t tokens[3] = {1, 5, 0};
    rig_seed(29);
    struct rig g;
    rig_open(&g, u, 3, &(struct rig_inputs){.x_range = 1.0, .tokens = tokens});
    ck_assert_int_ne(u->ops->forward(u, &g.ctx, NULL, g.y), ZERO_OK);
    ck_assert_msg(strstr(g.errmsg, "token id 5") != NULL, "message \"%s\" does not name id 5",
                  g.errmsg);
    rig_close(&g);
}
END_TEST

START_TEST(test_rows_that_are_not_whole_sequences_fail)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_gpt_block(&u, "h.0", 8, 2, 4, 1, &err), &err);
    rig_seed(30);
    struct rig g;
    rig_open(&g, u, 6, &(struct rig_inputs){.x_range = 1.0}); /* 6 rows, T = 4 */
    ck_assert_int_ne(u->ops->forward(u, &g.ctx, g.x, g.y), ZERO_OK);
    ck_assert_msg(strstr(g.errmsg, "sequences of 4 tokens") != NULL, "message: \"%s\"", g.errmsg);
    rig_close(&g);
}
END_TEST

START_TEST(test_gpt_parameter_names_are_hugging_face_gpt2_names)
{
    struct zero_model *m;
    struct zero_error err = {0};
    const struct zero_gpt_config c = {
        .n_layer = 2, .n_head = 2, .n_embd = 8, .block_size = 4, .vocab_size = 11};
    must(zero_nn_build_gpt(&m, &c, &err), &err);
    ck_assert_int_eq(m->nunits, 5);
    const char *names[] = {
        "wte.weight",          "wpe.weight",  "h.0.ln_1.weight", "h.1.attn.c_attn.weight",
        "h.1.mlp.c_proj.bias", "ln_f.weight", "ln_f.bias"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        int unit, param;
        ck_assert_msg(zero_model_find_param(m, names[i], &unit, &param) == 0, "%s missing",
                      names[i]);
    }
    /* GPT-2's parameter count: V C + T C + L (12 C^2 + 13 C) + 2 C */
    const int64_t C = 8, want = 11 * C + 4 * C + 2 * (12 * C * C + 13 * C) + 2 * C;
    ck_assert_int_eq(zero_model_numel(m), want);
    /* the head is tied to wte: unit 0, parameter 0 */
    const struct zero_unit *head = m->units[m->nunits - 1];
    ck_assert_int_eq(head->nexternal, 1);
    ck_assert_int_eq(head->external[0].unit, 0);
    ck_assert_int_eq(head->external[0].param, 0);
    zero_model_destroy(m);
}
END_TEST

static Suite *gradcheck_suite(void)
{
    Suite *s = suite_create("gpt_gradcheck");
    TCase *tc = tcase_create("layers");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_layernorm_matches_reference_and_finite_differences);
    tcase_add_test(tc, test_token_embedding_matches_reference_and_finite_differences);
    tcase_add_test(tc, test_position_embedding_matches_reference_and_finite_differences);
    tcase_add_test(tc, test_attention_matches_reference_and_finite_differences);
    tcase_add_test(tc, test_attention_with_one_head_and_longer_sequences_matches_reference);
    tcase_add_test(tc, test_block_matches_reference_and_finite_differences);
    tcase_add_test(tc, test_head_matches_reference_and_finite_differences_of_mean_loss);
    tcase_add_test(tc, test_head_predict_gives_the_logits);
    tcase_add_test(tc, test_token_id_out_of_range_fails_naming_the_id);
    tcase_add_test(tc, test_rows_that_are_not_whole_sequences_fail);
    tcase_add_test(tc, test_gpt_parameter_names_are_hugging_face_gpt2_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return rig_main(argc, argv, "test_gpt_gradcheck", gradcheck_suite);
}

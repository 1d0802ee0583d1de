/* The built-in layers against plain float64 math: each layer's fp32 forward must
 * match a reference forward written here without the backend, and each
 * hand-written gradient (parameters and dx) must match central finite
 * differences of that reference for L = sum(y * r) (r fixed and random; for the
 * loss unit r = dloss = 1/rows, i.e. L is the mean loss). Also: gradients are
 * written fresh unless grad_accumulate asks to add, saved/scratch sizes are
 * what the layer needs, and bad labels are reported. Runs on the cpu backend. */
#include <check.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "zero/nn.h"
#include "nn/nn_internal.h" /* zero_unit_destroy */

#define NSLOTS (ZERO_UNIT_MAX_PARAMS + ZERO_UNIT_MAX_EXTERNAL)

static struct zero_device *dev;

/* ---- deterministic inputs ---- */

static uint64_t rng_state;

/* Uniform in [-a, a), from splitmix64. */
static double uniform(double a)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return a * (2.0 * (double)(z >> 11) / 9007199254740992.0 - 1.0);
}

static float *random_floats(size_t n, double a)
{
    float *x = malloc(n * sizeof(float));
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)uniform(a);
    return x;
}

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
    double *p[NSLOTS];
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

/* ---- the unit on the backend ---- */

/* A unit with its memory on the device and host copies of its inputs. */
struct rig {
    struct zero_unit *u;
    int64_t rows, in, out;
    int np;
    float *hp[NSLOTS]; /* host parameters */
    float *hx, *hr;    /* host x (rows, in), r (rows, out) */
    int32_t *hlabels;  /* host labels (rows) or NULL */
    float *param[NSLOTS], *grad[NSLOTS];
    float *x, *y, *dy, *dx;
    int32_t *labels;
    void *saved, *scratch;
    char errmsg[ZERO_ERRMSG_LEN];
    struct zero_unit_ctx ctx;
};

static void *dev_alloc(size_t bytes, enum zero_tag tag)
{
    void *p = NULL;
    if (bytes == 0)
        return NULL;
    ck_assert_msg(dev->be->alloc(dev->self, bytes, tag, &p) == ZERO_OK, "%s",
                  dev->be->last_error(dev->self));
    return p;
}

static void upload(void *d, const void *h, size_t bytes)
{
    ck_assert_int_eq(dev->be->from_host(dev->self, d, h, bytes), ZERO_OK);
}

static void download(void *h, const void *d, size_t bytes)
{
    ck_assert_int_eq(dev->be->to_host(dev->self, h, d, bytes), ZERO_OK);
}

static void rig_open(struct rig *g, struct zero_unit *u, int64_t rows, double x_range,
                     const int32_t *labels)
{
    memset(g, 0, sizeof(*g));
    g->u = u;
    g->rows = rows;
    g->in = u->in_width;
    g->out = u->out_width;
    g->np = u->nparams;
    for (int p = 0; p < g->np; p++) {
        size_t n = (size_t)zero_param_numel(&u->params[p]);
        g->hp[p] = random_floats(n, 0.5);
        g->param[p] = dev_alloc(n * sizeof(float), ZERO_TAG_PARAMS);
        g->grad[p] = dev_alloc(n * sizeof(float), ZERO_TAG_GRADS);
        upload(g->param[p], g->hp[p], n * sizeof(float));
    }
    g->hx = random_floats((size_t)(rows * g->in), x_range);
    g->hr = random_floats((size_t)(rows * g->out), 1.0);
    if (u->is_loss)
        for (int64_t i = 0; i < rows; i++)
            g->hr[i] = 1.0f / (float)rows; /* dloss of a mean loss */
    g->x = dev_alloc((size_t)(rows * g->in) * sizeof(float), ZERO_TAG_ACTIVATIONS);
    g->y = dev_alloc((size_t)(rows * g->out) * sizeof(float), ZERO_TAG_ACTIVATIONS);
    g->dy = dev_alloc((size_t)(rows * g->out) * sizeof(float), ZERO_TAG_ACTIVATIONS);
    g->dx = dev_alloc((size_t)(rows * g->in) * sizeof(float), ZERO_TAG_ACTIVATIONS);
    upload(g->x, g->hx, (size_t)(rows * g->in) * sizeof(float));
    upload(g->dy, g->hr, (size_t)(rows * g->out) * sizeof(float));
    if (labels != NULL) {
        g->hlabels = malloc((size_t)rows * sizeof(int32_t));
        ck_assert_ptr_nonnull(g->hlabels);
        memcpy(g->hlabels, labels, (size_t)rows * sizeof(int32_t));
        g->labels = dev_alloc((size_t)rows * sizeof(int32_t), ZERO_TAG_ACTIVATIONS);
        upload(g->labels, labels, (size_t)rows * sizeof(int32_t));
    }
    /* Exactly the sizes the unit asks for: an overrun shows under the sanitizers. */
    g->saved = dev_alloc(u->ops->saved_bytes(u, rows), ZERO_TAG_ACTIVATIONS);
    g->scratch = dev_alloc(u->ops->scratch_bytes(u, rows), ZERO_TAG_WORKSPACE);

    struct zero_unit_ctx *c = &g->ctx;
    c->be = dev->be;
    c->bself = dev->self;
    c->rows = rows;
    for (int p = 0; p < g->np; p++) {
        c->param[p] = g->param[p];
        c->grad[p] = g->grad[p];
    }
    c->saved = g->saved;
    c->scratch = g->scratch;
    c->labels = g->labels;
    c->dloss = 1.0f / (float)rows;
    c->errmsg = g->errmsg;
    c->errlen = sizeof(g->errmsg);
}

static void rig_close(struct rig *g)
{
    for (int p = 0; p < g->np; p++) {
        free(g->hp[p]);
        dev->be->free(dev->self, g->param[p]);
        dev->be->free(dev->self, g->grad[p]);
    }
    free(g->hx);
    free(g->hr);
    free(g->hlabels);
    void *bufs[] = {g->x, g->y, g->dy, g->dx, g->labels, g->saved, g->scratch};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        dev->be->free(dev->self, bufs[i]);
    zero_unit_destroy(g->u);
}

static void rig_forward(struct rig *g)
{
    int rc = g->u->ops->forward(g->u, &g->ctx, g->in > 0 ? g->x : NULL, g->y);
    ck_assert_msg(rc == ZERO_OK, "%s forward: %s", g->u->name, g->errmsg);
}

/* Backward with every grad_accumulate flag set to acc; dx NULL when !want_dx. */
static void rig_backward(struct rig *g, int acc, int want_dx)
{
    for (int p = 0; p < g->np; p++)
        g->ctx.grad_accumulate[p] = acc;
    int rc = g->u->ops->backward(g->u, &g->ctx, g->x, g->u->is_loss ? NULL : g->dy,
                                 want_dx ? g->dx : NULL);
    ck_assert_msg(rc == ZERO_OK, "%s backward: %s", g->u->name, g->errmsg);
}

/* Gradients on the host: slot p < np is parameter p, slot np is dx. */
struct grads {
    int n;
    float *g[NSLOTS + 1];
    size_t len[NSLOTS + 1];
};

static void grads_download(struct rig *g, struct grads *out, int with_dx)
{
    out->n = g->np + (with_dx ? 1 : 0);
    for (int p = 0; p < out->n; p++) {
        int is_dx = p == g->np;
        out->len[p] =
            is_dx ? (size_t)(g->rows * g->in) : (size_t)zero_param_numel(&g->u->params[p]);
        out->g[p] = malloc(out->len[p] * sizeof(float));
        ck_assert_ptr_nonnull(out->g[p]);
        download(out->g[p], is_dx ? g->dx : g->grad[p], out->len[p] * sizeof(float));
    }
}

static void grads_free(struct grads *gr)
{
    for (int p = 0; p < gr->n; p++)
        free(gr->g[p]);
}

/* Poisons every gradient buffer so that a backward which reads instead of
 * overwriting shows. */
static void poison_grads(struct rig *g)
{
    for (int p = 0; p < g->np; p++)
        dev->be->fill(dev->self, g->grad[p], ZERO_F32, 1234.5,
                      (size_t)zero_param_numel(&g->u->params[p]));
    dev->be->fill(dev->self, g->dx, ZERO_F32, -999.0, (size_t)(g->rows * g->in));
}

static double *to_double(const float *x, size_t n)
{
    double *d = malloc((n > 0 ? n : 1) * sizeof(double));
    ck_assert_ptr_nonnull(d);
    for (size_t i = 0; i < n; i++)
        d[i] = x[i];
    return d;
}

/* fp32 rounding of these forwards measures below 1e-7 */
static const double fwd_rtol = 2e-6;

/* The whole specification for one unit. */
static void check_unit(struct zero_unit *u, ref_forward_fn ref, int64_t rows, double x_range,
                       const int32_t *labels, uint64_t seed)
{
    rng_state = seed;
    struct rig g;
    rig_open(&g, u, rows, x_range, labels);
    const size_t ny = (size_t)(rows * g.out), nx = (size_t)(rows * g.in);

    /* (1) the fp32 forward against the float64 reference */
    struct ref_args a = {.u = u, .labels = labels, .rows = rows};
    for (int p = 0; p < g.np; p++)
        a.p[p] = to_double(g.hp[p], (size_t)zero_param_numel(&u->params[p]));
    double *xd = to_double(g.hx, nx), *rd = to_double(g.hr, ny);
    double *yref = malloc(ny * sizeof(double));
    float *y = malloc(ny * sizeof(float));
    ck_assert(yref != NULL && y != NULL);
    a.x = xd;
    ref(&a, yref);
    rig_forward(&g);
    download(y, g.y, ny * sizeof(float));
    for (size_t i = 0; i < ny; i++)
        ck_assert_msg(fabs(y[i] - yref[i]) <= fwd_rtol * fmax(1.0, fabs(yref[i])),
                      "%s: y[%zu] = %.9g, float64 reference %.9g", u->name, i, y[i], yref[i]);

    /* (2) every gradient against central differences of the reference */
    poison_grads(&g);
    rig_backward(&g, 0, g.in > 0);
    struct grads got;
    grads_download(&g, &got, g.in > 0);
    const struct gradcheck fd = {
        .forward = ref, .args = &a, .r = rd, .y = yref, .ny = ny, .unit = u->name};
    for (int p = 0; p < got.n; p++) {
        const int is_dx = p == g.np;
        const char *what = is_dx ? "dx" : u->params[p].name;
        gradcheck_tensor(&fd, what, is_dx ? xd : a.p[p], got.g[p], got.len[p]);
    }

    /* (3) grad_accumulate = 1 adds: a second backward doubles every parameter
     * gradient, while dx is written fresh */
    rig_backward(&g, 1, g.in > 0);
    struct grads twice;
    grads_download(&g, &twice, g.in > 0);
    for (int p = 0; p < twice.n; p++) {
        const float want_factor = p == g.np ? 1.0f : 2.0f;
        for (size_t j = 0; j < twice.len[p]; j++) {
            const double want = want_factor * got.g[p][j];
            ck_assert_msg(fabs(twice.g[p][j] - want) <= 1e-5 * fmax(fabs(want), 1e-3),
                          "%s: slot %d [%zu] after accumulation %.9g, want %.9g", u->name, p, j,
                          twice.g[p][j], want);
        }
    }

    /* (4) grad_accumulate = 0 writes fresh again (same bits as the first time),
     * and dx = NULL (the first unit) is allowed */
    rig_backward(&g, 0, 0);
    struct grads again;
    grads_download(&g, &again, 0);
    for (int p = 0; p < g.np; p++)
        ck_assert_msg(memcmp(again.g[p], got.g[p], got.len[p] * sizeof(float)) == 0,
                      "%s: %s differs after a fresh backward", u->name, u->params[p].name);

    grads_free(&got);
    grads_free(&twice);
    grads_free(&again);
    for (int p = 0; p < g.np; p++)
        free(a.p[p]);
    free(xd);
    free(rd);
    free(yref);
    free(y);
    rig_close(&g);
}

static void must(int rc, const struct zero_error *err)
{
    ck_assert_msg(rc == ZERO_OK, "%s", err->msg);
}

START_TEST(test_linear_with_bias_matches_reference_and_finite_differences)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_linear(&u, "fc", 5, 7, 1, &err), &err);
    ck_assert_int_eq(u->nparams, 2);
    ck_assert_uint_eq(u->ops->saved_bytes(u, 3), 0);
    ck_assert_uint_eq(u->ops->scratch_bytes(u, 3), 0);
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
    ck_assert_uint_eq(u->ops->saved_bytes(u, 3), 2 * 3 * 7 * sizeof(float));
    ck_assert_uint_eq(u->ops->scratch_bytes(u, 3), 3 * 7 * sizeof(float));
    check_unit(u, ref_mlp_block, 3, 1.0, NULL, 15);
}
END_TEST

START_TEST(test_classifier_matches_reference_and_finite_differences_of_mean_loss)
{
    struct zero_unit *u;
    struct zero_error err = {0};
    must(zero_nn_classifier(&u, "classifier", 5, 7, &err), &err);
    ck_assert_int_eq(u->is_loss, 1);
    ck_assert_uint_eq(u->ops->saved_bytes(u, 3), 3 * 7 * sizeof(float));
    ck_assert_uint_eq(u->ops->scratch_bytes(u, 3), 3 * 7 * sizeof(float));
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
    rng_state = 17;
    struct rig g;
    rig_open(&g, u, 3, 1.0, labels);
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
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    struct zero_error err = {0};
    if (zero_device_open(&dev, "cpu", &comm, &opt, &err) != ZERO_OK) {
        fprintf(stderr, "test_nn_gradcheck: %s\n", err.msg);
        MPI_Finalize();
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(gradcheck_suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    zero_device_close(dev);
    MPI_Finalize();
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

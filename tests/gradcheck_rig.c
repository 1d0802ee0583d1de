/* See gradcheck_rig.h. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck_rig.h"

struct zero_device *rig_dev;

/* ---- deterministic inputs ---- */

static uint64_t rng_state;

void rig_seed(uint64_t seed)
{
    rng_state = seed;
}

double rig_uniform(double a)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return a * (2.0 * (double)(z >> 11) / 9007199254740992.0 - 1.0);
}

void *rig_xmalloc(size_t bytes)
{
    void *p = malloc(bytes > 0 ? bytes : 1);
    ck_assert_ptr_nonnull(p);
    return p;
}

float *rig_random_floats(size_t n, double a)
{
    float *x = rig_xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rig_uniform(a);
    return x;
}

double *rig_to_double(const float *x, size_t n)
{
    double *d = rig_xmalloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++)
        d[i] = x[i];
    return d;
}

/* ---- device memory ---- */

void *rig_dev_alloc(size_t bytes, enum zero_tag tag)
{
    void *p = NULL;
    if (bytes == 0)
        return NULL;
    ck_assert_msg(rig_dev->be->alloc(rig_dev->self, bytes, tag, &p) == ZERO_OK, "%s",
                  rig_dev->be->last_error(rig_dev->self));
    return p;
}

void rig_upload(void *d, const void *h, size_t bytes)
{
    ck_assert_int_eq(rig_dev->be->from_host(rig_dev->self, d, h, bytes), ZERO_OK);
}

void rig_download(void *h, const void *d, size_t bytes)
{
    ck_assert_int_eq(rig_dev->be->to_host(rig_dev->self, h, d, bytes), ZERO_OK);
}

static int32_t *dev_ints(const int32_t *h, int64_t n)
{
    int32_t *d = rig_dev_alloc((size_t)n * sizeof(int32_t), ZERO_TAG_ACTIVATIONS);
    rig_upload(d, h, (size_t)n * sizeof(int32_t));
    return d;
}

/* ---- the unit on the backend ---- */

void rig_open(struct rig *g, struct zero_unit *u, int64_t rows, const struct rig_inputs *in)
{
    memset(g, 0, sizeof(*g));
    g->u = u;
    g->rows = rows;
    g->in = u->in_width;
    g->out = u->out_width;
    g->np = u->nparams;
    g->nslots = u->nparams + u->nexternal;
    for (int p = 0; p < g->nslots; p++) {
        g->len[p] = p < g->np ? (size_t)zero_param_numel(&u->params[p])
                              : (size_t)in->external_len[p - g->np];
        g->hp[p] = rig_random_floats(g->len[p], 0.5);
        g->param[p] = rig_dev_alloc(g->len[p] * sizeof(float), ZERO_TAG_PARAMS);
        g->grad[p] = rig_dev_alloc(g->len[p] * sizeof(float), ZERO_TAG_GRADS);
        rig_upload(g->param[p], g->hp[p], g->len[p] * sizeof(float));
        g->pd[p] = rig_to_double(g->hp[p], g->len[p]);
    }
    const size_t nx = (size_t)(rows * g->in), ny = (size_t)(rows * g->out);
    g->hx = rig_random_floats(nx, in->x_range);
    g->hr = rig_random_floats(ny, 1.0);
    if (u->is_loss)
        for (int64_t i = 0; i < rows; i++)
            g->hr[i] = 1.0f / (float)rows; /* dloss of a mean loss */
    g->xd = rig_to_double(g->hx, nx);
    g->rd = rig_to_double(g->hr, ny);
    g->x = rig_dev_alloc(nx * sizeof(float), ZERO_TAG_ACTIVATIONS);
    g->y = rig_dev_alloc(ny * sizeof(float), ZERO_TAG_ACTIVATIONS);
    g->dy = rig_dev_alloc(ny * sizeof(float), ZERO_TAG_ACTIVATIONS);
    g->dx = rig_dev_alloc(nx * sizeof(float), ZERO_TAG_ACTIVATIONS);
    if (g->in > 0)
        rig_upload(g->x, g->hx, nx * sizeof(float));
    rig_upload(g->dy, g->hr, ny * sizeof(float));
    if (in->tokens != NULL)
        g->tokens = dev_ints(in->tokens, rows);
    if (in->labels != NULL)
        g->labels = dev_ints(in->labels, rows);
    const struct zero_unit_ctx sizing = {.be = rig_dev->be,
                                         .bself = rig_dev->self,
                                         .rows = rows,
                                         .matmul_type = ZERO_F32,
                                         .act_type = ZERO_F32};
    g->saved = rig_dev_alloc(u->ops->saved_bytes(u, &sizing), ZERO_TAG_ACTIVATIONS);
    g->scratch = rig_dev_alloc(u->ops->scratch_bytes(u, &sizing), ZERO_TAG_WORKSPACE);

    struct zero_unit_ctx *c = &g->ctx;
    c->be = rig_dev->be;
    c->bself = rig_dev->self;
    c->rows = rows;
    for (int p = 0; p < g->nslots; p++) {
        c->param[p] = g->param[p];
        c->grad[p] = g->grad[p];
    }
    c->saved = g->saved;
    c->scratch = g->scratch;
    c->tokens = g->tokens;
    c->labels = g->labels;
    c->dloss = 1.0f / (float)rows;
    c->errmsg = g->errmsg;
    c->errlen = sizeof(g->errmsg);
}

void rig_close(struct rig *g)
{
    for (int p = 0; p < g->nslots; p++) {
        free(g->hp[p]);
        free(g->pd[p]);
        rig_dev->be->free(rig_dev->self, g->param[p]);
        rig_dev->be->free(rig_dev->self, g->grad[p]);
    }
    free(g->hx);
    free(g->hr);
    free(g->xd);
    free(g->rd);
    void *bufs[] = {g->x, g->y, g->dy, g->dx, g->tokens, g->labels, g->saved, g->scratch};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        rig_dev->be->free(rig_dev->self, bufs[i]);
    zero_unit_destroy(g->u);
}

void rig_forward(struct rig *g)
{
    int rc = g->u->ops->forward(g->u, &g->ctx, g->in > 0 ? g->x : NULL, g->y);
    ck_assert_msg(rc == ZERO_OK, "%s forward: %s", g->u->name, g->errmsg);
}

void rig_backward(struct rig *g, int acc, int want_dx)
{
    for (int p = 0; p < g->nslots; p++)
        g->ctx.grad_accumulate[p] = acc;
    int rc = g->u->ops->backward(g->u, &g->ctx, g->in > 0 ? g->x : NULL,
                                 g->u->is_loss ? NULL : g->dy, want_dx ? g->dx : NULL);
    ck_assert_msg(rc == ZERO_OK, "%s backward: %s", g->u->name, g->errmsg);
}

/* Gradients on the host: slot p < nslots is parameter p, slot nslots is dx. */
struct grads {
    int n;
    float *g[RIG_SLOTS + 1];
    size_t len[RIG_SLOTS + 1];
};

static void grads_download(struct rig *g, struct grads *out, int with_dx)
{
    out->n = g->nslots + (with_dx ? 1 : 0);
    for (int p = 0; p < out->n; p++) {
        int is_dx = p == g->nslots;
        out->len[p] = is_dx ? (size_t)(g->rows * g->in) : g->len[p];
        out->g[p] = rig_xmalloc(out->len[p] * sizeof(float));
        rig_download(out->g[p], is_dx ? g->dx : g->grad[p], out->len[p] * sizeof(float));
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
    for (int p = 0; p < g->nslots; p++)
        rig_dev->be->fill(rig_dev->self, g->grad[p], ZERO_F32, 1234.5, g->len[p]);
    if (g->in > 0)
        rig_dev->be->fill(rig_dev->self, g->dx, ZERO_F32, -999.0, (size_t)(g->rows * g->in));
}

/* What slot p holds: a parameter's name, "external", or "x" for dx. */
static const char *slot_name(const struct rig *g, int p)
{
    return p == g->nslots ? "x" : p < g->np ? g->u->params[p].name : "external";
}

void rig_check_unit(struct rig *g, ref_forward_fn ref, const struct ref_args *a, double fwd_rtol)
{
    const struct zero_unit *u = g->u;
    const size_t ny = (size_t)(g->rows * g->out);

    /* (1) the fp32 forward against the float64 reference */
    double *yref = rig_xmalloc(ny * sizeof(double));
    float *y = rig_xmalloc(ny * sizeof(float));
    ref(a, yref);
    rig_forward(g);
    rig_download(y, g->y, ny * sizeof(float));
    for (size_t i = 0; i < ny; i++)
        ck_assert_msg(fabs(y[i] - yref[i]) <= fwd_rtol * fmax(1.0, fabs(yref[i])),
                      "%s: y[%zu] = %.9g, float64 reference %.9g", u->name, i, y[i], yref[i]);

    /* (2) every gradient against central differences of the reference */
    poison_grads(g);
    rig_backward(g, 0, g->in > 0);
    struct grads got;
    grads_download(g, &got, g->in > 0);
    const struct gradcheck fd = {
        .forward = ref, .args = a, .r = g->rd, .y = yref, .ny = ny, .unit = u->name};
    for (int p = 0; p < got.n; p++)
        gradcheck_tensor(&fd, slot_name(g, p), p == g->nslots ? g->xd : g->pd[p], got.g[p],
                         got.len[p]);

    /* (3) grad_accumulate = 1 adds: a second backward doubles every parameter
     * gradient, while dx is written fresh */
    rig_backward(g, 1, g->in > 0);
    struct grads twice;
    grads_download(g, &twice, g->in > 0);
    for (int p = 0; p < twice.n; p++) {
        const float factor = p == g->nslots ? 1.0f : 2.0f;
        for (size_t j = 0; j < twice.len[p]; j++) {
            const double want = factor * got.g[p][j];
            ck_assert_msg(fabs(twice.g[p][j] - want) <= 1e-5 * fmax(fabs(want), 1e-3),
                          "%s: %s [%zu] after accumulation %.9g, want %.9g", u->name,
                          slot_name(g, p), j, twice.g[p][j], want);
        }
    }

    /* (4) grad_accumulate = 0 writes fresh again (same bits as the first time),
     * and dx = NULL (the first unit) is allowed */
    rig_backward(g, 0, 0);
    struct grads again;
    grads_download(g, &again, 0);
    for (int p = 0; p < g->nslots; p++)
        ck_assert_msg(memcmp(again.g[p], got.g[p], got.len[p] * sizeof(float)) == 0,
                      "%s: %s differs after a fresh backward", u->name, slot_name(g, p));

    grads_free(&got);
    grads_free(&twice);
    grads_free(&again);
    free(yref);
    free(y);
}

int rig_main(int argc, char **argv, const char *prog, Suite *(*suite)(void))
{
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    struct zero_error err = {0};
    if (zero_device_open(&rig_dev, "cpu", &comm, &opt, &err) != ZERO_OK) {
        fprintf(stderr, "%s: %s\n", prog, err.msg);
        MPI_Finalize();
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    zero_device_close(rig_dev);
    MPI_Finalize();
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

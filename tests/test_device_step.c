/* The engine's side of CUDA Graphs (src/engine/device_step.c), on the cpu backend: a
 * test backend, the cpu table plus the optional step entries (the loss summed in
 * "device" memory, deferred id and label checks, graph_begin/graph_end that record
 * what the engine brackets), stands in for the cuda backend, whose capture needs a GPU
 * (tests/test_cuda_training.c checks it there). It must give the plain cpu run's
 * bits; no host wait may fall inside a bracketed pass; a bad token id or label is
 * reported at the step's end on every rank and the step applies nothing. */
#include <check.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"
#include "zero/backend_classifier.h"
#include "zero/backend_device_step.h"
#include "zero/gpt.h"
#include "zero/zero.h"

#define STEPS 3
#define ACCUM 2
#define MAX_ROWS 64

/* ---- the test backend: the cpu backend with the step entries ---- */

static const struct zero_backend *cpu;
static struct zero_backend stepping;

static struct {
    int deferred;     /* graph_open .. graph_close */
    int in_pass, key; /* inside graph_begin .. graph_end */
    int begins, ends, discarded;
    int waits_in_pass; /* to_host, from_host, synchronize, ... inside a pass */
    int keys[8];       /* graph_begin calls per key */
    int has_bad;       /* the first bad id since the last input_errors */
    char bad_msg[256];
    char msg[512]; /* our last error (last_error) */
    int msg_fresh;
} tb;

static void defer_ids(const char *what, const char *noun, const int32_t *ids, int64_t rows,
                      int64_t limit)
{
    int32_t *writable = (int32_t *)(uintptr_t)ids; /* host memory on this backend */
    for (int64_t r = 0; r < rows; r++)
        if (ids[r] < 0 || ids[r] >= limit) {
            if (!tb.has_bad)
                snprintf(tb.bad_msg, sizeof tb.bad_msg, "%s: row %lld: %s %d is outside [0, %lld)",
                         what, (long long)r, noun, (int)ids[r], (long long)limit);
            tb.has_bad = 1;
            writable[r] = 0;
        }
}

static int tb_embedding_forward(void *self, float *y, const int32_t *ids, const float *table,
                                int64_t rows, int64_t cols, int64_t vocab)
{
    if (tb.deferred)
        defer_ids("embedding_forward", "token id", ids, rows, vocab);
    return cpu->embedding_forward(self, y, ids, table, rows, cols, vocab);
}

static int tb_xent_forward(void *self, float *losses, float *probs, const float *logits,
                           const int32_t *labels, int64_t rows, int64_t classes)
{
    if (tb.deferred)
        defer_ids("xent_forward", "label", labels, rows, classes);
    return cpu->xent_forward(self, losses, probs, logits, labels, rows, classes);
}

static int tb_xent_backward(void *self, float *dlogits, const float *probs, const int32_t *labels,
                            int64_t rows, int64_t classes, float dloss)
{
    if (tb.deferred)
        defer_ids("xent_backward", "label", labels, rows, classes);
    return cpu->xent_backward(self, dlogits, probs, labels, rows, classes, dloss);
}

static int tb_xent_fused(void *self, float *losses, void *dlogits, const void *logits,
                         enum zero_dtype t, const int32_t *labels, int64_t rows, int64_t classes,
                         float dloss)
{
    if (tb.deferred)
        defer_ids("xent_fused", "label", labels, rows, classes);
    return cpu->classifier->xent_fused(self, losses, dlogits, logits, t, labels, rows, classes,
                                       dloss);
}

/* backend.h's rule, as the host loop it replaces */
static int tb_loss_accumulate(void *self, double *acc, float *last, const float *losses, size_t n,
                              int64_t rows)
{
    (void)self;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += losses[i];
    *last = (float)(sum / (double)rows);
    *acc += (double)*last;
    return ZERO_OK;
}

static int tb_graph_open(void *self)
{
    (void)self;
    tb.deferred = 1;
    return ZERO_OK;
}

static void tb_graph_close(void *self)
{
    (void)self;
    tb.deferred = 0;
}

static int tb_input_errors(void *self)
{
    (void)self;
    if (tb.in_pass)
        tb.waits_in_pass++;
    if (!tb.has_bad)
        return ZERO_OK;
    tb.has_bad = 0;
    snprintf(tb.msg, sizeof tb.msg, "%s", tb.bad_msg);
    tb.msg_fresh = 1;
    return ZERO_EINVAL;
}

static int tb_graph_begin(void *self, int key)
{
    (void)self;
    if (tb.in_pass || key < 0 || key >= 8)
        return ZERO_EINVAL;
    tb.in_pass = 1;
    tb.key = key;
    tb.begins++;
    tb.keys[key]++;
    return ZERO_OK;
}

static int tb_graph_end(void *self, int key, int launch)
{
    (void)self;
    if (!tb.in_pass || key != tb.key)
        return ZERO_EINVAL;
    tb.in_pass = 0;
    tb.ends++;
    tb.discarded += !launch;
    return ZERO_OK;
}

static const char *tb_last_error(void *self)
{
    if (tb.msg_fresh) {
        tb.msg_fresh = 0;
        return tb.msg;
    }
    return cpu->last_error(self);
}

/* the entries that make the host wait for the device on a real device */
static int tb_to_host(void *self, void *host, const void *dev, size_t bytes)
{
    tb.waits_in_pass += tb.in_pass;
    return cpu->to_host(self, host, dev, bytes);
}

static int tb_from_host(void *self, void *dev, const void *host, size_t bytes)
{
    tb.waits_in_pass += tb.in_pass;
    return cpu->from_host(self, dev, host, bytes);
}

static int tb_synchronize(void *self)
{
    tb.waits_in_pass += tb.in_pass;
    return cpu->synchronize(self);
}

static int tb_event_synchronize(void *self, void *ev)
{
    tb.waits_in_pass += tb.in_pass;
    return cpu->event_synchronize(self, ev);
}

static int tb_nonfinite(void *self, const void *x, enum zero_dtype t, size_t n, int *flag)
{
    tb.waits_in_pass += tb.in_pass;
    return cpu->nonfinite(self, x, t, n, flag);
}

static int tb_host_all_gather(void *self, const void *send, void *recv, size_t bytes)
{
    tb.waits_in_pass += tb.in_pass;
    return cpu->host_all_gather(self, send, recv, bytes);
}

static const struct zero_classifier_ops stepping_classifier = {
    .version = ZERO_CLASSIFIER_OPS_VERSION,
    .xent_fused = tb_xent_fused,
};

static const struct zero_device_step_ops stepping_device_step = {
    .version = ZERO_DEVICE_STEP_OPS_VERSION,
    .loss_accumulate = tb_loss_accumulate,
    .graph_open = tb_graph_open,
    .graph_close = tb_graph_close,
    .input_errors = tb_input_errors,
    .graph_begin = tb_graph_begin,
    .graph_end = tb_graph_end,
};

static void make_stepping_backend(void)
{
    cpu = zero_backend_find("cpu");
    ck_assert_ptr_nonnull(cpu);
    stepping = *cpu;
    stepping.name = "cpu with step entries";
    stepping.embedding_forward = tb_embedding_forward;
    stepping.xent_forward = tb_xent_forward;
    stepping.xent_backward = tb_xent_backward;
    stepping.classifier = &stepping_classifier; /* the GPT head's path on the cpu */
    stepping.device_step = &stepping_device_step;
    stepping.last_error = tb_last_error;
    stepping.to_host = tb_to_host;
    stepping.from_host = tb_from_host;
    stepping.synchronize = tb_synchronize;
    stepping.event_synchronize = tb_event_synchronize;
    stepping.nonfinite = tb_nonfinite;
    stepping.host_all_gather = tb_host_all_gather;
    memset(&tb, 0, sizeof tb);
}

/* ---- a tiny GPT-2, trained ---- */

struct run {
    struct zero_config cfg;
    struct zero_gpt_config model;
    int stepping;          /* the test backend, libzero.cuda_graphs on */
    int bad_step, bad_row; /* a bad id at this step (-1: none), micro-step 1, last rank */
    int32_t bad_value;
    int bad_label; /* the bad id is a label, not a token */
    /* outputs */
    float losses[STEPS];
    float micro_losses[STEPS][ACCUM]; /* zero_engine_forward's loss argument */
    int step_rc[STEPS];
    char step_msg[STEPS][ZERO_ERRMSG_LEN];
    float *weights, *weights_before_bad, *weights_after_bad; /* around the bad step */
    int64_t nweights, applied, global;
};

static void run_defaults(struct run *r, int stage)
{
    memset(r, 0, sizeof *r);
    zero_config_defaults(&r->cfg);
    r->cfg.zero_optimization.stage = stage;
    r->cfg.zero_optimization.stage3_param_persistence_threshold = 0;
    r->cfg.optimizer.type = ZERO_OPTIM_ADAMW;
    r->cfg.optimizer.lr = 1e-2;
    r->cfg.gradient_clipping = 1.0;
    r->cfg.train_micro_batch_size_per_gpu = 2;
    r->cfg.gradient_accumulation_steps = ACCUM;
    r->cfg.libzero.align = 64;
    r->model = (struct zero_gpt_config){
        .n_layer = 2, .n_head = 2, .n_embd = 16, .block_size = 8, .vocab_size = 24};
    r->bad_step = -1;
}

static int32_t token_at(int64_t s, int64_t t, int64_t vocab)
{
    uint64_t z = (uint64_t)(s * 1000003 + t) * 0x9e3779b97f4a7c15ULL;
    z ^= z >> 29;
    return (int32_t)((s + 3 * t + (int64_t)(z % 3)) % vocab);
}

static int read_weights(struct zero_engine *e, const struct zero_model *m, float **out, int64_t *n,
                        struct zero_error *err)
{
    *n = zero_model_numel(m);
    *out = malloc((size_t)*n * sizeof(float));
    if (!*out)
        return zero_fail(err, ZERO_ENOMEM, "weights");
    int64_t at = 0;
    for (int u = 0; u < m->nunits; u++)
        for (int p = 0; p < m->units[u]->nparams; p++) {
            int rc = zero_engine_read_param(e, u, p, *out + at, err);
            if (rc)
                return rc;
            at += zero_param_numel(&m->units[u]->params[p]);
        }
    return ZERO_OK;
}

/* One step; a failing zero_engine_step is recorded, not returned. */
static int train_step(struct run *r, struct zero_engine *e, const struct zero_model *m, int step,
                      int rank, int world, struct zero_error *err)
{
    const int64_t mb = r->cfg.train_micro_batch_size_per_gpu, T = r->model.block_size;
    int32_t tokens[MAX_ROWS], labels[MAX_ROWS];
    int rc = 0;
    if (step == r->bad_step)
        rc = read_weights(e, m, &r->weights_before_bad, &r->nweights, err);
    for (int64_t micro = 0; micro < ACCUM && !rc; micro++) {
        int64_t first = zero_atom_first_sample(step, micro, rank, world, ACCUM, mb);
        for (int64_t i = 0; i < mb * T; i++) {
            tokens[i] = token_at(first + i / T, i % T, r->model.vocab_size);
            labels[i] = token_at(first + i / T, i % T + 1, r->model.vocab_size);
        }
        if (step == r->bad_step && micro == 1 && rank == world - 1)
            (r->bad_label ? labels : tokens)[r->bad_row] = r->bad_value;
        struct zero_batch b = {.rows = mb * T, .tokens = tokens, .labels = labels};
        /* the micro-step's loss is asked for on odd steps only: read back, or left on the
         * device */
        float *l = step % 2 ? &r->micro_losses[step][micro] : NULL;
        if ((rc = zero_engine_forward(e, &b, l, err)) || (rc = zero_engine_backward(e, err)))
            return rc;
        struct zero_error step_err = {0};
        r->step_rc[step] = zero_engine_step(e, NULL, &step_err);
        snprintf(r->step_msg[step], sizeof r->step_msg[step], "%s", step_err.msg);
    }
    r->losses[step] = (float)zero_engine_last_step(e)->loss;
    if (!rc && step == r->bad_step)
        rc = read_weights(e, m, &r->weights_after_bad, &r->nweights, err);
    return rc;
}

static int train(struct run *r, MPI_Comm comm, struct zero_error *err)
{
    struct zero_device *dev = NULL;
    struct zero_model *model = NULL;
    struct zero_engine *e = NULL;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    int rc = zero_device_open(&dev, "cpu", &comm, &opt, err);
    if (!rc && r->stepping) {
        make_stepping_backend();
        dev->be = &stepping;
        r->cfg.libzero.cuda_graphs = 1;
        snprintf(r->cfg.libzero.backend, sizeof r->cfg.libzero.backend, "cuda");
    }
    if (!rc)
        rc = zero_nn_build_gpt(&model, &r->model, err);
    if (!rc)
        rc = zero_engine_create(&e, &r->cfg, model, dev, err);
    for (int step = 0; step < STEPS && !rc; step++)
        rc = train_step(r, e, model, step, dev->rank, dev->size, err);
    if (!rc) {
        r->applied = zero_engine_applied_steps(e);
        r->global = zero_engine_global_steps(e);
        rc = read_weights(e, model, &r->weights, &r->nweights, err);
    }
    zero_engine_destroy(e);
    zero_model_destroy(model);
    if (dev)
        dev->be = cpu ? cpu : dev->be;
    zero_device_close(dev);
    return rc;
}

static void must_train(struct run *r)
{
    struct zero_error err = {0};
    int rc = train(r, MPI_COMM_WORLD, &err);
    ck_assert_msg(mpi_check_all(rc == ZERO_OK), "training failed: %s", rc ? err.msg : "elsewhere");
}

static int same_bits(const struct run *a, const struct run *b)
{
    return a->nweights == b->nweights && memcmp(a->losses, b->losses, sizeof a->losses) == 0 &&
           memcmp(a->micro_losses, b->micro_losses, sizeof a->micro_losses) == 0 &&
           a->micro_losses[1][0] != 0.0f &&
           memcmp(a->weights, b->weights, (size_t)a->nweights * sizeof(float)) == 0;
}

static void check_bracketed_run_gives_the_plain_bits(int stage)
{
    struct run plain, stepped;
    run_defaults(&plain, stage);
    run_defaults(&stepped, stage);
    stepped.stepping = 1;
    must_train(&plain);
    must_train(&stepped);
    ck_assert_msg(mpi_check_all(same_bits(&plain, &stepped)),
                  "stage %d: the run with the step entries differs from the plain run", stage);
    /* the first step runs uncaptured; then each micro-step's two passes, by their keys */
    const int passes = 2 * ACCUM * (STEPS - 1);
    ck_assert_int_eq(tb.begins, passes);
    ck_assert_int_eq(tb.ends, passes);
    ck_assert_int_eq(tb.discarded, 0);
    for (int k = 0; k < 2 * ACCUM; k++)
        ck_assert_int_eq(tb.keys[k], STEPS - 1);
    ck_assert_int_eq(tb.waits_in_pass, 0);
    ck_assert(!tb.deferred); /* graph_close at destroy */
    free(plain.weights);
    free(stepped.weights);
}

START_TEST(test_bracketed_passes_give_the_plain_bits_with_no_host_wait_inside_at_stage_2)
{
    check_bracketed_run_gives_the_plain_bits(2);
}
END_TEST

START_TEST(test_bracketed_passes_give_the_plain_bits_with_no_host_wait_inside_at_stage_3)
{
    check_bracketed_run_gives_the_plain_bits(3);
}
END_TEST

/* A bad id on the last rank at step 1's second micro-step: every rank's step fails,
 * naming it (the last rank) or that rank (the others); the parameters after it are
 * the bits before it; step 2 trains. */
static void check_bad_input_refuses_the_step(int stage, int bad_label, int32_t value, int row,
                                             const char *entry, const char *noun)
{
    struct run r;
    run_defaults(&r, stage);
    r.stepping = 1;
    r.bad_step = 1;
    r.bad_row = row;
    r.bad_value = value;
    r.bad_label = bad_label;
    must_train(&r);
    int rank = mpi_check_rank(), world = mpi_check_size();
    char want[512];
    if (rank == world - 1)
        snprintf(want, sizeof want,
                 "rank %d: step 2: %s: row %d: %s %d is outside [0, 24); nothing of this step "
                 "was applied",
                 rank, entry, row, noun, (int)value);
    else
        snprintf(want, sizeof want,
                 "rank %d: rank %d stopped step 2 at its end (an input outside its range, or a "
                 "failure: its message names it); nothing of this step was applied",
                 rank, world - 1);
    int ok = r.step_rc[0] == ZERO_OK && r.step_rc[1] == ZERO_EINVAL && r.step_rc[2] == ZERO_OK &&
             strcmp(r.step_msg[1], want) == 0;
    ck_assert_msg(mpi_check_all(ok), "rank %d: steps %d %d %d, message \"%s\", expected \"%s\"",
                  rank, r.step_rc[0], r.step_rc[1], r.step_rc[2], r.step_msg[1], want);
    ck_assert_int_eq(r.global, STEPS);
    ck_assert_int_eq(r.applied, STEPS - 1);
    ck_assert(
        memcmp(r.weights_before_bad, r.weights_after_bad, (size_t)r.nweights * sizeof(float)) == 0);
    ck_assert(memcmp(r.weights_after_bad, r.weights, (size_t)r.nweights * sizeof(float)) != 0);
    free(r.weights);
    free(r.weights_before_bad);
    free(r.weights_after_bad);
}

START_TEST(test_bad_token_id_is_reported_at_step_end_and_the_step_applies_nothing)
{
    check_bad_input_refuses_the_step(2, 0, 24 + 3, 5, "embedding_forward", "token id");
}
END_TEST

START_TEST(test_bad_label_is_reported_at_step_end_and_the_step_applies_nothing)
{
    /* the GPT head's entry where the backend has the fused classifier (cpu and cuda) */
    check_bad_input_refuses_the_step(3, 1, -1, 3, "xent_fused", "label");
}
END_TEST

/* An evaluation (never bracketed) fails at once on its own bad id, and one between the
 * micro-steps of a step keeps that step's bad id for the step's end. */
START_TEST(test_evaluation_checks_its_ids_at_once_and_keeps_the_steps_for_its_end)
{
    struct run r;
    run_defaults(&r, 1);
    struct zero_device *dev = NULL;
    struct zero_model *model = NULL;
    struct zero_engine *e = NULL;
    struct zero_error err = {0};
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    MPI_Comm comm = MPI_COMM_WORLD;
    ck_assert_int_eq(zero_device_open(&dev, "cpu", &comm, &opt, &err), ZERO_OK);
    make_stepping_backend();
    dev->be = &stepping;
    r.cfg.libzero.cuda_graphs = 1;
    snprintf(r.cfg.libzero.backend, sizeof r.cfg.libzero.backend, "cuda");
    ck_assert_int_eq(zero_nn_build_gpt(&model, &r.model, &err), ZERO_OK);
    ck_assert_int_eq(zero_engine_create(&e, &r.cfg, model, dev, &err), ZERO_OK);
    const int64_t T = r.model.block_size, rows = r.cfg.train_micro_batch_size_per_gpu * T;
    int32_t tokens[MAX_ROWS], labels[MAX_ROWS], bad[MAX_ROWS];
    for (int64_t i = 0; i < rows; i++) {
        tokens[i] = bad[i] = token_at(i / T, i % T, r.model.vocab_size);
        labels[i] = token_at(i / T, i % T + 1, r.model.vocab_size);
    }
    bad[2] = 99;
    struct zero_batch good = {.rows = rows, .tokens = tokens, .labels = labels};
    struct zero_batch wrong = {.rows = rows, .tokens = bad, .labels = labels};
    float loss = 0.0f;
    /* the bad micro-step, then a clean evaluation and a bad one, then the good micro-step */
    ck_assert_int_eq(zero_engine_forward(e, &wrong, NULL, &err), ZERO_OK);
    ck_assert_int_eq(zero_engine_backward(e, &err), ZERO_OK);
    ck_assert_int_eq(zero_engine_step(e, NULL, &err), ZERO_OK); /* not a boundary */
    ck_assert_int_eq(zero_engine_eval(e, &good, &loss, &err), ZERO_OK);
    memcpy(bad, tokens, sizeof tokens); /* the engine's copy was rewritten, not ours */
    bad[4] = -5;
    ck_assert_int_eq(zero_engine_eval(e, &wrong, &loss, &err), ZERO_EINVAL);
    char want[256];
    snprintf(want, sizeof want,
             "rank %d: evaluation: embedding_forward: row 4: token id -5 is outside [0, 24)",
             mpi_check_rank());
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_eq(zero_engine_forward(e, &good, NULL, &err), ZERO_OK);
    ck_assert_int_eq(zero_engine_backward(e, &err), ZERO_OK);
    ck_assert_int_eq(zero_engine_step(e, NULL, &err), ZERO_EINVAL);
    snprintf(want, sizeof want,
             "rank %d: step 1: embedding_forward: row 2: token id 99 is outside [0, 24); nothing "
             "of this step was applied",
             mpi_check_rank());
    ck_assert_str_eq(err.msg, want);
    ck_assert_int_eq(zero_engine_applied_steps(e), 0);
    zero_engine_destroy(e);
    zero_model_destroy(model);
    dev->be = cpu;
    zero_device_close(dev);
}
END_TEST

START_TEST(test_cuda_graphs_on_a_backend_without_graph_entries_is_refused_at_create)
{
    struct zero_device *dev = NULL;
    struct zero_model *model = NULL;
    struct zero_engine *e = NULL;
    struct zero_error err = {0};
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    MPI_Comm comm = MPI_COMM_WORLD;
    struct run r;
    run_defaults(&r, 1);
    r.cfg.libzero.cuda_graphs = 1;
    snprintf(r.cfg.libzero.backend, sizeof r.cfg.libzero.backend, "cuda");
    ck_assert_int_eq(zero_device_open(&dev, "cpu", &comm, &opt, &err), ZERO_OK);
    ck_assert_int_eq(zero_nn_build_gpt(&model, &r.model, &err), ZERO_OK);
    ck_assert_int_eq(zero_engine_create(&e, &r.cfg, model, dev, &err), ZERO_ENOTSUP);
    ck_assert_str_eq(err.msg, "libzero.cuda_graphs = true: the cpu backend cannot capture a pass "
                              "(it has no graph entries)");
    ck_assert_ptr_null(e);
    zero_model_destroy(model);
    zero_device_close(dev);
}
END_TEST

static Suite *device_step_suite(void)
{
    Suite *s = suite_create("device_step");
    TCase *tc = tcase_create("device_step");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc,
                   test_bracketed_passes_give_the_plain_bits_with_no_host_wait_inside_at_stage_2);
    tcase_add_test(tc,
                   test_bracketed_passes_give_the_plain_bits_with_no_host_wait_inside_at_stage_3);
    tcase_add_test(tc, test_bad_token_id_is_reported_at_step_end_and_the_step_applies_nothing);
    tcase_add_test(tc, test_bad_label_is_reported_at_step_end_and_the_step_applies_nothing);
    tcase_add_test(tc, test_evaluation_checks_its_ids_at_once_and_keeps_the_steps_for_its_end);
    tcase_add_test(tc, test_cuda_graphs_on_a_backend_without_graph_entries_is_refused_at_create);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_check_main(&argc, &argv, device_step_suite);
}

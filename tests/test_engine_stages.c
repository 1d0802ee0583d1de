/* The exactness contract, made a test: stages 0-3 give bit-identical losses
 * and weights at every world size, with accumulation, clipping and any stage-3
 * knobs; world sizes 1, 2, 4 agree at fixed micro-batch and global batch. */
#include <stdlib.h>
#include <string.h>

#include "engine_harness.h"
#include "mpi_check.h"

static int run_ok(struct harness_run *r, MPI_Comm comm)
{
    struct zero_error err = {0};
    int rc = harness_train(r, comm, &err);
    if (rc)
        fprintf(stderr, "rank %d: %s\n", mpi_check_rank(), err.msg);
    return mpi_check_all(rc == 0);
}

static int same_as(struct harness_run *a, struct harness_run *b)
{
    return mpi_check_all(harness_same_bits(a, b));
}

static void run_stage(struct harness_run *r, int stage, int accum, double clip)
{
    harness_defaults(r, stage);
    r->cfg.gradient_accumulation_steps = accum;
    r->cfg.gradient_clipping = clip;
    ck_assert(run_ok(r, MPI_COMM_WORLD));
}

static void check_stages_match(int accum, double clip)
{
    struct harness_run base, r;
    run_stage(&base, 0, accum, clip);
    for (int stage = 1; stage <= 3; stage++) {
        run_stage(&r, stage, accum, clip);
        ck_assert_msg(same_as(&base, &r), "stage %d differs from stage 0 (accum %d, clip %g)",
                      stage, accum, clip);
        free(r.weights);
    }
    free(base.weights);
}

START_TEST(test_stages_bit_identical_without_accumulation)
{
    check_stages_match(1, 0.0);
}
END_TEST

START_TEST(test_stages_bit_identical_with_accumulation_3)
{
    check_stages_match(3, 0.0);
}
END_TEST

START_TEST(test_stages_bit_identical_with_active_clipping)
{
    /* 0.05 is well below the gradient norm of this model: every step clips */
    check_stages_match(3, 0.05);
    check_stages_match(1, 0.05);
}
END_TEST

START_TEST(test_training_changes_weights_and_loss_falls)
{
    struct harness_run r;
    harness_defaults(&r, 3);
    r.steps = 40;
    r.cfg.train_micro_batch_size_per_gpu = 8;
    ck_assert(run_ok(&r, MPI_COMM_WORLD));
    /* mean of the last five steps against the first: the synthetic task is learnable */
    float tail = 0.0f;
    for (int i = r.steps - 5; i < r.steps; i++)
        tail += r.losses[i] / 5.0f;
    ck_assert_msg(tail < 0.6f * r.losses[0], "loss %g -> %g", r.losses[0], tail);
    free(r.weights);
}
END_TEST

START_TEST(test_stage3_knobs_do_not_change_a_bit)
{
    struct harness_run base, r;
    run_stage(&base, 0, 1, 0.0);
    struct {
        int64_t prefetch, persistence, max_live;
    } knobs[] = {
        {0, 0, 1000000000},               /* no prefetch, nothing persistent */
        {1, 0, 1000000000},               /* prefetch too small for any unit */
        {100000000, 0, 1000000000},       /* prefetch everything */
        {100000000, 1000000, 1000000000}, /* every unit persistent */
        {100000000, 800, 1000000000},     /* small units persistent */
        {100000000, 0, 0},                /* max_live: the minimum the model needs (set below) */
    };
    for (size_t k = 0; k < sizeof knobs / sizeof knobs[0]; k++) {
        harness_defaults(&r, 3);
        struct zero_optimization_config *z = &r.cfg.zero_optimization;
        z->stage3_prefetch_bucket_size = knobs[k].prefetch;
        z->stage3_param_persistence_threshold = knobs[k].persistence;
        /* the largest unit: a block of 2 * hidden * 4 hidden + 5 hidden, padded */
        z->stage3_max_live_parameters = knobs[k].max_live ? knobs[k].max_live : 4864;
        ck_assert(run_ok(&r, MPI_COMM_WORLD));
        ck_assert_msg(same_as(&base, &r), "stage-3 knob set %zu changed the result", k);
        ck_assert_msg(r.peak_live <= z->stage3_max_live_parameters,
                      "knob set %zu: %lld gathered elements live, limit %lld", k,
                      (long long)r.peak_live, (long long)z->stage3_max_live_parameters);
        free(r.weights);
    }
    free(base.weights);
}
END_TEST

START_TEST(test_communication_knobs_do_not_change_a_bit)
{
    struct harness_run base, r;
    run_stage(&base, 0, 2, 0.05);
    struct {
        int64_t reduce_bucket, allgather_bucket;
        int overlap, reduce_scatter, partitions;
    } knobs[] = {
        {100, 100, 0, 1, 1},             /* every unit its own bucket */
        {1000000, 1000000, 1, 1, 1},     /* one bucket, overlapped */
        {2000, 3000, 1, 0, 1},           /* all-reduce instead of reduce-scatter */
        {500000000, 500000000, 0, 1, 0}, /* broadcasts instead of all-gather */
    };
    for (int stage = 1; stage <= 3; stage++)
        for (size_t k = 0; k < sizeof knobs / sizeof knobs[0]; k++) {
            harness_defaults(&r, stage);
            r.cfg.gradient_accumulation_steps = 2;
            r.cfg.gradient_clipping = 0.05;
            struct zero_optimization_config *z = &r.cfg.zero_optimization;
            z->reduce_bucket_size = knobs[k].reduce_bucket;
            z->allgather_bucket_size = knobs[k].allgather_bucket;
            z->overlap_comm = knobs[k].overlap;
            z->reduce_scatter = knobs[k].reduce_scatter;
            z->allgather_partitions = knobs[k].partitions;
            ck_assert(run_ok(&r, MPI_COMM_WORLD));
            ck_assert_msg(same_as(&base, &r), "stage %d, knob set %zu changed the result", stage,
                          k);
            free(r.weights);
        }
    free(base.weights);
}
END_TEST

START_TEST(test_stage3_max_live_too_small_is_an_error_naming_the_key)
{
    struct harness_run r;
    harness_defaults(&r, 3);
    r.cfg.zero_optimization.stage3_max_live_parameters = 100;
    struct zero_error err = {0};
    int rc = harness_train(&r, MPI_COMM_WORLD, &err);
    ck_assert_int_eq(rc, ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "stage3_max_live_parameters"));
}
END_TEST

START_TEST(test_ledger_model_states_equal_the_formula)
{
    for (int stage = 0; stage <= 3; stage++) {
        struct harness_run r;
        run_stage(&r, stage, 1, 0.0);
        const struct zero_ledger *l = &r.ledger_after_create;
        const struct zero_theory *t = &r.theory;
        int64_t n = mpi_check_size(), P = t->psi_padded;
        /* the paper's fp32 formulas on padded sizes, written out independently */
        int64_t expect[4] = {16 * P, 8 * P + 8 * P / n, 4 * P + 12 * P / n, 16 * P / n};
        ck_assert_int_eq(zero_ledger_model_states(l), expect[stage]);
        ck_assert_int_eq(t->model_state_bytes, expect[stage]);
        ck_assert_int_eq(l->current[ZERO_TAG_PARAMS], t->params_bytes);
        ck_assert_int_eq(l->current[ZERO_TAG_GRADS], t->grads_bytes);
        ck_assert_int_eq(l->current[ZERO_TAG_OPTIM], t->optim_bytes);
        ck_assert_int_eq(l->current[ZERO_TAG_MASTER], 0);
        /* after training, transient buffers are gone and model states are unchanged */
        ck_assert_int_eq(zero_ledger_model_states(&r.ledger_end), expect[stage]);
        ck_assert_int_eq(r.ledger_end.current[ZERO_TAG_ACTIVATIONS], 0);
        ck_assert_int_eq(r.ledger_end.current[ZERO_TAG_BUCKETS], 0);
        free(r.weights);
    }
}
END_TEST

START_TEST(test_comm_stats_per_step_equal_the_theory)
{
    for (int stage = 0; stage <= 3; stage++) {
        struct harness_run r;
        run_stage(&r, stage, 1, 0.0);
        const struct zero_comm_stats *c = &r.last_comm;
        int64_t sent = c->kind[ZERO_COLL_REDUCE_SCATTER].sent_bytes +
                       c->kind[ZERO_COLL_ALL_GATHER].sent_bytes +
                       c->kind[ZERO_COLL_ALL_REDUCE].sent_bytes;
        int64_t n = mpi_check_size(), P = r.theory.psi_padded;
        int64_t volumes = stage == 3 ? 3 * P - r.theory.psi_persistent : 2 * P;
        ck_assert_int_eq(sent / 4, volumes / n * (n - 1));
        ck_assert_int_eq(r.theory.sent_elements_per_step, volumes / n * (n - 1));
        free(r.weights);
    }
}
END_TEST

START_TEST(test_stage3_reuse_distance_saves_exactly_the_kept_gathers)
{
    /* every unit goes through the lifecycle; the classifier (the last unit of
     * forward, the first of backward) is reused right away even at distance 0 */
    int64_t n = mpi_check_size();
    struct {
        int64_t distance;
        int all_kept;
    } cases[] = {{0, 0}, {1000000000, 1}};
    for (size_t k = 0; k < 2; k++) {
        struct harness_run r;
        harness_defaults(&r, 3);
        r.cfg.zero_optimization.stage3_param_persistence_threshold = 0;
        r.cfg.zero_optimization.stage3_max_reuse_distance = cases[k].distance;
        ck_assert(run_ok(&r, MPI_COMM_WORLD));
        int64_t P = r.theory.psi_padded;
        const struct zero_comm_stats *c = &r.last_comm;
        int64_t sent =
            c->kind[ZERO_COLL_REDUCE_SCATTER].sent_bytes + c->kind[ZERO_COLL_ALL_GATHER].sent_bytes;
        int64_t reused = cases[k].all_kept ? P : r.theory.psi_reused;
        ck_assert_int_eq(r.theory.psi_reused, reused);
        ck_assert_int_gt(r.theory.psi_reused, 0);
        if (!cases[k].all_kept)
            ck_assert_int_lt(r.theory.psi_reused, P / 2); /* only the classifier */
        ck_assert_int_eq(sent / 4, (3 * P - reused) / n * (n - 1));
        free(r.weights);
    }
}
END_TEST

START_TEST(test_world_sizes_1_2_4_bit_identical_at_fixed_micro_and_global_batch)
{
    int world = mpi_check_size();
    for (int stage = 0; stage <= 3; stage += 3) {
        struct harness_run one, r;
        harness_defaults(&one, stage);
        one.cfg.gradient_accumulation_steps = 4; /* global batch 8 = 1 x 4 x 2 */
        harness_run_on_first(&one, 1);
        for (int n = 2; n <= world; n *= 2) {
            harness_defaults(&r, stage);
            r.cfg.gradient_accumulation_steps = 4 / n;
            int here = harness_run_on_first(&r, n);
            int ok = !here || mpi_check_rank() != 0 || harness_same_bits(&one, &r);
            ck_assert_msg(mpi_check_all(ok), "stage %d: world %d differs from world 1", stage, n);
            if (here)
                free(r.weights);
        }
        if (mpi_check_rank() == 0)
            free(one.weights);
    }
}
END_TEST

START_TEST(test_native_mode_agrees_with_exact_within_tolerance)
{
    struct harness_run exact, native;
    run_stage(&exact, 2, 1, 0.0);
    harness_defaults(&native, 2);
    native.cfg.libzero.coll_mode = ZERO_COLL_NATIVE;
    ck_assert(run_ok(&native, MPI_COMM_WORLD));
    double worst = 0.0;
    for (int64_t i = 0; i < exact.nweights; i++) {
        double d = exact.weights[i] - native.weights[i];
        worst = d > worst ? d : -d > worst ? -d : worst;
    }
    ck_assert_msg(worst < 1e-4, "native differs from exact by %g", worst);
    free(exact.weights);
    free(native.weights);
}
END_TEST

START_TEST(test_activation_checkpointing_same_bits_less_activation_memory)
{
    for (int stage = 0; stage <= 3; stage += 3) {
        struct harness_run plain, ckpt;
        harness_defaults(&plain, stage);
        harness_defaults(&ckpt, stage);
        plain.layers = ckpt.layers = 6;
        plain.cfg.train_micro_batch_size_per_gpu = ckpt.cfg.train_micro_batch_size_per_gpu = 16;
        ckpt.checkpoint = 1;
        ck_assert(run_ok(&plain, MPI_COMM_WORLD));
        ck_assert(run_ok(&ckpt, MPI_COMM_WORLD));
        ck_assert_msg(same_as(&plain, &ckpt), "stage %d: checkpointing changed the bits", stage);
        /* each block saves h and gelu(h) (2 x rows x 4 hidden): without checkpointing all
         * six blocks' are alive at the start of backward, with it at most one */
        int64_t saved_plain = plain.ledger_end.peak[ZERO_TAG_ACTIVATIONS];
        int64_t saved_ckpt = ckpt.ledger_end.peak[ZERO_TAG_ACTIVATIONS];
        int64_t block = 2 * 16 * 4 * plain.hidden * 4;
        ck_assert_msg(saved_plain - saved_ckpt >= 4 * block,
                      "stage %d: activation peak %lld with checkpointing vs %lld without", stage,
                      (long long)saved_ckpt, (long long)saved_plain);
        free(plain.weights);
        free(ckpt.weights);
    }
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("engine_stages");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_stages_bit_identical_without_accumulation);
    tcase_add_test(tc, test_stages_bit_identical_with_accumulation_3);
    tcase_add_test(tc, test_stages_bit_identical_with_active_clipping);
    tcase_add_test(tc, test_training_changes_weights_and_loss_falls);
    tcase_add_test(tc, test_stage3_knobs_do_not_change_a_bit);
    tcase_add_test(tc, test_communication_knobs_do_not_change_a_bit);
    tcase_add_test(tc, test_stage3_max_live_too_small_is_an_error_naming_the_key);
    tcase_add_test(tc, test_ledger_model_states_equal_the_formula);
    tcase_add_test(tc, test_comm_stats_per_step_equal_the_theory);
    tcase_add_test(tc, test_stage3_reuse_distance_saves_exactly_the_kept_gathers);
    tcase_add_test(tc, test_world_sizes_1_2_4_bit_identical_at_fixed_micro_and_global_batch);
    tcase_add_test(tc, test_native_mode_agrees_with_exact_within_tolerance);
    tcase_add_test(tc, test_activation_checkpointing_same_bits_less_activation_memory);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_check_main(&argc, &argv, make_suite);
}

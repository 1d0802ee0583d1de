/* A tiny Llama (grouped-query attention, llama3 rope scaling, untied head; and a tied
 * variant) trained with every ZeRO stage at this world size (run at N = 1..4): the
 * losses and the final weights must be the same bits in every stage, in fp32, bf16 and
 * fp16 training, with activation checkpointing, with the optimizer offloaded to the
 * host, and the same as one rank doing all N micro-batches by gradient accumulation
 * (the exactness contract of docs/design.md). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"
#include "zero/zero.h"

#define STEPS 3
#define T 8
#define MICRO 2 /* sequences a micro-batch */

struct run {
    struct zero_config cfg;
    struct zero_llama_config model;
    int checkpoint;
    float losses[STEPS];
    float *weights;
    int64_t nweights;
    int64_t peak_activations;
};

static void run_defaults(struct run *r, int stage)
{
    memset(r, 0, sizeof *r);
    zero_config_defaults(&r->cfg);
    r->cfg.zero_optimization.stage = stage;
    r->cfg.zero_optimization.stage3_param_persistence_threshold = 0;
    r->cfg.optimizer.type = ZERO_OPTIM_ADAMW;
    r->cfg.optimizer.lr = 1e-2;
    r->cfg.optimizer.weight_decay = 0.01;
    r->cfg.gradient_clipping = 1.0;
    r->cfg.train_micro_batch_size_per_gpu = MICRO;
    r->cfg.gradient_accumulation_steps = 1;
    r->cfg.libzero.align = 64; /* small blocks: tiny units still split over 4 ranks */
    zero_llama_config_default(&r->model);
    r->model.vocab_size = 24, r->model.hidden_size = 16, r->model.intermediate_size = 24;
    r->model.num_hidden_layers = 2, r->model.num_attention_heads = 4;
    r->model.num_key_value_heads = 2, r->model.head_dim = 4;
    r->model.max_position_embeddings = 32, r->model.rms_norm_eps = 1e-5;
    r->model.rope_theta = 500000.0;
    r->model.rope_scaling.type = ZERO_ROPE_SCALING_LLAMA3;
    r->model.rope_scaling.factor = 8.0, r->model.rope_scaling.low_freq_factor = 1.0;
    r->model.rope_scaling.high_freq_factor = 4.0;
    r->model.rope_scaling.original_max_position_embeddings = 16;
}

/* token t of global sequence s: a pseudo-random stream with structure */
static int32_t token_at(int64_t s, int64_t t, int64_t vocab)
{
    uint64_t z = (uint64_t)(s * 1000003 + t) * 0x9e3779b97f4a7c15ULL;
    z ^= z >> 29;
    return (int32_t)((s + 3 * t + (int64_t)(z % 3)) % vocab);
}

static int train(struct run *r, MPI_Comm comm, struct zero_error *err)
{
    struct zero_device *dev = NULL;
    struct zero_model *m = NULL;
    struct zero_engine *e = NULL;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    int rc = zero_device_open(&dev, "cpu", &comm, &opt, err);
    if (!rc)
        rc = zero_nn_build_llama(
            &m, &r->model, &(struct zero_llama_build){.block_size = T, .checkpoint = r->checkpoint},
            err);
    if (!rc)
        rc = zero_engine_create(&e, &r->cfg, m, dev, err);
    const int64_t accum = r->cfg.gradient_accumulation_steps;
    for (int step = 0; step < STEPS && !rc; step++) {
        for (int64_t micro = 0; micro < accum && !rc; micro++) {
            int32_t tokens[MICRO * T], labels[MICRO * T];
            const int64_t first =
                zero_atom_first_sample(step, micro, dev->rank, dev->size, accum, MICRO);
            for (int64_t i = 0; i < MICRO * T; i++) {
                tokens[i] = token_at(first + i / T, i % T, r->model.vocab_size);
                labels[i] = token_at(first + i / T, i % T + 1, r->model.vocab_size);
            }
            struct zero_batch b = {.rows = MICRO * T, .tokens = tokens, .labels = labels};
            if (!(rc = zero_engine_forward(e, &b, NULL, err)) &&
                !(rc = zero_engine_backward(e, err)))
                rc = zero_engine_step(e, NULL, err);
        }
        if (!rc)
            r->losses[step] = (float)zero_engine_last_step(e)->loss;
    }
    if (!rc) {
        r->peak_activations = zero_engine_ledger(e)->peak[ZERO_TAG_ACTIVATIONS];
        r->nweights = zero_model_numel(m);
        r->weights = malloc((size_t)r->nweights * sizeof(float));
        int64_t at = 0;
        for (int u = 0; u < m->nunits && !rc; u++)
            for (int p = 0; p < m->units[u]->nparams && !rc; p++) {
                rc = zero_engine_read_param(e, u, p, r->weights + at, err);
                at += zero_param_numel(&m->units[u]->params[p]);
            }
    }
    zero_engine_destroy(e);
    zero_model_destroy(m);
    zero_device_close(dev);
    return rc;
}

static void must_train(struct run *r, MPI_Comm comm)
{
    struct zero_error err = {0};
    int rc = train(r, comm, &err);
    ck_assert_msg(mpi_check_all(rc == ZERO_OK), "training failed: %s",
                  rc ? err.msg : "on another rank");
}

static int same_bits(const struct run *a, const struct run *b)
{
    return a->nweights == b->nweights && memcmp(a->losses, b->losses, sizeof a->losses) == 0 &&
           memcmp(a->weights, b->weights, (size_t)a->nweights * sizeof(float)) == 0;
}

/* precision: 0 fp32, 1 bf16, 2 fp16 (loss scaling from 2^8); tied: tie_word_embeddings */
static void check_stages_agree(int precision, int tied)
{
    struct run runs[4];
    for (int stage = 0; stage < 4; stage++) {
        run_defaults(&runs[stage], stage);
        runs[stage].model.tie_word_embeddings = tied;
        runs[stage].cfg.bf16.enabled = precision == 1;
        runs[stage].cfg.fp16.enabled = precision == 2;
        if (precision == 2)
            runs[stage].cfg.fp16.initial_scale_power = 8;
        must_train(&runs[stage], MPI_COMM_WORLD);
    }
    ck_assert_msg(runs[0].losses[STEPS - 1] < runs[0].losses[0], "loss %g -> %g did not fall",
                  runs[0].losses[0], runs[0].losses[STEPS - 1]);
    for (int stage = 1; stage < 4; stage++)
        ck_assert_msg(mpi_check_all(same_bits(&runs[0], &runs[stage])),
                      "precision %d, tied %d: stage %d differs from stage 0 (losses %.9g vs %.9g)",
                      precision, tied, stage, runs[stage].losses[STEPS - 1],
                      runs[0].losses[STEPS - 1]);
    for (int stage = 0; stage < 4; stage++)
        free(runs[stage].weights);
}

START_TEST(test_llama_stages_0_to_3_give_the_same_bits_in_fp32)
{
    check_stages_agree(0, 0);
    check_stages_agree(0, 1);
}
END_TEST

START_TEST(test_llama_stages_0_to_3_give_the_same_bits_in_bf16_and_fp16)
{
    check_stages_agree(1, 0);
    check_stages_agree(2, 1);
}
END_TEST

START_TEST(test_llama_checkpointing_gives_the_same_bits_with_fewer_activations)
{
    for (int stage = 0; stage < 4; stage += 3) {
        struct run plain, ckpt;
        run_defaults(&plain, stage);
        run_defaults(&ckpt, stage);
        ckpt.checkpoint = 1;
        must_train(&plain, MPI_COMM_WORLD);
        must_train(&ckpt, MPI_COMM_WORLD);
        ck_assert_msg(mpi_check_all(same_bits(&plain, &ckpt)),
                      "stage %d: checkpointing changed the bits", stage);
        ck_assert_msg(mpi_check_all(ckpt.peak_activations < plain.peak_activations),
                      "stage %d: peak activations %lld with checkpointing, %lld without", stage,
                      (long long)ckpt.peak_activations, (long long)plain.peak_activations);
        free(plain.weights);
        free(ckpt.weights);
    }
}
END_TEST

START_TEST(test_llama_offloaded_optimizer_gives_the_same_bits)
{
    for (int stage = 2; stage < 4; stage++) {
        struct run plain, off;
        run_defaults(&plain, stage);
        run_defaults(&off, stage);
        off.cfg.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
        must_train(&plain, MPI_COMM_WORLD);
        must_train(&off, MPI_COMM_WORLD);
        ck_assert_msg(mpi_check_all(same_bits(&plain, &off)),
                      "stage %d: the offloaded optimizer changed the bits", stage);
        free(plain.weights);
        free(off.weights);
    }
}
END_TEST

/* N ranks with one micro-batch each = one rank accumulating N micro-batches */
START_TEST(test_llama_stage3_on_n_ranks_matches_one_rank_accumulating)
{
    const int world = mpi_check_size();
    struct run wide, alone;
    run_defaults(&wide, 3);
    must_train(&wide, MPI_COMM_WORLD);
    run_defaults(&alone, 0);
    alone.cfg.gradient_accumulation_steps = world;
    must_train(&alone, MPI_COMM_SELF);
    ck_assert_msg(mpi_check_all(same_bits(&wide, &alone)),
                  "stage 3 on %d ranks differs from 1 rank accumulating (losses %.9g vs %.9g)",
                  world, wide.losses[STEPS - 1], alone.losses[STEPS - 1]);
    free(wide.weights);
    free(alone.weights);
}
END_TEST

static Suite *stages_suite(void)
{
    Suite *s = suite_create("llama_stages");
    TCase *tc = tcase_create("stages");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_llama_stages_0_to_3_give_the_same_bits_in_fp32);
    tcase_add_test(tc, test_llama_stages_0_to_3_give_the_same_bits_in_bf16_and_fp16);
    tcase_add_test(tc, test_llama_checkpointing_gives_the_same_bits_with_fewer_activations);
    tcase_add_test(tc, test_llama_offloaded_optimizer_gives_the_same_bits);
    tcase_add_test(tc, test_llama_stage3_on_n_ranks_matches_one_rank_accumulating);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_check_main(&argc, &argv, stages_suite);
}

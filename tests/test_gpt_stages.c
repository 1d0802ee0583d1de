/* A tiny GPT-2 trained with every ZeRO stage at this world size (run at N = 1,
 * 2, 3): the losses and the final weights must be the same bits in every
 * stage, with and without activation checkpointing, and the same as one rank
 * doing all N micro-batches by gradient accumulation (the exactness contract of
 * docs/design.md). The tied LM head under stage 3 is the interesting case: wte is
 * gathered for the head, receives the head's gradient first and the
 * embedding's scatter second. Checkpointing must also lower the peak of saved
 * activations in the ledger. */
#include <check.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_state_backend.h"
#include "mpi_check.h"
#include "stored_entries_ref.h"
#include "zero/backend_stored.h"
#include "zero/gpt.h"
#include "zero/zero.h"

#define STEPS 3      /* the default run */
#define MAX_STEPS 10 /* the longest (gpt_run.steps) */

struct gpt_run {
    /* inputs */
    struct zero_config cfg; /* stage, micro-batch and accumulation set */
    struct zero_gpt_config model;
    int steps;       /* 0: STEPS */
    int stored;      /* 1: the cpu backend with a stored group of reference entries (ref_stored) */
    int count_casts; /* 1: the cpu backend with its cast counted (casts) */
    int no_xent_fused; /* 1: the cpu backend without its fused classifier (two buffers) */
    int predict;       /* 1: predictions and an eval loss of step 0's batch, before training */
    unsigned attn;     /* ATTN_STATE, ATTN_TYPED: attention_state_backend's entries */
    /* outputs */
    float losses[MAX_STEPS];
    float *weights; /* every parameter, whole, in model order */
    int64_t nweights;
    int64_t peak_activations;     /* ledger peak of saved activations, this rank */
    int64_t peak_workspace;       /* ledger peak of the workspace, this rank */
    int64_t direct_grad_elements; /* zero_engine_direct_grad_elements after the run */
    long casts;                   /* this rank's casts through the table (count_casts) */
    int64_t peak_total;           /* ledger peak of all tags, this rank */
    float *predictions;           /* predict: (rows, V) logits */
    float eval_loss;              /* predict: zero_engine_eval's loss */
};

static void run_defaults(struct gpt_run *r, int stage)
{
    memset(r, 0, sizeof *r);
    zero_config_defaults(&r->cfg);
    r->cfg.zero_optimization.stage = stage;
    /* every unit really released and gathered under stage 3 */
    r->cfg.zero_optimization.stage3_param_persistence_threshold = 0;
    r->cfg.optimizer.type = ZERO_OPTIM_ADAMW;
    r->cfg.optimizer.lr = 1e-2;
    r->cfg.optimizer.weight_decay = 0.01;
    r->cfg.gradient_clipping = 1.0;
    r->cfg.train_micro_batch_size_per_gpu = 2; /* sequences */
    r->cfg.gradient_accumulation_steps = 1;
    r->cfg.libzero.align = 64; /* small blocks: tiny units still split over 3 ranks */
    r->model = (struct zero_gpt_config){
        .n_layer = 2, .n_head = 2, .n_embd = 16, .block_size = 8, .vocab_size = 24};
}

/* Token t of global sequence s: a fixed pseudo-random stream with some structure
 * (each token mostly follows from the one before), so the loss moves. */
static int32_t token_at(int64_t s, int64_t t, int64_t vocab)
{
    uint64_t z = (uint64_t)(s * 1000003 + t) * 0x9e3779b97f4a7c15ULL;
    z ^= z >> 29;
    return (int32_t)((s + 3 * t + (int64_t)(z % 3)) % vocab);
}

/* tokens and labels (m*T) of the micro-batch that starts at global sequence first */
static void fill_batch(const struct gpt_run *r, int64_t first, int64_t m, int32_t *tokens,
                       int32_t *labels)
{
    const int64_t T = r->model.block_size;
    for (int64_t i = 0; i < m * T; i++) {
        tokens[i] = token_at(first + i / T, i % T, r->model.vocab_size);
        labels[i] = token_at(first + i / T, i % T + 1, r->model.vocab_size);
    }
}

#define MAX_ROWS 64

/* One optimizer step (all its micro-batches); records the step's loss. */
static int train_step(struct gpt_run *r, struct zero_engine *e, int step, int rank, int world,
                      struct zero_error *err)
{
    const struct zero_config *c = zero_engine_config(e);
    const int64_t m = c->train_micro_batch_size_per_gpu, accum = c->gradient_accumulation_steps;
    int32_t tokens[MAX_ROWS], labels[MAX_ROWS];
    if (m * r->model.block_size > MAX_ROWS)
        return zero_fail(err, ZERO_EINVAL, "test batch too large");
    int rc = 0;
    for (int64_t micro = 0; micro < accum && !rc; micro++) {
        fill_batch(r, zero_atom_first_sample(step, micro, rank, world, accum, m), m, tokens,
                   labels);
        struct zero_batch b = {.rows = m * r->model.block_size, .tokens = tokens, .labels = labels};
        if (!(rc = zero_engine_forward(e, &b, NULL, err)) && !(rc = zero_engine_backward(e, err)))
            rc = zero_engine_step(e, NULL, err);
    }
    if (!rc)
        r->losses[step] = (float)zero_engine_last_step(e)->loss;
    return rc;
}

static int train(struct gpt_run *r, struct zero_engine *e, int rank, int world,
                 struct zero_error *err)
{
    int rc = 0;
    for (int step = 0; step < (r->steps ? r->steps : STEPS) && !rc; step++)
        rc = train_step(r, e, step, rank, world, err);
    return rc;
}

static int read_weights(struct gpt_run *r, struct zero_engine *e, const struct zero_model *m,
                        struct zero_error *err)
{
    r->nweights = zero_model_numel(m);
    r->weights = malloc((size_t)r->nweights * sizeof(float));
    if (!r->weights)
        return zero_fail(err, ZERO_ENOMEM, "weights");
    int64_t at = 0;
    for (int u = 0; u < m->nunits; u++)
        for (int p = 0; p < m->units[u]->nparams; p++) {
            int rc = zero_engine_read_param(e, u, p, r->weights + at, err);
            if (rc)
                return rc;
            at += zero_param_numel(&m->units[u]->params[p]);
        }
    return ZERO_OK;
}

/* The stored group (zero/backend_stored.h) as its contract defines it, on the cpu's
 * entries: the cpu backend has none, so a copy of its table with this group tells
 * whether src/nn hands the entries the right buffers (LayerNorm's residual form
 * included) and keeps the bits. */
static const struct zero_backend *cpu_table;

static long cast_calls; /* casts src/nn and the engine asked the table for */
static int counted_cast(void *self, void *dst, enum zero_dtype dt, const void *src,
                        enum zero_dtype st, size_t n)
{
    cast_calls++;
    return cpu_table->cast(self, dst, dt, src, st, n);
}

/* layernorm_forward_stored: the fp32 entries into a workspace, then the cast. The cast is
 * counted as the table's (it stands where src/nn's own cast was), so a count of casts
 * sees only what the two GEMM entries below save. */
static int layernorm_forward_stored_reference(void *self, void *y, enum zero_dtype y_type,
                                              float *mean, float *rstd, const float *x, float *res,
                                              const float *a, const float *b, const float *weight,
                                              const float *bias, int64_t rows, int64_t cols,
                                              float eps)
{
    const struct zero_backend *be = cpu_table;
    const size_t n = (size_t)(rows * cols);
    void *y32 = NULL;
    int rc = be->alloc(self, n * sizeof(float), ZERO_TAG_WORKSPACE, &y32);
    if (!rc && x == NULL)
        rc = be->add(self, res, a, b, n);
    if (!rc)
        rc = be->layernorm_forward(self, y32, mean, rstd, x != NULL ? x : res, weight, bias, rows,
                                   cols, eps);
    if (!rc)
        rc = counted_cast(self, y, y_type, y32, ZERO_F32, n);
    be->free(self, y32);
    return rc;
}

/* gemm_bias_stored and gemm_dgelu_stored as their contracts define them, on the cpu's entries
 * (stored_entries_ref.c); the calls are counted, so that a run can show it used them */
static long epi_calls[2]; /* [0] gemm_bias_stored with a 16-bit out_type, [1] gemm_dgelu_stored */
static int gemm_bias_stored_reference(void *self, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                      const void *a, enum zero_dtype at, int64_t lda, const void *b,
                                      enum zero_dtype bt, int64_t ldb, const float *bias, void *c,
                                      void *gelu, enum zero_dtype out_type, int64_t ldc,
                                      enum zero_gelu kind)
{
    epi_calls[0] += out_type != ZERO_F32;
    return ref_gemm_bias_stored(cpu_table, self, ta, tb, m, n, k, a, at, lda, b, bt, ldb, bias, c,
                                gelu, out_type, ldc, kind);
}

static int gemm_dgelu_stored_reference(void *self, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                       const void *a, enum zero_dtype at, int64_t lda,
                                       const void *b, enum zero_dtype bt, int64_t ldb, float *c,
                                       int64_t ldc, const void *pre, enum zero_dtype pre_type,
                                       enum zero_gelu kind)
{
    epi_calls[1] += pre_type != ZERO_F32;
    return ref_gemm_dgelu_stored(cpu_table, self, ta, tb, m, n, k, a, at, lda, b, bt, ldb, c, ldc,
                                 pre, pre_type, kind);
}

static const struct zero_stored_ops ref_stored = {
    .version = ZERO_STORED_OPS_VERSION,
    .layernorm_forward_stored = layernorm_forward_stored_reference,
    .gemm_bias_stored = gemm_bias_stored_reference,
    .gemm_dgelu_stored = gemm_dgelu_stored_reference,
};

/* r->predictions and r->eval_loss: zero_engine_predict and zero_engine_eval on step 0's
 * micro-batch at the initial weights */
static int predict_and_eval(struct gpt_run *r, struct zero_engine *e, int rank, int world,
                            struct zero_error *err)
{
    const int64_t m = r->cfg.train_micro_batch_size_per_gpu, rows = m * r->model.block_size;
    int32_t tokens[MAX_ROWS], labels[MAX_ROWS];
    if (rows > MAX_ROWS)
        return zero_fail(err, ZERO_EINVAL, "test batch too large");
    fill_batch(r, zero_atom_first_sample(0, 0, rank, world, 1, m), m, tokens, labels);
    struct zero_batch b = {.rows = rows, .tokens = tokens, .labels = labels};
    r->predictions = malloc((size_t)(rows * r->model.vocab_size) * sizeof(float));
    if (r->predictions == NULL)
        return zero_fail(err, ZERO_ENOMEM, "predictions");
    int rc = zero_engine_predict(e, &b, r->predictions, err);
    return rc ? rc : zero_engine_eval(e, &b, &r->eval_loss, err);
}

/* Trains r on comm; the caller frees r->weights. */
static int gpt_train(struct gpt_run *r, MPI_Comm comm, struct zero_error *err)
{
    struct zero_device *dev = NULL;
    struct zero_model *model = NULL;
    struct zero_engine *e = NULL;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    int rc = zero_device_open(&dev, "cpu", &comm, &opt, err);
    static struct zero_backend with_refs; /* the cpu's table with reference entries */
    const int refs = r->stored || r->count_casts || r->no_xent_fused || r->attn;
    if (!rc && refs) {
        cpu_table = dev->be;
        with_refs = r->attn ? *attention_state_backend(dev->be, r->attn) : *dev->be;
        if (r->stored)
            with_refs.stored = &ref_stored;
        if (r->count_casts)
            with_refs.cast = counted_cast;
        if (r->no_xent_fused)
            with_refs.classifier = NULL;
        cast_calls = 0;
        dev->be = &with_refs;
    }
    if (!rc)
        rc = zero_nn_build_gpt(&model, &r->model, err);
    if (!rc)
        rc = zero_engine_create(&e, &r->cfg, model, dev, err);
    if (!rc && r->predict)
        rc = predict_and_eval(r, e, dev->rank, dev->size, err);
    if (!rc)
        rc = train(r, e, dev->rank, dev->size, err);
    if (!rc) {
        r->peak_activations = zero_engine_ledger(e)->peak[ZERO_TAG_ACTIVATIONS];
        r->peak_workspace = zero_engine_ledger(e)->peak[ZERO_TAG_WORKSPACE];
        r->peak_total = zero_engine_ledger(e)->peak_total;
        r->direct_grad_elements = zero_engine_direct_grad_elements(e);
        r->casts = cast_calls;
        rc = read_weights(r, e, model, err);
    }
    zero_engine_destroy(e);
    zero_model_destroy(model);
    if (dev != NULL && refs)
        dev->be = cpu_table; /* closed by its own table */
    zero_device_close(dev);
    return rc;
}

static int same_bits(const struct gpt_run *a, const struct gpt_run *b)
{
    return a->nweights == b->nweights && memcmp(a->losses, b->losses, sizeof a->losses) == 0 &&
           memcmp(a->weights, b->weights, (size_t)a->nweights * sizeof(float)) == 0;
}

/* Runs r on every rank of MPI_COMM_WORLD; fails the test on any rank's error. */
static void must_train(struct gpt_run *r, MPI_Comm comm)
{
    struct zero_error err = {0};
    int rc = gpt_train(r, comm, &err);
    ck_assert_msg(mpi_check_all(rc == ZERO_OK), "training failed: %s",
                  rc ? err.msg
                     : "on "
                       "another rank");
}

/* bf16: 0 fp32 training, 1 bf16, 2 fp16 (loss scaling from 2^8) */
static void check_stages_agree_with(int bf16, enum zero_matmul matmul, enum zero_activations act)
{
    struct gpt_run runs[4];
    for (int stage = 0; stage < 4; stage++) {
        run_defaults(&runs[stage], stage);
        runs[stage].cfg.bf16.enabled = bf16 == 1;
        runs[stage].cfg.fp16.enabled = bf16 == 2;
        if (bf16 == 2)
            runs[stage].cfg.fp16.initial_scale_power = 8;
        runs[stage].cfg.libzero.matmul = matmul;
        runs[stage].cfg.libzero.activations = act;
        must_train(&runs[stage], MPI_COMM_WORLD);
    }
    /* the loss must move, or equal bits would prove little */
    ck_assert_msg(runs[0].losses[STEPS - 1] < runs[0].losses[0], "loss %g -> %g did not fall",
                  runs[0].losses[0], runs[0].losses[STEPS - 1]);
    for (int stage = 1; stage < 4; stage++)
        ck_assert_msg(mpi_check_all(same_bits(&runs[0], &runs[stage])),
                      "%s (matmul %d, activations %d): stage %d differs from stage 0 (losses "
                      "%.9g vs %.9g)",
                      bf16 == 2 ? "fp16"
                      : bf16    ? "bf16"
                                : "fp32",
                      (int)matmul, (int)act, stage, runs[stage].losses[STEPS - 1],
                      runs[0].losses[STEPS - 1]);
    for (int stage = 0; stage < 4; stage++)
        free(runs[stage].weights);
}

static void check_stages_agree(int bf16, enum zero_matmul matmul)
{
    check_stages_agree_with(bf16, matmul, ZERO_ACTIVATIONS_FP32);
}

START_TEST(test_gpt_stages_0_to_3_give_the_same_bits)
{
    check_stages_agree(0, ZERO_MATMUL_AUTO);
}
END_TEST

START_TEST(test_gpt_stages_0_to_3_give_the_same_bits_in_bf16)
{
    check_stages_agree(1, ZERO_MATMUL_FP32);
    check_stages_agree(1, ZERO_MATMUL_COMPUTE); /* bf16 GEMM operands: what cuda runs */
}
END_TEST

/* libzero.matmul "bf16_dot" / "bf16_tile": the bf16 products by a bf16 contract. Stages
 * 0-3 agree to the bit, and every GEMM variant this processor runs (ZERO_CPU_ISA: scalar,
 * avx2, avx512, avx512bf16's VDPBF16PS, amx's TDPBF16PS) gives the same bits at stages 0
 * and 3; fp32 training is refused, naming the key and the value. (This small model's bf16
 * products sum exactly in fp32 almost always, so its bits equal "compute"'s chain;
 * test_kernels checks the switch on a product where they differ.) */
static void check_bf16_contract(enum zero_matmul matmul, const char *name)
{
    check_stages_agree(1, matmul);
    { /* fp32 training has no bf16 products: refused, naming the key */
        struct gpt_run f;
        struct zero_error err = {0};
        run_defaults(&f, 0);
        f.cfg.libzero.matmul = matmul;
        const int rc = gpt_train(&f, MPI_COMM_WORLD, &err);
        ck_assert_msg(mpi_check_all(rc != ZERO_OK && strstr(err.msg, "libzero.matmul") != NULL &&
                                    strstr(err.msg, name) != NULL),
                      "fp32 training with %s: rc %d, \"%s\"", name, rc, err.msg);
        free(f.weights);
    }
    static const char *const isas[] = {"amx", "avx512bf16", "avx512", "avx2", "scalar"};
    for (int stage = 0; stage < 4; stage += 3) {
        struct gpt_run dflt, isa;
        run_defaults(&dflt, stage);
        dflt.cfg.bf16.enabled = 1;
        dflt.cfg.libzero.matmul = matmul;
        must_train(&dflt, MPI_COMM_WORLD);
        for (unsigned i = 0; i < sizeof isas / sizeof *isas; i++) {
            struct zero_error err = {0};
            setenv("ZERO_CPU_ISA", isas[i], 1);
            run_defaults(&isa, stage);
            isa.cfg.bf16.enabled = 1;
            isa.cfg.libzero.matmul = matmul;
            const int rc = gpt_train(&isa, MPI_COMM_WORLD, &err);
            unsetenv("ZERO_CPU_ISA");
            if (mpi_check_all(rc != ZERO_OK) && strstr(err.msg, "lacks it") != NULL) {
                free(isa.weights);
                continue; /* this processor lacks the variant */
            }
            ck_assert_msg(mpi_check_all(rc == ZERO_OK), "ZERO_CPU_ISA=%s: %s", isas[i], err.msg);
            ck_assert_msg(mpi_check_all(same_bits(&dflt, &isa)),
                          "%s at stage %d: ZERO_CPU_ISA=%s differs from the default variant", name,
                          stage, isas[i]);
            free(isa.weights);
        }
        free(dflt.weights);
    }
}

START_TEST(test_gpt_stages_0_to_3_give_the_same_bits_with_bf16_dot)
{
    check_bf16_contract(ZERO_MATMUL_BF16_DOT, "bf16_dot");
}
END_TEST

START_TEST(test_gpt_stages_0_to_3_give_the_same_bits_with_bf16_tile)
{
    check_bf16_contract(ZERO_MATMUL_BF16_TILE, "bf16_tile");
}
END_TEST

/* (stored: fp32 training, then bf16 with libzero.activations "compute": the recompute
 * stores its activations as the forward did) */
START_TEST(test_gpt_checkpointing_gives_the_same_bits_with_fewer_activations)
{
    for (int run = 0; run < 4; run++) {
        const int stage = run % 2 ? 3 : 0, stored = run >= 2;
        struct gpt_run plain, ckpt;
        run_defaults(&plain, stage);
        run_defaults(&ckpt, stage);
        plain.cfg.bf16.enabled = ckpt.cfg.bf16.enabled = stored;
        plain.cfg.libzero.activations = ckpt.cfg.libzero.activations =
            stored ? ZERO_ACTIVATIONS_COMPUTE : ZERO_ACTIVATIONS_FP32;
        ckpt.model.checkpoint = 1;
        must_train(&plain, MPI_COMM_WORLD);
        must_train(&ckpt, MPI_COMM_WORLD);
        ck_assert_msg(mpi_check_all(same_bits(&plain, &ckpt)),
                      "stage %d%s: checkpointing changed the bits", stage,
                      stored ? ", bf16 activations" : "");
        ck_assert_msg(mpi_check_all(ckpt.peak_activations < plain.peak_activations),
                      "stage %d%s: peak activations %lld with checkpointing, %lld without", stage,
                      stored ? ", bf16 activations" : "", (long long)ckpt.peak_activations,
                      (long long)plain.peak_activations);
        free(plain.weights);
        free(ckpt.weights);
    }
}
END_TEST

/* N ranks with one micro-batch each = one rank accumulating N micro-batches. */
START_TEST(test_gpt_stage3_on_n_ranks_matches_one_rank_accumulating)
{
    const int world = mpi_check_size();
    struct gpt_run wide, alone;
    run_defaults(&wide, 3);
    must_train(&wide, MPI_COMM_WORLD);
    run_defaults(&alone, 0);
    alone.cfg.gradient_accumulation_steps = world;
    must_train(&alone, MPI_COMM_SELF);
    ck_assert_msg(mpi_check_all(same_bits(&wide, &alone)),
                  "stage 3 on %d ranks differs from 1 rank accumulating %d micro-batches "
                  "(losses %.9g vs %.9g)",
                  world, world, wide.losses[STEPS - 1], alone.losses[STEPS - 1]);
    free(wide.weights);
    free(alone.weights);
}
END_TEST

/* libzero.activations = "compute": the blocks' saved activations stored in bf16 (and
 * fp16 in fp16 training). Every stage gives the same bits, with either GEMM precision,
 * and N ranks give one rank's bits (stage 3 against one rank accumulating N
 * micro-batches). */
START_TEST(test_gpt_stages_0_to_3_give_the_same_bits_with_bf16_activations)
{
    check_stages_agree_with(1, ZERO_MATMUL_FP32, ZERO_ACTIVATIONS_COMPUTE);
    check_stages_agree_with(1, ZERO_MATMUL_COMPUTE, ZERO_ACTIVATIONS_COMPUTE);
    check_stages_agree_with(2, ZERO_MATMUL_COMPUTE, ZERO_ACTIVATIONS_COMPUTE); /* fp16 */
    const int world = mpi_check_size();
    struct gpt_run wide, alone;
    run_defaults(&wide, 3);
    run_defaults(&alone, 0);
    alone.cfg.gradient_accumulation_steps = world;
    wide.cfg.bf16.enabled = alone.cfg.bf16.enabled = 1;
    wide.cfg.libzero.activations = alone.cfg.libzero.activations = ZERO_ACTIVATIONS_COMPUTE;
    must_train(&wide, MPI_COMM_WORLD);
    must_train(&alone, MPI_COMM_SELF);
    ck_assert_msg(mpi_check_all(same_bits(&wide, &alone)),
                  "bf16 activations: stage 3 on %d ranks differs from 1 rank accumulating (losses "
                  "%.9g vs %.9g)",
                  world, wide.losses[STEPS - 1], alone.losses[STEPS - 1]);
    free(wide.weights);
    free(alone.weights);
}
END_TEST

/* A backend with layernorm_forward_stored (cuda's: LN outputs stored in 16 bits as the
 * kernel writes them) gives the bits of the cpu's fp32 entries and casts, at stages 0
 * and 3: src/nn calls the entry for ln_1 (plain) and ln_2 (after the residual add). */
START_TEST(test_gpt_layernorm_forward_stored_gives_the_bits_of_layernorm_then_cast)
{
    for (int stage = 0; stage < 4; stage += 3) {
        struct gpt_run runs[2];
        for (int i = 0; i < 2; i++) {
            run_defaults(&runs[i], stage);
            runs[i].cfg.bf16.enabled = 1;
            runs[i].cfg.libzero.activations = ZERO_ACTIVATIONS_COMPUTE;
            runs[i].stored = i;
            must_train(&runs[i], MPI_COMM_WORLD);
        }
        ck_assert_msg(mpi_check_all(same_bits(&runs[0], &runs[1])),
                      "stage %d: layernorm_forward_stored changed the bits (losses %.9g vs %.9g)",
                      stage, runs[1].losses[STEPS - 1], runs[0].losses[STEPS - 1]);
        free(runs[0].weights);
        free(runs[1].weights);
    }
}
END_TEST

/* A backend with gemm_bias_stored and gemm_dgelu_stored (cuda's: qkv, the MLP's pre-activation
 * and its GELU written in 16 bits by the GEMM, the GELU backward reading the 16-bit
 * pre-activation) gives the bits of the plain cpu run: bf16 and fp16 activations, fp32
 * and compute-dtype GEMMs, every stage against the plain stage 0. The entries must have
 * been called on every rank, with 16-bit types, and src/nn must have skipped its own
 * casts there (the table's casts counted: 4 fewer per layer and step). */
START_TEST(test_gpt_16_bit_gemm_epilogues_give_the_bits_of_gemm_bias_then_cast)
{
    for (int fp16 = 0; fp16 < 2; fp16++)
        for (int mm = 0; mm < 2; mm++) {
            const enum zero_matmul matmul = mm ? ZERO_MATMUL_COMPUTE : ZERO_MATMUL_FP32;
            struct gpt_run plain, with;
            run_defaults(&plain, 0);
            plain.cfg.bf16.enabled = !fp16;
            plain.cfg.fp16.enabled = fp16;
            plain.cfg.fp16.initial_scale_power = 8;
            plain.cfg.libzero.matmul = matmul;
            plain.cfg.libzero.activations = ZERO_ACTIVATIONS_COMPUTE;
            plain.count_casts = 1;
            must_train(&plain, MPI_COMM_WORLD);
            ck_assert_msg(plain.losses[STEPS - 1] != plain.losses[0], "the loss did not move");
            for (int stage = 0; stage < 4; stage++) {
                with = plain;
                with.cfg.zero_optimization.stage = stage;
                with.stored = 1;
                with.weights = NULL;
                epi_calls[0] = epi_calls[1] = 0;
                must_train(&with, MPI_COMM_WORLD);
                ck_assert_msg(mpi_check_all(epi_calls[0] > 0 && epi_calls[1] > 0),
                              "%s matmul %d stage %d: gemm_bias_stored called %ld times with a "
                              "16-bit output, gemm_dgelu_stored %ld times with a 16-bit input",
                              fp16 ? "fp16" : "bf16", mm, stage, epi_calls[0], epi_calls[1]);
                ck_assert_msg(mpi_check_all(same_bits(&plain, &with)),
                              "%s activations, matmul %s, stage %d: the 16-bit epilogue entries "
                              "changed the bits (losses %.9g vs %.9g)",
                              fp16 ? "fp16" : "bf16", mm ? "compute" : "fp32", stage,
                              with.losses[STEPS - 1], plain.losses[STEPS - 1]);
                /* per layer and step: the casts of qkv, fch and its GELU, the widening of fch */
                const long skipped = (long)STEPS * plain.model.n_layer * 4;
                ck_assert_msg(mpi_check_all(plain.casts - with.casts == skipped),
                              "%s matmul %d stage %d: %ld casts plain, %ld with the 16-bit "
                              "entries; %ld fewer expected",
                              fp16 ? "fp16" : "bf16", mm, stage, plain.casts, with.casts, skipped);
                free(with.weights);
            }
            free(plain.weights);
        }
}
END_TEST

/* Stored bf16 activations against fp32 ones in the same bf16 training (stage 0, 10
 * steps): a different run (the rounding acts), a loss curve within TOL_ACT_LOSS
 * relative at every step, and the blocks' saved activations at half their bytes but
 * the residual, the statistics and the attention probabilities, and the head's ln_f
 * output and its (rows, V) logits buffer (bf16 logits: the cpu has the fused
 * classifier): the ledger's activation peak falls by exactly 2 * (n_layer * (10 C +
 * 4 C) + C + V) rows bytes (each of those elements 4 -> 2 bytes), the fp32 workspace
 * for the kernels' results aside. */
/* measured over the 10 steps (cpu, exact mode): 2.0e-3 at N = 1, 5.6e-4 at 2, 2.0e-4 at 3
 * with fp32 logits; with bf16 logits 1.4e-3 at N = 1 */
#define TOL_ACT_LOSS 5e-3
START_TEST(test_gpt_bf16_activations_follow_the_fp32_loss_curve_and_halve_their_bytes)
{
    struct gpt_run runs[2]; /* [0] fp32 activations, [1] bf16 */
    for (int i = 0; i < 2; i++) {
        run_defaults(&runs[i], 0);
        runs[i].steps = MAX_STEPS;
        runs[i].cfg.bf16.enabled = 1;
        runs[i].cfg.libzero.activations = i ? ZERO_ACTIVATIONS_COMPUTE : ZERO_ACTIVATIONS_FP32;
        must_train(&runs[i], MPI_COMM_WORLD);
    }
    double worst = 0.0;
    for (int step = 0; step < MAX_STEPS; step++) {
        double a = runs[0].losses[step], b = runs[1].losses[step];
        double rel = fabs(a - b) / fabs(a);
        worst = rel > worst ? rel : worst;
        ck_assert_msg(rel <= TOL_ACT_LOSS,
                      "step %d: loss %.9g with bf16 activations, %.9g with fp32", step, b, a);
    }
    printf("bf16 activations: loss %.6f -> %.6f (fp32 activations %.6f -> %.6f), worst rel %.3g; "
           "peak activations %lld -> %lld bytes, peak workspace %lld -> %lld bytes\n",
           runs[1].losses[0], runs[1].losses[MAX_STEPS - 1], runs[0].losses[0],
           runs[0].losses[MAX_STEPS - 1], worst, (long long)runs[0].peak_activations,
           (long long)runs[1].peak_activations, (long long)runs[0].peak_workspace,
           (long long)runs[1].peak_workspace);
    ck_assert_msg(runs[0].losses[MAX_STEPS - 1] < runs[0].losses[0], "the loss did not fall");
    ck_assert_msg(!same_bits(&runs[0], &runs[1]), "bf16 activations gave the fp32 bits");
    const struct zero_gpt_config *g = &runs[0].model;
    const int64_t m = runs[0].cfg.train_micro_batch_size_per_gpu, T = g->block_size, rows = m * T,
                  C = g->n_embd;
    const int64_t halved = ((g->n_layer * 14 + 1) * C + g->vocab_size) * rows;
    ck_assert_msg(mpi_check_all(runs[0].peak_activations - runs[1].peak_activations == 2 * halved),
                  "peak activations %lld with bf16, %lld with fp32: expected %lld less",
                  (long long)runs[1].peak_activations, (long long)runs[0].peak_activations,
                  (long long)(2 * halved));
    free(runs[0].weights);
    free(runs[1].weights);
}
END_TEST

/* The head's one (rows, V) buffer (the backend's fused classifier: the GEMM's logits in
 * the saved region, dlogits written over them in place) against the two of the path
 * without it (scratch logits, saved probs, scratch dlogits), the cpu's table without
 * xent_fused: the same losses, weights, predictions and eval loss at every stage, in
 * fp32 and in bf16 with fp32 activations (fp32 logits both), and the ledger's peaks
 * (all tags, and the workspace) lower by exactly the scratch logits, rows * V * 4 bytes
 * (V = 256, so that the head's buffers make the step's peak); the activations' peak is
 * the same (the saved buffer holds the logits instead of the probabilities). */
START_TEST(test_gpt_one_buffer_head_gives_the_two_buffer_bits_without_the_scratch_logits)
{
    for (int run = 0; run < 5; run++) {
        const int stage = run % 4, bf16 = run == 4;
        struct gpt_run runs[2]; /* [0] two buffers, [1] one */
        for (int i = 0; i < 2; i++) {
            run_defaults(&runs[i], stage);
            runs[i].cfg.bf16.enabled = bf16;
            runs[i].cfg.libzero.matmul = bf16 ? ZERO_MATMUL_COMPUTE : ZERO_MATMUL_AUTO;
            runs[i].no_xent_fused = i == 0;
            runs[i].predict = 1;
            runs[i].model.vocab_size = 256; /* the head's buffers are then the step's peak */
            must_train(&runs[i], MPI_COMM_WORLD);
        }
        printf("one buffer, stage %d%s: peak %lld -> %lld, activations %lld -> %lld, workspace "
               "%lld -> %lld bytes\n",
               stage, bf16 ? " bf16" : "", (long long)runs[0].peak_total,
               (long long)runs[1].peak_total, (long long)runs[0].peak_activations,
               (long long)runs[1].peak_activations, (long long)runs[0].peak_workspace,
               (long long)runs[1].peak_workspace);
        const int64_t rows = runs[0].cfg.train_micro_batch_size_per_gpu * runs[0].model.block_size;
        const int64_t V = runs[0].model.vocab_size, scratch_logits = rows * V * 4;
        ck_assert_msg(runs[0].losses[STEPS - 1] < runs[0].losses[0], "the loss did not fall");
        ck_assert_msg(mpi_check_all(same_bits(&runs[0], &runs[1])),
                      "stage %d%s: the one-buffer head changed the bits (losses %.9g vs %.9g)",
                      stage, bf16 ? " bf16" : "", runs[1].losses[STEPS - 1],
                      runs[0].losses[STEPS - 1]);
        ck_assert_msg(mpi_check_all(memcmp(runs[0].predictions, runs[1].predictions,
                                           (size_t)(rows * V) * sizeof(float)) == 0 &&
                                    memcmp(&runs[0].eval_loss, &runs[1].eval_loss, 4) == 0),
                      "stage %d: predictions or eval loss differ (eval %.9g vs %.9g)", stage,
                      runs[1].eval_loss, runs[0].eval_loss);
        ck_assert_msg(mpi_check_all(runs[0].peak_activations == runs[1].peak_activations),
                      "stage %d: peak activations %lld with one buffer, %lld with two", stage,
                      (long long)runs[1].peak_activations, (long long)runs[0].peak_activations);
        ck_assert_msg(
            mpi_check_all(runs[0].peak_workspace - runs[1].peak_workspace == scratch_logits),
            "stage %d%s: peak workspace %lld with one buffer, %lld with two: expected %lld less",
            stage, bf16 ? " bf16" : "", (long long)runs[1].peak_workspace,
            (long long)runs[0].peak_workspace, (long long)scratch_logits);
        ck_assert_msg(mpi_check_all(runs[0].peak_total - runs[1].peak_total == scratch_logits),
                      "stage %d%s: peak %lld with one buffer, %lld with two: expected %lld less",
                      stage, bf16 ? " bf16" : "", (long long)runs[1].peak_total,
                      (long long)runs[0].peak_total, (long long)scratch_logits);
        for (int i = 0; i < 2; i++) {
            free(runs[i].weights);
            free(runs[i].predictions);
        }
    }
}
END_TEST

/* bf16 logits (libzero.activations "compute" in bf16 training on a backend with the fused
 * classifier) against fp32 ones (ZERO_FP32_LOGITS=1) in the same training, 10 steps at
 * stage 0, with fp32 and bf16 GEMMs: a different run (the logits' rounding acts), a loss
 * curve within TOL_LOGITS_LOSS relative at every step, the same predictions at the
 * initial weights (predict writes fp32 logits either way), and the ledger's activation
 * peak lower by exactly the buffer's other half, rows * V * 2 bytes.
 * The tolerances: at step 0 (equal weights) only the forward differs: each logit z
 * moves by at most |z| 2^-8 when rounded to bf16 (8 significant bits, to nearest), so
 * each row's loss by at most sum_c |p_c - onehot_c| max|dz| <= 2 * 2^-8 max|z| (first
 * order; the next term is below 1e-6 here), max|z| over the step's logits (the
 * predictions at the same weights). From step 1 the weights differ: the dlogits
 * differ by the logits' rounding and their own (2^-8 relative, which bf16 GEMMs apply
 * anyway), and Adam's first steps are sign-like (an update of +-lr whatever a
 * gradient's size), so a rounding that flips a near-zero gradient element moves that
 * weight by 2 lr: the same amplification gives the bf16-activations test above its
 * 1e-3 level; TOL_LOGITS_LOSS is three times the worst measured. */
/* measured over the 10 steps (cpu, exact mode), worst relative: fp32 GEMMs 3.4e-3 at N = 1,
 * 4.1e-4 at 2, 4.0e-4 at 3; bf16 GEMMs 7.2e-4, 1.6e-3, 9.5e-4; step 0: 5e-7 to 2e-5
 * against a bound of 2.7e-3 to 2.9e-3 */
#define TOL_LOGITS_LOSS 1e-2
START_TEST(test_gpt_bf16_logits_follow_the_fp32_loss_curve_and_halve_the_buffer)
{
    for (int lowp_gemm = 0; lowp_gemm < 2; lowp_gemm++) {
        struct gpt_run runs[2]; /* [0] fp32 logits, [1] bf16 */
        for (int i = 0; i < 2; i++) {
            run_defaults(&runs[i], 0);
            runs[i].steps = MAX_STEPS;
            runs[i].predict = 1;
            runs[i].cfg.bf16.enabled = 1;
            runs[i].cfg.libzero.activations = ZERO_ACTIVATIONS_COMPUTE;
            runs[i].cfg.libzero.matmul = lowp_gemm ? ZERO_MATMUL_COMPUTE : ZERO_MATMUL_FP32;
            if (i == 0)
                setenv("ZERO_FP32_LOGITS", "1", 1);
            must_train(&runs[i], MPI_COMM_WORLD);
            unsetenv("ZERO_FP32_LOGITS");
        }
        const int64_t rows = runs[0].cfg.train_micro_batch_size_per_gpu * runs[0].model.block_size;
        const int64_t V = runs[0].model.vocab_size;
        double zmax = 0.0, zmax_all = 0.0;
        for (int64_t i = 0; i < rows * V; i++)
            zmax = fmax(zmax, fabs(runs[0].predictions[i]));
        MPI_Allreduce(&zmax, &zmax_all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        const double step0 = fabs((double)runs[0].losses[0] - (double)runs[1].losses[0]);
        ck_assert_msg(step0 <= 2.0 * ldexp(zmax_all, -8) + 1e-6,
                      "step 0: loss %.9g with bf16 logits, %.9g with fp32: more than 2^-7 max|z| "
                      "= %.3g apart",
                      runs[1].losses[0], runs[0].losses[0], 2.0 * ldexp(zmax_all, -8));
        double worst = 0.0;
        for (int step = 0; step < MAX_STEPS; step++) {
            double a = runs[0].losses[step], b = runs[1].losses[step];
            double rel = fabs(a - b) / fabs(a);
            worst = rel > worst ? rel : worst;
            ck_assert_msg(rel <= TOL_LOGITS_LOSS,
                          "step %d: loss %.9g with bf16 logits, %.9g with fp32", step, b, a);
        }
        printf("bf16 logits (%s GEMMs): loss %.6f -> %.6f (fp32 logits %.6f -> %.6f), worst rel "
               "%.3g (step 0: %.3g, bound %.3g); peak activations %lld -> %lld, peak %lld -> %lld "
               "bytes\n",
               lowp_gemm ? "bf16" : "fp32", runs[1].losses[0], runs[1].losses[MAX_STEPS - 1],
               runs[0].losses[0], runs[0].losses[MAX_STEPS - 1], worst, step0,
               2.0 * ldexp(zmax_all, -8), (long long)runs[0].peak_activations,
               (long long)runs[1].peak_activations, (long long)runs[0].peak_total,
               (long long)runs[1].peak_total);
        ck_assert_msg(runs[1].losses[MAX_STEPS - 1] < runs[1].losses[0], "the loss did not fall");
        ck_assert_msg(!same_bits(&runs[0], &runs[1]), "bf16 logits gave the fp32 bits");
        ck_assert_msg(mpi_check_all(memcmp(runs[0].predictions, runs[1].predictions,
                                           (size_t)(rows * V) * sizeof(float)) == 0),
                      "bf16 logits changed the predictions");
        ck_assert_msg(
            mpi_check_all(runs[0].peak_activations - runs[1].peak_activations == rows * V * 2),
            "peak activations %lld with bf16 logits, %lld with fp32: expected %lld less",
            (long long)runs[1].peak_activations, (long long)runs[0].peak_activations,
            (long long)(rows * V * 2));
        for (int i = 0; i < 2; i++) {
            free(runs[i].weights);
            free(runs[i].predictions);
        }
    }
}
END_TEST

/* A backend whose attention keeps a (B, NH, T) state and (B, NH, T) floats of scratch
 * (attention_state_floats: what cuda's flash attention keeps) and, with flags'
 * ATTN_TYPED, reads and writes 16-bit qkv and atty itself: every stage gives the plain
 * cpu run's bits (fp32 training; bf16 training with bf16 activations), and the saved
 * activations shrink by exactly the T x T the blocks no longer keep:
 *   peak activations = plain's - n_layer * B * NH * (T * T - T) * 4 bytes
 * (B the micro-batch's sequences; att is fp32 in both runs); with activation
 * checkpointing too (the recompute lays the state out as the forward did). The backend
 * checks the state it kept to the bit in backward and poisons its scratch, so a state
 * laid out over qkv, or a scratch over live data, fails too. The backward's scratch
 * (the workspace) shrinks by the same T x T of one block at most. */
static void check_attention_state(unsigned flags, int bf16)
{
    for (int stage = 0; stage < 4; stage++) {
        struct gpt_run runs[3]; /* [0] plain cpu, [1] the state backend, [2] checkpointed */
        for (int i = 0; i < 3; i++) {
            run_defaults(&runs[i], stage);
            runs[i].cfg.bf16.enabled = bf16;
            runs[i].cfg.libzero.activations =
                bf16 ? ZERO_ACTIVATIONS_COMPUTE : ZERO_ACTIVATIONS_FP32;
            runs[i].attn = i ? flags : 0;
            runs[i].model.checkpoint = i == 2; /* the recompute keeps the state as well */
            must_train(&runs[i], MPI_COMM_WORLD);
        }
        ck_assert_msg(mpi_check_all(same_bits(&runs[0], &runs[2])),
                      "attention entries %u, %s, stage %d, checkpointing: not the plain bits",
                      flags, bf16 ? "bf16 activations" : "fp32", stage);
        ck_assert_msg(runs[0].losses[STEPS - 1] != runs[0].losses[0], "the loss did not move");
        ck_assert_msg(mpi_check_all(same_bits(&runs[0], &runs[1])),
                      "attention entries %u, %s, stage %d: not the plain bits (losses %.9g vs "
                      "%.9g)",
                      flags, bf16 ? "bf16 activations" : "fp32", stage, runs[1].losses[STEPS - 1],
                      runs[0].losses[STEPS - 1]);
        const struct zero_gpt_config *g = &runs[0].model;
        const int64_t B = runs[0].cfg.train_micro_batch_size_per_gpu, T = g->block_size;
        const int64_t fall = flags & ATTN_STATE
                                 ? g->n_layer * B * g->n_head * (T * T - T) * (int64_t)sizeof(float)
                                 : 0;
        ck_assert_msg(mpi_check_all(runs[0].peak_activations - runs[1].peak_activations == fall),
                      "attention entries %u, stage %d: peak activations %lld, plain %lld: "
                      "expected %lld less",
                      flags, stage, (long long)runs[1].peak_activations,
                      (long long)runs[0].peak_activations, (long long)fall);
        ck_assert_msg(mpi_check_all(runs[1].peak_workspace <= runs[0].peak_workspace),
                      "attention entries %u, stage %d: peak workspace %lld, plain %lld", flags,
                      stage, (long long)runs[1].peak_workspace, (long long)runs[0].peak_workspace);
        if (mpi_check_rank() == 0 && stage == 0)
            printf("attention entries %u (%s): peak activations %lld -> %lld, workspace %lld -> "
                   "%lld bytes\n",
                   flags, bf16 ? "bf16 activations" : "fp32", (long long)runs[0].peak_activations,
                   (long long)runs[1].peak_activations, (long long)runs[0].peak_workspace,
                   (long long)runs[1].peak_workspace);
        for (int i = 0; i < 3; i++)
            free(runs[i].weights);
    }
}

START_TEST(test_gpt_attention_state_gives_the_plain_bits_with_less_memory)
{
    check_attention_state(ATTN_STATE, 0);
    check_attention_state(ATTN_STATE, 1);
}
END_TEST

/* the _stored entries (qkv and atty read and written in bf16 by the backend, no fp32
 * workspace in src/nn) give the bits of widening and rounding in src/nn, with the
 * contract's T x T and with the state */
START_TEST(test_gpt_stored_attention_gives_the_plain_bits)
{
    check_attention_state(ATTN_TYPED, 1);
    check_attention_state(ATTN_STATE | ATTN_TYPED, 1);
}
END_TEST

/* The global mean loss of step 0's batch at the current weights (eval pass). */
static double global_loss(struct zero_engine *e, const struct gpt_run *r, int rank, int world)
{
    const int64_t m = r->cfg.train_micro_batch_size_per_gpu;
    int32_t tokens[MAX_ROWS], labels[MAX_ROWS];
    fill_batch(r, zero_atom_first_sample(0, 0, rank, world, 1, m), m, tokens, labels);
    struct zero_batch b = {.rows = m * r->model.block_size, .tokens = tokens, .labels = labels};
    struct zero_error err = {0};
    float loss = 0.0f;
    int rc = zero_engine_eval(e, &b, &loss, &err);
    ck_assert_msg(mpi_check_all(rc == ZERO_OK), "eval: %s", err.msg);
    double local = loss, sum = 0.0;
    MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum / world;
}

/* The tied wte gets the head's gradient and the embedding's: one SGD step with
 * lr 1 moves wte by exactly its gradient, which must match finite differences
 * of the loss (stage 3: wte is sharded, gathered for the head, reduced once). */
START_TEST(test_gpt_tied_wte_gradient_sums_head_and_embedding_shares_under_stage3)
{
    struct gpt_run r;
    run_defaults(&r, 3);
    r.cfg.optimizer.type = ZERO_OPTIM_SGD;
    r.cfg.optimizer.lr = 1.0;
    r.cfg.optimizer.weight_decay = 0.0;
    r.cfg.gradient_clipping = 0.0;
    struct zero_device *dev = NULL;
    struct zero_model *model = NULL;
    struct zero_engine *e = NULL;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    struct zero_error err = {0};
    MPI_Comm comm = MPI_COMM_WORLD;
    int rc = zero_device_open(&dev, "cpu", &comm, &opt, &err);
    if (!rc)
        rc = zero_nn_build_gpt(&model, &r.model, &err);
    if (!rc)
        rc = zero_engine_create(&e, &r.cfg, model, dev, &err);
    ck_assert_msg(mpi_check_all(rc == ZERO_OK), "setup: %s", err.msg);

    const int64_t n = r.model.vocab_size * r.model.n_embd;
    float *w0 = malloc((size_t)n * sizeof(float)), *w = malloc((size_t)n * sizeof(float));
    ck_assert(w0 != NULL && w != NULL);
    ck_assert_int_eq(zero_engine_read_param(e, 0, 0, w0, &err), ZERO_OK);
    /* rows of tokens the batch uses (3, 5: embedding and head) and one it does not
     * (23: only the head's softmax reaches it) */
    const int64_t C = r.model.n_embd, probe[] = {3 * C + 1, 5 * C + 7, 23 * C + 2};
    const double h = 1e-2;
    double fd[3];
    for (int i = 0; i < 3; i++) {
        memcpy(w, w0, (size_t)n * sizeof(float));
        w[probe[i]] = w0[probe[i]] + (float)h;
        ck_assert_int_eq(zero_engine_write_param(e, 0, 0, w, &err), ZERO_OK);
        const double lp = global_loss(e, &r, dev->rank, dev->size);
        w[probe[i]] = w0[probe[i]] - (float)h;
        ck_assert_int_eq(zero_engine_write_param(e, 0, 0, w, &err), ZERO_OK);
        const double lm = global_loss(e, &r, dev->rank, dev->size);
        fd[i] = (lp - lm) / (2 * h);
    }
    ck_assert_int_eq(zero_engine_write_param(e, 0, 0, w0, &err), ZERO_OK);
    rc = train_step(&r, e, 0, dev->rank, dev->size, &err);
    ck_assert_msg(mpi_check_all(rc == ZERO_OK), "step: %s", err.msg);
    ck_assert_int_eq(zero_engine_read_param(e, 0, 0, w, &err), ZERO_OK);
    for (int i = 0; i < 3; i++) {
        const double g = (double)w0[probe[i]] - (double)w[probe[i]]; /* lr 1 */
        ck_assert_msg(fabs(g - fd[i]) <= 0.02 * fabs(fd[i]) + 1e-4,
                      "dwte[%lld] = %.6g, finite difference %.6g", (long long)probe[i], g, fd[i]);
    }
    zero_engine_destroy(e);
    zero_model_destroy(model);
    zero_device_close(dev);
    free(w);
    free(w0);
}
END_TEST

/* Mixed precision: the GEMMs' weight gradients written straight in the compute dtype
 * (the direct route) give the bits of the old route (ZERO_DIRECT_LOWP_GRAD=0: fp32,
 * converted after the unit), with A = 2 micro-steps and the tied wte, whose gradient
 * the head writes first (not offered) and the embedding adds to. */
START_TEST(test_gpt_direct_lowp_gradients_give_the_old_bits)
{
    for (int fp16 = 0; fp16 < 2; fp16++)
        for (int stage = 0; stage < 4; stage++) {
            struct gpt_run runs[2]; /* [0] the old route, [1] the direct one */
            for (int direct = 0; direct < 2; direct++) {
                struct gpt_run *r = &runs[direct];
                run_defaults(r, stage);
                r->cfg.bf16.enabled = !fp16;
                r->cfg.fp16.enabled = fp16;
                r->cfg.fp16.initial_scale_power = 8;
                r->cfg.gradient_accumulation_steps = 2;
                if (!direct)
                    setenv("ZERO_DIRECT_LOWP_GRAD", "0", 1);
                must_train(r, MPI_COMM_WORLD);
                unsetenv("ZERO_DIRECT_LOWP_GRAD");
            }
            const char *name = fp16 ? "fp16" : "bf16";
            ck_assert_msg(mpi_check_all(runs[0].direct_grad_elements == 0 &&
                                        runs[1].direct_grad_elements > 0),
                          "%s stage %d: %lld elements written directly with the route off, %lld "
                          "with it on",
                          name, stage, (long long)runs[0].direct_grad_elements,
                          (long long)runs[1].direct_grad_elements);
            ck_assert_msg(runs[0].losses[STEPS - 1] != runs[0].losses[0],
                          "%s: the loss did not move", name);
            ck_assert_msg(mpi_check_all(same_bits(&runs[0], &runs[1])),
                          "%s stage %d: the direct route changed the bits (losses %.9g vs %.9g)",
                          name, stage, runs[1].losses[STEPS - 1], runs[0].losses[STEPS - 1]);
            free(runs[0].weights);
            free(runs[1].weights);
        }
}
END_TEST

static Suite *stages_suite(void)
{
    Suite *s = suite_create("gpt_stages");
    TCase *tc = tcase_create("stages");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_gpt_stages_0_to_3_give_the_same_bits);
    tcase_add_test(tc, test_gpt_stages_0_to_3_give_the_same_bits_in_bf16);
    tcase_add_test(tc, test_gpt_stages_0_to_3_give_the_same_bits_with_bf16_dot);
    tcase_add_test(tc, test_gpt_stages_0_to_3_give_the_same_bits_with_bf16_tile);
    tcase_add_test(tc, test_gpt_checkpointing_gives_the_same_bits_with_fewer_activations);
    tcase_add_test(tc, test_gpt_stage3_on_n_ranks_matches_one_rank_accumulating);
    tcase_add_test(tc, test_gpt_tied_wte_gradient_sums_head_and_embedding_shares_under_stage3);
    tcase_add_test(tc, test_gpt_direct_lowp_gradients_give_the_old_bits);
    tcase_add_test(tc, test_gpt_stages_0_to_3_give_the_same_bits_with_bf16_activations);
    tcase_add_test(tc, test_gpt_layernorm_forward_stored_gives_the_bits_of_layernorm_then_cast);
    tcase_add_test(tc, test_gpt_16_bit_gemm_epilogues_give_the_bits_of_gemm_bias_then_cast);
    tcase_add_test(tc, test_gpt_bf16_activations_follow_the_fp32_loss_curve_and_halve_their_bytes);
    tcase_add_test(tc,
                   test_gpt_one_buffer_head_gives_the_two_buffer_bits_without_the_scratch_logits);
    tcase_add_test(tc, test_gpt_bf16_logits_follow_the_fp32_loss_curve_and_halve_the_buffer);
    tcase_add_test(tc, test_gpt_attention_state_gives_the_plain_bits_with_less_memory);
    tcase_add_test(tc, test_gpt_stored_attention_gives_the_plain_bits);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_check_main(&argc, &argv, stages_suite);
}

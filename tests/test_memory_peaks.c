/* The memory plan bounds the ledger (src/engine/memory_plan.c, memory_peaks.c): after
 * a few training steps (and reading the weights back), every tag's peak in this
 * rank's ledgers (device and host: the cpu backend's memory is the host's) is at
 * most zero_engine_memory_plan's bytes for that tag: MLP at stages 0, 2 and 3, fp32
 * and bf16, with small buckets and overlap, a live limit, activation checkpointing, a
 * tiny GPT at stage 3 (tied embedding: the head writes wte's gradient first), NVMe
 * offload of the optimizer and the parameters, qwZ, and hpZ and MiCS (at 4 ranks).
 * And the plan is not loose: for the GPT at stage 3 its sum is within 2x of the
 * ledgers' peak (all tags at once), and for NVMe offload the workspace plan is within
 * 1.5x of the workspace peak (the rings), both less the backend's fixed packing
 * allowance (product_workspace_bytes), which is sized for large products. */
#include <check.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpi_check.h"
#include "zero/gpt.h"
#include "zero/zero.h"

#define STEPS 3

struct probe {
    struct zero_config cfg;
    int gpt;      /* a tiny GPT-2 (else a residual MLP of hidden 32, 3 blocks) */
    int ckpt;     /* activation checkpointing on every block */
    int nvme;     /* 1: offload_optimizer to NVMe; 2: and the parameters */
    char dir[64]; /* the swap files' directory */
    /* outputs */
    int64_t plan[ZERO_TAG_COUNT], peak[ZERO_TAG_COUNT];
    int64_t plan_total, peak_total;
    int64_t packing; /* the backend's fixed scratch of one product, in the workspace plan */
};

static void defaults(struct probe *p, int stage)
{
    memset(p, 0, sizeof *p);
    zero_config_defaults(&p->cfg);
    p->cfg.zero_optimization.stage = stage;
    p->cfg.optimizer.type = ZERO_OPTIM_ADAMW;
    p->cfg.optimizer.lr = 1e-3;
    p->cfg.train_micro_batch_size_per_gpu = 2;
    p->cfg.gradient_accumulation_steps = 1;
    p->cfg.libzero.align = 64;
    p->cfg.zero_optimization.stage3_param_persistence_threshold = 0;
}

static void use_nvme(struct probe *p, int params)
{
    struct zero_optimization_config *z = &p->cfg.zero_optimization;
    if (mpi_check_rank() == 0) {
        snprintf(p->dir, sizeof p->dir, "/tmp/libzero-peaks-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(p->dir));
    }
    MPI_Bcast(p->dir, sizeof p->dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    p->nvme = params ? 2 : 1;
    z->offload_optimizer.device = ZERO_OFFLOAD_NVME;
    snprintf(z->offload_optimizer.nvme_path, sizeof z->offload_optimizer.nvme_path, "%s", p->dir);
    z->sub_group_size = 4096; /* several chunks per unit */
    if (params) {
        z->offload_param.device = ZERO_OFFLOAD_NVME;
        snprintf(z->offload_param.nvme_path, sizeof z->offload_param.nvme_path, "%s", p->dir);
        z->offload_param.max_in_cpu = 0;
        z->offload_param.buffer_count = 2;
    }
}

static void batch_of(const struct probe *p, int64_t rows, int64_t width, int step, float *x,
                     int32_t *tokens, int32_t *labels)
{
    for (int64_t i = 0; i < rows * width; i++)
        x[i] = (float)((i * 7 + step * 3 + mpi_check_rank()) % 11) / 11.0f - 0.5f;
    for (int64_t i = 0; i < rows; i++) {
        tokens[i] = (int32_t)((i * 5 + step) % 24);
        labels[i] = (int32_t)((i * 3 + step + 1) % (p->gpt ? 24 : 4));
    }
}

static int run(struct probe *p, struct zero_error *err)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    struct zero_device *dev = NULL;
    struct zero_model *model = NULL;
    struct zero_engine *e = NULL;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    const struct zero_gpt_config g = {.n_layer = 2,
                                      .n_head = 2,
                                      .n_embd = 32,
                                      .block_size = 8,
                                      .vocab_size = 24,
                                      .checkpoint = p->ckpt};
    setenv("ZERO_NVME_QUIET", "1", 1);
    int rc = zero_device_open(&dev, "cpu", &comm, &opt, err);
    if (!rc)
        rc = p->gpt ? zero_nn_build_gpt(&model, &g, err) : zero_nn_build_mlp(&model, 32, 3, 4, err);
    for (int u = 0; !rc && !p->gpt && p->ckpt && u + 1 < model->nunits; u++)
        model->units[u]->checkpoint = 1;
    if (!rc)
        rc = zero_engine_create(&e, &p->cfg, model, dev, err);
    const int64_t rows = p->cfg.train_micro_batch_size_per_gpu * (p->gpt ? g.block_size : 1);
    const int64_t width = p->gpt ? 0 : 32;
    float *x = malloc((size_t)(rows * (width ? width : 1)) * sizeof *x);
    int32_t *tokens = malloc((size_t)rows * sizeof *tokens);
    int32_t *labels = malloc((size_t)rows * sizeof *labels);
    for (int step = 0; step < STEPS && !rc; step++) {
        batch_of(p, rows, width ? width : 1, step, x, tokens, labels);
        struct zero_batch b = {.rows = rows,
                               .inputs = width ? x : NULL,
                               .tokens = p->gpt ? tokens : NULL,
                               .labels = labels};
        if (!(rc = zero_engine_forward(e, &b, NULL, err)) && !(rc = zero_engine_backward(e, err)))
            rc = zero_engine_step(e, NULL, err);
    }
    /* every weight read back, as the trainers save them */
    for (int u = 0; !rc && u < model->nunits; u++)
        for (int q = 0; !rc && q < model->units[u]->nparams; q++) {
            float *w = malloc((size_t)zero_param_numel(&model->units[u]->params[q]) * sizeof *w);
            rc = w ? zero_engine_read_param(e, u, q, w, err) : ZERO_ENOMEM;
            free(w);
        }
    if (!rc) {
        p->plan_total = zero_engine_memory_plan(e, p->plan);
        p->packing = (int64_t)dev->be->product_workspace_bytes(dev->self);
        const struct zero_ledger *d = zero_engine_ledger(e), *h = zero_engine_host_ledger(e);
        for (int t = 0; t < ZERO_TAG_COUNT; t++)
            p->peak[t] = d->peak[t] + h->peak[t];
        p->peak_total = d->peak_total + h->peak_total; /* every tag at once */
    }
    free(x);
    free(tokens);
    free(labels);
    zero_engine_destroy(e);
    zero_model_destroy(model);
    zero_device_close(dev);
    if (p->dir[0] && mpi_check_rank() == 0)
        rmdir(p->dir);
    return rc;
}

/* Runs p and checks every tag's plan against its peak on every rank */
static void bounded(struct probe *p, const char *what)
{
    struct zero_error err = {0};
    int rc = run(p, &err);
    ck_assert_msg(mpi_check_all(rc == 0), "%s: rank %d: %s", what, mpi_check_rank(), err.msg);
    int ok = 1;
    for (int t = 0; t < ZERO_TAG_COUNT; t++)
        if (p->peak[t] > p->plan[t]) {
            fprintf(stderr, "%s: rank %d: tag %s: ledger peak %lld above the plan %lld\n", what,
                    mpi_check_rank(), zero_tag_name(t), (long long)p->peak[t],
                    (long long)p->plan[t]);
            ok = 0;
        }
    ck_assert_msg(mpi_check_all(ok), "%s: a tag's peak is above its plan (stderr names it)", what);
    if (mpi_check_rank() == 0) { /* the log shows how close each bound is */
        printf("%-40s plan / peak bytes:", what);
        for (int t = 0; t < ZERO_TAG_COUNT; t++)
            if (p->plan[t] || p->peak[t])
                printf(" %s %lld/%lld", zero_tag_name(t), (long long)p->plan[t],
                       (long long)p->peak[t]);
        printf("; total %lld/%lld\n", (long long)p->plan_total, (long long)p->peak_total);
    }
}

/* A micro-batch whose bounds overflow 64 bits (2^60 samples; a GPT's rows overflow
 * too) is refused by the plan, the activations named, without a wrapped product
 * (the sanitizer build checks the arithmetic). */
START_TEST(test_a_micro_batch_past_64_bits_is_refused_by_the_plan)
{
    for (int gpt = 0; gpt <= 1; gpt++) {
        MPI_Comm comm = MPI_COMM_WORLD;
        struct zero_device *dev = NULL;
        struct zero_model *model = NULL;
        struct zero_engine *e = NULL;
        struct zero_error err = {0};
        struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
        const struct zero_gpt_config g = {
            .n_layer = 1, .n_head = 2, .n_embd = 32, .block_size = 8, .vocab_size = 24};
        struct probe p;
        defaults(&p, 3);
        p.cfg.train_micro_batch_size_per_gpu = (int64_t)1 << 60; /* x 4 ranks fits */
        ck_assert_int_eq(zero_device_open(&dev, "cpu", &comm, &opt, &err), ZERO_OK);
        ck_assert_int_eq(gpt ? zero_nn_build_gpt(&model, &g, &err)
                             : zero_nn_build_mlp(&model, 32, 2, 4, &err),
                         ZERO_OK);
        ck_assert_int_ne(zero_engine_create(&e, &p.cfg, model, dev, &err), ZERO_OK);
        ck_assert_msg(strstr(err.msg, "not enough memory") && strstr(err.msg, "activations"), "%s",
                      err.msg);
        zero_model_destroy(model);
        zero_device_close(dev);
    }
}
END_TEST

START_TEST(test_mlp_stage0_fp32_peaks_within_the_plan)
{
    struct probe p;
    defaults(&p, 0);
    bounded(&p, "mlp stage 0");
}
END_TEST

START_TEST(test_mlp_stage2_bf16_small_overlapped_buckets_within_the_plan)
{
    struct probe p;
    defaults(&p, 2);
    p.cfg.bf16.enabled = 1;
    p.cfg.zero_optimization.reduce_bucket_size = 1500; /* a bucket per block or two */
    p.cfg.zero_optimization.overlap_comm = 1;
    bounded(&p, "mlp stage 2 bf16 buckets");
    /* two buckets alive, not the whole model's gradients */
    ck_assert_int_lt(p.plan[ZERO_TAG_BUCKETS], p.plan[ZERO_TAG_PARAMS]);
}
END_TEST

START_TEST(test_mlp_stage3_checkpointed_peaks_within_the_plan)
{
    struct probe p;
    defaults(&p, 3);
    p.ckpt = 1;
    bounded(&p, "mlp stage 3 checkpointed");
    p = (struct probe){0};
    defaults(&p, 3);
    p.cfg.bf16.enabled = 1;
    p.cfg.zero_optimization.stage3_max_live_parameters = 20000; /* about two blocks */
    bounded(&p, "mlp stage 3 bf16 live limit");
}
END_TEST

START_TEST(test_gpt_stage3_peaks_within_the_plan_and_the_plan_within_2x)
{
    struct probe p;
    defaults(&p, 3);
    p.gpt = 1;
    bounded(&p, "gpt stage 3");
    /* less the backend's packing allowance, sized for the largest products (MiBs a
     * thread), which a toy model's products never come near */
    ck_assert_msg(mpi_check_all(p.plan_total - p.packing <= 2 * p.peak_total),
                  "gpt stage 3: rank %d: plan %lld (%lld of it packing) more than twice the "
                  "peaks %lld",
                  mpi_check_rank(), (long long)p.plan_total, (long long)p.packing,
                  (long long)p.peak_total);
    p = (struct probe){0};
    defaults(&p, 3);
    p.gpt = 1;
    p.ckpt = 1;
    p.cfg.bf16.enabled = 1;
    bounded(&p, "gpt stage 3 bf16 checkpointed");
}
END_TEST

START_TEST(test_nvme_offload_buffers_within_the_plan)
{
    struct probe p;
    defaults(&p, 3);
    p.cfg.bf16.enabled = 1;
    use_nvme(&p, 1);
    bounded(&p, "nvme params and optimizer, stage 3 bf16");
    /* the rings dominate the workspace: counted, and not twice */
    ck_assert_msg(mpi_check_all(2 * (p.plan[ZERO_TAG_WORKSPACE] - p.packing) <=
                                3 * p.peak[ZERO_TAG_WORKSPACE]),
                  "rank %d: workspace plan %lld, peak %lld", mpi_check_rank(),
                  (long long)p.plan[ZERO_TAG_WORKSPACE], (long long)p.peak[ZERO_TAG_WORKSPACE]);
    p = (struct probe){0};
    defaults(&p, 2);
    use_nvme(&p, 0);
    bounded(&p, "nvme optimizer, stage 2 fp32");
}
END_TEST

/* ZeRO++'s qwZ (int8 slots of the gathers in flight), hpZ (the secondary shards) and
 * MiCS (the reordered gradient copy of each reduction) where the world allows them */
START_TEST(test_zero_plus_plus_and_mics_buffers_within_the_plan)
{
    struct probe p;
    defaults(&p, 3);
    p.cfg.bf16.enabled = 1;
    p.cfg.zero_optimization.zero_quantized_weights = 1;
    bounded(&p, "qwz stage 3 bf16");
    if (mpi_check_size() % 2 != 0 || mpi_check_size() < 4)
        return; /* hpZ and MiCS groups of 2 in a world of 2 are the world itself */
    p = (struct probe){0};
    defaults(&p, 3);
    p.cfg.zero_optimization.zero_hpz_partition_size = 2;
    bounded(&p, "hpz stage 3");
    p = (struct probe){0};
    defaults(&p, 3);
    p.cfg.zero_optimization.mics_shard_size = 2;
    bounded(&p, "mics stage 3");
}
END_TEST

static Suite *peaks_suite(void)
{
    Suite *s = suite_create("memory_peaks");
    TCase *tc = tcase_create("peaks");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_a_micro_batch_past_64_bits_is_refused_by_the_plan);
    tcase_add_test(tc, test_mlp_stage0_fp32_peaks_within_the_plan);
    tcase_add_test(tc, test_mlp_stage2_bf16_small_overlapped_buckets_within_the_plan);
    tcase_add_test(tc, test_mlp_stage3_checkpointed_peaks_within_the_plan);
    tcase_add_test(tc, test_gpt_stage3_peaks_within_the_plan_and_the_plan_within_2x);
    tcase_add_test(tc, test_nvme_offload_buffers_within_the_plan);
    tcase_add_test(tc, test_zero_plus_plus_and_mics_buffers_within_the_plan);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_check_main(&argc, &argv, peaks_suite);
}

/* See engine_harness.h. */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <stdio.h>

#include "engine_harness.h"

void harness_defaults(struct harness_run *r, int stage)
{
    memset(r, 0, sizeof *r);
    zero_config_defaults(&r->cfg);
    r->cfg.zero_optimization.stage = stage;
    r->cfg.optimizer.type = ZERO_OPTIM_ADAMW;
    r->cfg.optimizer.lr = 1e-2;
    r->cfg.optimizer.weight_decay = 0.01;
    r->cfg.train_micro_batch_size_per_gpu = 2;
    r->cfg.gradient_accumulation_steps = 1;
    r->cfg.gradient_clipping = 0.0; /* off unless a test clips (DeepSpeed's default is 1.0) */
    r->cfg.libzero.align = 64;      /* small blocks: tiny units still split over 4 ranks */
    r->hidden = 24;
    r->classes = 5;
    r->layers = 3;
    r->steps = 3;
    r->data_seed = 7;
}

static int train(struct harness_run *r, struct zero_engine *e, struct zero_device *dev,
                 struct zero_error *err)
{
    const struct zero_config *c = zero_engine_config(e);
    int64_t m = c->train_micro_batch_size_per_gpu, accum = c->gradient_accumulation_steps;
    float *x = malloc((size_t)(m * r->hidden) * sizeof *x);
    int32_t *y = malloc((size_t)m * sizeof *y);
    int rc = (!x || !y) ? zero_fail(err, ZERO_ENOMEM, "batch") : 0;
    for (int step = 0; step < r->steps && !rc; step++) {
        for (int64_t micro = 0; micro < accum && !rc; micro++) {
            int64_t first = zero_atom_first_sample_in(c->libzero.atom_order, step, micro, dev->rank,
                                                      dev->size, accum, m);
            zero_synthetic_samples(r->data_seed, r->hidden, r->classes, first, m, x, y);
            struct zero_batch b = {.rows = m, .inputs = x, .labels = y};
            if (!(rc = zero_engine_forward(e, &b, NULL, err)) &&
                !(rc = zero_engine_backward(e, err)))
                rc = zero_engine_step(e, NULL, err);
        }
        if (!rc) {
            const struct zero_step_info *info = zero_engine_last_step(e);
            r->losses[step] = (float)info->loss;
            r->scales[step] = info->loss_scale;
            r->skipped[step] = info->skipped;
        }
    }
    free(x);
    free(y);
    return rc;
}

static int read_weights(struct harness_run *r, struct zero_engine *e, struct zero_model *m,
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

int harness_train(struct harness_run *r, MPI_Comm comm, struct zero_error *err)
{
    struct zero_device *dev = NULL;
    struct zero_model *model = NULL;
    struct zero_engine *e = NULL;
    struct zero_backend_options opt = {.coll_mode = r->cfg.libzero.coll_mode, .device = -1};
    if (r->precision == ZERO_F16) {
        r->cfg.fp16.enabled = 1;
        r->cfg.fp16.initial_scale_power = 8;
        r->cfg.fp16.hysteresis = 2;
    } else if (r->precision == ZERO_BF16) {
        r->cfg.bf16.enabled = 1;
    }
    int rc = zero_device_open(&dev, "cpu", &comm, &opt, err);
    if (!rc)
        rc = zero_nn_build_mlp(&model, r->hidden, r->layers, r->classes, err);
    for (int u = 0; !rc && u < model->nunits - 1; u++)
        model->units[u]->checkpoint = r->checkpoint;
    if (!rc)
        rc = zero_engine_create(&e, &r->cfg, model, dev, err);
    if (!rc) {
        r->ledger_after_create = dev->ledger;
        r->host_ledger_after_create = dev->host_ledger;
        r->nvme_ledger_after_create = *zero_engine_nvme_ledger(e);
        rc = train(r, e, dev, err);
        zero_engine_nvme_io(e, &r->nvme_read, &r->nvme_written);
    }
    if (!rc) {
        r->ledger_end = dev->ledger;
        zero_engine_theory(e, &r->theory); /* after training: knows the reuse (Ψr) */
        r->last_comm = zero_engine_last_step(e)->comm;
        r->peak_live = zero_engine_peak_live_elements(e);
        r->direct_grad_elements = zero_engine_direct_grad_elements(e);
        r->limit_live = r->cfg.zero_optimization.stage3_max_live_parameters;
        rc = read_weights(r, e, model, err);
    }
    zero_engine_destroy(e);
    zero_model_destroy(model);
    zero_device_close(dev);
    return rc;
}

int harness_same_bits(const struct harness_run *a, const struct harness_run *b)
{
    if (a->steps != b->steps || a->nweights != b->nweights)
        return 0;
    if (memcmp(a->losses, b->losses, sizeof a->losses) != 0 ||
        memcmp(a->skipped, b->skipped, sizeof a->skipped) != 0)
        return 0;
    return memcmp(a->weights, b->weights, (size_t)a->nweights * sizeof(float)) == 0;
}

int harness_run_on_first(struct harness_run *r, int n)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, rank < n ? 0 : MPI_UNDEFINED, rank, &sub);
    int ok = 1, all = 0;
    if (sub != MPI_COMM_NULL) {
        struct zero_error err = {0};
        ok = harness_train(r, sub, &err) == 0;
        if (!ok)
            fprintf(stderr, "rank %d (world %d): %s\n", rank, n, err.msg);
        MPI_Comm_free(&sub);
    }
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    ck_assert(all);
    return rank < n;
}

/* train_mlp: trains the toy residual MLP with any ZeRO stage and shows what the
 * stage does: the loss of every step, the per-rank memory ledger next to the
 * ZeRO paper's formula, and the last step's communication next to theory.
 *
 *     mpirun -np 2 train_mlp --stage 3 --hidden 256 --layers 4 --steps 10
 *
 * The loop is DeepSpeed's: forward, backward, step for every micro-batch, the
 * engine updating at the gradient-accumulation boundary. Every rank builds its
 * micro-batch from the global sample index of its atom (zero_atom_first_sample),
 * so every stage and world size sees the same data in the same order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "example_mpi.h"
#include "mlp_args.h"
#include "checkpointing.h"
#include "mlp_data.h"
#include "report.h"
#include "weights_io.h"
#include "zero/checkpoint.h"
#include "zero/trace.h"
#include "zero/zero.h"

struct trainer {
    struct mlp_args a;
    struct zero_config cfg; /* batch sizes resolved */
    int rank, world;
    int micro_given; /* --micro-batch was given: accumulation derived */
    struct zero_device *dev;
    struct zero_model *model;
    struct zero_engine *engine;
    struct mlp_data data;
    float *inputs;            /* (micro_batch, hidden) */
    int32_t *labels;          /* (micro_batch) */
    struct zero_trace *trace; /* --trace: the engine's observer */
    int64_t first_step;       /* --resume: the checkpoint's data position */
};

/* ---- setup ---- */

/* DeepSpeed's rule: batch = micro-batch x accumulation x world. */
static int resolve_batch(struct trainer *t, char *msg, size_t len)
{
    t->cfg = t->a.cfg;
    t->cfg.train_batch_size = t->a.batch;
    t->cfg.train_micro_batch_size_per_gpu = t->a.micro_batch;
    t->micro_given = t->a.micro_batch > 0;
    struct zero_error err = {0};
    if (zero_config_resolve_batch(&t->cfg, t->world, &err)) {
        snprintf(msg, len, "train_mlp: --batch %lld%s%s on %d ranks: %s", (long long)t->a.batch,
                 t->micro_given ? " / --micro-batch" : "", t->a.config ? " / --config" : "",
                 t->world, err.msg);
        return -1;
    }
    return 0;
}

static int setup(struct trainer *t, struct zero_error *err)
{
    const struct mlp_args *a = &t->a;
    MPI_Comm comm = MPI_COMM_WORLD;
    struct zero_backend_options opt = {.coll_mode = t->cfg.libzero.coll_mode, .device = -1};
    int rc = zero_device_open(&t->dev, t->cfg.libzero.backend, &comm, &opt, err);
    if (!rc)
        rc = zero_nn_build_mlp(&t->model, a->hidden, a->layers, a->classes, err);
    if ((rc = example_agree(rc, err, comm)))
        return rc;
    if ((rc = example_agree(zero_engine_create(&t->engine, &t->cfg, t->model, t->dev, err), err,
                            comm)))
        return rc;
    if (a->init_weights && (rc = weights_load(t->engine, t->model, a->init_weights, comm, err)))
        return zero_error_wrap(err, "--init-weights: ");
    if (a->data)
        rc = mlp_data_load(&t->data, a->data, a->hidden, a->classes, comm, err);
    else
        mlp_data_synthetic(&t->data, a->hidden, a->classes, a->data_seed);
    if (rc)
        return zero_error_wrap(err, "--data: ");
    int64_t m = t->cfg.train_micro_batch_size_per_gpu;
    t->inputs = malloc((size_t)(m * a->hidden) * sizeof *t->inputs);
    t->labels = malloc((size_t)m * sizeof *t->labels);
    rc = t->inputs && t->labels ? ZERO_OK : zero_fail(err, ZERO_ENOMEM, "micro-batch buffers");
    return example_agree(rc, err, comm);
}

static void teardown(struct trainer *t)
{
    free(t->inputs);
    free(t->labels);
    mlp_data_free(&t->data);
    zero_trace_destroy(t->trace);
    zero_engine_destroy(t->engine);
    zero_model_destroy(t->model);
    zero_device_close(t->dev);
}

/* ---- what rank 0 prints ---- */

static void print_header(const struct trainer *t)
{
    const struct mlp_args *a = &t->a;
    const struct zero_config *c = &t->cfg;
    struct zero_theory th;
    zero_engine_theory(t->engine, &th);
    printf("train_mlp: %d residual MLP blocks of width %lld (inner %lld), %lld classes\n",
           a->layers, (long long)a->hidden, 4 * (long long)a->hidden, (long long)a->classes);
    printf("model: Ψ = %lld parameters (%lld padded) in %d units | world size %d | stage %d | "
           "mode %s\n",
           (long long)th.psi, (long long)th.psi_padded, t->model->nunits, t->world,
           c->zero_optimization.stage,
           c->libzero.coll_mode == ZERO_COLL_EXACT ? "exact" : "native");
    printf("batch: %lld = micro-batch %lld x accumulation %lld x world %d (%s)\n",
           (long long)c->train_batch_size, (long long)c->train_micro_batch_size_per_gpu,
           (long long)c->gradient_accumulation_steps, t->world,
           t->micro_given                         ? "accumulation = batch / (micro-batch x world)"
           : t->a.cfg.gradient_accumulation_steps ? "micro-batch = batch / (accumulation x world)"
                                                  : "micro-batch = batch / world");
    static const char *const optimizers[] = {"Adam", "AdamW", "SGD"};
    if (c->optimizer.type == ZERO_OPTIM_SGD)
        printf("optimizer: SGD lr %.2e momentum %g weight decay %g | clipping ", c->optimizer.lr,
               c->optimizer.momentum, c->optimizer.weight_decay);
    else
        printf("optimizer: %s lr %.2e betas (%g, %g) eps %g weight decay %g | clipping ",
               optimizers[c->optimizer.type], c->optimizer.lr, c->optimizer.betas[0],
               c->optimizer.betas[1], c->optimizer.eps, c->optimizer.weight_decay);
    if (c->gradient_clipping > 0)
        printf("%g\n", c->gradient_clipping);
    else
        printf("off\n");
    if (a->data)
        printf("data: %s, %lld samples (sample indices wrap modulo %lld)\n", a->data,
               (long long)t->data.samples, (long long)t->data.samples);
    else
        printf("data: synthetic, seed %llu\n", (unsigned long long)a->data_seed);
    printf("init: %s\n", a->init_weights ? a->init_weights : "seeded (--seed)");
    if (a->verbose)
        for (int u = 0; u < t->model->nunits; u++) {
            const struct zero_unit *unit = t->model->units[u];
            int64_t n = 0;
            for (int p = 0; p < unit->nparams; p++)
                n += zero_param_numel(&unit->params[p]);
            printf("  unit %-14s %-12s %10lld parameters%s\n", unit->name, unit->ops->kind,
                   (long long)n, zero_engine_unit_persistent(t->engine, u) ? " (persistent)" : "");
        }
}

static void print_step(const struct trainer *t)
{
    const struct zero_step_info *s = zero_engine_last_step(t->engine);
    printf("step %lld/%lld | loss %.4f | lr %.2e | grad norm %.3g | %.0f ms | sent %.3g MB",
           (long long)s->step, (long long)t->a.steps, s->loss, s->lr, s->grad_norm,
           s->seconds * 1e3, (double)report_sent_bytes(&s->comm) / 1e6);
    if (zero_engine_compute_dtype(t->engine) == ZERO_F16)
        printf(" | loss scale %g%s", s->loss_scale, s->skipped ? " (overflow: step skipped)" : "");
    if (t->a.verbose)
        printf(" | loss %.17g | clip %.3g", s->loss, s->clip_coef);
    printf("\n");
    fflush(stdout);
}

/* ---- training ---- */

/* A failure inside the loop may leave other ranks waiting in a collective:
 * report it with this rank's number and take the whole job down. */
static void die(const struct trainer *t, const struct zero_error *err)
{
    if (strncmp(err->msg, "rank ", 5) == 0)
        fprintf(stderr, "train_mlp: %s\n", err->msg);
    else
        fprintf(stderr, "train_mlp: rank %d: %s\n", t->rank, err->msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static struct example_checkpointing checkpointing(const struct trainer *t)
{
    const struct mlp_args *a = &t->a;
    return (struct example_checkpointing){
        .save_dir = a->save_checkpoint,
        .resume_dir = a->resume,
        .every = a->checkpoint_every,
        .keep_last = a->keep_last,
        .total_steps = a->steps,
        .batch = t->cfg.train_batch_size,
        .quiet = a->quiet,
        .rank = t->rank,
    };
}

static void train(struct trainer *t)
{
    const struct zero_config *c = &t->cfg;
    int64_t m = c->train_micro_batch_size_per_gpu, accum = c->gradient_accumulation_steps;
    struct zero_error err = {0};
    for (int64_t step = t->first_step; step < t->a.steps; step++) {
        for (int64_t micro = 0; micro < accum; micro++) {
            int64_t first = zero_atom_first_sample(step, micro, t->rank, t->world, accum, m);
            mlp_data_fill(&t->data, first, m, t->inputs, t->labels);
            struct zero_batch b = {.rows = m, .inputs = t->inputs, .labels = t->labels};
            if (zero_engine_forward(t->engine, &b, NULL, &err) ||
                zero_engine_backward(t->engine, &err) || zero_engine_step(t->engine, NULL, &err))
                die(t, &err);
        }
        if (t->rank == 0 && !t->a.quiet)
            print_step(t);
        struct example_checkpointing ck = checkpointing(t);
        if (example_checkpoint_after(t->engine, &ck, step + 1, &err))
            die(t, &err);
    }
}

/* --trace: record the chosen steps' engine events; zero_trace_write saves them. */
static int start_trace(struct trainer *t, struct zero_error *err)
{
    int64_t steps[ZERO_TRACE_MAX_STEPS];
    int n = 0;
    if (t->a.trace_steps &&
        zero_trace_parse_steps(t->a.trace_steps, steps, ZERO_TRACE_MAX_STEPS, &n, err))
        return zero_error_wrap(err, "--trace-steps: ");
    int rc = zero_trace_create(&t->trace, t->model, t->rank, t->world, steps, n, err);
    if (!rc)
        zero_engine_set_observer(t->engine, zero_trace_observe, t->trace);
    return rc;
}

static int write_data(const struct mlp_args *a, int rank)
{
    int64_t samples = a->samples ? a->samples : a->batch * a->steps;
    struct zero_error err = {0};
    int rc = rank == 0 ? mlp_data_write_synthetic(a->write_data, a->data_seed, a->hidden,
                                                  a->classes, samples, &err)
                       : ZERO_OK;
    if (example_agree(rc, &err, MPI_COMM_WORLD)) {
        if (rank == 0)
            fprintf(stderr, "train_mlp: --write-synthetic-data: %s\n", err.msg);
        return 1;
    }
    if (rank == 0 && !a->quiet)
        printf("wrote %s: %lld synthetic samples (seed %llu): inputs F32 [%lld, %lld], labels "
               "I64 [%lld]\n",
               a->write_data, (long long)samples, (unsigned long long)a->data_seed,
               (long long)samples, (long long)a->hidden, (long long)samples);
    return 0;
}

static int run(int argc, char **argv, int rank, int world)
{
    struct trainer t = {.rank = rank, .world = world};
    char msg[1024 + 256];
    switch (mlp_args_parse(&t.a, argc, argv, msg, sizeof msg)) {
    case MLP_ARGS_HELP:
        if (rank == 0)
            fputs(mlp_args_usage(), stdout);
        return 0;
    case MLP_ARGS_USAGE:
        if (rank == 0)
            fprintf(stderr, "%s\n", msg);
        return 2;
    case MLP_ARGS_OK:
        break;
    }
    if (t.a.write_data)
        return write_data(&t.a, rank);
    if (resolve_batch(&t, msg, sizeof msg)) {
        if (rank == 0)
            fprintf(stderr, "%s\n", msg);
        return 2;
    }

    struct zero_error err = {0};
    int status = 0;
    if (setup(&t, &err)) {
        if (rank == 0)
            fprintf(stderr, "train_mlp: %s\n", err.msg);
        status = 1;
        goto out;
    }
    if (rank == 0 && !t.a.quiet)
        print_header(&t);
    struct example_checkpointing ck = checkpointing(&t);
    if (t.a.resume && example_resume(t.engine, &ck, &t.first_step, &err)) {
        if (rank == 0)
            fprintf(stderr, "train_mlp: %s\n", err.msg);
        status = 1;
        goto out;
    }
    if ((t.a.trace || t.a.trace_steps) && (!t.a.trace || start_trace(&t, &err))) {
        if (rank == 0)
            fprintf(stderr, "train_mlp: %s\n", t.a.trace ? err.msg : "--trace-steps needs --trace");
        status = 2;
        goto out;
    }
    train(&t);
    if (t.a.trace &&
        example_agree(zero_trace_write(t.trace, t.dev, t.a.trace, &err), &err, MPI_COMM_WORLD)) {
        if (rank == 0)
            fprintf(stderr, "train_mlp: --trace: %s\n", err.msg);
        status = 1;
        goto out;
    }
    if (t.a.trace && rank == 0 && !t.a.quiet)
        printf("wrote %s: %lld events of rank 0 (open it in https://ui.perfetto.dev)\n", t.a.trace,
               (long long)zero_trace_count(t.trace));
    if (!t.a.quiet) {
        report_memory(stdout, t.engine, MPI_COMM_WORLD);
        if (rank == 0)
            report_comm(stdout, t.engine, world);
    }
    if (t.a.save_weights && weights_save_as(t.engine, t.model, t.a.save_weights, t.a.save_dtype,
                                            MPI_COMM_WORLD, &err)) {
        if (rank == 0)
            fprintf(stderr, "train_mlp: --save-weights: %s\n", err.msg);
        status = 1;
        goto out;
    }
    if (rank == 0) {
        if (t.a.steps > t.first_step)
            printf("final: step %lld, loss %.17g\n", (long long)t.a.steps,
                   zero_engine_last_step(t.engine)->loss);
        else
            printf("final: no step taken\n");
        if (t.a.save_weights && !t.a.quiet)
            printf("saved %s\n", t.a.save_weights);
    }
out:
    teardown(&t);
    return status;
}

int main(int argc, char **argv)
{
    int provided; /* MULTIPLE: the cpu backend's communication thread (overlap) */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    int status = run(argc, argv, rank, world);
    fflush(stdout);
    MPI_Finalize();
    return status;
}

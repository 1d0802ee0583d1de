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

#include "program/example_agree.h"
#include "mlp_args.h"
#include "program/checkpointing.h"
#include "mlp_data.h"
#include "program/program_run.h"
#include "program/report.h"
#include "program/weights_io.h"
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
    /* "auto" keys of --config: from the flags, as Hugging Face fills them from its arguments */
    static const struct zero_config_auto_flag flags[] = {
        {"train_batch_size", "--batch"},
        {"train_micro_batch_size_per_gpu", "--micro-batch"},
        {"gradient_accumulation_steps", "--batch / (--micro-batch x N)"},
        {"gradient_clipping", "--clip"},
        {"optimizer.params.lr", "--lr"},
        {"fp16.enabled", "--precision"},
        {"bf16.enabled", "--precision"},
        {"zero_optimization.reduce_bucket_size", "--bucket"},
        {"zero_optimization.stage3_prefetch_bucket_size", "--prefetch"},
        {"zero_optimization.stage3_param_persistence_threshold", "--persistence"},
        {NULL, NULL}};
    struct zero_config_auto_inputs in = {.flags = flags,
                                         .steps = t->a.steps,
                                         .steps_flag = "--steps",
                                         .hidden = t->a.hidden,
                                         .hidden_flag = "--hidden"};
    if (zero_config_resolve_auto(&t->cfg, &in, t->rank == 0 && !t->a.quiet ? stdout : NULL, &err)) {
        snprintf(msg, len, "train_mlp: --config: %s", err.msg);
        return -1;
    }
    return 0;
}

static int setup(struct trainer *t, struct zero_error *err)
{
    const struct mlp_args *a = &t->a;
    struct zero_comm *comm = zero_comm_world();
    int rc = program_device_open(&t->dev, &t->cfg, comm, err);
    if (!rc)
        rc = zero_nn_build_mlp(&t->model, a->hidden, a->layers, a->classes, err);
    if ((rc = example_agree(rc, err, comm)))
        return rc;
    /* the batch before the engine: a size that overflows or cannot be had is named by
     * its flags, not by the engine's memory plan */
    int64_t m = t->cfg.train_micro_batch_size_per_gpu;
    char what[200]; /* the batch comes from --batch, --micro-batch or the config's keys */
    snprintf(what, sizeof what,
             "micro-batch of %lld samples (train_micro_batch_size_per_gpu) x --hidden %lld",
             (long long)m, (long long)a->hidden);
    void *x, *y;
    rc = program_batch_buffers(m, a->hidden, sizeof *t->inputs, &x, 1, sizeof *t->labels, &y, what,
                               err);
    t->inputs = x; /* (m, hidden) */
    t->labels = y; /* (m) */
    if (rc)
        return rc;
    t->cfg.quiet = a->quiet; /* the engine's own informational lines too */
    if ((rc = program_engine_create(&t->engine, &t->cfg, t->model, t->dev, err)))
        return rc;
    if (a->init_weights && (rc = weights_load(t->engine, t->model, a->init_weights, comm, err)))
        return zero_error_wrap(err, "--init-weights: ");
    if (a->data)
        rc = mlp_data_load(&t->data, a->data, a->hidden, a->classes, comm, err);
    else
        mlp_data_synthetic(&t->data, a->hidden, a->classes, a->data_seed);
    if (rc)
        return zero_error_wrap(err, "--data: ");
    return rc;
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

/* inputs (at + rows, hidden), labels (at + rows): rows at.. hold samples first .. first + rows - 1
 */
static void fill(void *ctx, int64_t first, int64_t rows, int64_t at, struct zero_batch *b)
{
    struct trainer *t = ctx;
    mlp_data_fill(&t->data, first, rows, t->inputs + at * t->a.hidden, t->labels + at);
    *b = (struct zero_batch){.rows = at + rows, .inputs = t->inputs, .labels = t->labels};
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
    if (example_agree(rc, &err, zero_comm_world())) {
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

/* Flags, config and input files, this rank's view: its status and the fields
 * every rank must agree on (program.h). */
static void startup(struct trainer *t, int argc, char **argv, struct program_startup *su, int *help)
{
    char msg[1024 + 256];
    enum mlp_args_result parsed = mlp_args_parse(&t->a, argc, argv, msg, sizeof msg);
    if (!program_startup_parsed(su, parsed == MLP_ARGS_HELP, parsed == MLP_ARGS_USAGE, msg, help))
        return;
    mlp_args_fields(&t->a, su);
    if (t->a.write_data)
        return;
    if (resolve_batch(t, msg, sizeof msg)) {
        program_fail_text(su, 2, msg);
        return;
    }
    program_fields_config(su, &t->cfg);
    program_startup_files(su, t->a.data, t->a.init_weights, t->a.save_checkpoint);
    const char *const flags[] = {"--save-weights", "--trace"};
    const char *const paths[] = {t->a.save_weights, t->a.trace};
    program_outputs_distinct(su, t->a.save_checkpoint, 2, flags, paths);
}

static void usage(FILE *out)
{
    fputs(mlp_args_usage(), out);
}

/* --trace (with --trace-steps): the observer records from the first step on */
static int trace_begin(struct trainer *t, const struct program *p)
{
    struct zero_error err = {0};
    if ((t->a.trace || t->a.trace_steps) && (!t->a.trace || start_trace(t, &err))) {
        if (p->rank == 0)
            fprintf(stderr, "train_mlp: %s\n",
                    t->a.trace ? err.msg : "--trace-steps needs --trace");
        return 2;
    }
    return 0;
}

/* the trace, the reports, --save-weights and the final line */
static int finish(struct trainer *t, const struct program *p)
{
    struct zero_error err = {0};
    if (t->a.trace && example_agree(zero_trace_write(t->trace, t->dev, t->a.trace, &err), &err,
                                    zero_comm_world())) {
        program_error(p, "--trace: ", &err);
        return 1;
    }
    if (t->a.trace && p->rank == 0 && !t->a.quiet)
        printf("wrote %s: %lld events of rank 0 (open it in https://ui.perfetto.dev)\n", t->a.trace,
               (long long)zero_trace_count(t->trace));
    program_reports(p, 1);
    if (t->a.save_weights && weights_save_as(t->engine, t->model, t->a.save_weights,
                                             t->a.save_dtype, zero_comm_world(), &err)) {
        program_error(p, "--save-weights: ", &err);
        return 1;
    }
    if (p->rank == 0) {
        if (t->a.steps > p->first_step)
            printf("final: step %lld, loss %.17g\n", (long long)t->a.steps,
                   zero_engine_last_step(t->engine)->loss);
        else
            printf("final: no step taken\n");
        if (t->a.save_weights && !t->a.quiet)
            printf("saved %s\n", t->a.save_weights);
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct trainer t = {0};
    struct program p;
    program_init(&p, "train_mlp", &argc, &argv);
    t.rank = p.rank, t.world = p.world;

    /* flags, config and input files: every rank agrees before anything collective */
    struct program_startup su;
    int help = 0;
    if (program_startup_begin(&p, &su))
        startup(&t, argc, argv, &su, &help);
    int status = program_agree(&p, &su);
    if (status == 0 && help)
        return program_end(program_usage(&p, usage));
    if (status == 0 && t.a.write_data) /* --write-synthetic-data: the file is the whole run */
        status = write_data(&t.a, t.rank);
    if (status != 0 || t.a.write_data)
        return program_end(status);
    p.quiet = t.a.quiet;

    /* device, model, engine, data */
    struct zero_error err = {0};
    if (setup(&t, &err)) {
        program_error(&p, "", &err);
        status = 1;
        goto out;
    }
    program_attach(&p, t.engine, t.model, &t.cfg, t.a.steps);
    program_checkpoints(&p, t.a.save_checkpoint, t.a.resume, t.a.checkpoint_every, t.a.keep_last);
    if (p.rank == 0 && !p.quiet)
        print_header(&t);
    if ((status = program_resume(&p)) || (status = program_reference(&p)) ||
        (status = trace_begin(&t, &p)))
        goto out;

    /* DeepSpeed's loop: forward, backward and step for every micro-batch, the engine
     * updating at the last one of the step */
    for (int64_t step = p.first_step; step < p.steps; step++) {
        if ((status = program_stopped(&p, step)))
            goto out;
        for (int64_t i = 0; i < p.atoms.accum; i++) {
            struct zero_batch b;
            program_fill(&p.atoms, step, i, fill, &t, &b);
            program_lap(&p, NULL);
            int rc = zero_engine_forward(t.engine, &b, NULL, &err);
            program_lap(&p, &p.clock.forward);
            if (rc == ZERO_OK)
                rc = zero_engine_backward(t.engine, &err);
            program_lap(&p, &p.clock.backward);
            if (rc == ZERO_OK)
                rc = zero_engine_step(t.engine, NULL, &err);
            program_lap(&p, &p.clock.step);
            if (rc != ZERO_OK)
                program_die(p.prog, p.rank, &err);
        }
        if (program_step_due(&p, step))
            print_step(&t);
        if ((status = program_step_done(&p, step)))
            goto out;
    }
    if ((status = program_stopped(&p, p.steps))) /* during the last step: nothing saved */
        goto out;

    /* the trace, the reports, --save-weights and the final line */
    status = finish(&t, &p);
out:
    status = program_close(&p, status);
    teardown(&t);
    return program_end(status);
}

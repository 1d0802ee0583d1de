/* See program_run.h. */
#include <stdlib.h>

#include "program_run.h"
#include "example_mpi.h"
#include "reference_flags.h"
#include "report.h"
#include "sample_order.h"
#include "trajectory.h"

/* The trainer's start-up, then the reference flags' (taken out of argv before it). */
struct wrapped {
    const struct program_app *app;
    void *ctx;
    const struct reference_flags *flags;
    int status; /* the flags' usage error, 0 if none */
    const char *msg;
};

static void wrapped_startup(void *ctx, int argc, char **argv, struct program_startup *su, int *help)
{
    struct wrapped *w = ctx;
    if (w->status) { /* argv may still hold the bad flag: the trainer's parser would object */
        program_fail_text(su, w->status, w->msg);
        return;
    }
    w->app->startup(w->ctx, argc, argv, su, help);
    reference_flags_startup(w->flags, su);
}

/* --order-seed and --trajectory, after --resume: the trajectory starts from the weights
 * the loop starts from */
static int reference_begin(const struct program_app *app, struct program *p,
                           const struct reference_flags *f, struct sample_order *order)
{
    struct zero_error err = {0};
    int64_t global = 0;
    int rc = zero_size_mul(&global, p->micro, p->accum * p->world, "--order-seed", &err);
    if (!rc)
        rc = sample_order_init(order, f->order_seed, global, &err);
    p->order = order;
    rc = example_agree(rc, &err, MPI_COMM_WORLD);
    const struct trajectory_run run = {.prog = app->prog,
                                       .world = p->world,
                                       .micro = p->micro,
                                       .accum = p->accum,
                                       .order_seed = f->order_seed};
    if (!rc && f->trajectory)
        rc = trajectory_open(&p->trajectory, f->trajectory,
                             f->weights_every < 0 ? 0 : f->weights_every, &run, p->engine, p->model,
                             MPI_COMM_WORLD, &err);
    if (rc)
        program_error(p, "", &err);
    return rc ? 1 : 0;
}

int program_run(const struct program_app *app, void *ctx, int argc, char **argv)
{
    struct reference_flags flags;
    char msg[1280];
    struct wrapped w = {.app = app, .ctx = ctx, .flags = &flags, .msg = msg};
    w.status = reference_flags_take(&flags, app->prog, &argc, argv, msg, sizeof msg);
    int begun = program_begin(app->prog, argc, argv, wrapped_startup, app->usage, &w);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (begun == 0 && rank == 0 && w.status == 0)
        fputs(reference_flags_usage(), stdout); /* after --help's text */
    if (begun >= 0)
        return begun;
    int status = app->before_setup ? app->before_setup(ctx) : -1;
    if (status >= 0)
        return status;
    struct zero_error err = {0};
    struct sample_order order = {0};
    struct program p = {0};
    status = 0;
    if (app->setup(ctx, &err)) {
        program_error(&(struct program){.prog = app->prog, .rank = rank}, "", &err);
        status = 1;
        goto out;
    }
    p = app->describe(ctx);
    if (rank == 0 && !p.quiet && app->header)
        app->header(ctx);
    if ((status = program_resume(&p)))
        goto out;
    app->resumed(ctx, p.first_step);
    if ((status = reference_begin(app, &p, &flags, &order)))
        goto out;
    if (app->before_train && (status = app->before_train(ctx, &p)))
        goto out;
    if ((status = program_train(&p)))
        goto out;
    status = app->after_train(ctx, &p);
out:
    /* the trajectory is renamed into place also when the loop stopped on a NaN */
    if (p.trajectory && trajectory_close(p.trajectory, MPI_COMM_WORLD, &err)) {
        program_error(&p, "--trajectory: ", &err);
        status = status ? status : 1;
    }
    sample_order_free(&order);
    program_live_engine(NULL);
    app->teardown(ctx);
    return status;
}

int program_engine_create(struct zero_engine **e, const struct zero_config *cfg,
                          struct zero_model *model, struct zero_device *dev, int quiet,
                          struct zero_error *err)
{
    if (quiet)
        setenv("ZERO_NVME_QUIET", "1", 1);
    int rc = example_agree(zero_engine_create(e, cfg, model, dev, err), err, MPI_COMM_WORLD);
    program_live_engine(*e);
    return rc;
}

int program_batch_buffers(int64_t rows, int64_t a_width, size_t a_size, void **a, int64_t b_width,
                          size_t b_size, void **b, const char *what, struct zero_error *err)
{
    int64_t na = 0, nb = 0;
    *a = *b = NULL;
    int rc = zero_size_mul(&na, rows, a_width, what, err);
    if (!rc)
        rc = zero_size_mul(&nb, rows, b_width, what, err);
    if (!rc && (*a = zero_size_alloc(na, a_size, what, err)))
        *b = zero_size_alloc(nb, b_size, what, err);
    if (!rc && !*b)
        rc = err->code;
    return example_agree(rc, err, MPI_COMM_WORLD);
}

int program_main(int argc, char **argv, const struct program_app *app, void *ctx, int *rank,
                 int *world)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, world);
    int status = program_run(app, ctx, argc, argv);
    fflush(stdout);
    MPI_Finalize();
    return status;
}

void program_checkpoints(struct program *p, const char *save_dir, const char *resume_dir,
                         int64_t every, int64_t keep_last)
{
    p->ck = (struct example_checkpointing){
        .save_dir = save_dir,
        .resume_dir = resume_dir,
        .every = every,
        .keep_last = keep_last,
        .total_steps = p->steps,
        .batch = p->cfg->train_batch_size,
        .quiet = p->quiet,
        .rank = p->rank,
    };
}

void program_reports(const struct program *p, int comm)
{
    if (p->quiet)
        return;
    report_memory(stdout, p->engine, MPI_COMM_WORLD);
    if (p->rank == 0 && comm)
        report_comm(stdout, p->engine, p->world);
}

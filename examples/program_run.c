/* See program_run.h. */
#include <stdlib.h>

#include "program_run.h"
#include "example_mpi.h"
#include "report.h"

int program_run(const struct program_app *app, void *ctx, int argc, char **argv)
{
    int begun = program_begin(app->prog, argc, argv, app->startup, app->usage, ctx);
    if (begun >= 0)
        return begun;
    int status = app->before_setup ? app->before_setup(ctx) : -1;
    if (status >= 0)
        return status;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    struct zero_error err = {0};
    status = 0;
    if (app->setup(ctx, &err)) {
        program_error(&(struct program){.prog = app->prog, .rank = rank}, "", &err);
        status = 1;
        goto out;
    }
    struct program p = app->describe(ctx);
    if (rank == 0 && !p.quiet && app->header)
        app->header(ctx);
    if ((status = program_resume(&p)))
        goto out;
    app->resumed(ctx, p.first_step);
    if (app->before_train && (status = app->before_train(ctx, &p)))
        goto out;
    if ((status = program_train(&p)))
        goto out;
    status = app->after_train(ctx, &p);
out:
    app->teardown(ctx);
    return status;
}

int program_engine_create(struct zero_engine **e, const struct zero_config *cfg,
                          struct zero_model *model, struct zero_device *dev, int quiet,
                          struct zero_error *err)
{
    if (quiet)
        setenv("ZERO_NVME_QUIET", "1", 1);
    return example_agree(zero_engine_create(e, cfg, model, dev, err), err, MPI_COMM_WORLD);
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

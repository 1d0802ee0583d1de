/* See program_run.h. */
#include <stdlib.h>
#include <string.h>

#include "program_run.h"
#include "example_agree.h"
#include "reference_flags.h"
#include "report.h"
#include "sample_order.h"
#include "trajectory.h"

void program_init(struct program *p, const char *prog, int *argc, char ***argv)
{
    int owned; /* a trainer starts the job itself */
    struct zero_error err = {0};
    zero_job_init(argc, argv, &owned, &err);
    memset(p, 0, sizeof *p);
    p->prog = prog;
    p->rank = zero_comm_rank(zero_comm_world());
    p->world = zero_comm_size(zero_comm_world());
    p->flags_status =
        reference_flags_take(&p->flags, prog, argc, *argv, p->flags_msg, sizeof p->flags_msg);
}

int program_agree(struct program *p, struct program_startup *su)
{
    if (p->flags_status == 0)
        reference_flags_startup(&p->flags, su);
    int status = program_startup_agree(su, zero_comm_world());
    program_startup_free(su);
    return status;
}

int program_usage(const struct program *p, void (*usage)(FILE *out))
{
    if (p->rank == 0) {
        usage(stdout);
        fputs(reference_flags_usage(), stdout);
    }
    return 0;
}

int program_reference(struct program *p)
{
    const struct reference_flags *f = &p->flags;
    struct zero_error err = {0};
    int64_t global = 0;
    int rc =
        zero_size_mul(&global, p->atoms.micro, p->atoms.accum * p->world, "--order-seed", &err);
    if (!rc)
        rc = sample_order_init(&p->order, f->order_seed, global, &err);
    p->atoms.perm = &p->order;
    rc = example_agree(rc, &err, zero_comm_world());
    const struct trajectory_run run = {.prog = p->prog,
                                       .world = p->world,
                                       .micro = p->atoms.micro,
                                       .accum = p->atoms.accum,
                                       .order_seed = f->order_seed};
    if (!rc && f->trajectory)
        rc = trajectory_open(&p->trajectory, f->trajectory,
                             f->weights_every < 0 ? 0 : f->weights_every, &run, p->engine, p->model,
                             zero_comm_world(), &err);
    if (rc)
        program_error(p, "", &err);
    return rc ? 1 : 0;
}

int program_close(struct program *p, int status)
{
    struct zero_error err = {0};
    if (p->trajectory && trajectory_close(p->trajectory, zero_comm_world(), &err)) {
        program_error(p, "--trajectory: ", &err);
        status = status ? status : 1;
    }
    p->trajectory = NULL;
    sample_order_free(&p->order);
    program_live_engine(NULL);
    return status;
}

int program_end(int status)
{
    fflush(stdout);
    zero_job_finalize();
    return status;
}

int program_engine_create(struct zero_engine **e, const struct zero_config *cfg,
                          struct zero_model *model, struct zero_device *dev, struct zero_error *err)
{
    int rc = example_agree(zero_engine_create(e, cfg, model, dev, err), err, zero_comm_world());
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
    return example_agree(rc, err, zero_comm_world());
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
    report_memory(stdout, p->engine, zero_comm_world());
    if (p->rank == 0 && comm)
        report_comm(stdout, p->engine, p->world);
}

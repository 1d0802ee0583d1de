/* A trainer's whole run on the program driver (program.h), written once for train_mlp
 * and train_gpt:
 *
 *   program_begin (flags, config, input files, the start-up agreement)
 *   -> setup (device, model, engine, data) -> the header (rank 0)
 *   -> --resume -> program_train (the loop, checkpoints) -> after_train
 *   -> teardown,
 *
 * with a failure at any point reported once and turned into the exit status. A trainer
 * fills a struct program_app with its pieces; what happens after the loop (samples,
 * traces, reports, saved weights, the final line) stays the trainer's. */
#ifndef EXAMPLES_PROGRAM_RUN_H
#define EXAMPLES_PROGRAM_RUN_H

#include "program.h"

struct program_app {
    const char *prog; /* "train_mlp" */
    program_startup_fn startup;
    void (*usage)(FILE *out);
    /* After the agreement, before setup: >= 0 ends the run with that status (train_mlp's
     * --write-synthetic-data). NULL goes on. */
    int (*before_setup)(void *ctx);
    int (*setup)(void *ctx, struct zero_error *err);
    void (*header)(void *ctx); /* rank 0, unless the run is quiet; may be NULL */
    /* The loop's description; program_checkpoints fills its checkpointing. */
    struct program (*describe)(void *ctx);
    /* After --resume: the step the data continues with. */
    void (*resumed)(void *ctx, int64_t first_step);
    /* Around the loop: 0 goes on, else the exit status. before_train may be NULL. */
    int (*before_train)(void *ctx, const struct program *p);
    int (*after_train)(void *ctx, const struct program *p);
    void (*teardown)(void *ctx);
};

/* Runs app on ctx (the trainer, its rank and world already set); returns the exit
 * status. */
int program_run(const struct program_app *app, void *ctx, int argc, char **argv);

/* A trainer's main: MPI_Init_thread (MULTIPLE, for the cpu backend's communication
 * thread), this rank and the world size into *rank and *world (ctx's fields), program_run,
 * MPI_Finalize; returns the exit status. */
int program_main(int argc, char **argv, const struct program_app *app, void *ctx, int *rank,
                 int *world);

/* zero_engine_create, agreed over MPI_COMM_WORLD: every rank returns the lowest
 * failing rank's status and message (example_agree). quiet: without the
 * engine's informational line on stderr (NVMe offload's I/O choice). */
int program_engine_create(struct zero_engine **e, const struct zero_config *cfg,
                          struct zero_model *model, struct zero_device *dev, int quiet,
                          struct zero_error *err);

/* A micro-batch's two host buffers, their sizes checked (zero_size_mul, zero_size_alloc):
 * *a holds rows x a_width elements of a_size bytes, *b rows x b_width of b_size; what
 * names the batch in the error. Agreed over MPI_COMM_WORLD (example_agree). */
int program_batch_buffers(int64_t rows, int64_t a_width, size_t a_size, void **a, int64_t b_width,
                          size_t b_size, void **b, const char *what, struct zero_error *err);

/* p->ck from the checkpoint flags; the steps, the global batch (p->cfg), quiet and the
 * rank come from p itself. */
void program_checkpoints(struct program *p, const char *save_dir, const char *resume_dir,
                         int64_t every, int64_t keep_last);

/* Unless p->quiet: the memory report of every rank (collective), then rank 0's
 * communication report when comm is set. */
void program_reports(const struct program *p, int comm);

#endif

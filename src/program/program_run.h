/* A trainer's life cycle on the program driver (program.h), in the order its main calls
 * the pieces:
 *
 *   program_init (the job, the reference flags) -> program_startup_begin, the trainer's own
 *   flags, program_agree (the start-up agreement) -> [program_usage after --help]
 *   -> the trainer's set-up -> program_attach, program_checkpoints -> program_resume
 *   -> program_reference -> the step loop (program.h) -> program_reports
 *   -> program_close -> the trainer's teardown -> program_end,
 *
 * with a failure at any point reported once and turned into the exit status. What
 * happens after the loop (samples, traces, saved weights, the final line) stays the
 * trainer's. */
#ifndef ZERO_PROGRAM_PROGRAM_RUN_H
#define ZERO_PROGRAM_PROGRAM_RUN_H

#include "program.h"

/* zero_job_init (threads allowed, for the cpu backend's communication thread), this rank and
 * the world size into *p, and the reference flags (reference_flags.h) taken out of
 * *argc / *argv (a usage error waits for program_startup_begin). */
void program_init(struct program *p, const char *prog, int *argc, char ***argv);

/* The reference flags' fields added to su, then the start-up agreement
 * (program_startup_agree; su is freed). Returns 0 on every rank to go on, else the
 * exit status every rank returns. */
int program_agree(struct program *p, struct program_startup *su);

/* --help: rank 0 prints usage's text, then the reference flags'. Returns 0. */
int program_usage(const struct program *p, void (*usage)(FILE *out));

/* --order-seed and --trajectory, after --resume: the trajectory starts from the weights
 * the loop starts from. Collective. Returns 0, or 1 on every rank after rank 0 printed
 * why. */
int program_reference(struct program *p);

/* After the loop or a failure (status): the trajectory renamed into place (also when the
 * loop stopped on a NaN), the sample order freed, program_die's engine forgotten.
 * Returns status, or 1 when the trajectory failed. */
int program_close(struct program *p, int status);

/* zero_job_finalize; returns status. */
int program_end(int status);

/* zero_engine_create, agreed over the world (zero_comm_world()): every rank returns the lowest
 * failing rank's status and message (example_agree). cfg->quiet: without the engine's
 * informational line on stderr (NVMe offload's I/O choice). */
int program_engine_create(struct zero_engine **e, const struct zero_config *cfg,
                          struct zero_model *model, struct zero_device *dev,
                          struct zero_error *err);

/* A micro-batch's two host buffers, their sizes checked (zero_size_mul, zero_size_alloc):
 * *a holds rows x a_width elements of a_size bytes, *b rows x b_width of b_size; what
 * names the batch in the error. Agreed over the world (example_agree). */
int program_batch_buffers(int64_t rows, int64_t a_width, size_t a_size, void **a, int64_t b_width,
                          size_t b_size, void **b, const char *what, struct zero_error *err);

/* p->ck from the checkpoint flags; the steps, the global batch (p->cfg), quiet and the
 * rank come from p itself (after program_attach). */
void program_checkpoints(struct program *p, const char *save_dir, const char *resume_dir,
                         int64_t every, int64_t keep_last);

/* Unless p->quiet: the memory report of every rank (collective), then rank 0's
 * communication report when comm is set. */
void program_reports(const struct program *p, int comm);

#endif

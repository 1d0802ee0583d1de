/* The program driver train_mlp, train_gpt and the zero tool's runs share:
 *
 *   start-up agreement  every rank parses its flags, config and input files into
 *                       a status (ok, or the error) and a list of named fields
 *                       (every flag and config key that shapes the run, the input
 *                       files' identities); program_startup_agree exchanges them
 *                       before anything collective happens, and rank 0 names the
 *                       rank and the field of any failure or difference. A rank
 *                       that fails alone no longer leaves the others waiting.
 *   run loop            the pieces of a trainer's step loop: a micro-batch's
 *                       samples, the clock, the trajectory, checkpoints, a
 *                       non-finite-loss stop and a signal's (the trainer itself
 *                       calls forward, backward and step).
 *   life cycle          the job's start to its end (zero/job.h), in the order a
 *                       trainer's main calls them (program_run.h).
 *
 * Programs start and end the job and exchange over it (zero/job.h); the library never
 * does. */
#ifndef ZERO_PROGRAM_PROGRAM_H
#define ZERO_PROGRAM_PROGRAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "checkpointing.h"
#include "reference_flags.h"
#include "sample_order.h"
#include "zero/job.h"
#include "zero/zero.h"

struct trajectory;

/* ---- start-up agreement ---- */

struct program_startup {
    const char *prog; /* "train_mlp", "zero schedule": the messages' prefix */
    int status;       /* 0, or the exit status this rank asks for (1 runtime, 2 usage) */
    char msg[1280];   /* the error when status != 0, "prog: ..." */
    char *fields;     /* "name\0value\0" pairs, in the order they were added */
    size_t len, cap;
    int nomem; /* a field did not fit in memory: the rank fails at the agreement */
};

void program_startup_init(struct program_startup *s, const char *prog);
void program_startup_free(struct program_startup *s);

/* Adds the field name = value (printf-style). Names are flags ("--steps") or
 * config keys ("zero_optimization.stage"); each is compared by name. */
void program_field(struct program_startup *s, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records this rank's error (the first one wins): status is the exit status it
 * asks for, the message is printed as "prog: <fmt>". Returns status. */
int program_fail(struct program_startup *s, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same for a message that may already start with "prog: " (the argument
 * parsers' messages do). */
int program_fail_text(struct program_startup *s, int status, const char *msg);

/* Every key of a resolved config as a field (zero_config_print's lines). */
void program_fields_config(struct program_startup *s, const struct zero_config *c);

/* An input file named by flag: the field "flag contents" = "N bytes, content H"
 * (H hashes the whole file; the path itself is the flag's own field). A path that exists
 * but is not a regular file (a directory, a FIFO, a device) fails here, before a reader blocks on
 * it or misreads it; a missing path is left to the reader's own message. */
int program_input_file(struct program_startup *s, const char *flag, const char *path);

/* --init-weights FILE: program_input_file, and every floating-point tensor
 * finite: a NaN or an infinity is named (tensor, element) instead of training
 * to "loss nan". Reads the whole file once, one tensor at a time. */
int program_input_weights(struct program_startup *s, const char *flag, const char *path);

/* An output directory named by flag (created at the first save when absent):
 * fails now unless this rank can create files in it, or create it in its
 * parent, so that a bad path is found before the training, not after it. */
int program_output_dir(struct program_startup *s, const char *flag, const char *dir);

/* A trainer's flag parser said: help (--help: recorded as a field, *help = 1) or a usage
 * error (status 2 with msg), or neither. Returns 1 when the start-up goes on. */
int program_startup_parsed(struct program_startup *s, int help_given, int usage_error,
                           const char *msg, int *help);

/* Outputs never collide: two of flag[i]/path[i] naming one file, or one naming
 * ckdir itself or its latest, step_* or .tmp-* entries, fail s (usage, 2). */
int program_outputs_distinct(struct program_startup *s, const char *ckdir, int n,
                             const char *const flag[], const char *const path[]);

/* The files a trainer names, checked now (NULL: not given): --data (program_input_file),
 * --init-weights (program_input_weights), --save-checkpoint (program_output_dir). */
void program_startup_files(struct program_startup *s, const char *data, const char *init_weights,
                           const char *save_checkpoint);

struct program;

/* This rank's start-up record su (freed by program_agree), the fault sites' rank and the
 * signal handlers set up; the reference flags' usage error recorded. Returns 1 when the
 * trainer parses its own flags into su, 0 when they failed already. */
int program_startup_begin(struct program *p, struct program_startup *su);

/* Collective. Exchanges every rank's status and fields. Returns 0 on every rank
 * when all are ok and all fields equal rank 0's; otherwise rank 0 has printed
 * the failing ranks' messages or the first differing field of each differing
 * rank ("rank 1: --steps = 5, rank 0: --steps = 10"), and every rank returns
 * the same non-zero exit status. */
int program_startup_agree(struct program_startup *s, struct zero_comm *comm);

/* ---- the run loop ---- */

/* Fills rows at .. at + rows - 1 of the micro-batch with the global samples first ..
 * first + rows - 1, and sets *b to the micro-batch's rows 0 .. at + rows - 1. program_fill
 * fills a micro-batch in one call (at 0), or row by row under --order-seed. */
typedef void (*program_fill_fn)(void *ctx, int64_t first, int64_t rows, int64_t at,
                                struct zero_batch *b);

/* Which samples a rank reads: its micro-step i of global batch `step` holds its atom's
 * (zero_atom_first_sample_in). */
struct program_atoms {
    enum zero_atom_order order; /* the engine's libzero.atom_order */
    int rank, world;
    int64_t accum, micro;      /* gradient accumulation, rows per micro-step */
    struct sample_order *perm; /* --order-seed; NULL: the default order */
};

/* The micro-batch of micro-step i of global batch `step`: fill (ctx) writes the atom's
 * samples, through a->perm's permutation unless it is NULL. */
void program_fill(const struct program_atoms *a, int64_t step, int64_t i, program_fill_fn fill,
                  void *ctx, struct zero_batch *b);

/* wall_clock_breakdown: seconds in forward, backward and step since the last
 * timing line. */
struct program_clock {
    double forward, backward, step;
    double lap; /* when the running lap began */
};

struct program {
    const char *prog; /* "train_mlp" */
    int rank, world;
    int quiet; /* no header, progress lines or reports (--quiet) */
    /* program_attach's */
    struct zero_engine *engine;
    const struct zero_model *model; /* the trainer's, for the trajectory's names */
    const struct zero_config *cfg;  /* steps_per_print, wall_clock_breakdown */
    int64_t first_step, steps;      /* the loop runs first_step .. steps - 1 */
    struct program_atoms atoms;
    struct example_checkpointing ck; /* program_checkpoints' */
    /* the reference flags (reference_flags.h), taken out of argv by program_init */
    struct reference_flags flags;
    int flags_status; /* their usage error, 0 if none */
    char flags_msg[1280];
    struct sample_order order;     /* --order-seed */
    struct trajectory *trajectory; /* --trajectory; NULL: none */
    /* the step in progress */
    struct program_clock clock;
    int64_t timed; /* optimizer steps in clock */
    int due;       /* this step prints its progress */
};

/* The engine, model and config the loop runs on, and its length: first_step 0 (until
 * program_resume), the atoms from cfg's batch sizes and the engine's atom order. */
void program_attach(struct program *p, struct zero_engine *e, const struct zero_model *model,
                    const struct zero_config *cfg, int64_t steps);

/* One lap of the clock: the seconds since the last lap go to *slot (NULL: the clock
 * only starts). */
void program_lap(struct program *p, double *slot);

/* Before step `done` (0-based) and after the last: 128 + N on every rank after a rank
 * received signal N (SIGTERM, SIGINT: program_signal.h), rank 0 having printed that the
 * run stopped there, saving nothing; else 0. Collective. */
int program_stopped(const struct program *p, int64_t done);

/* After step `step`'s micro-steps: --trajectory's record. Returns 1 when the trainer's
 * progress line is due now (steps_per_print, on rank 0 of a run that is not quiet). */
int program_step_due(struct program *p, int64_t step);

/* After the progress line: the wall_clock_breakdown line, the checkpoint. Returns 0, or
 * 1 on every rank after rank 0 printed that the step's loss (the global mean, the same
 * on every rank) is not finite. */
int program_step_done(struct program *p, int64_t step);

/* Prints err ("prog: rank R: ...") and ends the job. Collective where it can be: when every rank
 * dies within seconds (an error the engine agreed on), each destroys the engine program_live_engine
 * named and exits 1; a rank alone with its error (the others wait in a collective) aborts the job.
 * Its swap files go first, either way: the wait may end this process. */
_Noreturn void program_die(const char *prog, int rank, const struct zero_error *err);
/* The engine program_die destroys (NULL: none). */
void program_live_engine(struct zero_engine *e);

/* --resume (p->ck.resume_dir; nothing without it): loads the checkpoint into
 * p->engine and sets p->first_step from its data position. Collective. Returns
 * 0, or 1 on every rank after rank 0 printed why. */
int program_resume(struct program *p);

/* Rank 0 prints "prog: <what><err->msg>" to stderr. */
void program_error(const struct program *p, const char *what, const struct zero_error *err);

/* ---- set-up ---- */

/* zero_device_open of cfg's backend (libzero.backend) in its collective mode on comm;
 * each rank picks its device. */
int program_device_open(struct zero_device **dev, const struct zero_config *cfg,
                        struct zero_comm *comm, struct zero_error *err);

/* ---- defaults ---- */

/* The optimizer every program starts from (train_mlp, train_gpt, the zero tool's runs):
 * DeepSpeed's config defaults, then AdamW with lr, betas (0.9, beta2), eps 1e-8, the
 * weight decay and gradient clipping clip (0: off). */
void program_config_adamw(struct zero_config *c, double lr, double beta2, double weight_decay,
                          double clip);

#endif

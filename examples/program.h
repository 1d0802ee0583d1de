/* The program driver train_mlp, train_gpt and the zero tool's runs share:
 *
 *   start-up agreement  every rank parses its flags, config and input files into
 *                       a status (ok, or the error) and a list of named fields
 *                       (every flag and config key that shapes the run, the input
 *                       files' identities); program_startup_agree exchanges them
 *                       before anything collective happens, and rank 0 names the
 *                       rank and the field of any failure or difference. A rank
 *                       that fails alone no longer leaves the others waiting.
 *   run loop            micro-steps (forward, backward, step), the progress
 *                       line, checkpoints and a non-finite-loss stop.
 *   main                MPI_Init, the program's run, MPI_Finalize (program_run.h).
 *
 * Programs may call MPI; the library never does. */
#ifndef EXAMPLES_PROGRAM_H
#define EXAMPLES_PROGRAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <mpi.h>

#include "checkpointing.h"
#include "zero/zero.h"

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

/* Collective. Exchanges every rank's status and fields. Returns 0 on every rank
 * when all are ok and all fields equal rank 0's; otherwise rank 0 has printed
 * the failing ranks' messages or the first differing field of each differing
 * rank ("rank 1: --steps = 5, rank 0: --steps = 10"), and every rank returns
 * the same non-zero exit status. */
int program_startup_agree(struct program_startup *s, MPI_Comm comm);

/* Fills su with this rank's view of its arguments; *help = 1 for --help. */
typedef void (*program_startup_fn)(void *ctx, int argc, char **argv, struct program_startup *su,
                                   int *help);

/* The start-up of a program: startup() records this rank's status and fields,
 * the ranks agree (program_startup_agree). Returns -1 to go on, else the exit
 * status every rank returns: 0 after --help (rank 0 printed usage), or the
 * agreement's. */
int program_begin(const char *prog, int argc, char **argv, program_startup_fn startup,
                  void (*usage)(FILE *out), void *ctx);

/* ---- the run loop ---- */

/* Fills rows at .. at + rows - 1 of the micro-batch with the global samples first ..
 * first + rows - 1, and sets *b to the micro-batch's rows 0 .. at + rows - 1. The driver
 * fills a micro-batch in one call (at 0), or row by row under --order-seed. */
typedef void (*program_fill_fn)(void *ctx, int64_t first, int64_t rows, int64_t at,
                                struct zero_batch *b);

/* wall_clock_breakdown: seconds in forward, backward and step since the last
 * timing line. */
struct program_clock {
    double forward, backward, step;
    int64_t micro_steps;
};

struct sample_order;

/* The micro-steps of global batch `step`: each fills its atom's samples
 * (zero_atom_first_sample; through order's permutation unless it is NULL) and runs
 * forward, backward and step, timed into clock unless it is NULL. */
int program_micro_steps(struct zero_engine *e, int64_t step, int rank, int world, int64_t accum,
                        int64_t micro, program_fill_fn fill, void *ctx, struct program_clock *clock,
                        struct sample_order *order, struct zero_error *err);

struct program {
    const char *prog; /* "train_mlp" */
    int rank, world;
    struct zero_engine *engine;
    int64_t first_step, steps;     /* the loop runs first_step .. steps - 1 */
    int64_t accum, micro;          /* gradient accumulation, rows per micro-step */
    const struct zero_config *cfg; /* steps_per_print, wall_clock_breakdown */
    int quiet;
    struct example_checkpointing ck;
    program_fill_fn fill;
    void (*print_step)(void *ctx);               /* rank 0, unless quiet; may be NULL */
    void (*after_step)(void *ctx, int64_t done); /* after the checkpoint; may be NULL */
    void *ctx;
    const struct zero_model *model; /* the trainer's, for the trajectory's names */
    /* set by program_run from the reference flags (reference_flags.h) */
    struct sample_order *order;    /* --order-seed; NULL: the default order */
    struct trajectory *trajectory; /* --trajectory; NULL: none */
};

/* Prints err ("prog: rank R: ...") and ends the job. Collective where it can be: when every rank
 * dies within seconds (an error the engine agreed on), each destroys the engine program_live_engine
 * named (its swap files go with it) and exits 1; a rank alone with its error (the others wait in a
 * collective) removes its swap files and aborts the job. */
_Noreturn void program_die(const char *prog, int rank, const struct zero_error *err);
/* The engine program_die destroys (NULL: none). */
void program_live_engine(struct zero_engine *e);

/* The training loop. Returns 0, or 1 on every rank after rank 0 printed that a
 * step's loss (the global mean, the same on every rank) is not finite, or 128 + N on
 * every rank after a rank received signal N (SIGTERM, SIGINT: program_signal.h); the
 * ranks ask after each step, and rank 0 prints "stopped by signal N at step S". */
int program_train(struct program *p);

/* --resume (p->ck.resume_dir; nothing without it): loads the checkpoint into
 * p->engine and sets p->first_step from its data position. Collective. Returns
 * 0, or 1 on every rank after rank 0 printed why. */
int program_resume(struct program *p);

/* Rank 0 prints "prog: <what><err->msg>" to stderr. */
void program_error(const struct program *p, const char *what, const struct zero_error *err);

/* ---- set-up ---- */

/* zero_device_open of cfg's backend (libzero.backend) in its collective mode on comm;
 * each rank picks its device. */
int program_device_open(struct zero_device **dev, const struct zero_config *cfg, MPI_Comm comm,
                        struct zero_error *err);

/* ---- defaults ---- */

/* The optimizer every program starts from (train_mlp, train_gpt, the zero tool's runs):
 * DeepSpeed's config defaults, then AdamW with lr, betas (0.9, beta2), eps 1e-8, the
 * weight decay and gradient clipping clip (0: off). */
void program_config_adamw(struct zero_config *c, double lr, double beta2, double weight_decay,
                          double clip);

#endif

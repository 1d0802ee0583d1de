/* Command-line options of examples/train_mlp. */
#ifndef EXAMPLES_MLP_ARGS_H
#define EXAMPLES_MLP_ARGS_H

#include <stdint.h>

#include "zero/config.h"

struct mlp_args {
    int64_t hidden, classes;
    int layers;
    int64_t batch;       /* global batch B */
    int64_t micro_batch; /* 0 = B / world */
    int64_t steps;
    uint64_t data_seed;
    const char *init_weights; /* NULL = initialize from cfg.libzero.seed */
    const char *save_weights;
    enum zero_dtype save_dtype; /* --save-dtype: fp32 (default), fp16 or bf16 */
    const char *data;           /* NULL = synthetic samples */
    const char *write_data;     /* write the synthetic data set there and exit */
    int64_t samples;            /* samples for write_data; 0 = batch * steps */
    const char *config;         /* --config: a ds_config.json under the flags */
    int quiet, verbose;
    const char *trace;           /* --trace: Chrome trace-event JSON of the --trace-steps */
    const char *trace_steps;     /* e.g. "2,3"; NULL = every step */
    const char *save_checkpoint; /* --save-checkpoint DIR: at the end and every K steps */
    int64_t checkpoint_every;    /* K; 0 = only at the end */
    int64_t keep_last;           /* step directories kept; 0 = all */
    const char *resume;          /* --resume DIR: continue from DIR's latest checkpoint */
    struct zero_config cfg;      /* stage, optimizer and knobs; batch sizes unresolved */
};

enum mlp_args_result { MLP_ARGS_OK = 0, MLP_ARGS_HELP, MLP_ARGS_USAGE };

/* Parses argv into a (see train_mlp --help for the defaults). --config FILE is
 * loaded first, wherever it stands, and the other flags override it. On a bad value
 * writes "train_mlp: --flag: why" to msg and returns MLP_ARGS_USAGE;
 * --help returns MLP_ARGS_HELP. */
enum mlp_args_result mlp_args_parse(struct mlp_args *a, int argc, char **argv, char *msg,
                                    size_t msg_len);

struct program_startup;
/* Every flag's value as a start-up field (program.h), named by its flag. */
void mlp_args_fields(const struct mlp_args *a, struct program_startup *s);

/* The --help text. */
const char *mlp_args_usage(void);

#endif

/* What zero schedule, zero memory and zero verify share: the toy residual MLP of
 * examples/train_mlp (zero_nn_build_mlp) on synthetic data, or (--model) a GPT-2 or a
 * Llama on a synthetic token stream, their engine flags, and
 * one training step with the data of docs/design.md's atoms, so every stage and world
 * size sees the same samples. */
#ifndef ZERO_CLI_RUN_H
#define ZERO_CLI_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "program/example_agree.h" /* example_agree_naming_ranks: the runs agree on a status */
#include "program/program.h"
#include "zero/zero.h"

enum cli_model_kind { CLI_MODEL_MLP = 0, CLI_MODEL_GPT2, CLI_MODEL_LLAMA };

struct cli_model {
    int kind; /* enum cli_model_kind: --model */
    int64_t hidden, classes;
    int layers;
    /* the transformers' shape: --hidden is C, --layers the blocks */
    int64_t block, vocab;        /* T, V */
    int heads, kv_heads;         /* query heads; kv heads (llama) */
    const char *hf_config;       /* --hf-config: a Hugging Face config.json, the llama's shape */
    struct zero_llama_config hf; /* what it gave (hidden, layers, heads, vocab copied above) */
    int64_t micro_batch; /* rows (mlp) or sequences (transformers) per rank per micro-step */
    int64_t batch;       /* global batch; 0 = micro_batch x world (no accumulation) */
    uint64_t data_seed;
    struct zero_config cfg; /* stage, optimizer and knobs; batch sizes unresolved */
};

/* hidden 64, 4 layers, 10 classes, micro-batch 4, AdamW lr 1e-3, stage 0. */
void cli_model_defaults(struct cli_model *m);

/* Takes argv[*i] if it is one of the model or engine flags (cli_model_flags_help; a
 * flag table, src/program/flags.h's flags_take), consuming its value too (*i
 * advances). Returns 1 if taken, 0 if not one of these, -1 on a bad or missing value
 * with "--flag: why" in msg. */
int cli_model_flag(struct cli_model *m, int argc, char **argv, int *i, char *msg, size_t len);
/* The flags cli_model_flag takes, as --help lines; stage_flag: include --stage. */
const char *cli_model_flags_help(int stage_flag);

struct cli_run {
    struct zero_device *dev;
    struct zero_model *model;
    struct zero_engine *engine;
    struct cli_model m; /* batch sizes resolved for this world */
    int rank, world;
    float *x;                   /* (micro_batch, hidden); NULL for the transformers */
    int32_t *y;                 /* (micro_batch) labels, or (micro_batch, T) next tokens */
    int32_t *tokens;            /* (micro_batch, T): the transformers' inputs */
    struct program_atoms atoms; /* which samples this rank reads at each micro-step */
};

/* Builds m's model (--model) into *model. */
int cli_model_build(const struct cli_model *m, struct zero_model **model, struct zero_error *err);
/* "2 residual MLP blocks of width 32" / "a Llama of 2 layers (hidden 32, 4 heads, 2 kv
 * heads, T 8, V 64)": what the tables' first line names; returns buf. */
const char *cli_model_describe(const struct cli_model *m, char *buf, size_t len);
/* "mlp", "gpt2" or "llama" */
const char *cli_model_name(const struct cli_model *m);

/* Opens the cpu device on comm, builds the model and the engine at `stage`.
 * Collective; on failure every rank returns the first failing rank's status
 * and message, and everything opened is closed again. */
int cli_run_open(struct cli_run *r, const struct cli_model *m, int stage, struct zero_comm *comm,
                 struct zero_error *err);
/* One optimizer step (every micro-step): global batch `step` (0-based). */
int cli_run_step(struct cli_run *r, int64_t step, struct zero_error *err);
void cli_run_close(struct cli_run *r);

/* The model's flags and config keys as start-up fields (program.h). */
void cli_model_fields(const struct cli_model *m, struct program_startup *su);

/* zero_job_init when needed (*owned: this call did it), then the start-up agreement
 * of su (this rank's parse status and fields; freed here). Returns 0 on every
 * rank to go on, else the exit status, rank 0 having printed why. */
int cli_startup(struct program_startup *su, int *owned);

/* 1234567 -> "1,234,567" in buf (at least 32 bytes); returns buf. */
char *cli_num(char *buf, int64_t v);

#endif

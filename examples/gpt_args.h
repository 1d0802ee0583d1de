/* Command-line options of examples/train_gpt: one table names every flag, its
 * type, range, default and help line; the parser and --help both read it. */
#ifndef EXAMPLES_GPT_ARGS_H
#define EXAMPLES_GPT_ARGS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "zero/config.h"
#include "zero/gpt.h"
#include "zero/llama_config.h"

enum gpt_schedule {
    GPT_SCHEDULE_COSINE = 0,
    GPT_SCHEDULE_DECAY,
    GPT_SCHEDULE_CONSTANT,
    GPT_SCHEDULE_CONFIG /* the --config file's scheduler section, as it is */
};

enum gpt_arch { GPT_ARCH_GPT2 = 0, GPT_ARCH_LLAMA };

struct gpt_args {
    int arch;                     /* enum gpt_arch: --arch */
    struct zero_gpt_config model; /* the shape flags, both architectures */
    /* --arch llama's own: kv heads, the SwiGLU width (0: 8C/3 rounded up to 16), an
     * lm_head of its own (default: tied to the embedding, as GPT-2's), the rope's base */
    int n_kv_head;
    int64_t intermediate;
    int untied_head;
    double rope_theta;
    int64_t batch;       /* global batch, sequences */
    int64_t micro_batch; /* sequences per rank per micro-step; 0 = batch / world */
    int64_t steps;
    int64_t warmup; /* warmup steps of the schedule */
    int schedule;   /* enum gpt_schedule */
    int bf16;
    int mode;       /* enum zero_coll_mode, applied to cfg after parsing */
    int atom_order; /* enum zero_atom_order, likewise */
    /* data */
    const char *data;      /* NULL: the addition task */
    const char *val_data;  /* NULL: the last --val-fraction of --data */
    const char *tokenizer; /* a tokenizer.json: text is encoded with it; NULL: bytes */
    double val_fraction;
    int digits;
    uint64_t data_seed;
    int64_t val_every, val_batches;
    int64_t eval_problems;
    /* sampling */
    int64_t sample_tokens;
    double temperature;
    int64_t top_k;
    uint64_t sample_seed;
    const char *prompt; /* NULL: a held-out problem's prompt, or "\n" */
    /* weights */
    const char *init_weights, *save_weights;
    /* Hugging Face model directories (--arch llama): --hf-model DIR in, --save-hf DIR out,
     * its safetensors sharded above --save-hf-shard-size bytes */
    const char *hf_model, *save_hf;
    int64_t save_hf_shard;
    int have_hf; /* hf is --hf-model's config.json (gpt_args_read_hf) */
    struct zero_llama_config hf;
    /* checkpoints */
    const char *save_checkpoint, *resume;
    int64_t checkpoint_every, keep_last;
    const char *config; /* --config: a ds_config.json under the flags */
    int quiet, verbose;
    int memory_table;       /* --memory-table: stages 0-3 measured next to theory */
    struct zero_config cfg; /* stage, optimizer and knobs; batch sizes unresolved */
};

enum gpt_args_result { GPT_ARGS_OK = 0, GPT_ARGS_HELP, GPT_ARGS_USAGE };

/* Parses argv into a; on a bad value writes "train_gpt: --flag: why" to msg. */
enum gpt_args_result gpt_args_parse(struct gpt_args *a, int argc, char **argv, char *msg,
                                    size_t msg_len);
struct program_startup;
/* Every flag's value as a start-up field (program.h), named by its flag. */
void gpt_args_fields(struct gpt_args *a, struct program_startup *s);

/* The Llama config of the flags (--arch llama): the shape flags and LlamaConfig's
 * defaults otherwise (rope_theta 10000, rms_norm_eps 1e-5, no biases). */
void gpt_args_llama(const struct gpt_args *a, struct zero_llama_config *c);
/* --hf-model DIR: reads DIR/config.json into a->hf and takes its shape (--arch llama,
 * the shape flags); 0, or -1 with "--hf-model: why" in msg. */
int gpt_args_read_hf(struct gpt_args *a, char *msg, size_t len);
/* "gpt2" or "llama" */
const char *gpt_arch_name(int arch);

/* Prints the --help text, generated from the table with the defaults. */
void gpt_args_usage(FILE *out);

#endif

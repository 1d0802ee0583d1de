/* ds_config.json: DeepSpeed's configuration files loaded into struct zero_config.
 *
 *     struct zero_config cfg;
 *     struct zero_config_origins from;
 *     if (zero_config_load_file(&cfg, &from, "ds_config.json", world, 0, &err))
 *         fprintf(stderr, "%s\n", err.msg);   // "ds_config.json: zero_optimization.
 *                                              //  stage3_prefetch_bucket_sise: unknown key; did
 *                                              //  you mean stage3_prefetch_bucket_size?"
 *
 * Keys have DeepSpeed's names, types and defaults. Unknown keys, wrong types,
 * values out of range and keys DeepSpeed knows but this build does not
 * implement are errors naming the key path. "auto" (as Hugging Face writes it)
 * is accepted only for the keys DeepSpeed's Hugging Face integration fills; a
 * program resolves them with zero_config_resolve_auto.
 * libzero's own settings live in the "libzero" section. */
#ifndef ZERO_CONFIG_JSON_H
#define ZERO_CONFIG_JSON_H

#include <stddef.h>
#include <stdio.h>

#include "zero/config.h"
#include "zero/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a resolved value came from. */
enum zero_config_origin {
    ZERO_ORIGIN_DEFAULT = 0, /* not in the file: DeepSpeed's default (or the caller's value) */
    ZERO_ORIGIN_FILE,        /* given in the file */
    ZERO_ORIGIN_DERIVED,     /* computed from other keys (batch rule, overlap_comm, fp16 scaler) */
    ZERO_ORIGIN_AUTO         /* "auto" in the file, resolved as DeepSpeed does */
};

#define ZERO_CONFIG_MAX_KEYS 192

/* The origin of every key, indexed like the key table (zero_config_origin_of looks one up). */
struct zero_config_origins {
    unsigned char of[ZERO_CONFIG_MAX_KEYS];
};

/* Flags for the loaders. */
enum {
    /* Keys the file does not give keep the values *c already holds (a program's own
     * defaults, later overridden by its flags) instead of DeepSpeed's defaults. */
    ZERO_CONFIG_KEEP = 1
};

/* Loads a ds_config.json file into *c (origins may be NULL). world is the number
 * of ranks for DeepSpeed's batch rule; 0 = not known yet: the batch sizes stay
 * as given (0 = derive) and zero_engine_create resolves them. Rejects duplicate
 * keys; JSON syntax errors give line and column. Errors start with the path. */
int zero_config_load_file(struct zero_config *c, struct zero_config_origins *origins,
                          const char *path, int world, unsigned flags, struct zero_error *err);

/* The same for JSON text of len bytes (need not be NUL-terminated); errors start "config: ". */
int zero_config_load_string(struct zero_config *c, struct zero_config_origins *origins,
                            const char *json, size_t len, int world, unsigned flags,
                            struct zero_error *err);

/* Prints every key with its value, defaults filled, one line each in DeepSpeed's
 * documentation order:  zero_optimization.stage = 3   (file)
 * origins may be NULL (no origin column). */
void zero_config_print(FILE *out, const struct zero_config *c,
                       const struct zero_config_origins *origins);

/* "file", "default", "derived" or "auto". */
const char *zero_config_origin_name(int origin);

/* The origin of the key at path ("zero_optimization.stage"); -1 if no such key. */
int zero_config_origin_of(const struct zero_config_origins *origins, const char *path);

/* 1 when c asks for something DeepSpeed has but this build does not implement,
 * with why = "fp16.enabled=true: mixed precision is not implemented yet in this
 * build"; 0 otherwise. The engine calls it too. */
int zero_config_unsupported(const struct zero_config *c, char *why, size_t len);

/* "auto" as DeepSpeed's Hugging Face integration resolves it: what a program
 * knows that Hugging Face takes from TrainingArguments and the model. */
struct zero_config_auto_flag {
    const char *path, *flag; /* {"optimizer.params.lr", "--lr"}; {NULL, NULL} ends a list */
};
struct zero_config_auto_inputs {
    const struct zero_config_auto_flag *flags; /* the program's flag for each key it sets */
    int64_t steps;                             /* optimizer steps: total_num_steps */
    const char *steps_flag;                    /* "--steps" */
    int64_t warmup_steps;                      /* warmup_num_steps (0 as Hugging Face's) */
    const char *warmup_flag;                   /* "--warmup", NULL when there is none */
    int64_t hidden;                            /* the model's hidden size: bucket sizes */
    const char *hidden_flag;                   /* "--hidden" */
};

/* Fills the keys the file gave as "auto" (see config_auto.c for each rule) and
 * prints each to log (may be NULL): "config: optimizer.params.lr = auto -> 0.0001
 * (from --lr)". Keys a program fills from its flags keep the value they hold. */
int zero_config_resolve_auto(struct zero_config *c, const struct zero_config_auto_inputs *in,
                             FILE *log, struct zero_error *err);

/* 1 with the path of the first key still "auto" (not resolved), else 0. */
int zero_config_auto_pending(const struct zero_config *c, char *key, size_t len);

/* Every check of a resolved configuration that needs no model and no world
 * size, in one place: the loader (zero config) and the engine both call it, so
 * a file zero config accepts is one the trainers run. 0, or an error code with
 * the key named in err. */
int zero_config_validate(const struct zero_config *c, struct zero_error *err);

/* 1 and the path of the first key (in the printing order) whose values differ,
 * 0 when a and b agree on every key. For comparing ranks' configs. */
int zero_config_diff(const struct zero_config *a, const struct zero_config *b, char *key,
                     size_t keylen);

#ifdef __cplusplus
}
#endif

#endif

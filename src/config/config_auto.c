/* "auto" in a ds_config.json, as DeepSpeed's Hugging Face integration resolves it
 * (transformers' HfTrainerDeepSpeedConfig.trainer_config_process and
 * trainer_config_finalize, Accelerate's zero3_save_16bit_model): only the keys it
 * fills accept "auto", and each takes what the integration would pick, from the
 * program's flags and model instead of TrainingArguments. Any other "auto" is an
 * error naming the key (the loader asks config_auto_allowed).
 *
 * The loader leaves an "auto" key at the program's value (or DeepSpeed's default)
 * and marks it pending; zero_config_resolve_auto fills the pending keys once the
 * program knows its flags, step count and hidden size, and prints each with its
 * origin: "optimizer.params.lr = auto -> 0.0001 (from --lr)". */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config_auto.h"
#include "config_format.h"
#include "config_keys.h"
#include "zero/config_json.h"

enum auto_rule {
    AUTO_PROGRAM,     /* the program's value: its flag or its default */
    AUTO_ZERO,        /* 0: warmup_min_lr ("not a trainer arg") */
    AUTO_LR,          /* optimizer.params.lr: warmup_max_lr */
    AUTO_STEPS,       /* the program's step count: total_num_steps */
    AUTO_WARMUP,      /* the program's warmup steps (0 without): warmup_num_steps */
    AUTO_HIDDEN_SQ,   /* hidden_size^2: reduce_bucket_size */
    AUTO_HIDDEN_SQ09, /* stage 3: 0.9 hidden_size^2: stage3_prefetch_bucket_size */
    AUTO_HIDDEN_10,   /* stage 3: 10 hidden_size: stage3_param_persistence_threshold */
    AUTO_FALSE        /* Accelerate's zero3_save_16bit_model default */
};

static const struct {
    const char *path;
    enum auto_rule rule;
    const char *hf; /* what the integration fills it from */
} rules[] = {
    {"train_batch_size", AUTO_PROGRAM, "world x per_device_train_batch_size x accumulation"},
    {"train_micro_batch_size_per_gpu", AUTO_PROGRAM, "per_device_train_batch_size"},
    {"gradient_accumulation_steps", AUTO_PROGRAM, "gradient_accumulation_steps"},
    {"gradient_clipping", AUTO_PROGRAM, "max_grad_norm"},
    {"optimizer.params.lr", AUTO_PROGRAM, "learning_rate"},
    {"optimizer.params.betas", AUTO_PROGRAM, "adam_beta1, adam_beta2"},
    {"optimizer.params.eps", AUTO_PROGRAM, "adam_epsilon"},
    {"optimizer.params.weight_decay", AUTO_PROGRAM, "weight_decay"},
    {"scheduler.params.warmup_min_lr", AUTO_ZERO, "0"},
    {"scheduler.params.warmup_max_lr", AUTO_LR, "learning_rate"},
    {"scheduler.params.warmup_num_steps", AUTO_WARMUP, "warmup_steps"},
    {"scheduler.params.total_num_steps", AUTO_STEPS, "num_training_steps"},
    {"fp16.enabled", AUTO_PROGRAM, "fp16"},
    {"bf16.enabled", AUTO_PROGRAM, "bf16"},
    {"zero_optimization.reduce_bucket_size", AUTO_HIDDEN_SQ, "hidden_size^2"},
    {"zero_optimization.stage3_prefetch_bucket_size", AUTO_HIDDEN_SQ09, "0.9 hidden_size^2"},
    {"zero_optimization.stage3_param_persistence_threshold", AUTO_HIDDEN_10, "10 hidden_size"},
    {"zero_optimization.stage3_gather_16bit_weights_on_model_save", AUTO_FALSE,
     "Accelerate's zero3_save_16bit_model (false)"},
};

#define NRULES (int)(sizeof rules / sizeof rules[0])

static int rule_of(int key)
{
    const char *path = config_keys[config_key_canonical(key)].path;
    for (int i = 0; i < NRULES; i++)
        if (strcmp(rules[i].path, path) == 0)
            return i;
    return -1;
}

int config_auto_allowed(int key)
{
    return rule_of(key) >= 0;
}

void config_auto_mark(struct zero_config *c, int key)
{
    int k = config_key_canonical(key);
    c->auto_pending[k / 32] |= 1u << (k % 32);
}

static int pending(const struct zero_config *c, int k)
{
    return (c->auto_pending[k / 32] >> (k % 32)) & 1u;
}

int config_auto_is_pending(const struct zero_config *c, const char *path)
{
    int k = config_key_find(path);
    return k >= 0 && pending(c, config_key_canonical(k));
}

int zero_config_auto_pending(const struct zero_config *c, char *key, size_t len)
{
    for (int k = 0; k < config_nkeys; k++)
        if (pending(c, k)) {
            if (key && len)
                snprintf(key, len, "%s", config_keys[k].path);
            return 1;
        }
    if (key && len)
        key[0] = '\0';
    return 0;
}

static const char *flag_of(const struct zero_config_auto_inputs *in, const char *path)
{
    for (int i = 0; in->flags && in->flags[i].path; i++)
        if (strcmp(in->flags[i].path, path) == 0)
            return in->flags[i].flag;
    return NULL;
}

static void set_i64(struct zero_config *c, int k, int64_t v)
{
    *(int64_t *)config_key_field(&config_keys[k], c) = v;
}

int zero_config_resolve_auto(struct zero_config *c, const struct zero_config_auto_inputs *in,
                             FILE *log, struct zero_error *err)
{
    struct zero_config ds;
    zero_config_defaults(&ds);
    for (int k = 0; k < config_nkeys; k++) {
        if (!pending(c, k))
            continue;
        int r = rule_of(k);
        const struct config_key *key = &config_keys[k];
        const char *flag = flag_of(in, key->path);
        char from[160];
        int stage3 = c->zero_optimization.stage == 3;
        int untouched = memcmp(config_key_cfield(key, c), config_key_cfield(key, &ds), key->size) ==
                        0; /* no flag moved it off DeepSpeed's default */
        int64_t h = in->hidden;
        if (r < 0)
            return zero_fail(err, ZERO_EINVAL, "config: %s: \"auto\" is not resolvable", key->path);
        switch (rules[r].rule) {
        case AUTO_PROGRAM:
            snprintf(from, sizeof from, "from %s", flag ? flag : "the program's default");
            break;
        case AUTO_ZERO:
            *(double *)config_key_field(key, c) = 0.0;
            snprintf(from, sizeof from, "0, as Hugging Face fills it");
            break;
        case AUTO_LR:
            *(double *)config_key_field(key, c) = c->optimizer.lr;
            snprintf(from, sizeof from, "optimizer.params.lr, from %s",
                     flag_of(in, "optimizer.params.lr") ? flag_of(in, "optimizer.params.lr")
                                                        : "the program's default");
            break;
        case AUTO_STEPS:
            if (in->steps < 1)
                return zero_fail(err, ZERO_EINVAL,
                                 "config: %s is \"auto\" (Hugging Face: num_training_steps) but "
                                 "the run takes %lld steps; give the key a value or %s >= 1",
                                 key->path, (long long)in->steps,
                                 in->steps_flag ? in->steps_flag : "a step count");
            set_i64(c, k, in->steps);
            snprintf(from, sizeof from, "from %s", in->steps_flag ? in->steps_flag : "the steps");
            break;
        case AUTO_WARMUP:
            set_i64(c, k, in->warmup_steps);
            snprintf(from, sizeof from, "from %s",
                     in->warmup_flag ? in->warmup_flag : "no warmup flag: Hugging Face's 0");
            break;
        case AUTO_HIDDEN_SQ:
        case AUTO_HIDDEN_SQ09:
        case AUTO_HIDDEN_10: {
            if (!untouched) { /* an explicit flag wins over the file's "auto" */
                snprintf(from, sizeof from, "from %s", flag ? flag : "the program");
                break;
            }
            if (rules[r].rule != AUTO_HIDDEN_SQ && !stage3) {
                snprintf(from, sizeof from, "unused below stage 3: DeepSpeed's default");
                break;
            }
            if (h < 1 || h > 3037000499) /* h * h fits in int64 */
                return zero_fail(err, ZERO_EINVAL,
                                 "config: %s is \"auto\" (Hugging Face: %s) but the model's "
                                 "hidden size is not known; give the key a value",
                                 key->path, rules[r].hf);
            int64_t v = rules[r].rule == AUTO_HIDDEN_SQ     ? h * h
                        : rules[r].rule == AUTO_HIDDEN_SQ09 ? (int64_t)(0.9 * (double)(h * h))
                                                            : 10 * h;
            set_i64(c, k, v);
            snprintf(from, sizeof from, "%s, %s %lld", rules[r].hf,
                     in->hidden_flag ? in->hidden_flag : "hidden size", (long long)h);
            break;
        }
        case AUTO_FALSE:
            *(int *)config_key_field(key, c) = 0;
            snprintf(from, sizeof from, "%s", rules[r].hf);
            break;
        }
        c->auto_pending[k / 32] &= ~(1u << (k % 32));
        if (log) {
            char value[96];
            config_format_value(key, c, value, sizeof value);
            fprintf(log, "config: %s = auto -> %s (%s)\n", key->path, value, from);
        }
    }
    return ZERO_OK;
}

const char *config_auto_source(int key)
{
    int r = rule_of(key);
    return r >= 0 ? rules[r].hf : NULL;
}

_Static_assert(ZERO_CONFIG_MAX_KEYS <=
                   32 * sizeof(((struct zero_config *)0)->auto_pending) / sizeof(uint32_t),
               "zero_config.auto_pending has a bit per key");

/* The ds_config.json keys: DeepSpeed's names, the struct zero_config field each
 * fills, the accepted values. The order is DeepSpeed's documentation order
 * (batch, optimizer, scheduler, fp16, bf16, clipping, ZeRO, activation
 * checkpointing, logging) followed by libzero's own section; the printer and
 * zero_config_diff use it. Adding a key is one line here (and its field).
 *
 * Ranges follow DeepSpeed's checks (pydantic ge/le in zero/config.py and
 * offload_config.py, torch.optim's argument checks); the batch sizes must be
 * >= 1 because DeepSpeed's _batch_assertion requires them > 0. */
#include "config_keys.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "zero/config_json.h"

#define FIELD(f)                                                                                   \
    .offset = offsetof(struct zero_config, f), .size = sizeof(((struct zero_config *)0)->f)
#define SECTION(p)                                                                                 \
    {                                                                                              \
        .path = p, .type = KEY_SECTION                                                             \
    }
#define KEY(t, p, f, lo, hi, ...)                                                                  \
    {                                                                                              \
        .path = p, .type = t, FIELD(f), .min = lo, .max = hi, __VA_ARGS__                          \
    }
#define BOOL(p, f, ...) KEY(KEY_BOOL, p, f, 0, 1, __VA_ARGS__)
#define ENUM(p, f, nm, ...) KEY(KEY_ENUM, p, f, 0, 0, .names = nm, __VA_ARGS__)

#define INF HUGE_VAL
#define I64MAX 9223372036854775807.0 /* INT64_MAX rounds up to 2^63 as a double */
#define INTMAX 2147483647.0

static const char *const optim_names[] = {"Adam", "AdamW", "SGD", NULL};
/* DeepSpeed's other optimizers (runtime/config.py DEEPSPEED_OPTIMIZERS). */
static const char *const optim_known[] = {"Adagrad",    "Lamb", "OneBitAdam", "ZeroOneAdam",
                                          "OneBitLamb", "Lion", "MuAdam",     "MuAdamW",
                                          "MuSGD",      NULL};
/* Index 0 is "no scheduler", which has no name in DeepSpeed. */
static const char *const sched_names[] = {"", "WarmupLR", "WarmupDecayLR", "WarmupCosineLR", NULL};
static const char *const sched_known[] = {"LRRangeTest", "OneCycle", NULL};
static const char *const warmup_names[] = {"log", "linear", NULL};
static const char *const device_names[] = {"none", "cpu", "nvme", NULL};
static const char *const backend_names[] = {"cpu", "cuda", NULL};
static const char *const coll_names[] = {"exact", "native", NULL};
static const char *const matmul_names[] = {"auto",     "fp32",      "compute",
                                           "bf16_dot", "bf16_tile", NULL};
static const char *const atom_order_names[] = {"micro_step_major", "rank_major", NULL};
static const char *const activations_names[] = {"fp32", "compute", NULL};

#define ADAMS WHEN_ADAMS
#define SGD WHEN_OPTIM(ZERO_OPTIM_SGD)
#define LR_WARM (WHEN_SCHED(ZERO_SCHED_WARMUP_LR) | WHEN_SCHED(ZERO_SCHED_WARMUP_DECAY_LR))
#define ALL_WARM (LR_WARM | WHEN_SCHED(ZERO_SCHED_WARMUP_COSINE_LR))
#define DECAYS (WHEN_SCHED(ZERO_SCHED_WARMUP_DECAY_LR) | WHEN_SCHED(ZERO_SCHED_WARMUP_COSINE_LR))
#define COSINE WHEN_SCHED(ZERO_SCHED_WARMUP_COSINE_LR)

#define ZO "zero_optimization."
#define OO ZO "offload_optimizer."
#define OP ZO "offload_param."
#define AC "activation_checkpointing."

const struct config_key config_keys[] = {
    /* null (DeepSpeed's None) and 0 in the struct: derived by the batch rule */
    KEY(KEY_I64, "train_batch_size", train_batch_size, 1, I64MAX, .flags = KEY_NULLABLE),
    KEY(KEY_I64, "train_micro_batch_size_per_gpu", train_micro_batch_size_per_gpu, 1, I64MAX,
        .flags = KEY_NULLABLE),
    KEY(KEY_I64, "gradient_accumulation_steps", gradient_accumulation_steps, 1, I64MAX,
        .flags = KEY_NULLABLE),

    SECTION("optimizer"),
    ENUM("optimizer.type", optimizer.type, optim_names, .known = optim_known, .flags = KEY_NOCASE),
    SECTION("optimizer.params"),
    KEY(KEY_REAL, "optimizer.params.lr", optimizer.lr, 0, INF),
    KEY(KEY_PAIR, "optimizer.params.betas", optimizer.betas, 0, 1, .when = ADAMS),
    KEY(KEY_REAL, "optimizer.params.eps", optimizer.eps, 0, INF, .when = ADAMS),
    KEY(KEY_REAL, "optimizer.params.weight_decay", optimizer.weight_decay, 0, INF),
    BOOL("optimizer.params.bias_correction", optimizer.bias_correction, .when = ADAMS),
    BOOL("optimizer.params.adam_w_mode", optimizer.adam_w_mode, .when = ADAMS),
    KEY(KEY_REAL, "optimizer.params.momentum", optimizer.momentum, 0, INF, .when = SGD),
    KEY(KEY_REAL, "optimizer.params.dampening", optimizer.dampening, -INF, INF, .when = SGD),
    BOOL("optimizer.params.nesterov", optimizer.nesterov, .when = SGD),

    SECTION("scheduler"),
    ENUM("scheduler.type", scheduler.type, sched_names, .known = sched_known,
         .flags = KEY_NULLABLE),
    SECTION("scheduler.params"),
    KEY(KEY_REAL, "scheduler.params.warmup_min_lr", scheduler.warmup_min_lr, 0, INF,
        .when = LR_WARM),
    KEY(KEY_REAL, "scheduler.params.warmup_max_lr", scheduler.warmup_max_lr, 0, INF,
        .when = LR_WARM),
    KEY(KEY_I64, "scheduler.params.warmup_num_steps", scheduler.warmup_num_steps, 0, I64MAX,
        .when = ALL_WARM),
    ENUM("scheduler.params.warmup_type", scheduler.warmup_type, warmup_names, .when = ALL_WARM),
    KEY(KEY_I64, "scheduler.params.total_num_steps", scheduler.total_num_steps, 1, I64MAX,
        .when = DECAYS),
    KEY(KEY_REAL, "scheduler.params.warmup_min_ratio", scheduler.warmup_min_ratio, 0, 1,
        .when = COSINE),
    KEY(KEY_REAL, "scheduler.params.cos_min_ratio", scheduler.cos_min_ratio, 0, 1, .when = COSINE),

    SECTION("fp16"),
    BOOL("fp16.enabled", fp16.enabled),
    KEY(KEY_REAL, "fp16.loss_scale", fp16.loss_scale, 0, INF),
    KEY(KEY_INT, "fp16.initial_scale_power", fp16.initial_scale_power, 0, 127),
    KEY(KEY_INT, "fp16.loss_scale_window", fp16.loss_scale_window, 1, INTMAX),
    KEY(KEY_INT, "fp16.hysteresis", fp16.hysteresis, 1, INTMAX),
    BOOL("fp16.consecutive_hysteresis", fp16.consecutive_hysteresis),
    KEY(KEY_REAL, "fp16.min_loss_scale", fp16.min_loss_scale, 0, INF),

    SECTION("bfloat16"), /* DeepSpeed's older name of the bf16 section */
    SECTION("bf16"),
    BOOL("bf16.enabled", bf16.enabled),
    BOOL("bfloat16.enabled", bf16.enabled, .flags = KEY_ALIAS),

    KEY(KEY_REAL, "gradient_clipping", gradient_clipping, 0, INF),

    SECTION("zero_optimization"),
    KEY(KEY_INT, ZO "stage", zero_optimization.stage, 0, 3),
    BOOL(ZO "contiguous_gradients", zero_optimization.contiguous_gradients),
    BOOL(ZO "reduce_scatter", zero_optimization.reduce_scatter),
    KEY(KEY_I64, ZO "reduce_bucket_size", zero_optimization.reduce_bucket_size, 1, I64MAX),
    BOOL(ZO "allgather_partitions", zero_optimization.allgather_partitions),
    KEY(KEY_I64, ZO "allgather_bucket_size", zero_optimization.allgather_bucket_size, 1, I64MAX),
    BOOL(ZO "overlap_comm", zero_optimization.overlap_comm),
    KEY(KEY_I64, ZO "stage3_prefetch_bucket_size", zero_optimization.stage3_prefetch_bucket_size, 0,
        I64MAX),
    KEY(KEY_I64, ZO "prefetch_bucket_size", zero_optimization.stage3_prefetch_bucket_size, 0,
        I64MAX, .flags = KEY_ALIAS),
    KEY(KEY_I64, ZO "stage3_param_persistence_threshold",
        zero_optimization.stage3_param_persistence_threshold, 0, I64MAX),
    KEY(KEY_I64, ZO "param_persistence_threshold",
        zero_optimization.stage3_param_persistence_threshold, 0, I64MAX, .flags = KEY_ALIAS),
    KEY(KEY_I64, ZO "stage3_max_live_parameters", zero_optimization.stage3_max_live_parameters, 0,
        I64MAX),
    KEY(KEY_I64, ZO "max_live_parameters", zero_optimization.stage3_max_live_parameters, 0, I64MAX,
        .flags = KEY_ALIAS),
    KEY(KEY_I64, ZO "stage3_max_reuse_distance", zero_optimization.stage3_max_reuse_distance, 0,
        I64MAX),
    KEY(KEY_I64, ZO "max_reuse_distance", zero_optimization.stage3_max_reuse_distance, 0, I64MAX,
        .flags = KEY_ALIAS),
    BOOL(ZO "stage3_gather_16bit_weights_on_model_save",
         zero_optimization.stage3_gather_16bit_weights_on_model_save),
    BOOL(ZO "gather_16bit_weights_on_model_save",
         zero_optimization.stage3_gather_16bit_weights_on_model_save, .flags = KEY_ALIAS),
    BOOL(ZO "stage3_gather_fp16_weights_on_model_save",
         zero_optimization.stage3_gather_16bit_weights_on_model_save, .flags = KEY_ALIAS),
    KEY(KEY_I64, ZO "sub_group_size", zero_optimization.sub_group_size, 0, I64MAX),
    KEY(KEY_INT, ZO "zero_hpz_partition_size", zero_optimization.zero_hpz_partition_size, 1,
        INTMAX),
    KEY(KEY_INT, ZO "mics_shard_size", zero_optimization.mics_shard_size, -1, INTMAX),
    BOOL(ZO "mics_hierarchical_params_gather", zero_optimization.mics_hierarchical_params_gather),
    BOOL(ZO "zero_quantized_weights", zero_optimization.zero_quantized_weights),
    BOOL(ZO "zero_quantized_gradients", zero_optimization.zero_quantized_gradients),

    SECTION(ZO "offload_optimizer"),
    ENUM(OO "device", zero_optimization.offload_optimizer.device, device_names),
    KEY(KEY_STRING, OO "nvme_path", zero_optimization.offload_optimizer.nvme_path, 0, 0,
        .flags = KEY_NULLABLE),
    BOOL(OO "pin_memory", zero_optimization.offload_optimizer.pin_memory),
    KEY(KEY_I64, OO "buffer_count", zero_optimization.offload_optimizer.buffer_count, 0, I64MAX),
    BOOL(OO "pipeline_read", zero_optimization.offload_optimizer.pipeline_read),
    BOOL(OO "pipeline_write", zero_optimization.offload_optimizer.pipeline_write),
    BOOL(OO "fast_init", zero_optimization.offload_optimizer.fast_init),
    KEY(KEY_REAL, OO "ratio", zero_optimization.offload_optimizer.ratio, 0, 1),

    SECTION(ZO "offload_param"),
    ENUM(OP "device", zero_optimization.offload_param.device, device_names),
    KEY(KEY_STRING, OP "nvme_path", zero_optimization.offload_param.nvme_path, 0, 0,
        .flags = KEY_NULLABLE),
    BOOL(OP "pin_memory", zero_optimization.offload_param.pin_memory),
    KEY(KEY_I64, OP "buffer_count", zero_optimization.offload_param.buffer_count, 0, I64MAX),
    KEY(KEY_I64, OP "buffer_size", zero_optimization.offload_param.buffer_size, 0, I64MAX),
    KEY(KEY_I64, OP "max_in_cpu", zero_optimization.offload_param.max_in_cpu, 0, I64MAX),

    SECTION("aio"),
    KEY(KEY_I64, "aio.block_size", aio.block_size, 1, I64MAX),
    KEY(KEY_I64, "aio.queue_depth", aio.queue_depth, 1, 65536),
    KEY(KEY_I64, "aio.thread_count", aio.thread_count, 1, 1024),
    BOOL("aio.single_submit", aio.single_submit),
    BOOL("aio.overlap_events", aio.overlap_events),
    BOOL("aio.use_gds", aio.use_gds),

    SECTION("activation_checkpointing"),
    BOOL(AC "partition_activations", activation_checkpointing.partition_activations),
    BOOL(AC "contiguous_memory_optimization",
         activation_checkpointing.contiguous_memory_optimization),
    BOOL(AC "cpu_checkpointing", activation_checkpointing.cpu_checkpointing),
    KEY(KEY_I64, AC "number_checkpoints", activation_checkpointing.number_checkpoints, 1, I64MAX,
        .flags = KEY_NULLABLE),
    BOOL(AC "synchronize_checkpoint_boundary",
         activation_checkpointing.synchronize_checkpoint_boundary),
    BOOL(AC "profile", activation_checkpointing.profile),

    KEY(KEY_I64, "steps_per_print", steps_per_print, 0, I64MAX, .flags = KEY_NULLABLE),
    BOOL("wall_clock_breakdown", wall_clock_breakdown),

    /* libzero's own section; trace and checkpoint keys join here with their features. */
    SECTION("libzero"),
    KEY(KEY_STRING, "libzero.backend", libzero.backend, 0, 0, .names = backend_names),
    ENUM("libzero.collectives", libzero.coll_mode, coll_names),
    ENUM("libzero.matmul", libzero.matmul, matmul_names),
    ENUM("libzero.atom_order", libzero.atom_order, atom_order_names),
    BOOL("libzero.cuda_graphs", libzero.cuda_graphs),
    ENUM("libzero.activations", libzero.activations, activations_names),
    KEY(KEY_INT, "libzero.qgz_bits", libzero.qgz_bits, 4, 8),
    KEY(KEY_I64, "libzero.offload_threads", libzero.offload_threads, 0, 4096),
    KEY(KEY_I64, "libzero.align", libzero.align, 1, 1073741824.0),
    KEY(KEY_U64, "libzero.seed", libzero.seed, 0, 18446744073709551615.0),
    SECTION("libzero.trace"),
    KEY(KEY_STRING, "libzero.trace.path", libzero.trace_path, 0, 0),
    KEY(KEY_STRING, "libzero.trace.steps", libzero.trace_steps, 0, 0),
};

const int config_nkeys = (int)(sizeof config_keys / sizeof config_keys[0]);

_Static_assert(sizeof config_keys / sizeof config_keys[0] <= ZERO_CONFIG_MAX_KEYS,
               "ZERO_CONFIG_MAX_KEYS is too small for the key table");
_Static_assert(sizeof(enum zero_optim_type) == sizeof(int) &&
                   sizeof(enum zero_atom_order) == sizeof(int) &&
                   sizeof(enum zero_activations) == sizeof(int) &&
                   sizeof(enum zero_offload_device) == sizeof(int),
               "KEY_ENUM fields are stored as int");

int config_key_find(const char *path)
{
    for (int k = 0; k < config_nkeys; k++)
        if (strcmp(config_keys[k].path, path) == 0)
            return k;
    return -1;
}

int config_key_canonical(int k)
{
    while (k > 0 && (config_keys[k].flags & KEY_ALIAS))
        k--;
    return k;
}

int config_key_applies(const struct config_key *k, const struct zero_config *c)
{
    if (!k->when)
        return 1;
    unsigned have = WHEN_OPTIM(c->optimizer.type) | WHEN_SCHED(c->scheduler.type);
    return (k->when & have) != 0;
}

const char *config_key_leaf(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

static size_t parent_len(const char *path)
{
    return (size_t)(config_key_leaf(path) - path);
}

/* Levenshtein distance, capped: names longer than 63 bytes count as far. */
static int edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63)
        return 1000;
    int row[64];
    for (size_t j = 0; j <= m; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[m];
}

const char *config_key_suggest(const char *path)
{
    size_t plen = parent_len(path);
    const char *leaf = config_key_leaf(path);
    int limit = (int)strlen(leaf) / 3;
    if (limit < 2)
        limit = 2;
    const char *best = NULL;
    int best_d = limit + 1;
    for (int k = 0; k < config_nkeys; k++) {
        const char *p = config_keys[k].path;
        if (parent_len(p) != plen || strncmp(p, path, plen) != 0)
            continue;
        int d = edit_distance(leaf, config_key_leaf(p));
        if (d < best_d) {
            best_d = d;
            best = p;
        }
    }
    if (best)
        return best;
    /* the right name in the wrong section: "stage" at the top level */
    for (int k = 0; k < config_nkeys; k++)
        if (strcasecmp(config_key_leaf(config_keys[k].path), leaf) == 0)
            return config_keys[k].path;
    return NULL;
}

/* ---- comparing two configs ---- */

static int field_differs(const struct config_key *k, const struct zero_config *a,
                         const struct zero_config *b)
{
    const void *fa = config_key_cfield(k, a), *fb = config_key_cfield(k, b);
    if (k->type == KEY_STRING)
        return strncmp(fa, fb, k->size) != 0;
    return memcmp(fa, fb, k->size) != 0;
}

int zero_config_diff(const struct zero_config *a, const struct zero_config *b, char *key,
                     size_t keylen)
{
    for (int k = 0; k < config_nkeys; k++) {
        const struct config_key *e = &config_keys[k];
        if (e->type == KEY_SECTION || (e->flags & KEY_ALIAS) || !field_differs(e, a, b))
            continue;
        if (key && keylen)
            snprintf(key, keylen, "%s", e->path);
        return 1;
    }
    if (key && keylen)
        key[0] = '\0';
    return 0;
}

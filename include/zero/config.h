/* The engine's configuration: DeepSpeed's ds_config.json vocabulary as a C
 * struct, same names and defaults. zero_config_defaults() fills DeepSpeed's
 * defaults; a JSON loader (config_json.c) maps files onto this struct. */
#ifndef ZERO_CONFIG_H
#define ZERO_CONFIG_H

#include <stdint.h>

#include "zero/atom.h"
#include "zero/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

enum zero_optim_type { ZERO_OPTIM_ADAM = 0, ZERO_OPTIM_ADAMW, ZERO_OPTIM_SGD };

struct zero_optimizer_config {
    enum zero_optim_type type;
    double lr;           /* 1e-3 */
    double betas[2];     /* 0.9, 0.999 */
    double eps;          /* 1e-8 */
    double weight_decay; /* 0 (Adam/AdamW: DeepSpeed's FusedAdam default 0) */
    int adam_w_mode;     /* Adam: 1 = decoupled decay as DeepSpeed's default; AdamW: always 1 */
    int bias_correction; /* 1 */
    double momentum;     /* SGD: 0 */
    double dampening;    /* SGD: 0 */
    int nesterov;        /* SGD: 0 */
};

enum zero_sched_type {
    ZERO_SCHED_NONE = 0,
    ZERO_SCHED_WARMUP_LR,
    ZERO_SCHED_WARMUP_DECAY_LR,
    ZERO_SCHED_WARMUP_COSINE_LR
};
enum zero_warmup_type { ZERO_WARMUP_LOG = 0, ZERO_WARMUP_LINEAR };

/* DeepSpeed's deepspeed/runtime/lr_schedules.py parameter names. */
struct zero_scheduler_config {
    enum zero_sched_type type;
    double warmup_min_lr;              /* WarmupLR/WarmupDecayLR: 0 */
    double warmup_max_lr;              /* 0.001 */
    int64_t warmup_num_steps;          /* 1000 */
    enum zero_warmup_type warmup_type; /* "log" */
    int64_t total_num_steps;           /* WarmupDecayLR / WarmupCosineLR: required */
    double warmup_min_ratio;           /* WarmupCosineLR: 0 */
    double cos_min_ratio;              /* WarmupCosineLR: 0.0001 */
};

/* zero_optimization.offload_optimizer and .offload_param (DeepSpeed's
 * zero/offload_config.py); one struct, each section uses the keys it has. */
enum zero_offload_device { ZERO_OFFLOAD_NONE = 0, ZERO_OFFLOAD_CPU, ZERO_OFFLOAD_NVME };

struct zero_offload_config {
    enum zero_offload_device device;              /* none */
    char nvme_path[256];                          /* "" (DeepSpeed: None) */
    int pin_memory;                               /* 0 */
    int64_t buffer_count;                         /* optimizer 4, param 5 */
    int64_t buffer_size;                          /* param: 1e8 elements */
    int64_t max_in_cpu;                           /* param: 1e9 elements */
    double ratio;                                 /* optimizer: 1.0 */
    int pipeline_read, pipeline_write, fast_init; /* optimizer: 0 */
};

/* DeepSpeed's "aio" section (runtime/swap_tensor/aio_config.py): how the NVMe
 * swap files are read and written (src/io/aio.c). */
struct zero_aio_config {
    int64_t block_size;   /* 1048576 bytes per request */
    int64_t queue_depth;  /* 8 requests in flight per io_uring */
    int64_t thread_count; /* 1 I/O worker */
    int single_submit;    /* 0: requests are submitted in batches */
    int overlap_events;   /* 1: completions are reaped while submitting */
    int use_gds;          /* 0: GPUDirect Storage (not implemented) */
};

struct zero_optimization_config {
    int stage;                                     /* 0 */
    int contiguous_gradients;                      /* 1 */
    int reduce_scatter;                            /* 1 */
    int64_t reduce_bucket_size;                    /* 5e8 elements */
    int allgather_partitions;                      /* 1 */
    int64_t allgather_bucket_size;                 /* 5e8 elements */
    int overlap_comm;                              /* 0 (DeepSpeed turns it on for stage 3) */
    int64_t stage3_prefetch_bucket_size;           /* 5e7 elements */
    int64_t stage3_param_persistence_threshold;    /* 1e5 elements */
    int64_t stage3_max_live_parameters;            /* 1e9 elements */
    int64_t stage3_max_reuse_distance;             /* 1e9 */
    int stage3_gather_16bit_weights_on_model_save; /* 0 */
    int64_t sub_group_size;                        /* 1e9 elements */
    /* ZeRO++ hpZ (stage 3): a secondary partition of the parameters within groups of
     * this many consecutive ranks, which backward gathers from; 1 = off */
    int zero_hpz_partition_size; /* 1 */
    /* MiCS / HSDP (stages 1-3): the model states sharded within groups of this many
     * consecutive ranks and replicated across the groups; -1 = off (shard over all) */
    int mics_shard_size; /* -1 */
    /* MiCS, stage 3: each parameter gather in two hops, inside the node, then across */
    int mics_hierarchical_params_gather; /* 0 */
    /* ZeRO++ qwZ (stage 3): the parameter all-gathers carry block-wise int8 codes and
     * one fp32 scale per ZERO_QWZ_BLOCK elements, dequantized into the compute dtype */
    int zero_quantized_weights; /* 0 */
#define ZERO_QWZ_BLOCK 256      /* elements per fp32 scale of qwZ's int8 codes */
    /* ZeRO++ qgZ (stage 3): the gradients' reduce-scatter becomes an all-to-all of
     * block-wise quantized codes (libzero.qgz_bits, one fp32 scale per ZERO_QWZ_BLOCK),
     * in two hops where there are groups: inside the group, then across */
    int zero_quantized_gradients; /* 0 */
    struct zero_offload_config offload_optimizer;
    struct zero_offload_config offload_param;
};

/* fp16 with dynamic loss scaling (loss_scale 0) or a static scale. DeepSpeed's
 * documented defaults are initial_scale_power 16 and hysteresis 2, but when the
 * fp16 section gives none of the dynamic-scaling keys (initial_scale_power,
 * loss_scale_window, min_loss_scale, hysteresis, consecutive_hysteresis) its
 * scaler starts at 2^32 with hysteresis 1 (runtime/config.py
 * get_dynamic_loss_scale_args returns None). zero_config_defaults() fills the
 * values of that case; the JSON loader fills 16 and 2 when any of them is given. */
struct zero_fp16_config {
    int enabled;                /* 0 */
    double loss_scale;          /* 0 = dynamic */
    int initial_scale_power;    /* 32 (16 when a dynamic key is given, see above) */
    int loss_scale_window;      /* 1000 */
    int hysteresis;             /* 1 (2 when a dynamic key is given) */
    int consecutive_hysteresis; /* 0 */
    double min_loss_scale;      /* 1 */
};

struct zero_bf16_config {
    int enabled; /* 0 */
};

/* DeepSpeed's activation_checkpointing section (runtime/activation_checkpointing/config.py). */
struct zero_activation_checkpointing_config {
    int partition_activations;           /* 0 */
    int contiguous_memory_optimization;  /* 0 */
    int cpu_checkpointing;               /* 0 */
    int64_t number_checkpoints;          /* 0 = None */
    int synchronize_checkpoint_boundary; /* 0 */
    int profile;                         /* 0 */
};

/* libzero's own section ("libzero": {...} in JSON) so a DeepSpeed file stays valid. */
/* libzero.matmul: the precision of the GEMM operands in mixed precision. */
enum zero_matmul {
    ZERO_MATMUL_AUTO = 0, /* the compute dtype where the backend's low-precision GEMMs are
                             fast (tensor cores: cuda), fp32 elsewhere (cpu) */
    ZERO_MATMUL_FP32,     /* fp32 operands: the layers compute in fp32 throughout */
    ZERO_MATMUL_COMPUTE,  /* operands in the compute dtype (fp16/bf16), fp32 accumulation */
    ZERO_MATMUL_BF16_DOT, /* bf16 training: bf16 operands, the products by the bf16-product
                             contract (zero/backend_bf16_dot.h: x86's VDPBF16PS arithmetic,
                             the same bits on every processor) */
    ZERO_MATMUL_BF16_TILE /* the same by the bf16-tile contract (AMX's TDPBF16PS) */
};

/* libzero.activations: the dtype of the activations a layer saves for its backward
 * and hands to the next sub-layer, in mixed precision (docs/gpu.md, "Precision"). */
enum zero_activations {
    ZERO_ACTIVATIONS_FP32 = 0, /* fp32 buffers (the default) */
    ZERO_ACTIVATIONS_COMPUTE   /* the compute dtype (fp16/bf16), as llm.c keeps them: half the
                                  bytes; each value rounded once when stored, widened exactly
                                  when read, statistics in fp32 */
};

struct zero_libzero_config {
    char backend[16];              /* "cpu" */
    enum zero_coll_mode coll_mode; /* exact */
    enum zero_matmul matmul;       /* auto */
    int64_t offload_threads;       /* host threads of the offloaded optimizer per rank; 0:
                                      the node's processors / the ranks on the node */
    int64_t align;                 /* elements: unit shards are multiples of this; also the
                                      norm block size (2048) */
    uint64_t seed;                 /* parameter initialization (1234) */
    char trace_path[256];          /* "libzero": {"trace": {"path": ...}}: Chrome trace
                                      JSON written by the examples ("" = none) */
    char trace_steps[128];         /* which steps, "2,3" ("" = every step) */

    /* micro_step_major: which samples a rank reads at each micro-step, and so how exact
     * mode may reduce (atom.h; docs/design.md, "Exactness contract") */
    enum zero_atom_order atom_order;

    /* false: capture each micro-step's forward and backward as CUDA Graphs once the first
     * step has run (cuda backend only; docs/gpu.md, "CUDA Graphs") */
    int cuda_graphs;
    enum zero_activations activations; /* fp32 */
    /* qgZ's code width (zero_quantized_gradients): 4 (the ZeRO++ paper's) or 8 */
    int qgz_bits; /* 4 */
};

struct zero_config {
    int64_t train_batch_size;               /* 0 = derive */
    int64_t train_micro_batch_size_per_gpu; /* 0 = derive */
    int64_t gradient_accumulation_steps;    /* 0 = derive */
    double gradient_clipping;               /* 1.0 (DeepSpeed's default); 0 = off */
    int64_t steps_per_print;                /* 0 = off (DeepSpeed's None since v0.15.2) */
    int wall_clock_breakdown;               /* 0 */
    struct zero_optimizer_config optimizer;
    struct zero_scheduler_config scheduler;
    struct zero_fp16_config fp16;
    struct zero_bf16_config bf16;
    struct zero_optimization_config zero_optimization;
    struct zero_aio_config aio;
    struct zero_activation_checkpointing_config activation_checkpointing;
    struct zero_libzero_config libzero;
    /* keys given as "auto" that zero_config_resolve_auto has not filled yet, one
     * bit per key of the key table (not a JSON key; the engine refuses a config
     * with one left) */
    uint32_t auto_pending[6];
    /* not a JSON key either: a program's --quiet; the engine then prints no informational
     * line (NVMe offload's I/O choice, as ZERO_NVME_QUIET does) */
    int quiet;
};

void zero_config_defaults(struct zero_config *c);

/* DeepSpeed's batch rule: train_batch_size = micro * accumulation * world.
 * Fills whichever of the three are 0 (at least one of train_batch_size and
 * micro must be given) and checks consistency; errors show the arithmetic. */
int zero_config_resolve_batch(struct zero_config *c, int world, struct zero_error *err);

/* The groups' sizes against the world size: zero_optimization.zero_hpz_partition_size
 * and mics_shard_size must divide it (an error names the key and both numbers). */
int zero_config_check_groups(const struct zero_config *c, int world, struct zero_error *err);

/* The learning rate at `step` (0-based count of optimizer steps taken so far)
 * for the configured schedule; the optimizer's lr when there is none.
 * It is the lr the next update (number step + 1) uses, DeepSpeed's get_lr() at
 * last_batch_iteration = step - 1 (see src/engine/lr_schedule.c). */
double zero_lr_at(const struct zero_config *c, int64_t step);

#ifdef __cplusplus
}
#endif

#endif

/* Model-state memory per rank, before running anything: the ZeRO paper's formulas
 * (section 5, Figure 1, Table 1), DeepSpeed's two estimators
 * (estimate_zero2_model_states_mem_needs, estimate_zero3_model_states_mem_needs) and
 * a GPT-2 parameter counter. Pure arithmetic: no I/O, no backend.
 *
 * Ψ parameters, N ranks. Mixed precision with Adam (the paper's case, K = 12):
 *   stage 0 (DP)  (2 + 2 + K)Ψ     stage 1 (Pos)      4Ψ + KΨ/N
 *   stage 2 (Pos+g)  2Ψ + (2 + K)Ψ/N   stage 3 (Pos+g+p)  (2 + 2 + K)Ψ/N
 * fp32 with Adam (this library's engine: the fp32 parameter shard is the master):
 *   16Ψ, 8Ψ + 8Ψ/N, 4Ψ + 12Ψ/N, 16Ψ/N. */
#ifndef ZERO_ESTIMATE_H
#define ZERO_ESTIMATE_H

#include <stddef.h>
#include <stdint.h>

#include "zero/error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum zero_estimate_precision {
    ZERO_ESTIMATE_MIXED = 0, /* fp16/bf16 params and grads, fp32 master + Adam: 2 + 2 + 12 */
    ZERO_ESTIMATE_FP32       /* fp32 params, grads, Adam; no separate master: 4 + 4 + 8 */
};

/* Bytes per parameter of each model state, before partitioning. */
struct zero_state_sizes {
    int params, grads, master, optim;
};
void zero_estimate_state_sizes(enum zero_estimate_precision p, struct zero_state_sizes *s);

/* Where the fp32 side goes (the `offload` argument below). */
enum zero_estimate_offload {
    ZERO_ESTIMATE_OFFLOAD_NONE = 0,
    ZERO_ESTIMATE_OFFLOAD_CPU = 1, /* ZeRO-Offload: master + optimizer state in host memory */
    ZERO_ESTIMATE_OFFLOAD_NVME = 2 /* ZeRO-Infinity: master + optimizer state, and at stage 3
                                      the parameters, in NVMe swap files */
};

/* One stage's model states on one rank, in bytes. With offload cpu the master and
 * optimizer state (ZeRO-Offload's fp32 side) live in host memory instead of the
 * device; params and grads stay. With offload nvme they live on NVMe, and so do
 * stage 3's parameter shards: the device keeps the gradients (and stages 0-2 the
 * parameters). A step reads and writes the NVMe side once (the optimizer's
 * stream), and stage 3 reads each parameter shard again for the forward and the
 * backward gathers: nvme_read = nvme + 2 x params on NVMe, nvme_written = nvme. */
struct zero_estimate_stage {
    double params, grads, master, optim; /* per kind, wherever it lives */
    double device;                       /* bytes on the accelerator */
    double host;                         /* bytes offloaded to host memory */
    double nvme;                         /* bytes in this rank's NVMe swap files */
    double nvme_read, nvme_written;      /* NVMe bytes moved per step (no accumulation) */
    int whole_coef, shard_coef;          /* device bytes = whole_coef Ψ + shard_coef Ψ/N */
    int nvme_whole_coef, nvme_coef;      /* nvme bytes = nvme_whole_coef Ψ + nvme_coef Ψ/N */
};

/* Fills out[0..3] for stages 0-3; offload is an enum zero_estimate_offload
 * (0/1 keep their old meaning: none, cpu). */
void zero_estimate_stages(double psi, int ranks, enum zero_estimate_precision p, int offload,
                          struct zero_estimate_stage out[4]);

/* ZeRO++ hpZ at stage 3 with groups of g ranks: the secondary partition each rank adds,
 * its 1/g of the parameters in the compute dtype (2Ψ/g mixed, 4Ψ/g fp32), in bytes. */
double zero_estimate_hpz_secondary(double psi, enum zero_estimate_precision p, int group);

/* "4Ψ + 12Ψ/N", "16Ψ/N", ... from the coefficients; returns buf. */
char *zero_estimate_formula(char *buf, size_t len, int whole_coef, int shard_coef);

/* The paper's names: "DP", "Pos", "Pos+g", "Pos+g+p". */
const char *zero_estimate_stage_name(int stage);

/* ---- how the paper prints gigabytes (GB = 1e9 bytes) ---- */
/* Figure 1: one decimal, rounded half up, ".0" dropped (120, 31.4, 16.6, 1.9). */
char *zero_format_gb_figure(char *buf, size_t len, double bytes);
/* Table 1: 100 GB and more truncated to whole GB (4187.5 -> 4187), 10 to 100 one
 * decimal, below 10 two decimals, both rounded half up, trailing zeros dropped
 * (52.5, 41.3, 1.88, 0.47, 62.5, 15.6). */
char *zero_format_gb_table(char *buf, size_t len, double bytes);

/* ---- DeepSpeed's estimators (deepspeed/runtime/zero/stage_1_and_2.py, stage3.py) ----
 * The same arithmetic in the same order (IEEE doubles, Python's int() truncation),
 * so printing bytes / 2^30 with "%.2f" gives DeepSpeed's digits. total_gpus =
 * nodes * gpus_per_node; host memory is per node. */
struct zero_ds_estimate {
    int64_t cpu_bytes, gpu_bytes;
    int64_t nvme_bytes; /* zero_ds_zero3_nvme only; 0 elsewhere */
};
/* ZeRO-2, DeepSpeed >= 0.14.3 (PR #5099): offload: gpu 2Ψ, cpu Ψ max(4 total_gpus, 16) f;
 * none: gpu 2Ψ + int(18Ψ / total_gpus), cpu 4Ψ gpus_per_node f. legacy = 1 gives the
 * formula before that fix (gpu 4Ψ + int(16Ψ / total_gpus)), which the memory page of
 * DeepSpeed's documentation still shows. */
void zero_ds_zero2(double total_params, int gpus_per_node, int nodes, int cpu_offload,
                   double buffer_factor, int legacy, struct zero_ds_estimate *out);
/* ZeRO-3: largest_layer_memory = 4 L (fp16 params and grads of the largest layer).
 *   offload params + optimizer: gpu 4L; cpu Ψ 18 f / nodes (zero_init) or
 *     Ψ max(4 gpus_per_node, 18 / nodes) f
 *   offload optimizer only: gpu 4L + int(2Ψ / total_gpus); cpu the same with 16
 *   no offload: gpu 4L + int(18Ψ / total_gpus); cpu 4 L gpus_per_node f (zero_init) or
 *     4Ψ gpus_per_node f */
void zero_ds_zero3(double total_params, double largest_layer_params, int gpus_per_node, int nodes,
                   int cpu_offload, int offload_params, int zero_init, double buffer_factor,
                   struct zero_ds_estimate *out);
/* The NVMe case of the ZeRO-3 estimator (DeepSpeed's has none): offload_param and
 * offload_optimizer on NVMe need on the GPU what DeepSpeed's cpu-offload rows need
 * (4L, + int(2Ψ / total_gpus) when the parameters stay), and what those rows need
 * in CPU memory moves to the node's NVMe (nvme_bytes); CPU memory keeps only the
 * swap buffers, which are not model states (cpu_bytes = 0). */
void zero_ds_zero3_nvme(double total_params, double largest_layer_params, int gpus_per_node,
                        int nodes, int offload_params, int zero_init, double buffer_factor,
                        struct zero_ds_estimate *out);

/* ---- GPT-2 parameter count (llm.c / Hugging Face GPT2LMHeadModel, tied head) ----
 * wte (V, C), wpe (T, C); per layer ln_1 (2C), attn.c_attn (C, 3C) + 3C,
 * attn.c_proj (C, C) + C, ln_2 (2C), mlp.c_fc (C, 4C) + 4C, mlp.c_proj (4C, C) + C;
 * ln_f (2C); lm_head shares wte. */
struct zero_gpt_shape {
    int64_t n_layer, n_head, n_embd, block_size, vocab_size;
};
struct zero_gpt_count {
    int64_t wte, wpe, per_layer, layers, ln_f;
    int64_t total;
    int64_t largest_layer; /* most parameters held directly by one module (DeepSpeed's
                              largest_layer_params): max(wte, c_fc, ...) */
};
int zero_gpt_count_params(const struct zero_gpt_shape *g, struct zero_gpt_count *out,
                          struct zero_error *err);

#ifdef __cplusplus
}
#endif

#endif

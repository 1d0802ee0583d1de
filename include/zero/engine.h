/* The training engine: plain data parallel (stage 0) and ZeRO stages 1, 2, 3
 * behind one interface, in the spirit of DeepSpeed's engine:
 *
 *     zero_engine_create(&e, &cfg, model, dev, &err);
 *     for each micro-step:
 *         zero_engine_forward(e, &batch, &loss, &err);
 *         zero_engine_backward(e, &err);
 *         zero_engine_step(e, &err);   // updates at the accumulation boundary
 *
 * Every call is collective: all ranks make the same calls in the same order. */
#ifndef ZERO_ENGINE_H
#define ZERO_ENGINE_H

#include <stdint.h>

#include "zero/backend.h"
#include "zero/comm_stats.h"
#include "zero/config.h"
#include "zero/error.h"
#include "zero/events.h"
#include "zero/ledger.h"
#include "zero/model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct zero_engine;

/* What the last optimizer step did. */
struct zero_step_info {
    int64_t step;                /* optimizer steps taken, this one included */
    double lr;                   /* learning rate used by this step */
    double grad_norm;            /* global gradient norm before clipping */
    double clip_coef;            /* factor the gradients were divided by (1 = no clipping) */
    double loss;                 /* mean loss over the global batch of this step */
    double loss_scale;           /* fp16: the scale this step's gradients carried (else 1) */
    int skipped;                 /* fp16: gradients overflowed, no update (DeepSpeed's rule) */
    struct zero_comm_stats comm; /* collectives of this step (all its micro-steps) */
    double seconds;              /* wall time from the step's first forward to its update */
};

/* Creates the engine: lays out units, allocates and initializes model states
 * directly in shards, and checks all ranks agree on the model and config.
 * The engine keeps pointers to model and dev; both must outlive it. */
int zero_engine_create(struct zero_engine **e, const struct zero_config *cfg,
                       struct zero_model *model, struct zero_device *dev, struct zero_error *err);
void zero_engine_destroy(struct zero_engine *e);
/* Removes this rank's NVMe swap files now, waiting for nothing (the files stay
 * open until destroy): for a program about to abort a job whose other ranks may
 * be waiting in a collective, where destroy could wait too. NULL: nothing. */
void zero_engine_remove_swap_files(struct zero_engine *e);
/* The paths of this rank's NVMe swap files (the ones it locked and removes at destroy),
 * at most cap of them into paths, valid while e lives; returns how many there are. A
 * program copies them to remove the files from a signal handler (unlink is
 * async-signal-safe), where it may be killed while its peers wait. Destroy then removes
 * a path only if it still names this rank's file. */
size_t zero_engine_swap_paths(const struct zero_engine *e, const char **paths, size_t cap);

/* One micro-batch on this rank; *loss is its mean loss. */
int zero_engine_forward(struct zero_engine *e, const struct zero_batch *batch, float *loss,
                        struct zero_error *err);
int zero_engine_backward(struct zero_engine *e, struct zero_error *err);
/* At the gradient-accumulation boundary: reduce, clip, update; otherwise only
 * counts the micro-step. *stepped (may be NULL) tells which. */
int zero_engine_step(struct zero_engine *e, int *stepped, struct zero_error *err);

/* Forward only, for evaluation: the mean loss of this rank's batch, with no
 * gradient and no effect on the training state. Collective (stage 3 gathers). */
int zero_engine_eval(struct zero_engine *e, const struct zero_batch *batch, float *loss,
                     struct zero_error *err);
/* Forward only through the loss unit's predict(): host_out (rows, predict_width)
 * receives e.g. the logits. Collective. */
int zero_engine_predict(struct zero_engine *e, const struct zero_batch *batch, float *host_out,
                        struct zero_error *err);

/* Calls fn(user, event) at every event (NULL: none). Local to this rank. */
void zero_engine_set_observer(struct zero_engine *e, zero_event_fn fn, void *user);

const struct zero_config *zero_engine_config(const struct zero_engine *e);
int64_t zero_engine_global_steps(const struct zero_engine *e);
/* Optimizer updates applied: global steps less the skipped (overflowed) ones. */
int64_t zero_engine_applied_steps(const struct zero_engine *e);
/* fp16: the current loss scale (1 otherwise). */
double zero_engine_loss_scale(const struct zero_engine *e);
/* The compute dtype: fp32, fp16 or bf16. */
enum zero_dtype zero_engine_compute_dtype(const struct zero_engine *e);
int64_t zero_engine_micro_steps(const struct zero_engine *e);
const struct zero_step_info *zero_engine_last_step(const struct zero_engine *e);
const struct zero_ledger *zero_engine_ledger(const struct zero_engine *e);
/* Host memory of offloaded states (ZeRO-Offload); all zero without offload. */
const struct zero_ledger *zero_engine_host_ledger(const struct zero_engine *e);
/* ZeRO-Infinity's third tier: bytes of model states this rank's NVMe swap files
 * hold, by tag (master, optimizer state, parameters; the files add padding to
 * 4 KiB per unit); all zero without NVMe offload. */
const struct zero_ledger *zero_engine_nvme_ledger(const struct zero_engine *e);
/* The memory plan the engine checked at creation: per tag, an upper bound of the bytes
 * of host memory this rank's ledgers (device, where the backend's memory is the host's,
 * and host) hold at their peak while training on micro-batches of
 * train_micro_batch_size_per_gpu samples (the model's rows_per_sample rows each);
 * returns their sum (docs/memory.md, "Predicted before it is allocated"). */
int64_t zero_engine_memory_plan(const struct zero_engine *e, int64_t bytes[ZERO_TAG_COUNT]);
/* Bytes read from and written to the swap files since the engine was created. */
void zero_engine_nvme_io(const struct zero_engine *e, int64_t *read, int64_t *written);
const struct zero_comm_stats *zero_engine_comm_stats(const struct zero_engine *e);

/* ---- whole parameters, by (unit, param) index; collective calls ---- */
/* Copies the whole parameter into host memory on every rank: the fp32 master
 * (in fp32 training, the parameters themselves). */
int zero_engine_read_param(struct zero_engine *e, int unit, int param, float *host,
                           struct zero_error *err);
/* Sets the whole parameter from host memory given on every rank (same
 * values): the fp32 master and the compute-dtype parameters. */
int zero_engine_write_param(struct zero_engine *e, int unit, int param, const float *host,
                            struct zero_error *err);

/* ---- gathered-parameters scope (DeepSpeed's GatheredParameters) ----
 * Makes the listed units whole on every rank (under stage 3 gathers them).
 * Inside the scope zero_engine_param_ptr gives the whole parameter's backend
 * memory, in the compute dtype (*t). At the end, when modifier_rank >= 0, that
 * rank's values are broadcast and every rank copies its part back into the
 * model states: the compute-dtype parameters and the fp32 master (which then
 * holds the compute-dtype values). With modifier_rank < 0 changes are discarded.
 * Under stage 3 the scope's gathers obey stage3_max_live_parameters (a scope
 * that does not fit is refused and not opened) and emit the gather/release
 * events. Forward, backward and step inside an open scope are refused with
 * an error naming the scope: its end would write the whole copy back over an
 * update. */
int zero_engine_gathered_begin(struct zero_engine *e, const int *units, int nunits,
                               int modifier_rank, struct zero_error *err);
void *zero_engine_param_ptr(struct zero_engine *e, int unit, int param, enum zero_dtype *t);
int zero_engine_gathered_end(struct zero_engine *e, struct zero_error *err);

/* ---- stage-3 observability ---- */
enum zero_unit_state { ZERO_UNIT_NOT_AVAILABLE = 0, ZERO_UNIT_INFLIGHT, ZERO_UNIT_AVAILABLE };
enum zero_unit_state zero_engine_unit_state(const struct zero_engine *e, int unit);
/* Mixed precision: gradient elements the layers wrote straight in the compute dtype
 * over the run (the direct route: docs/design.md, "Exactness contract"); 0 without it. */
int64_t zero_engine_direct_grad_elements(const struct zero_engine *e);
/* Peak over the run of gathered (whole) elements live at once, persistent units included. */
int64_t zero_engine_peak_live_elements(const struct zero_engine *e);
/* 1 if the unit is persistent (below stage3_param_persistence_threshold). */
int zero_engine_unit_persistent(const struct zero_engine *e, int unit);

/* ---- theory next to measurement ---- */
struct zero_theory {
    int64_t psi;            /* parameters (unpadded) */
    int64_t psi_padded;     /* elements in unit flat buffers, padding included */
    int64_t psi_persistent; /* stage 3: padded elements of persistent units */
    /* stage 3: elements of gathers saved per step against two per unit because
     * units stay gathered for a reuse within stage3_max_reuse_distance (known
     * after the first step; negative when external parameters add gathers) */
    int64_t psi_reused;
    /* hpZ (zero_hpz_partition_size g > 1): the elements of the backward's gathers, which
     * run inside the group from the secondary shards (Ψg; left out of the world volumes
     * above), the elements this rank sends for them per step, AΨg (g-1)/g with A
     * micro-steps, and the
     * secondary shards' bytes, the compute dtype's size times Ψ'/g over the
     * non-persistent units (tag hpz_secondary) */
    int hpz_group_size;
    int hpz_node_group; /* the backend's node split as groups of this size (0: irregular) */
    int64_t psi_group, group_sent_elements_per_step, hpz_secondary_bytes;
    /* MiCS (mics_shard_size M, 1 <= M <= N; 0 = off): the states above are 1/M per rank;
     * the world's collectives are the gradients' reduce-scatters alone (each
     * Ψ(N-1)/N: sent_elements_*), and group_sent_elements_per_step is what the groups
     * carry per step: the parameters' gathers inside the shard group, Ψ'(M-1)/M
     * (psi_gathered = Ψ': stages 1-2 Ψ, stage 3 A(2Ψ - 2Ψp - Ψr) + Ψp), plus each of
     * the step's mics_reductions reduced shards all-gathered in the replica group,
     * Ψ(R-1)/N, R = N/M */
    int mics_shard_size;
    int mics_node_group; /* the backend's node split as groups of this size (0: irregular) */
    int mics_gather_hop; /* mics_hierarchical_params_gather: L ranks per node hop; 0 = one hop */
    int64_t psi_gathered, mics_reductions;
    /* MiCS: group_sent_elements_per_step in bytes (the replica group's all-gathers carry
     * fp32 where each micro-step's sum goes into an fp32 accumulation slot) */
    int64_t group_sent_bytes_per_step;
    /* MiCS: group_sent_bytes_per_step by group: the shard group's parameter gathers
     * (Ψ'(M-1)/M) and, in native mode, reduce-scatters (Ψ(M-1)/M per reduction), inside
     * the shard group; the replica group's all-gathers (exact mode, Ψ(R-1)/N per
     * reduction) or all-reduces (native mode, 2Ψ(R-1)/N), across the shard groups.
     * mics_reduces_in_groups: 1 in native mode, where no reduction runs over the world */
    int64_t mics_gather_bytes, mics_intra_reduce_bytes, mics_replica_bytes;
    int mics_reduces_in_groups;
    /* qwZ (zero_quantized_weights): the parameter all-gathers' share of the sent
     * elements above, (A(2Ψ - 2Ψp - Ψr) + Ψp)(N-1)/N, and the bytes they really send per
     * rank in int8: (N-1) times the slot bytes, 4 ceil(s/B) + s rounded up to 4 (shard s,
     * B = ZERO_QWZ_BLOCK), summed over the same gathers; 0 when off */
    int64_t qwz_gather_elements, qwz_gather_sent_bytes;
    /* qgZ (zero_quantized_gradients): the reduce-scatters' share of the sent elements
     * above, AΨ(N-1)/N, and the bytes qgZ's all-to-alls really send per rank, per
     * reduction of a shard s in groups of g (P = N/g): inside the group (g-1) P slots,
     * to the other groups (P-1) slots, a slot being 4 ceil(s/B) + the codes (s/2 bytes
     * in int4, s in int8) rounded up to 4; summed over the step's reductions; 0 when off */
    int qgz_bits, qgz_group_size, qgz_node_group;
    int64_t qgz_reduce_elements, qgz_intra_bytes, qgz_inter_bytes;
    /* per rank in device memory (the ledger), from the stage formula on padded sizes */
    int64_t model_state_bytes;
    int64_t params_bytes, grads_bytes, master_bytes, optim_bytes;
    /* per rank in device memory, tag accum (not a model state): with A > 1 the
     * gradient accumulation counters at their peak, floor(log2(A)) + 1 fp32 slots
     * per unit, each of the whole unit where accumulates_locally (native fast mode,
     * rank-major atoms), else of this rank's shard; 0 at A = 1 */
    int64_t accum_bytes;
    /* per rank in host memory (the host ledger): ZeRO-Offload's master and
     * optimizer state, the gradient staging shard (compute dtype, counted as
     * grads) and, with offload_param, the parameter shard */
    int64_t host_state_bytes;
    int64_t host_params_bytes, host_grads_bytes, host_master_bytes, host_optim_bytes;
    /* per rank on NVMe (the nvme ledger): offload_optimizer.device
     * = nvme moves the master and optimizer state there (12Ψ/N), offload_param
     * the parameter shards past max_in_cpu (2Ψ/N); each step reads and writes
     * both once (nvme_*_bytes), and stage 3 reads the parameter shards again
     * for every gather from NVMe */
    int64_t nvme_state_bytes;
    int64_t nvme_params_bytes, nvme_master_bytes, nvme_optim_bytes;
    /* per rank, no accumulation: 2Ψ(N-1)/N; stage 3: (3Ψ - Ψp - Ψr)(N-1)/N */
    int64_t sent_elements_per_step;
    /* per rank with A = gradient_accumulation_steps micro-steps, as the engine runs it:
     * sent_elements_every_micro_step below, or sent_elements_local_accumulation where
     * accumulates_locally. Equals sent_elements_per_step at A = 1. */
    int64_t sent_elements_accumulated;
    int accumulates_locally; /* native mode, A > 1, stages 0-2, or exact mode with
                                libzero.atom_order rank_major, A > 1, stages 0-3: the engine
                                runs the schedule below, and sent_elements_accumulated
                                equals it */
    /* the same step with local accumulation and one reduction per step (DeepSpeed's
     * volume for stages 0-1; bit-exact with rank-major atoms, exactly the canonical tree
     * when A is a power of two, docs/stages.md): stages 0-2 2Ψ(N-1)/N; stage 3 keeps the
     * per-micro-step gathers and reduce-scatters once: (A(2Ψ - 2Ψp - Ψr) + Ψp + Ψ)(N-1)/N */
    int64_t sent_elements_local_accumulation;
    /* the step with a reduction every micro-step (exact mode with micro-step-major
     * atoms, docs/stages.md), whichever ran: stages 0-2 (A + 1)Ψ(N-1)/N; stage 3
     * (A(3Ψ - 2Ψp - Ψr) + Ψp)(N-1)/N */
    int64_t sent_elements_every_micro_step;
};
void zero_engine_theory(const struct zero_engine *e, struct zero_theory *t);

#ifdef __cplusplus
}
#endif

#endif

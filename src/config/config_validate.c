/* The checks of a resolved configuration that need neither the model nor the
 * world size, in one place: `zero config` (the loader) and the engine run the
 * same ones, so a file `zero config` accepts is one the trainers run. */
#include <stdio.h>
#include <string.h>

#include "config_auto.h"
#include "config_keys.h"
#include "config_validate.h"
#include "zero/config_json.h"
#include "zero/trace.h"

/* Features DeepSpeed has that this build lacks (config_unsupported.c). */
static int check_features(const struct zero_config *c, struct zero_error *err)
{
    char why[256];
    if (zero_config_unsupported(c, why, sizeof why))
        return zero_fail(err, ZERO_ENOTSUP, "%s", why);
    return ZERO_OK;
}

/* Keys that contradict each other. */
static int check_combinations(const struct zero_config *c, struct zero_error *err)
{
    enum zero_sched_type s = c->scheduler.type;
    if ((s == ZERO_SCHED_WARMUP_DECAY_LR || s == ZERO_SCHED_WARMUP_COSINE_LR) &&
        c->scheduler.total_num_steps < 1 &&
        !config_auto_is_pending(c, "scheduler.params.total_num_steps")) {
        int t = config_key_find("scheduler.type");
        return zero_fail(err, ZERO_EINVAL, "scheduler.params.total_num_steps: required by %s",
                         config_keys[t].names[s]);
    }
    if (c->fp16.enabled && c->bf16.enabled) /* DeepSpeed asserts the same */
        return zero_fail(err, ZERO_EINVAL,
                         "fp16.enabled and bf16.enabled are both true; choose one");
    if (c->optimizer.type == ZERO_OPTIM_SGD && c->optimizer.nesterov &&
        (c->optimizer.momentum <= 0.0 || c->optimizer.dampening != 0.0))
        return zero_fail(err, ZERO_EINVAL,
                         "optimizer.params.nesterov=true: needs momentum > 0 and dampening "
                         "0 (got momentum %g, dampening %g)",
                         c->optimizer.momentum, c->optimizer.dampening);
    return ZERO_OK;
}

/* The NVMe-only keys mean nothing elsewhere: a value other than DeepSpeed's
 * default where the device is not nvme is refused rather than ignored. */
static int check_nvme_only_keys(const struct zero_config *c, struct zero_error *err)
{
    const struct zero_optimization_config *z = &c->zero_optimization;
    const struct zero_offload_config *o = &z->offload_optimizer, *p = &z->offload_param;
    const struct zero_aio_config *a = &c->aio;
    int nvme_opt = o->device == ZERO_OFFLOAD_NVME, nvme_param = p->device == ZERO_OFFLOAD_NVME;
    const char *bad = NULL;
    if (!nvme_opt && (o->buffer_count != 4 || o->pipeline_read || o->pipeline_write ||
                      o->fast_init || o->nvme_path[0]))
        bad = "zero_optimization.offload_optimizer.{nvme_path, buffer_count, pipeline_read, "
              "pipeline_write, fast_init}";
    else if (!nvme_param && (p->buffer_count != 5 || p->buffer_size != 100000000 ||
                             p->max_in_cpu != 1000000000 || p->nvme_path[0]))
        bad = "zero_optimization.offload_param.{nvme_path, buffer_count, buffer_size, max_in_cpu}";
    else if (!nvme_opt && !nvme_param &&
             (a->block_size != 1048576 || a->queue_depth != 8 || a->thread_count != 1 ||
              a->single_submit || !a->overlap_events))
        bad = "aio";
    if (bad)
        return zero_fail(err, ZERO_EINVAL,
                         "%s: set to other than DeepSpeed's defaults, but they tune NVMe offload "
                         "only and the device is not nvme",
                         bad);
    return ZERO_OK;
}

/* libzero.cuda_graphs: a captured pass may not wait for the host, and ZeRO-Offload's
 * copies and swaps are waited for by the host (offload.c, nvme_swap.c); the cpu backend
 * has nothing to capture. */
static int check_cuda_graphs(const struct zero_config *c, struct zero_error *err)
{
    const struct zero_optimization_config *z = &c->zero_optimization;
    if (!c->libzero.cuda_graphs)
        return ZERO_OK;
    if (strcmp(c->libzero.backend, "cuda") != 0)
        return zero_fail(err, ZERO_EINVAL,
                         "libzero.cuda_graphs = true needs libzero.backend = \"cuda\" (backend is "
                         "\"%s\")",
                         c->libzero.backend);
    if (z->offload_optimizer.device != ZERO_OFFLOAD_NONE ||
        z->offload_param.device != ZERO_OFFLOAD_NONE)
        return zero_fail(err, ZERO_EINVAL,
                         "libzero.cuda_graphs = true cannot be combined with "
                         "zero_optimization.offload_%s: the host waits for the offloaded "
                         "states' copies, which a graph cannot hold",
                         z->offload_optimizer.device != ZERO_OFFLOAD_NONE ? "optimizer" : "param");
    return ZERO_OK;
}

/* qwZ: quantizes stage 3's world all-gathers; with hpZ the backward's in-group gathers
 * carry the dequantized values the forward delivered (hpz.c keeps them); MiCS's and
 * offloaded shards' gathers are not combined with it yet. */
static int check_qwz(const struct zero_config *c, struct zero_error *err)
{
    const struct zero_optimization_config *z = &c->zero_optimization;
    if (!z->zero_quantized_weights)
        return ZERO_OK;
    if (z->stage != 3)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.zero_quantized_weights = true needs stage 3 (stage "
                         "is %d): qwZ quantizes the parameter all-gathers that stage 3 runs",
                         z->stage);
    const char *with = z->mics_shard_size > 0                         ? "mics_shard_size > 0"
                       : z->offload_param.device != ZERO_OFFLOAD_NONE ? "offload_param"
                                                                      : NULL;
    if (with)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.zero_quantized_weights = true with %s: combining "
                         "qwZ with it is not implemented yet in this build",
                         with);
    return ZERO_OK;
}

/* qgZ: replaces stage 3's gradient reduce-scatter; a code width of 4 or 8 bits, and
 * what it is not combined with yet. */
static int check_qgz(const struct zero_config *c, struct zero_error *err)
{
    const struct zero_optimization_config *z = &c->zero_optimization;
    int bits = c->libzero.qgz_bits;
    if (bits != 4 && bits != 8)
        return zero_fail(err, ZERO_EINVAL,
                         "libzero.qgz_bits = %d: qgZ's codes are 4 or 8 bits wide", bits);
    if (!z->zero_quantized_gradients)
        return ZERO_OK;
    if (z->stage != 3)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.zero_quantized_gradients = true needs stage 3 (stage "
                         "is %d): qgZ replaces the gradients' reduce-scatter of stage 3",
                         z->stage);
    const char *with =
        z->mics_shard_size > 0                             ? "zero_optimization.mics_shard_size > 0"
        : z->offload_param.device != ZERO_OFFLOAD_NONE     ? "zero_optimization.offload_param"
        : z->offload_optimizer.device != ZERO_OFFLOAD_NONE ? "zero_optimization.offload_optimizer"
        : !z->reduce_scatter                            ? "zero_optimization.reduce_scatter = false"
        : c->libzero.atom_order == ZERO_ATOM_RANK_MAJOR ? "libzero.atom_order = \"rank_major\""
                                                        : NULL;
    if (with)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.zero_quantized_gradients = true with %s: combining "
                         "qgZ with it is not implemented yet in this build",
                         with);
    return ZERO_OK;
}

/* MiCS: a shard group size (its divisor rule is zero_config_check_groups', which knows
 * the world size), the stages it shards, and what it is not combined with yet. */
static int check_mics(const struct zero_config *c, struct zero_error *err)
{
    const struct zero_optimization_config *z = &c->zero_optimization;
    int m = z->mics_shard_size;
    if (m == 0 || m < -1)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.mics_shard_size = %d; expected -1 (off) or a "
                         "positive divisor of the world size",
                         m);
    if (z->mics_hierarchical_params_gather && (m < 1 || z->stage != 3))
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.mics_hierarchical_params_gather = true needs "
                         "mics_shard_size > 0 and stage 3 (mics_shard_size is %d, stage %d): it "
                         "is how MiCS gathers the stage-3 parameters",
                         m, z->stage);
    if (m < 1)
        return ZERO_OK;
    if (z->stage == 0)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.mics_shard_size = %d needs stage 1, 2 or 3 (stage is "
                         "0): stage 0 shards nothing",
                         m);
    if (z->zero_hpz_partition_size > 1)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.mics_shard_size = %d cannot be combined with "
                         "zero_hpz_partition_size = %d: MiCS already keeps whole copies of the "
                         "parameter shards inside each group",
                         m, z->zero_hpz_partition_size);
    if (z->offload_optimizer.device != ZERO_OFFLOAD_NONE ||
        z->offload_param.device != ZERO_OFFLOAD_NONE)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.mics_shard_size = %d with offload_%s: offloading "
                         "MiCS's shards is not implemented yet in this build",
                         m,
                         z->offload_optimizer.device != ZERO_OFFLOAD_NONE ? "optimizer" : "param");
    return ZERO_OK;
}

/* Values the engine needs in range, offload's stage rules, the trace's steps. */
static int check_values(const struct zero_config *c, struct zero_error *err)
{
    const struct zero_optimization_config *z = &c->zero_optimization;
    if (c->fp16.enabled && c->fp16.loss_scale <= 0.0 && c->fp16.min_loss_scale <= 0.0)
        return zero_fail(err, ZERO_EINVAL, "fp16.min_loss_scale is %g; expected > 0",
                         c->fp16.min_loss_scale);
    if (z->stage < 0 || z->stage > 3)
        return zero_fail(err, ZERO_EINVAL, "zero_optimization.stage is %d; expected 0, 1, 2 or 3",
                         z->stage);
    if (c->libzero.align < 1)
        return zero_fail(err, ZERO_EINVAL, "libzero.align is %lld; expected a positive count",
                         (long long)c->libzero.align);
    if (z->reduce_bucket_size < 1 || z->allgather_bucket_size < 1)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.reduce_bucket_size and allgather_bucket_size must be "
                         "positive (got %lld and %lld)",
                         (long long)z->reduce_bucket_size, (long long)z->allgather_bucket_size);
    if (c->gradient_clipping < 0.0)
        return zero_fail(err, ZERO_EINVAL, "gradient_clipping is %g; expected >= 0",
                         c->gradient_clipping);
    static const char *const device[] = {"none", "cpu", "nvme"};
    int offload_opt = z->offload_optimizer.device != ZERO_OFFLOAD_NONE;
    int offload_param = z->offload_param.device != ZERO_OFFLOAD_NONE;
    if (offload_opt && z->stage == 0)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.offload_optimizer.device = %s needs stage 1, 2 or 3 "
                         "(stage is 0): the offloaded optimizer updates this rank's shard",
                         device[z->offload_optimizer.device]);
    if (offload_param && z->stage != 3)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.offload_param.device = %s needs stage 3 (stage is "
                         "%d): only stage 3 partitions the parameters",
                         device[z->offload_param.device], z->stage);
    if (offload_param && !offload_opt)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.offload_param.device = %s needs "
                         "offload_optimizer.device = cpu or nvme as well: the host optimizer "
                         "writes the host parameter shard in place",
                         device[z->offload_param.device]);
    if (z->zero_hpz_partition_size > 1 && z->stage != 3)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.zero_hpz_partition_size = %d needs stage 3 (stage is "
                         "%d): hpZ keeps a second partition of the parameters that stage 3 "
                         "shards",
                         z->zero_hpz_partition_size, z->stage);
    int rc = check_nvme_only_keys(c, err);
    if (rc)
        return rc;
    if ((rc = check_mics(c, err)))
        return rc;
    if ((rc = check_qwz(c, err)) || (rc = check_qgz(c, err)))
        return rc;
    if ((rc = check_cuda_graphs(c, err)))
        return rc;
    if (c->libzero.trace_steps[0]) {
        int64_t steps[ZERO_TRACE_MAX_STEPS];
        int n = 0;
        int rc =
            zero_trace_parse_steps(c->libzero.trace_steps, steps, ZERO_TRACE_MAX_STEPS, &n, err);
        if (rc)
            return zero_error_wrap(err, "libzero.trace.steps \"%s\": ", c->libzero.trace_steps);
    }
    return ZERO_OK;
}

int config_validate_given(const struct zero_config *c, struct zero_error *err)
{
    int rc = check_features(c, err);
    return rc ? rc : check_combinations(c, err);
}

int zero_config_validate(const struct zero_config *c, struct zero_error *err)
{
    int rc = config_validate_given(c, err);
    return rc ? rc : check_values(c, err);
}

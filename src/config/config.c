/* DeepSpeed's configuration defaults and its batch-size rule.
 *
 * Defaults are those of DeepSpeed's own code (deepspeed/runtime/constants.py,
 * zero/config.py, lr_schedules.py, ops/adam/fused_adam.py), not of its docs
 * where the two disagree. */
#include "zero/config.h"
#include "zero/error.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

void zero_config_defaults(struct zero_config *c)
{
    memset(c, 0, sizeof(*c));

    /* train_batch_size, micro batch and accumulation: 0 = not given (DeepSpeed: None). */
    c->gradient_clipping = 1.0; /* GRADIENT_CLIPPING_DEFAULT (0 before DeepSpeed turned it on) */
    c->steps_per_print = 0;     /* off: DeepSpeed's default is None since v0.15.2 */
    c->wall_clock_breakdown = 0;

    struct zero_optimizer_config *o = &c->optimizer;
    o->type = ZERO_OPTIM_ADAM;
    o->lr = 1e-3;
    o->betas[0] = 0.9;
    o->betas[1] = 0.999;
    o->eps = 1e-8;
    o->weight_decay = 0.0;
    o->adam_w_mode = 1;
    o->bias_correction = 1;
    o->momentum = 0.0;
    o->dampening = 0.0;
    o->nesterov = 0;

    struct zero_scheduler_config *s = &c->scheduler;
    s->type = ZERO_SCHED_NONE;
    s->warmup_min_lr = 0.0;
    s->warmup_max_lr = 0.001;
    s->warmup_num_steps = 1000;
    s->warmup_type = ZERO_WARMUP_LOG;
    s->total_num_steps = 0; /* required by the schedules that decay */
    s->warmup_min_ratio = 0.0;
    s->cos_min_ratio = 0.0001;

    struct zero_optimization_config *z = &c->zero_optimization;
    z->stage = 0;
    z->contiguous_gradients = 1;
    z->reduce_scatter = 1;
    z->reduce_bucket_size = 500000000;
    z->allgather_partitions = 1;
    z->allgather_bucket_size = 500000000;
    z->overlap_comm = 0;
    z->stage3_prefetch_bucket_size = 50000000;
    z->stage3_param_persistence_threshold = 100000;
    z->stage3_max_live_parameters = 1000000000;
    z->stage3_max_reuse_distance = 1000000000;
    z->stage3_gather_16bit_weights_on_model_save = 0;
    z->sub_group_size = 1000000000;
    z->zero_hpz_partition_size = 1;
    z->mics_shard_size = -1;
    z->mics_hierarchical_params_gather = 0;
    z->zero_quantized_weights = 0;
    z->zero_quantized_gradients = 0;
    z->offload_optimizer.device = ZERO_OFFLOAD_NONE;
    z->offload_optimizer.buffer_count = 4;
    z->offload_optimizer.buffer_size = 100000000;
    z->offload_optimizer.max_in_cpu = 1000000000;
    z->offload_optimizer.ratio = 1.0;
    z->offload_param = z->offload_optimizer;
    z->offload_param.buffer_count = 5;
    c->aio = (struct zero_aio_config){
        .block_size = 1048576, .queue_depth = 8, .thread_count = 1, .overlap_events = 1};

    /* The scaler DeepSpeed builds when the fp16 section names no dynamic key. */
    struct zero_fp16_config *h = &c->fp16;
    h->enabled = 0;
    h->loss_scale = 0.0;
    h->initial_scale_power = 32;
    h->loss_scale_window = 1000;
    h->hysteresis = 1;
    h->consecutive_hysteresis = 0;
    h->min_loss_scale = 1.0;
    c->bf16.enabled = 0;
    /* activation_checkpointing: all off (memset) */

    struct zero_libzero_config *l = &c->libzero;
    snprintf(l->backend, sizeof(l->backend), "%s", "cpu");
    l->coll_mode = ZERO_COLL_EXACT;
    l->atom_order = ZERO_ATOM_MICRO_STEP_MAJOR;
    l->align = 2048;
    l->seed = 1234;
    l->qgz_bits = 4;
}

/* a * b, or -1 when the product does not fit (both operands are positive). */
static int64_t mul_or_overflow(int64_t a, int64_t b)
{
    if (a > INT64_MAX / b)
        return -1;
    return a * b;
}

static int check_given(const char *key, int64_t value, struct zero_error *err)
{
    if (value < 0)
        return zero_fail(err, ZERO_EINVAL, "config: %s %lld has to be greater than 0", key,
                         (long long)value);
    return ZERO_OK;
}

/* DeepSpeed's _set_batch_related_parameters derives the missing values with
 * floor division (accumulation = train // micro // world, and so on) and
 * _batch_assertion then requires all three > 0 and train = micro * acc * world.
 * A floor-divided value passes both exactly when the division was exact and
 * nonzero, so "train_batch_size is not divisible by ..." is the same verdict
 * with the arithmetic spelled out. */
int zero_config_resolve_batch(struct zero_config *c, int world, struct zero_error *err)
{
    if (world < 1)
        return zero_fail(err, ZERO_EINVAL, "config: world size %d has to be at least 1", world);
    int64_t train = c->train_batch_size;
    int64_t micro = c->train_micro_batch_size_per_gpu;
    int64_t acc = c->gradient_accumulation_steps;
    int rc;
    if ((rc = check_given("train_batch_size", train, err)) != ZERO_OK ||
        (rc = check_given("train_micro_batch_size_per_gpu", micro, err)) != ZERO_OK ||
        (rc = check_given("gradient_accumulation_steps", acc, err)) != ZERO_OK)
        return rc;

    if (train == 0 && micro == 0)
        return zero_fail(err, ZERO_EINVAL,
                         "config: either train_batch_size or train_micro_batch_size_per_gpu "
                         "needs to be provided");

    if (train == 0) {
        /* micro given; accumulation given or 1 */
        if (acc == 0)
            acc = 1;
        int64_t per_rank = mul_or_overflow(micro, acc);
        train = per_rank < 0 ? -1 : mul_or_overflow(per_rank, world);
        if (train < 0)
            return zero_fail(err, ZERO_EINVAL,
                             "config: train_micro_batch_size_per_gpu %lld * "
                             "gradient_accumulation_steps %lld * world size %d overflows",
                             (long long)micro, (long long)acc, world);
    } else if (micro == 0) {
        /* train given; accumulation given or 1 */
        if (acc == 0)
            acc = 1;
        int64_t divisor = mul_or_overflow(acc, world);
        if (divisor < 0)
            return zero_fail(err, ZERO_EINVAL,
                             "config: gradient_accumulation_steps %lld * world size %d overflows",
                             (long long)acc, world);
        if (train % divisor != 0) {
            if (c->gradient_accumulation_steps == 0)
                return zero_fail(err, ZERO_EINVAL,
                                 "config: train_batch_size %lld is not divisible by world size %d",
                                 (long long)train, world);
            return zero_fail(err, ZERO_EINVAL,
                             "config: train_batch_size %lld is not divisible by "
                             "gradient_accumulation_steps %lld * world size %d = %lld",
                             (long long)train, (long long)acc, world, (long long)divisor);
        }
        micro = train / divisor;
    } else if (acc == 0) {
        /* train and micro given */
        int64_t divisor = mul_or_overflow(micro, world);
        if (divisor < 0)
            return zero_fail(err, ZERO_EINVAL,
                             "config: train_micro_batch_size_per_gpu %lld * world size %d "
                             "overflows",
                             (long long)micro, world);
        if (train % divisor != 0)
            return zero_fail(err, ZERO_EINVAL,
                             "config: train_batch_size %lld is not divisible by "
                             "train_micro_batch_size_per_gpu %lld * world size %d = %lld",
                             (long long)train, (long long)micro, world, (long long)divisor);
        acc = train / divisor;
    } else {
        /* all three given: they must agree */
        int64_t per_rank = mul_or_overflow(micro, acc);
        int64_t product = per_rank < 0 ? -1 : mul_or_overflow(per_rank, world);
        if (product != train) {
            if (product < 0)
                return zero_fail(err, ZERO_EINVAL,
                                 "config: train_batch_size %lld != "
                                 "train_micro_batch_size_per_gpu %lld * "
                                 "gradient_accumulation_steps %lld * world size %d (overflows)",
                                 (long long)train, (long long)micro, (long long)acc, world);
            return zero_fail(err, ZERO_EINVAL,
                             "config: train_batch_size %lld != train_micro_batch_size_per_gpu "
                             "%lld * gradient_accumulation_steps %lld * world size %d = %lld",
                             (long long)train, (long long)micro, (long long)acc, world,
                             (long long)product);
        }
    }

    c->train_batch_size = train;
    c->train_micro_batch_size_per_gpu = micro;
    c->gradient_accumulation_steps = acc;
    return ZERO_OK;
}

int zero_config_check_groups(const struct zero_config *c, int world, struct zero_error *err)
{
    int g = c->zero_optimization.zero_hpz_partition_size;
    if (world > 0 && g > 1 && world % g != 0)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.zero_hpz_partition_size = %d does not divide the "
                         "world size %d: the hpZ groups are %d consecutive ranks each",
                         g, world, g);
    int m = c->zero_optimization.mics_shard_size;
    if (world > 0 && m > 0 && world % m != 0)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.mics_shard_size = %d does not divide the world size "
                         "%d: the MiCS shard groups are %d consecutive ranks each",
                         m, world, m);
    return ZERO_OK;
}

/* Memory peaks predicted: for each transient tag an upper bound of the ledger's
 * peak during training, from the layouts and the configuration alone (before
 * anything is allocated), so that the memory plan (memory_plan.c) bounds the
 * whole peak instead of only the model states. Each bound is simple rather
 * than exact; the comment above each says why it holds. A module that adds a
 * buffer adds its term to the function of its tag.
 *
 * Activations are sized for a micro-batch of R = train_micro_batch_size_per_gpu
 * x rows_per_sample rows (zero_model.rows_per_sample: a GPT's block size); a
 * batch of more rows needs more. */
#include <stdlib.h>

#include "engine_internal.h"
#include "memory_peaks.h"
#include "nvme_swap.h"
#include "unit_compute.h"

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Elements of unit u and of the distinct owners of its external parameters: what
 * compute_fetch gathers and compute_fill_params converts for u's compute */
static int64_t fetch_set(const struct zero_engine *e, int u, int skip_persistent)
{
    const struct zero_unit *unit = e->model->units[u];
    int64_t n = skip_persistent && e->us[u].stage3.persistent ? 0 : e->us[u].layout.padded;
    for (int x = 0; x < unit->nexternal; x++) {
        int o = unit->external[x].unit, seen = o == u;
        for (int y = 0; y < x && !seen; y++)
            seen = unit->external[y].unit == o;
        if (!seen && !(skip_persistent && e->us[o].stage3.persistent))
            n += e->us[o].layout.padded;
    }
    return n;
}

static int64_t largest_unit(const struct zero_engine *e)
{
    int64_t largest = 0;
    for (int u = 0; u < e->nunits; u++)
        largest = max64(largest, e->us[u].layout.padded);
    return largest;
}

/* Stage 3's gathered elements live at once. Prefetches stay under
 * stage3_max_live_parameters; a fetch frees prefetched units until it fits, and
 * goes above the limit only when what is left is persistent or in use (the
 * current fetch set), which stage3_check_live_limit's persistent + largest
 * fetch set bounds; never more than every unit. */
static int64_t live_elements(const struct zero_engine *e)
{
    int64_t model = 0, persistent = 0, worst = 0;
    for (int u = 0; u < e->nunits; u++) {
        model += e->us[u].layout.padded;
        persistent += e->us[u].stage3.persistent ? e->us[u].layout.padded : 0;
        worst = max64(worst, fetch_set(e, u, 1));
    }
    int64_t live = max64(e->cfg.zero_optimization.stage3_max_live_parameters, persistent + worst);
    return live < model ? live : model;
}

/* gather: the live whole units (compute dtype); with qwZ the int8 slots of each
 * gather in flight (N slots of 4 ceil(shard / B) + ceil4(shard) bytes: at most
 * padded (1 + 4 / B) + 7N bytes a unit, and only live units are in flight); and
 * the fp32 whole copy of one unit zero_engine_read_param gathers where the master
 * is sharded and not the parameters' own buffer, outside the passes but beside the
 * persistent units. */
int64_t peak_gather_bytes(const struct zero_engine *e)
{
    int64_t bytes = 0;
    if (e->stage_def->shards_params) {
        int64_t live = live_elements(e);
        bytes += live * (int64_t)e->csize;
        if (qwz_on(e))
            bytes += live + (4 * live + ZERO_QWZ_BLOCK - 1) / ZERO_QWZ_BLOCK +
                     7 * (int64_t)e->world * e->nunits;
    }
    if (e->stage_def->shards_optim && (engine_separate_master(e) || e->stage_def->shards_params))
        bytes += 4 * largest_unit(e);
    return bytes;
}

/* A unit's transient gradient bytes while its reduction is pending: the whole local
 * gradient (compute dtype, stages 2-3) and MiCS's reordered copy of it (at most
 * fp32: the accumulated sum's), alive until the unit's bucket completes. */
static int64_t bucket_bytes_of(const struct zero_engine *e, int u)
{
    int64_t padded = e->us[u].layout.padded;
    int64_t bytes = e->stage_def->shards_grads ? padded * (int64_t)e->csize : 0;
    if (mics_on(&e->mics) && e->mics.replicas > 1)
        bytes += 4 * padded;
    return bytes;
}

/* Replays backward over the buckets reduce_plan_buckets will form (the same
 * zero_plan_buckets, in backward order): unit u's local gradient appears at the
 * first backward that writes it (u's own, or earlier a user of its parameters:
 * counting it from there is the larger), and every gradient of a bucket lives
 * until the bucket completes: at its last unit, or with overlap_comm at the next
 * bucket's last unit (two buckets alive), or at the end of backward. */
int64_t peak_bucket_bytes(const struct zero_engine *e)
{
    const int n = e->nunits;
    int64_t everything = 0; /* the bound without the replay (no memory for it) */
    for (int u = 0; u < n; u++)
        everything += bucket_bytes_of(e, u);
    int64_t *size = calloc((size_t)n + 1, sizeof *size);
    int *first = malloc((size_t)(n + 1) * sizeof *first);
    char *alive = calloc((size_t)n + 1, 1);
    int *bucket = malloc((size_t)(n + 1) * sizeof *bucket); /* of each backward position */
    if (!size || !first || !alive || !bucket) {
        free(size);
        free(first);
        free(alive);
        free(bucket);
        return everything;
    }
    for (int pos = 0; pos < n; pos++)
        size[pos] = e->us[n - 1 - pos].layout.padded;
    int nbuckets = zero_plan_buckets(size, n, e->cfg.zero_optimization.reduce_bucket_size, first);
    for (int b = 0; b < nbuckets; b++)
        for (int pos = first[b]; pos < first[b + 1]; pos++)
            bucket[pos] = b;
    const int overlap = e->cfg.zero_optimization.overlap_comm;
    int64_t cur = 0, peak = 0;
    int pending = -1; /* overlap_comm: the bucket still in flight */
    for (int pos = 0; pos < n; pos++) {
        const int u = n - 1 - pos, b = bucket[pos];
        const struct zero_unit *unit = e->model->units[u];
        for (int x = -1; x < unit->nexternal; x++) {
            int o = x < 0 ? u : unit->external[x].unit;
            cur += alive[o] ? 0 : bucket_bytes_of(e, o);
            alive[o] = 1;
        }
        peak = max64(peak, cur);
        if (pos != first[b + 1] - 1)
            continue; /* the bucket is not complete yet */
        const int done = overlap ? pending : b;
        pending = overlap ? b : -1;
        for (int q = done >= 0 ? first[done] : 0; done >= 0 && q < first[done + 1]; q++) {
            cur -= alive[n - 1 - q] ? bucket_bytes_of(e, n - 1 - q) : 0;
            alive[n - 1 - q] = 0;
        }
    }
    free(size);
    free(first);
    free(alive);
    free(bucket);
    return peak;
}

/* Bytes of unit u's output: its widest of training and prediction */
static int64_t out_bytes(const struct zero_engine *e, int u, int64_t rows)
{
    const struct zero_unit *unit = e->model->units[u];
    return rows * max64(unit->out_width, unit->predict_width) * 4;
}

/* activations: the batch (inputs, tokens, labels), every unit's output and saved
 * activations (checkpointed units keep only the output) as at the end of forward,
 * which backward only frees; plus the most any one unit's backward adds: its input
 * gradient and the one it receives, and for a checkpointed unit the recomputed
 * output and saved activations (which also bound its forward's transient saved). */
int64_t peak_activation_bytes(const struct zero_engine *e, int64_t rows)
{
    int64_t bytes = rows * e->model->units[0]->in_width * 4 + 2 * rows * 4, extra = 0;
    for (int u = 0; u < e->nunits; u++) {
        const struct zero_unit *unit = e->model->units[u];
        int64_t saved = (int64_t)compute_saved_bytes(e, u, rows);
        bytes += out_bytes(e, u, rows) + (unit->checkpoint ? 0 : saved);
        int64_t dx = u > 0 ? rows * unit->in_width * 4 : 0;
        int64_t dy = u + 1 < e->nunits ? rows * unit->out_width * 4 : 0;
        extra = max64(extra, dx + dy + (unit->checkpoint ? out_bytes(e, u, rows) + saved : 0));
    }
    return bytes + extra;
}

/* Mixed precision: the fp32 gradient workspaces (grad_work, whole units) replayed
 * through backward: a unit's appears at the first backward writing it (its own,
 * or a user's of its parameters: a tied embedding's lives from the head's
 * backward to its own) and goes when its own backward converts it. */
static int64_t peak_grad_work(const struct zero_engine *e)
{
    if (!e->mixed)
        return 0;
    int n = e->nunits;
    char *alive = calloc((size_t)(n > 0 ? n : 1), 1);
    int64_t cur = 0, peak = 0;
    for (int u = n - 1; u >= 0; u--) {
        const struct zero_unit *unit = e->model->units[u];
        for (int x = -1; x < unit->nexternal; x++) {
            int o = x < 0 ? u : unit->external[x].unit;
            if (!alive || !alive[o])
                cur += 4 * e->us[o].layout.padded;
            if (alive)
                alive[o] = 1;
        }
        peak = max64(peak, cur);
        if (alive) {
            cur -= alive[u] ? 4 * e->us[u].layout.padded : 0;
            alive[u] = 0;
        }
    }
    free(alive);
    return peak;
}

/* Elements of the largest parameter unit u's compute reads: its own or an external */
static int64_t largest_param(const struct zero_engine *e, int u)
{
    const struct zero_unit *unit = e->model->units[u];
    int64_t largest = 0;
    for (int p = 0; p < unit->nparams; p++)
        largest = max64(largest, zero_param_numel(&unit->params[p]));
    for (int x = 0; x < unit->nexternal; x++) {
        const struct zero_unit *o = e->model->units[unit->external[x].unit];
        largest = max64(largest, zero_param_numel(&o->params[unit->external[x].param]));
    }
    return largest;
}

/* The largest operand of a product in unit u's compute, at fp32: a part of the
 * unit's input, output, one parameter (or its gradient), scratch or widened saved
 * activations */
static int64_t largest_operand(const struct zero_engine *e, int u, int64_t rows)
{
    const struct zero_unit *unit = e->model->units[u];
    int64_t saved = (int64_t)compute_saved_bytes(e, u, rows);
    int64_t largest = max64(rows * unit->in_width * 4, out_bytes(e, u, rows));
    largest = max64(largest, max64(2 * saved, (int64_t)compute_scratch_bytes(e, u, rows)));
    return max64(largest, 4 * largest_param(e, u));
}

/* A unit's layer-side copies where its layers round GEMM operands or widen stored
 * activations (compute_lowers_operands): the two operands of one product, and each
 * stored activation widened at most once at a time. */
static int64_t operand_copies(const struct zero_engine *e, int u, int64_t rows)
{
    if (!compute_lowers_operands(e, u))
        return 0;
    return 2 * largest_operand(e, u, rows) + 2 * (int64_t)compute_saved_bytes(e, u, rows);
}

/* The backend's own scratch in one call of a unit's layers: its fixed part
 * (product_workspace_bytes: packing) and fp32 copies of the product's operands, all
 * three where any data is 16-bit (native mode widens A and B, a 16-bit C goes
 * through an fp32 plane), else the plane of C alone (an epilogue's). */
static int64_t backend_products(const struct zero_engine *e, int u, int64_t rows)
{
    const int64_t fixed = (int64_t)e->be->product_workspace_bytes(e->bself);
    const int copies = e->mixed || compute_lowers_operands(e, u) ? 3 : 1;
    return copies * largest_operand(e, u, rows) + fixed;
}

/* workspace: the largest unit scratch (one unit computes at a time), layer-side
 * operand copies and the backend's scratch of one call; mixed precision's fp32 copies of a fetch
 * set's parameters (dropped after each unit's compute) and the fp32 gradient workspaces; the
 * gradient norm's blocks (8 bytes per align elements of the shards); in mixed
 * precision the fp32 staging of one zero_engine_write_param (at most a unit); the
 * device's loss sum. Sums of the
 * maxima: at least the maximum of the sums. */
int64_t peak_workspace_bytes(const struct zero_engine *e, int64_t rows)
{
    int64_t scratch = 0, copies = 0, param_work = 0, norm = 0;
    for (int u = 0; u < e->nunits; u++) {
        scratch = max64(scratch, (int64_t)compute_scratch_bytes(e, u, rows));
        copies = max64(copies, operand_copies(e, u, rows) + backend_products(e, u, rows));
        param_work = max64(param_work, e->mixed ? 4 * fetch_set(e, u, 0) : 0);
        norm += 8 * (e->us[u].layout.shard / e->cfg.libzero.align + 1);
    }
    const int64_t write_param = e->mixed ? 4 * largest_unit(e) : 0;
    return scratch + copies + param_work + peak_grad_work(e) + norm + write_param + 16;
}

/* comm (the backend's own buffers; these are the cpu backend's): a reduce-scatter's
 * shared-memory segment of the N - 1 foreign pieces (in 64 KiB steps) on one node, or
 * its MPI staging of the same pieces across nodes, less than the largest unit at 4
 * bytes an element either way; native mode's temporaries, one shard per reduction in
 * flight (at most every unit's). */
int64_t peak_comm_bytes(const struct zero_engine *e)
{
    if (e->world <= 1)
        return 0;
    int64_t shards = 0;
    for (int u = 0; u < e->nunits; u++)
        shards += e->us[u].layout.shard;
    int64_t bytes = 4 * largest_unit(e) + 64 * 1024;
    return bytes + (e->cfg.libzero.coll_mode == ZERO_COLL_NATIVE ? 4 * shards : 0);
}

static int64_t rows_per_sample(const struct zero_engine *e)
{
    return e->model->rows_per_sample > 1 ? e->model->rows_per_sample : 1;
}

int64_t memory_peaks_rows(const struct zero_engine *e)
{
    int64_t rows;
    if (__builtin_mul_overflow(e->cfg.train_micro_batch_size_per_gpu, rows_per_sample(e), &rows))
        return INT64_MAX;
    return rows;
}

/* What a micro-batch too large for 64-bit bounds plans for its activations and its
 * workspace each: far above any machine's memory, and summed over tags and ranks
 * without wrapping, so the plan refuses it with the tags named. */
#define SATURATED ((int64_t)1 << 50)

/* 1 when the batch-dependent bounds would overflow: they grow at most linearly in
 * the samples (each sample's rows cost what one sample's cost), so one sample's
 * bounds times the micro-batch, with room for the sums, must fit. */
static int batch_overflows(const struct zero_engine *e)
{
    const int64_t micro = e->cfg.train_micro_batch_size_per_gpu, one = rows_per_sample(e);
    if (memory_peaks_rows(e) > INT64_MAX / 64)
        return 1;
    int64_t per_sample = max64(peak_activation_bytes(e, one), peak_workspace_bytes(e, one));
    return per_sample > 0 && micro > INT64_MAX / 64 / per_sample;
}

void memory_peaks_add(const struct zero_engine *e, int device_is_host, int64_t plan[ZERO_TAG_COUNT])
{
    const int64_t rows = memory_peaks_rows(e);
    if (device_is_host) {
        const int huge = batch_overflows(e);
        plan[ZERO_TAG_GATHER] += peak_gather_bytes(e);
        plan[ZERO_TAG_BUCKETS] += peak_bucket_bytes(e);
        plan[ZERO_TAG_ACTIVATIONS] += huge ? SATURATED : peak_activation_bytes(e, rows);
        plan[ZERO_TAG_WORKSPACE] += huge ? SATURATED : peak_workspace_bytes(e, rows);
        plan[ZERO_TAG_COMM] += peak_comm_bytes(e);
    }
    /* host memory on every backend: NVMe offload's rings and its one-unit loads */
    plan[ZERO_TAG_WORKSPACE] += nvme_buffer_bytes(e);
    nvme_unit_load_peak(e, plan);
}

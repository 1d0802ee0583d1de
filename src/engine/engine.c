/* The engine's life cycle: creation (layout, model states, agreement between
 * ranks), the optimizer step at the accumulation boundary, and queries. The
 * passes live in engine_forward.c and engine_backward.c, one unit's compute in
 * unit_compute.c; the stage decides only where states live (engine_states.c),
 * how gradients are reduced (grad_reduce.c), when units are gathered
 * (stage3.c) and what the optimizer updates (optimizer.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "engine_forward.h"
#include "engine_states.h"
#include "device_step.h"
#include "env_agree.h"
#include "gathered.h"
#include "grad_reduce.h"
#include "optimizer.h"
#include "stage.h"
#include "stage3.h"
#include "offload.h"
#include "placement.h"
#include "zero/backend_bf16_dot.h"
#include "zero/config_json.h"

/* ---- creation ---- */

static uint64_t mix(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* One value, as 8 little-endian bytes: the hash sees values, never a struct's
 * padding or the bytes after a string's end. */
static uint64_t mix_i64(uint64_t h, int64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)v >> (8 * i));
    return mix(h, b, sizeof b);
}

static uint64_t mix_str(uint64_t h, const char *s)
{
    size_t n = strlen(s);
    return mix(mix_i64(h, (int64_t)n), s, n);
}

/* A fingerprint of what every rank must agree on: the model's structure and
 * the settings that decide the collectives each rank issues, field by field
 * (check_configs_agree compares every config key and names the first that
 * differs; this covers the model, which has no keys). */
static uint64_t fingerprint(const struct zero_engine *e)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    const struct zero_model *m = e->model;
    h = mix_i64(h, m->nunits);
    for (int u = 0; u < m->nunits; u++) {
        const struct zero_unit *unit = m->units[u];
        h = mix_str(h, unit->name);
        h = mix_i64(h, unit->nparams);
        for (int p = 0; p < unit->nparams; p++) {
            const struct zero_param_spec *ps = &unit->params[p];
            h = mix_str(h, ps->name);
            h = mix_i64(h, ps->ndim);
            for (int d = 0; d < ps->ndim && d < ZERO_MAX_DIMS; d++)
                h = mix_i64(h, ps->shape[d]);
        }
        h = mix_i64(h, unit->nexternal);
        for (int x = 0; x < unit->nexternal && x < ZERO_UNIT_MAX_EXTERNAL; x++) {
            h = mix_i64(h, unit->external[x].unit);
            h = mix_i64(h, unit->external[x].param);
        }
    }
    const struct zero_config *c = &e->cfg;
    const struct zero_optimization_config *z = &c->zero_optimization;
    const int64_t settings[] = {
        z->stage,
        z->contiguous_gradients,
        z->reduce_scatter,
        z->reduce_bucket_size,
        z->allgather_partitions,
        z->allgather_bucket_size,
        z->overlap_comm,
        z->stage3_prefetch_bucket_size,
        z->stage3_param_persistence_threshold,
        z->stage3_max_live_parameters,
        z->stage3_max_reuse_distance,
        z->stage3_gather_16bit_weights_on_model_save,
        z->sub_group_size,
        z->offload_optimizer.device,
        z->offload_param.device,
        c->gradient_accumulation_steps,
        c->libzero.align,
        c->libzero.coll_mode,
        c->optimizer.type,
        c->fp16.enabled,
        c->bf16.enabled,
    };
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++)
        h = mix_i64(h, settings[i]);
    return h;
}

/* Every rank's resolved configuration must be the same: a difference is
 * reported with the first differing key and the ranks, not left to hang. */
static int check_configs_agree(struct zero_engine *e, struct zero_error *err)
{
    struct zero_config *all = malloc((size_t)e->world * sizeof *all);
    if (!all)
        return zero_fail(err, ZERO_ENOMEM, "rank %d: configs", e->rank);
    int rc = e->be->host_all_gather(e->bself, &e->cfg, all, sizeof e->cfg);
    if (rc) {
        free(all);
        return engine_backend_error(e, rc, err, "exchanging configurations");
    }
    char key[256];
    for (int r = 1; r < e->world && !rc; r++)
        if (zero_config_diff(&all[0], &all[r], key, sizeof key))
            rc = zero_fail(err, ZERO_EMISMATCH,
                           "rank %d: the configuration differs between ranks 0 and %d, first at "
                           "key %s",
                           e->rank, r, key);
    free(all);
    return rc;
}

static int check_ranks_agree(struct zero_engine *e, struct zero_error *err)
{
    uint64_t mine = fingerprint(e);
    uint64_t *all = malloc((size_t)e->world * sizeof *all);
    if (!all)
        return zero_fail(err, ZERO_ENOMEM, "rank %d: fingerprints", e->rank);
    int rc = e->be->host_all_gather(e->bself, &mine, all, sizeof mine);
    if (rc) {
        free(all);
        return engine_backend_error(e, rc, err, "exchanging model fingerprints");
    }
    for (int r = 1; r < e->world && !rc; r++)
        if (all[r] != all[0])
            rc = zero_fail(err, ZERO_EMISMATCH,
                           "rank %d: ranks 0 and %d disagree on the model structure or the "
                           "zero_optimization settings (fingerprints %016llx and %016llx)",
                           e->rank, r, (unsigned long long)all[0], (unsigned long long)all[r]);
    free(all);
    return rc;
}

/* The configuration's own checks are zero_config_validate's (the same as
 * zero config's); here what needs the model, and no "auto" left unresolved. */
static int check_config(struct zero_engine *e, struct zero_error *err)
{
    const struct zero_config *c = &e->cfg;
    int rc = zero_config_validate(c, err);
    if (!rc)
        rc = zero_config_check_groups(c, e->world, err);
    if (rc)
        return rc;
    char key[128];
    if (zero_config_auto_pending(c, key, sizeof key))
        return zero_fail(err, ZERO_EINVAL,
                         "%s is \"auto\": resolve it first (zero_config_resolve_auto, from the "
                         "program's flags and model, as DeepSpeed's Hugging Face integration "
                         "does)",
                         key);
    const struct zero_model *m = e->model;
    if (m->nunits < 1 || !m->units[m->nunits - 1]->is_loss)
        return zero_fail(err, ZERO_EINVAL, "the model's last unit must compute the loss");
    const int contract =
        c->libzero.matmul == ZERO_MATMUL_BF16_DOT || c->libzero.matmul == ZERO_MATMUL_BF16_TILE;
    const char *name = c->libzero.matmul == ZERO_MATMUL_BF16_DOT ? "bf16_dot" : "bf16_tile";
    if (contract && e->cdt != ZERO_BF16)
        return zero_fail(err, ZERO_EINVAL,
                         "libzero.matmul is \"%s\": that is bf16 training's product "
                         "(bf16.enabled); this run computes in %s",
                         name, zero_dtype_name(e->cdt));
    if (contract && e->be->bf16_dot == NULL)
        return zero_fail(err, ZERO_ENOTSUP,
                         "libzero.matmul is \"%s\": backend '%s' lacks the bf16 contracts "
                         "(zero/backend_bf16_dot.h); use \"compute\" or \"fp32\"",
                         name, e->be->name);
    return ZERO_OK;
}

/* libzero.matmul: low-precision GEMM operands where asked for, or ("auto")
 * where the backend runs them much faster; fp32 training always multiplies fp32. */
static enum zero_dtype matmul_type(const struct zero_config *cfg, const struct zero_backend *be,
                                   enum zero_dtype cdt)
{
    switch (cfg->libzero.matmul) {
    case ZERO_MATMUL_COMPUTE:
    case ZERO_MATMUL_BF16_DOT: /* bf16 only: check_config */
    case ZERO_MATMUL_BF16_TILE:
        return cdt;
    case ZERO_MATMUL_AUTO:
        return be->caps & ZERO_CAP_FAST_LOWP_GEMM ? cdt : ZERO_F32;
    default:
        return ZERO_F32;
    }
}

/* The backend's bf16-bf16 products: the bf16-product contract with "bf16_dot", the
 * bf16-tile contract with "bf16_tile", the fp32 chain otherwise (set by every engine, so
 * one before it leaves no trace). */
static int set_bf16_product(struct zero_engine *e)
{
    if (e->be->bf16_dot == NULL)
        return ZERO_OK;
    const enum zero_matmul m = e->cfg.libzero.matmul;
    return e->be->bf16_dot->set_bf16_product(e->bself,
                                             m == ZERO_MATMUL_BF16_DOT    ? ZERO_BF16_PRODUCT_DOT
                                             : m == ZERO_MATMUL_BF16_TILE ? ZERO_BF16_PRODUCT_TILE
                                                                          : ZERO_BF16_PRODUCT_FP32);
}

int zero_engine_create(struct zero_engine **out, const struct zero_config *cfg,
                       struct zero_model *model, struct zero_device *dev, struct zero_error *err)
{
    *out = NULL;
    struct zero_engine *e = calloc(1, sizeof *e);
    if (!e)
        return zero_fail(err, ZERO_ENOMEM, "engine");
    e->cfg = *cfg;
    e->model = model;
    e->dev = dev;
    e->be = dev->be;
    e->bself = dev->self;
    e->rank = dev->rank;
    e->world = dev->size;
    e->stage_def = zero_stage_get(cfg->zero_optimization.stage); /* NULL: check_config fails */
    e->stage3.backward_from = -1;                                /* no backward recorded yet */
    e->t_created = engine_now();
    e->cdt = cfg->fp16.enabled ? ZERO_F16 : cfg->bf16.enabled ? ZERO_BF16 : ZERO_F32;
    e->csize = zero_dtype_size(e->cdt);
    e->mixed = e->cdt != ZERO_F32;
    e->direct_lowp_grad = grad_direct_available(e);
    e->matmul_type = matmul_type(cfg, dev->be, e->cdt);
    if (e->cdt == ZERO_F16)
        zero_loss_scaler_init(&e->scaler, &cfg->fp16);
    int rc = zero_config_resolve_batch(&e->cfg, e->world, err);
    e->accum = e->cfg.gradient_accumulation_steps; /* the memory plan counts its counters */
    if (!rc && !(rc = check_config(e, err)) && !(rc = offload_configure(e, err)) &&
        (rc = e->be->set_coll_mode(e->bself, e->cfg.libzero.coll_mode)))
        engine_backend_error(e, rc, err, "libzero.coll_mode");
    if (!rc && (rc = set_bf16_product(e)))
        engine_backend_error(e, rc, err, "libzero.matmul");
    /* the checks above are this rank's alone: agree before the first exchange */
    rc = engine_agree(e, rc, ZERO_EINVAL, "refused its configuration", err);
    if (rc || (rc = check_configs_agree(e, err)) || (rc = check_ranks_agree(e, err)) ||
        (rc = engine_env_agree(e, err)) || (rc = hpz_open(e, err)) || (rc = mics_open(e, err)) ||
        (rc = qwz_open(e, err)) || (rc = qgz_open(e, err)) || (rc = engine_states_create(e, err)) ||
        (rc = reduce_plan_buckets(e, err)) || (rc = device_step_open(e, err))) {
        if (rc && !err->msg[0])
            engine_backend_error(e, rc, err, "engine setup");
        zero_engine_destroy(e);
        return rc;
    }
    *out = e;
    return ZERO_OK;
}

void zero_engine_destroy(struct zero_engine *e)
{
    if (!e)
        return;
    engine_free_batch(e);
    device_step_close(e);
    engine_states_destroy(e);
    stage3_destroy(e);
    qgz_close(e); /* before hpZ's: it may borrow hpZ's group */
    hpz_close(e);
    mics_close(e);
    reduce_destroy(e);
    gathered_destroy(e);
    free(e);
}

/* ---- step ---- */

static int global_mean_loss(struct zero_engine *e, double *out, struct zero_error *err)
{
    double *all = malloc((size_t)e->world * sizeof *all);
    if (!all)
        return zero_fail(err, ZERO_ENOMEM, "rank %d: losses", e->rank);
    int rc = e->be->host_all_gather(e->bself, &e->loss_sum, all, sizeof(double));
    double sum = 0.0;
    for (int r = 0; r < e->world && !rc; r++)
        sum += all[r];
    free(all);
    if (rc)
        return engine_backend_error(e, rc, err, "exchanging losses");
    *out = sum / ((double)e->world * (double)e->accum);
    return ZERO_OK;
}

int zero_engine_step(struct zero_engine *e, int *stepped, struct zero_error *err)
{
    if (stepped)
        *stepped = 0;
    if (e->forward_done)
        return zero_fail(err, ZERO_EINVAL, "step called between forward and backward");
    /* the scope's end would write its whole copy over this step's update */
    int rc = engine_outside_scope(e, "zero_engine_step", err);
    if (rc)
        return rc;
    if (e->micro_steps == 0 || e->micro_steps % e->accum != 0)
        return ZERO_OK;
    if (e->micro_steps / e->accum == e->global_steps)
        return ZERO_OK; /* this boundary was already stepped */
    rc = optimizer_step(e, err);
    if (rc && e->dstep.refused) { /* the boundary is consumed: the next step starts afresh */
        e->loss_sum = 0.0;
        e->step_started = 0;
    }
    if (!rc)
        rc = global_mean_loss(e, &e->last.loss, err);
    if (rc)
        return rc;
    zero_comm_stats_diff(&e->last.comm, &e->dev->comm_stats, &e->comm_at_step_start);
    e->last.seconds = engine_now() - e->step_t0;
    e->loss_sum = 0.0;
    e->step_started = 0;
    if (stepped)
        *stepped = 1;
    return ZERO_OK;
}

void engine_resume_counters(struct zero_engine *e, int64_t global_steps, int64_t applied_steps,
                            const struct zero_loss_scaler *saved_scaler)
{
    e->global_steps = global_steps;
    e->applied_steps = applied_steps;
    e->micro_steps = global_steps * e->accum;
    e->loss_sum = 0.0;
    e->step_started = 0;
    if (e->cdt == ZERO_F16 && saved_scaler)
        zero_loss_scaler_resume(&e->scaler, saved_scaler);
    memset(&e->last, 0, sizeof e->last);
    e->last.step = e->global_steps;
    e->last.loss_scale = zero_engine_loss_scale(e);
}

/* ---- queries ---- */

void zero_engine_set_observer(struct zero_engine *e, zero_event_fn fn, void *user)
{
    e->observer = fn;
    e->observer_user = user;
}

const struct zero_config *zero_engine_config(const struct zero_engine *e)
{
    return &e->cfg;
}
int64_t zero_engine_global_steps(const struct zero_engine *e)
{
    return e->global_steps;
}
int64_t zero_engine_applied_steps(const struct zero_engine *e)
{
    return e->applied_steps;
}
double zero_engine_loss_scale(const struct zero_engine *e)
{
    return e->cdt == ZERO_F16 ? e->scaler.scale : 1.0;
}
enum zero_dtype zero_engine_compute_dtype(const struct zero_engine *e)
{
    return e->cdt;
}
int64_t zero_engine_micro_steps(const struct zero_engine *e)
{
    return e->micro_steps;
}
const struct zero_step_info *zero_engine_last_step(const struct zero_engine *e)
{
    return &e->last;
}
const struct zero_ledger *zero_engine_host_ledger(const struct zero_engine *e)
{
    return &e->dev->host_ledger;
}

const struct zero_ledger *zero_engine_ledger(const struct zero_engine *e)
{
    return &e->dev->ledger;
}
const struct zero_comm_stats *zero_engine_comm_stats(const struct zero_engine *e)
{
    return &e->dev->comm_stats;
}
enum zero_unit_state zero_engine_unit_state(const struct zero_engine *e, int unit)
{
    return e->us[unit].stage3.state;
}
int64_t zero_engine_direct_grad_elements(const struct zero_engine *e)
{
    return e->direct_grad_elements;
}

int64_t zero_engine_peak_live_elements(const struct zero_engine *e)
{
    return e->stage3.peak_live_elements;
}
int zero_engine_unit_persistent(const struct zero_engine *e, int unit)
{
    return e->us[unit].stage3.persistent;
}

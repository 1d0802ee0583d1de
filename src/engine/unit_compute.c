/* One unit's compute, shared by the forward and backward passes: fetching
 * (stage 3) the unit and the owners of its external parameters, handing the
 * layer fp32 views of its parameters, and the context it runs in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "unit_compute.h"
#include "stage3.h"
#include "placement.h"

/* Fetches (stage 3) a unit and the owners of its external parameters. */
int compute_fetch(struct zero_engine *e, int u, struct zero_error *err)
{
    const struct zero_unit *unit = e->model->units[u];
    stage3_open_fetch_group(e); /* released together too: the reuse rule looks ahead from here */
    int rc = stage3_fetch(e, u, err);
    for (int x = 0; x < unit->nexternal && !rc; x++)
        rc = stage3_fetch(e, unit->external[x].unit, err);
    return rc;
}

int compute_release(struct zero_engine *e, int u, struct zero_error *err)
{
    const struct zero_unit *unit = e->model->units[u];
    int rc = stage3_release(e, u, err);
    for (int x = 0; x < unit->nexternal && !rc; x++)
        rc = stage3_release(e, unit->external[x].unit, err);
    return rc;
}

/* Whether the layers' products read parameters in the compute dtype
 * (zero_unit_ctx.param_lowp): low-precision GEMMs, or fp32 GEMMs on a backend that
 * widens a compute-dtype operand to the same bits as an fp32 copy would give. */
static int engine_lowp_params(const struct zero_engine *e)
{
    return e->matmul_type != ZERO_F32 || (e->mixed && (e->be->caps & ZERO_CAP_WIDENING_GEMM));
}

/* The whole parameters of unit o as fp32 for the layers: the buffer itself in
 * fp32 training; a converted workspace copy in mixed precision (the cpu
 * kernels compute in fp32). */
static int param_fp32(struct zero_engine *e, int o, float **out, struct zero_error *err)
{
    struct unit_states *s = &e->us[o];
    void *whole = engine_param_whole(e, o);
    if (!e->mixed || !whole) {
        *out = whole;
        return ZERO_OK;
    }
    if (!s->param_work) {
        int rc = engine_alloc(e, (size_t)s->layout.padded * sizeof(float), ZERO_TAG_WORKSPACE,
                              (void **)&s->param_work, "fp32 copy of parameters", err);
        /* Parameters the layers read only as GEMM operands, which then take them in
         * the compute dtype (param_lowp), and that no other unit reads get no fp32
         * copy: nearly all of a block's elements, whose conversion (twice a step) was
         * most of the mixed-precision overhead. */
        const struct zero_unit *unit = e->model->units[o];
        int skip[ZERO_UNIT_MAX_PARAMS] = {0}, skipped = 0;
        for (int p = 0; p < unit->nparams && engine_lowp_params(e); p++) {
            skip[p] = unit->params[p].gemm_only;
            for (int v = 0; v < e->nunits && skip[p]; v++)
                for (int x = 0; x < e->model->units[v]->nexternal; x++)
                    if (e->model->units[v]->external[x].unit == o &&
                        e->model->units[v]->external[x].param == p)
                        skip[p] = 0;
            skipped += skip[p];
        }
        if (rc)
            return rc;
        if (!skipped)
            rc = e->be->cast(e->bself, s->param_work, ZERO_F32, whole, e->cdt,
                             (size_t)s->layout.padded);
        for (int p = 0; p < unit->nparams && !rc && skipped; p++)
            if (!skip[p])
                rc = e->be->cast(e->bself, s->param_work + s->layout.offset[p], ZERO_F32,
                                 engine_at(e, whole, s->layout.offset[p]), e->cdt,
                                 (size_t)zero_param_numel(&unit->params[p]));
        if (rc)
            return engine_backend_error(e, rc, err, "converting parameters of %s", unit->name);
    }
    *out = s->param_work;
    return ZERO_OK;
}

/* Slot i of ctx: parameter p of unit o, as fp32 and (low-precision GEMMs) in the
 * compute dtype, straight from the whole compute-dtype buffer. */
static int fill_slot(struct zero_engine *e, struct zero_unit_ctx *ctx, int i, int o, int p,
                     struct zero_error *err)
{
    float *whole = NULL;
    int rc = param_fp32(e, o, &whole, err);
    if (rc)
        return rc;
    int64_t offset = e->us[o].layout.offset[p];
    ctx->param[i] = whole + offset;
    if (engine_lowp_params(e))
        ctx->param_lowp[i] = engine_at(e, engine_param_whole(e, o), offset);
    return ZERO_OK;
}

/* The dtype of unit u's saved activations: the compute dtype where
 * libzero.activations asks for it in mixed precision and the unit can store it. */
static enum zero_dtype act_type(const struct zero_engine *e, const struct zero_unit *unit)
{
    int lowp = e->mixed && e->cfg.libzero.activations == ZERO_ACTIVATIONS_COMPUTE &&
               unit->ops->stored_activations;
    return lowp ? e->cdt : ZERO_F32;
}

/* What a unit's sizing entries see: the backend and the dtypes, nothing of a pass */
static void sizing_ctx(const struct zero_engine *e, const struct zero_unit *unit, int64_t rows,
                       struct zero_unit_ctx *ctx)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->be = e->be;
    ctx->bself = e->bself;
    ctx->rows = rows;
    ctx->matmul_type = e->matmul_type;
    ctx->act_type = act_type(e, unit);
}

size_t compute_saved_bytes(const struct zero_engine *e, int u, int64_t rows)
{
    const struct zero_unit *unit = e->model->units[u];
    struct zero_unit_ctx ctx;
    sizing_ctx(e, unit, rows, &ctx);
    return unit->ops->saved_bytes(unit, &ctx);
}

size_t compute_scratch_bytes(const struct zero_engine *e, int u, int64_t rows)
{
    const struct zero_unit *unit = e->model->units[u];
    struct zero_unit_ctx ctx;
    sizing_ctx(e, unit, rows, &ctx);
    return unit->ops->scratch_bytes(unit, &ctx);
}

int compute_lowers_operands(const struct zero_engine *e, int u)
{
    return e->matmul_type != ZERO_F32 || act_type(e, e->model->units[u]) != ZERO_F32;
}

int compute_fill_params(struct zero_engine *e, int u, struct zero_unit_ctx *ctx,
                        struct zero_error *err)
{
    const struct zero_unit *unit = e->model->units[u];
    ctx->act_type = act_type(e, unit);
    int rc = ZERO_OK;
    for (int p = 0; p < unit->nparams && !rc; p++)
        rc = fill_slot(e, ctx, p, u, p, err);
    for (int x = 0; x < unit->nexternal && !rc; x++)
        rc = fill_slot(e, ctx, unit->nparams + x, unit->external[x].unit, unit->external[x].param,
                       err);
    return rc;
}

/* Frees the fp32 copies made for unit u's compute. */
void compute_drop_param_copies(struct zero_engine *e, int u)
{
    const struct zero_unit *unit = e->model->units[u];
    engine_free(e, e->us[u].param_work);
    e->us[u].param_work = NULL;
    for (int x = 0; x < unit->nexternal; x++) {
        struct unit_states *o = &e->us[unit->external[x].unit];
        engine_free(e, o->param_work);
        o->param_work = NULL;
    }
}

void compute_init_ctx(struct zero_engine *e, struct zero_unit_ctx *ctx, char *msg, size_t len)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->be = e->be;
    ctx->bself = e->bself;
    ctx->rows = e->rows;
    ctx->matmul_type = e->matmul_type;
    ctx->param_lowp_type = engine_lowp_params(e) ? e->cdt : ZERO_F32;
    ctx->tokens = e->tokens;
    ctx->labels = e->labels;
    /* fp16: the loss is scaled before backward (DeepSpeed's loss scaling) */
    double scale = e->cdt == ZERO_F16 ? e->scaler.scale : 1.0;
    ctx->dloss = (float)(scale / (double)e->rows);
    ctx->errmsg = msg;
    ctx->errlen = len;
    msg[0] = '\0';
}

int compute_failed(struct zero_engine *e, int u, int rc, const char *pass, const char *msg,
                   struct zero_error *err)
{
    return zero_fail(err, rc, "rank %d: unit %s: %s: %s", e->rank, e->model->units[u]->name, pass,
                     msg[0] ? msg : e->be->last_error(e->bself));
}

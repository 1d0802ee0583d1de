/* Offline access to a checkpoint, for `zero ckpt inspect` and `zero ckpt
 * export`: one process, no engine. A tensor is read whole by gathering its
 * flat range from the old ranks' shards, chunk by chunk, every chunk verified;
 * export streams one tensor at a time into the .safetensors writer. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint_internal.h"
#include "zero/safetensors.h"

struct zero_checkpoint {
    struct ckpt_meta m;
    char step_dir[4096];
    struct ckpt_reader *r;
    int ntensors;
    int *unit_of, *param_of; /* tensor i is params[param_of[i]] of units[unit_of[i]] */
    int64_t numel;
};

int zero_checkpoint_open(struct zero_checkpoint **out, const char *path, struct zero_error *err)
{
    *out = NULL;
    struct zero_checkpoint *c = calloc(1, sizeof *c);
    if (!c)
        return zero_fail(err, ZERO_ENOMEM, "checkpoint");
    int rc = ckpt_resolve(path, c->step_dir, sizeof c->step_dir, err);
    if (!rc && (rc = ckpt_meta_load(&c->m, c->step_dir, err))) {
        free(c);
        return rc;
    }
    if (!rc)
        rc = ckpt_reader_open(&c->r, &c->m, c->step_dir, -1, err);
    for (int u = 0; !rc && u < c->m.nunits; u++)
        c->ntensors += c->m.units[u].nparams;
    if (!rc) {
        c->unit_of = malloc((size_t)(c->ntensors + 1) * sizeof *c->unit_of);
        c->param_of = malloc((size_t)(c->ntensors + 1) * sizeof *c->param_of);
        if (!c->unit_of || !c->param_of)
            rc = zero_fail(err, ZERO_ENOMEM, "checkpoint tensor index");
    }
    for (int u = 0, i = 0; !rc && u < c->m.nunits; u++)
        for (int p = 0; p < c->m.units[u].nparams; p++, i++) {
            c->unit_of[i] = u;
            c->param_of[i] = p;
            c->numel += c->m.units[u].params[p].numel;
        }
    if (rc) {
        zero_checkpoint_close(c);
        return rc;
    }
    *out = c;
    return ZERO_OK;
}

void zero_checkpoint_close(struct zero_checkpoint *c)
{
    if (!c)
        return;
    ckpt_reader_close(c->r);
    ckpt_meta_free(&c->m);
    free(c->unit_of);
    free(c->param_of);
    free(c);
}

static const char *optimizer_name(enum zero_optim_type t)
{
    return t == ZERO_OPTIM_ADAM ? "adam" : t == ZERO_OPTIM_ADAMW ? "adamw" : "sgd";
}

void zero_checkpoint_get_info(const struct zero_checkpoint *c, struct zero_checkpoint_info *info)
{
    const struct ckpt_meta *m = &c->m;
    memset(info, 0, sizeof *info);
    info->step_dir = c->step_dir;
    info->libzero_version = m->libzero_version;
    info->format_version = m->format_version;
    info->world_size = m->world;
    info->stage = m->stage;
    info->precision = m->precision;
    info->optimizer = optimizer_name(m->cfg.optimizer.type);
    info->global_steps = m->global_steps;
    info->applied_steps = m->applied_steps;
    info->micro_steps = m->micro_steps;
    info->loss_scale = m->has_scaler ? m->scaler.scale : 1.0;
    info->nunits = m->nunits;
    info->ntensors = c->ntensors;
    info->numel = c->numel;
    info->nstates = m->nkinds;
    info->user_json = m->user_json;
}

const char *zero_checkpoint_state_name(const struct zero_checkpoint *c, int i)
{
    return i >= 0 && i < c->m.nkinds ? ckpt_kind_name(c->m.kinds[i]) : NULL;
}

static void print_shape(FILE *out, const struct ckpt_param *q)
{
    fprintf(out, "[");
    for (int d = 0; d < q->ndim; d++)
        fprintf(out, "%s%lld", d ? ", " : "", (long long)q->shape[d]);
    fprintf(out, "]");
}

void zero_checkpoint_print(const struct zero_checkpoint *c, FILE *out)
{
    const struct ckpt_meta *m = &c->m;
    const struct zero_config *cfg = &m->cfg;
    const struct zero_optimizer_config *o = &cfg->optimizer;
    fprintf(out, "checkpoint %s: format %d, written by libzero %s, id %016" PRIx64 "\n",
            c->step_dir, m->format_version, m->libzero_version, m->id);
    fprintf(out,
            "step %lld (%lld updates applied, %lld micro-steps) | world size %d | stage %d "
            "| precision %s\n",
            (long long)m->global_steps, (long long)m->applied_steps, (long long)m->micro_steps,
            m->world, m->stage, zero_dtype_name(m->precision));
    fprintf(out, "optimizer %s lr %g betas (%g, %g) eps %g weight decay %g",
            optimizer_name(o->type), o->lr, o->betas[0], o->betas[1], o->eps, o->weight_decay);
    if (o->type == ZERO_OPTIM_SGD)
        fprintf(out, " momentum %g", o->momentum);
    fprintf(out, " | next lr %.6g | clipping %g\n", m->next_lr, cfg->gradient_clipping);
    fprintf(out,
            "batch %lld = micro-batch %lld x accumulation %lld x world %d | align %lld | "
            "mode %s | atom order %s | init seed %" PRIu64 "\n",
            (long long)cfg->train_batch_size, (long long)cfg->train_micro_batch_size_per_gpu,
            (long long)cfg->gradient_accumulation_steps, m->world, (long long)cfg->libzero.align,
            cfg->libzero.coll_mode == ZERO_COLL_EXACT ? "exact" : "native",
            ckpt_atom_order_name(cfg->libzero.atom_order), cfg->libzero.seed);
    if (m->has_scaler)
        fprintf(out,
                "loss scaler: scale %g (%s), hysteresis %d of %d, iteration %lld, last "
                "overflow %lld\n",
                m->scaler.scale, m->scaler.dynamic ? "dynamic" : "static", m->scaler.cur_hysteresis,
                m->scaler.delayed_shift, (long long)m->scaler.cur_iter,
                (long long)m->scaler.last_overflow_iter);
    fprintf(out, "states (fp32, per unit): ");
    for (int k = 0; k < m->nkinds; k++)
        fprintf(out, "%s%s", k ? ", " : "", ckpt_kind_name(m->kinds[k]));
    if (m->precision == ZERO_F32)
        fprintf(out, "; the fp32 parameters are the master");
    else
        fprintf(out, "; %s parameters not stored (cast from the master on load)",
                zero_dtype_name(m->precision));
    fprintf(out, " | chunks of %lld elements\n", (long long)m->chunk);
    fprintf(out, "user metadata: %s\n", m->user_json ? m->user_json : "(none)");
    fprintf(out, "%d units, %d tensors, %lld parameters:\n", m->nunits, c->ntensors,
            (long long)c->numel);
    for (int u = 0; u < m->nunits; u++) {
        const struct ckpt_unit *unit = &m->units[u];
        fprintf(out, "  unit %s: %lld elements used, %lld padded, shard %lld\n", unit->name,
                (long long)unit->used, (long long)unit->padded, (long long)unit->shard);
        for (int p = 0; p < unit->nparams; p++) {
            fprintf(out, "    %s.%s ", unit->name, unit->params[p].name);
            print_shape(out, &unit->params[p]);
            fprintf(out, " at %lld\n", (long long)unit->params[p].offset);
        }
    }
}

int zero_checkpoint_verify_rank(struct zero_checkpoint *c, int rank, struct zero_error *err)
{
    if (rank < 0 || rank >= c->m.world)
        return zero_fail(err, ZERO_EINVAL, "%s: no rank %d (world size %d)", c->step_dir, rank,
                         c->m.world);
    return ckpt_verify_rank_file(c->r, rank, err);
}

int zero_checkpoint_tensor(const struct zero_checkpoint *c, int i, struct zero_checkpoint_tensor *t)
{
    if (i < 0 || i >= c->ntensors)
        return ZERO_EINVAL;
    const struct ckpt_unit *unit = &c->m.units[c->unit_of[i]];
    const struct ckpt_param *q = &unit->params[c->param_of[i]];
    snprintf(t->name, sizeof t->name, "%s.%s", unit->name, q->name);
    t->ndim = q->ndim;
    memcpy(t->shape, q->shape, sizeof t->shape);
    t->numel = q->numel;
    return ZERO_OK;
}

static int copy_sink(void *user, int64_t at, const float *values, int64_t n, struct zero_error *err)
{
    (void)err;
    memcpy((float *)user + at, values, (size_t)n * sizeof *values);
    return ZERO_OK;
}

int zero_checkpoint_read_tensor(struct zero_checkpoint *c, int i, const char *state, float *host,
                                struct zero_error *err)
{
    if (i < 0 || i >= c->ntensors)
        return zero_fail(err, ZERO_EINVAL, "%s: no tensor %d (%d tensors)", c->step_dir, i,
                         c->ntensors);
    int kind = state ? ckpt_kind_parse(state) : CKPT_MASTER;
    if (kind < 0)
        return zero_fail(err, ZERO_EINVAL,
                         "unknown state '%s' (master, optim.exp_avg, "
                         "optim.exp_avg_sq, optim.momentum)",
                         state);
    const struct ckpt_param *q = &c->m.units[c->unit_of[i]].params[c->param_of[i]];
    return ckpt_read_range(c->r, c->unit_of[i], kind, q->offset, q->offset + q->numel, copy_sink,
                           host, err);
}

int zero_checkpoint_export(struct zero_checkpoint *c, const char *out_path, enum zero_dtype dtype,
                           struct zero_error *err)
{
    if (dtype != ZERO_F32 && dtype != ZERO_BF16 && dtype != ZERO_F16)
        return zero_fail(err, ZERO_EINVAL, "export dtype %s: expected fp32, bf16 or fp16",
                         zero_dtype_name(dtype));
    struct zero_checkpoint_tensor *t = calloc((size_t)c->ntensors + 1, sizeof *t);
    struct zero_st_tensor_desc *d = calloc((size_t)c->ntensors + 1, sizeof *d);
    int64_t largest = 0;
    int rc = t && d ? ZERO_OK : zero_fail(err, ZERO_ENOMEM, "export: tensor list");
    for (int i = 0; i < c->ntensors && !rc; i++) {
        zero_checkpoint_tensor(c, i, &t[i]);
        d[i] = (struct zero_st_tensor_desc){
            .name = t[i].name, .dtype = dtype, .ndim = t[i].ndim, .shape = t[i].shape};
        largest = t[i].numel > largest ? t[i].numel : largest;
    }
    float *host = rc ? NULL : malloc((size_t)largest * sizeof *host + 1); /* (largest numel) */
    if (!rc && !host)
        rc = zero_fail(err, ZERO_ENOMEM, "export: %lld-element tensor buffer", (long long)largest);
    char step[32];
    snprintf(step, sizeof step, "%lld", (long long)c->m.global_steps);
    struct zero_st_kv kv[] = {
        {"format", "pt"}, {"libzero_checkpoint", c->step_dir}, {"libzero_step", step}};
    struct zero_st_writer *w = NULL;
    if (!rc)
        rc = zero_st_writer_begin(&w, out_path, d, c->ntensors, kv, 3, err);
    for (int i = 0; i < c->ntensors && !rc; i++)
        if (!(rc = zero_checkpoint_read_tensor(c, i, NULL, host, err)))
            rc = zero_st_writer_put(w, i, host, ZERO_F32, (size_t)t[i].numel, err);
    if (!rc)
        rc = zero_st_writer_finish(w, err);
    else
        zero_st_writer_abort(w);
    free(host);
    free(t);
    free(d);
    return rc;
}

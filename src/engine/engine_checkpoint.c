/* Saving and loading the engine's state (include/zero/checkpoint.h).
 *
 * Save: every rank streams its shard of each unit's fp32 master and optimizer
 * states to its own file, one chunk at a time through one host buffer (stage 0
 * ranks, which hold everything, save shard r of their whole buffers, so every
 * stage writes the same format); rank 0 adds meta.json and publishes the
 * directory (checkpoint_fs.c). Every phase ends with all ranks agreeing on the
 * outcome, so a failure anywhere fails the save everywhere with one message.
 *
 * Load: every rank reads meta.json, checks the model, then verifies every chunk
 * it needs (the whole unit for stage 0, its shard otherwise, under its own
 * layout) before any rank touches its engine; only when all ranks succeeded do
 * they read the values again into their states. The compute-dtype parameters
 * are cast from the master and made whole as the stage keeps them. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/checkpoint_internal.h"
#include "nvme_swap.h"
#include "base/crc32c.h"
#include "engine_internal.h"
#include "stage3.h"
#include "placement.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

/* ---- every rank agrees on the outcome of a phase ---- */

struct verdict {
    int code;
    char msg[ZERO_ERRMSG_LEN];
};

/* Returns 0 if rc is 0 on every rank; else the failing rank's code, with its
 * message copied here when this rank itself succeeded (lowest failing rank). */
static int agree(struct zero_engine *e, int rc, struct zero_error *err)
{
    struct verdict *all = malloc((size_t)e->world * sizeof *all);
    struct verdict *mine = calloc(1, sizeof *mine);
    if (!all || !mine) {
        free(all);
        free(mine);
        return zero_fail(err, ZERO_ENOMEM, "rank %d: checkpoint status exchange", e->rank);
    }
    mine->code = rc;
    if (rc)
        snprintf(mine->msg, sizeof mine->msg, "%s", err->msg);
    int c = e->be->host_all_gather(e->bself, mine, all, sizeof *mine);
    if (c)
        rc = engine_backend_error(e, c, err, "checkpoint: exchanging status");
    for (int r = 0; r < e->world && !rc; r++)
        if (all[r].code) {
            err->code = rc = all[r].code;
            snprintf(err->msg, sizeof err->msg, "%s", all[r].msg);
        }
    free(all);
    free(mine);
    return rc;
}

/* ---- the engine's states, as the format names them ---- */

static int engine_kinds(const struct zero_engine *e, int *kinds)
{
    int n = 0;
    kinds[n++] = CKPT_MASTER;
    if (e->cfg.optimizer.type != ZERO_OPTIM_SGD) {
        kinds[n++] = CKPT_EXP_AVG;
        kinds[n++] = CKPT_EXP_AVG_SQ;
    } else if (e->cfg.optimizer.momentum != 0.0) {
        kinds[n++] = CKPT_MOMENTUM;
    }
    return n;
}

/* This rank's buffer of a state: whole (padded,) in stage 0, else its shard. */
static float *state_buffer(struct zero_engine *e, int u, int kind)
{
    struct unit_states *s = &e->us[u];
    switch (kind) {
    case CKPT_MASTER:
        return engine_master(e, u);
    case CKPT_EXP_AVG:
    case CKPT_MOMENTUM:
        return s->exp_avg;
    default:
        return s->exp_avg_sq;
    }
}

static void meta_from_engine(struct zero_engine *e, struct ckpt_meta *m)
{
    memset(m, 0, sizeof *m);
    m->format_version = CKPT_FORMAT_VERSION;
    snprintf(m->libzero_version, sizeof m->libzero_version, "%s", PACKAGE_VERSION);
    m->world = e->world;
    m->stage = e->stage_def->number;
    m->precision = e->cdt;
    m->nkinds = engine_kinds(e, m->kinds);
    m->chunk = ckpt_chunk_elements();
    m->global_steps = e->global_steps;
    m->applied_steps = e->applied_steps;
    m->micro_steps = e->micro_steps;
    m->next_lr = zero_lr_at(&e->cfg, e->applied_steps);
    m->has_scaler = e->cdt == ZERO_F16;
    m->scaler = e->scaler;
    m->cfg = e->cfg;
    m->nunits = e->nunits;
}

static int units_from_engine(struct zero_engine *e, struct ckpt_meta *m, struct zero_error *err)
{
    m->units = calloc((size_t)(e->nunits ? e->nunits : 1), sizeof *m->units);
    if (!m->units)
        return zero_fail(err, ZERO_ENOMEM, "rank %d: checkpoint metadata", e->rank);
    for (int u = 0; u < e->nunits; u++) {
        const struct zero_unit *unit = e->model->units[u];
        const struct zero_unit_layout *l = &e->us[u].layout;
        struct ckpt_unit *c = &m->units[u];
        snprintf(c->name, sizeof c->name, "%s", unit->name);
        c->nparams = unit->nparams;
        c->used = l->used;
        c->padded = l->padded;
        c->shard = l->padded / e->world; /* the flat layout's, whatever MiCS holds */
        for (int p = 0; p < unit->nparams; p++) {
            struct ckpt_param *q = &c->params[p];
            snprintf(q->name, sizeof q->name, "%s", unit->params[p].name);
            q->ndim = unit->params[p].ndim;
            memcpy(q->shape, unit->params[p].shape, sizeof q->shape);
            q->offset = l->offset[p];
            q->numel = l->numel[p];
        }
    }
    return ZERO_OK;
}

static int check_call_point(struct zero_engine *e, const char *what, struct zero_error *err)
{
    if (e->forward_done)
        return zero_fail(err, ZERO_EINVAL, "checkpoint %s between forward and backward", what);
    if (e->scope.active)
        return zero_fail(err, ZERO_EINVAL, "checkpoint %s inside a gathered-parameters scope",
                         what);
    if (e->micro_steps % e->accum != 0 || e->micro_steps / e->accum != e->global_steps)
        return zero_fail(err, ZERO_EINVAL,
                         "checkpoint %s in the middle of gradient "
                         "accumulation (micro-step %lld, accumulation %lld): call it after the "
                         "step at the boundary",
                         what, (long long)e->micro_steps, (long long)e->accum);
    return ZERO_OK;
}

/* ---- save ---- */

/* What rank 0 decided, shared with every rank. */
struct save_plan {
    uint64_t id;
    uint64_t dir_hash; /* every rank's own: they must agree */
    char tmp_name[96];
};

static uint64_t hash_text(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

static int make_dirs(const char *dir, const char *tmp_name, struct zero_error *err)
{
    char tmp[4200];
    struct stat st;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return zero_fail(err, ZERO_EIO, "rank 0: %s: cannot create: %s", dir, strerror(errno));
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return zero_fail(err, ZERO_EIO, "rank 0: %s: not a directory", dir);
    snprintf(tmp, sizeof tmp, "%s/%s", dir, tmp_name);
    if (mkdir(tmp, 0755) != 0)
        return zero_fail(err, ZERO_EIO, "rank 0: %s: cannot create: %s", tmp, strerror(errno));
    return ZERO_OK;
}

static int plan_save(struct zero_engine *e, const char *dir, const char *name,
                     struct save_plan *plan, struct zero_error *err)
{
    struct save_plan mine = {0};
    mine.dir_hash = hash_text(0xcbf29ce484222325ULL, dir) ^ (uint64_t)e->global_steps;
    int rc = ZERO_OK;
    if (e->rank == 0) {
        mine.id = ckpt_random64();
        snprintf(mine.tmp_name, sizeof mine.tmp_name, ".tmp-%s-%016" PRIx64, name, ckpt_random64());
        rc = make_dirs(dir, mine.tmp_name, err);
    }
    if ((rc = agree(e, rc, err)))
        return rc;
    struct save_plan *all = malloc((size_t)e->world * sizeof *all);
    if (!all)
        return zero_fail(err, ZERO_ENOMEM, "rank %d: checkpoint plan", e->rank);
    rc = e->be->host_all_gather(e->bself, &mine, all, sizeof mine);
    if (rc)
        rc = engine_backend_error(e, rc, err, "checkpoint: sharing the plan");
    for (int r = 1; r < e->world && !rc; r++)
        if (all[r].dir_hash != all[0].dir_hash)
            rc = zero_fail(err, ZERO_EMISMATCH,
                           "rank %d: checkpoint save: ranks 0 and %d "
                           "passed different directories",
                           e->rank, r);
    if (!rc)
        *plan = all[0];
    free(all);
    return rc;
}

/* Streams this rank's world piece (the flat layout's shard, mics.h) of every (unit,
 * state) section through one chunk buffer. */
static int write_sections(struct zero_engine *e, const struct ckpt_meta *m, int fd,
                          const char *path, unsigned char *buf, struct zero_error *err)
{
    unsigned char h[CKPT_HEADER_BYTES];
    int rc = ZERO_OK;
    int piece = mics_world_piece(&e->mics, e->rank);
    for (int u = 0; u < e->nunits && !rc; u++) {
        int64_t shard = m->units[u].shard, chunk = m->chunk, begin = piece * shard;
        if ((rc = nvme_unit_load(e, u, 1, err))) /* states on NVMe: this unit's, for a while */
            return rc;
        for (int k = 0; k < m->nkinds && !rc; k++) {
            ckpt_section_header(h, u, m->kinds[k], begin, shard, chunk);
            rc = ckpt_write_all(fd, h, sizeof h, e->rank, path, err);
            const float *src = state_buffer(e, u, m->kinds[k]);
            if (src) /* the piece inside this rank's part (whole in stage 0, a shard else) */
                src += begin - engine_update_begin(e, u);
            for (int64_t at = 0; at < shard && !rc; at += chunk) {
                int64_t n = shard - at < chunk ? shard - at : chunk;
                if ((rc = e->be->to_host(e->bself, buf, src + at, (size_t)n * 4)))
                    return engine_backend_error(e, rc, err, "copying %s of unit %s to the host",
                                                ckpt_kind_name(m->kinds[k]),
                                                e->model->units[u]->name);
                ckpt_put_u32(buf + n * 4, zero_crc32c(0, buf, (size_t)n * 4));
                rc = ckpt_write_all(fd, buf, (size_t)n * 4 + 4, e->rank, path, err);
            }
        }
        int rs = nvme_unit_store(e, u, 0, err);
        rc = rc ? rc : rs;
    }
    return rc;
}

static int write_rank_file(struct zero_engine *e, const struct ckpt_meta *m, const char *tmpdir,
                           struct zero_error *err)
{
    char path[4300];
    int piece = mics_world_piece(&e->mics, e->rank); /* the file of the flat shard it holds */
    snprintf(path, sizeof path, "%s/rank-%05d.bin", tmpdir, piece);
    int injected = ckpt_fault("open", e->rank);
    if (injected)
        return zero_fail(err, ZERO_EIO, "rank %d: %s: create failed: %s", e->rank, path,
                         strerror(injected));
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return zero_fail(err, ZERO_EIO, "rank %d: %s: create failed: %s", e->rank, path,
                         strerror(errno));
    unsigned char *buf = malloc((size_t)m->chunk * 4 + 4);
    unsigned char h[CKPT_HEADER_BYTES];
    ckpt_file_header(h, m, piece);
    int rc = buf ? ckpt_write_all(fd, h, sizeof h, e->rank, path, err)
                 : zero_fail(err, ZERO_ENOMEM, "rank %d: checkpoint chunk buffer", e->rank);
    if (!rc)
        rc = write_sections(e, m, fd, path, buf, err);
    if (!rc)
        rc = ckpt_fsync_fd(fd, e->rank, path, err);
    if (close(fd) != 0 && !rc)
        rc = zero_fail(err, ZERO_EIO, "rank %d: %s: close failed: %s", e->rank, path,
                       strerror(errno));
    free(buf);
    if (!rc && (injected = ckpt_fault("rank-file", e->rank)))
        rc = zero_fail(err, ZERO_EIO, "rank %d: %s: %s", e->rank, path, strerror(injected));
    return rc;
}

static int write_meta(const struct ckpt_meta *m, const char *tmpdir, struct zero_error *err)
{
    char *text = NULL, path[4300];
    snprintf(path, sizeof path, "%s/%s", tmpdir, CKPT_META);
    int rc = ckpt_meta_write(m, &text, err);
    if (!rc)
        rc = ckpt_write_file(path, text, strlen(text), 0, err);
    free(text);
    int injected = rc ? 0 : ckpt_fault("meta", 0);
    return injected ? zero_fail(err, ZERO_EIO, "rank 0: %s: %s", path, strerror(injected)) : rc;
}

/* Rank 0, once every file is written: make the directory the new checkpoint. */
static int publish(const char *dir, const char *tmp_name, const char *name, int keep_last,
                   struct zero_error *err)
{
    char tmpdir[4200];
    snprintf(tmpdir, sizeof tmpdir, "%s/%s", dir, tmp_name);
    int rc = ckpt_fsync_dir(tmpdir, 0, err);
    if (!rc)
        rc = ckpt_publish(dir, tmp_name, name, 0, err);
    if (rc)
        return rc;
    if ((rc = ckpt_set_latest(dir, name, 0, err)))
        return zero_error_wrap(err,
                               "%s/%s is complete, but %s/%s still names the previous "
                               "checkpoint: ",
                               dir, name, dir, CKPT_LATEST);
    return ckpt_prune(dir, name, keep_last, 0, err);
}

int zero_checkpoint_save(struct zero_engine *e, const char *dir, int keep_last,
                         const char *user_meta_json, struct zero_error *err)
{
    if (!dir || !dir[0] || strlen(dir) > 3000)
        return zero_fail(err, ZERO_EINVAL,
                         "checkpoint save: no directory given, or a path "
                         "longer than 3000 bytes");
    int rc = check_call_point(e, "save", err);
    if (!rc)
        rc = ckpt_check_user_json(user_meta_json, err);
    if (rc)
        return rc;
    char name[48], tmpdir[4200];
    snprintf(name, sizeof name, "step_%06lld", (long long)e->global_steps);
    struct ckpt_meta m;
    meta_from_engine(e, &m);
    m.user_json = (char *)user_meta_json; /* borrowed: not freed below */
    struct save_plan plan = {0};
    if ((rc = units_from_engine(e, &m, err)) || (rc = plan_save(e, dir, name, &plan, err))) {
        free(m.units);
        return rc;
    }
    m.id = plan.id;
    snprintf(tmpdir, sizeof tmpdir, "%s/%s", dir, plan.tmp_name);
    rc = write_rank_file(e, &m, tmpdir, err);
    if (!rc && e->rank == 0)
        rc = write_meta(&m, tmpdir, err);
    rc = agree(e, rc, err);
    if (!rc && e->rank == 0)
        rc = publish(dir, plan.tmp_name, name, keep_last, err);
    if (rc && e->rank == 0)
        ckpt_remove_dir(tmpdir); /* no-op once published */
    free(m.units);
    return agree(e, rc, err);
}

/* ---- load ---- */

static void shape_text(int ndim, const int64_t *shape, char *out, size_t len)
{
    size_t at = (size_t)snprintf(out, len, "[");
    for (int d = 0; d < ndim && at < len; d++)
        at += (size_t)snprintf(out + at, len - at, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (at < len)
        snprintf(out + at, len - at, "]");
}

static void kinds_text(const int *kinds, int n, char *out, size_t len)
{
    size_t at = 0;
    out[0] = '\0';
    for (int k = 0; k < n && at < len; k++)
        at += (size_t)snprintf(out + at, len - at, "%s%s", k ? ", " : "", ckpt_kind_name(kinds[k]));
}

/* Same units, parameters, shapes and optimizer states. */
static int check_model(struct zero_engine *e, const struct ckpt_meta *m, const char *step_dir,
                       struct zero_error *err)
{
    const struct zero_model *model = e->model;
    if (m->nunits != model->nunits)
        return zero_fail(err, ZERO_EMISMATCH,
                         "%s: a checkpoint of another model: %d units, the "
                         "model has %d",
                         step_dir, m->nunits, model->nunits);
    char a[128], b[128];
    for (int u = 0; u < m->nunits; u++) {
        const struct ckpt_unit *cu = &m->units[u];
        const struct zero_unit *mu = model->units[u];
        if (strcmp(cu->name, mu->name) != 0 || cu->nparams != mu->nparams)
            return zero_fail(err, ZERO_EMISMATCH,
                             "%s: a checkpoint of another model: unit %d is "
                             "%s with %d parameters, the model's is %s with %d",
                             step_dir, u, cu->name, cu->nparams, mu->name, mu->nparams);
        for (int p = 0; p < cu->nparams; p++) {
            const struct ckpt_param *q = &cu->params[p];
            const struct zero_param_spec *s = &mu->params[p];
            if (strcmp(q->name, s->name) != 0)
                return zero_fail(err, ZERO_EMISMATCH,
                                 "%s: a checkpoint of another model: "
                                 "tensor %s.%s, the model has %s.%s there",
                                 step_dir, cu->name, q->name, mu->name, s->name);
            if (q->ndim != s->ndim || memcmp(q->shape, s->shape, (size_t)q->ndim * 8) != 0) {
                shape_text(q->ndim, q->shape, a, sizeof a);
                shape_text(s->ndim, s->shape, b, sizeof b);
                return zero_fail(err, ZERO_EMISMATCH,
                                 "%s: a checkpoint of another model: "
                                 "tensor %s.%s has shape %s in the checkpoint, %s in the model",
                                 step_dir, cu->name, q->name, a, b);
            }
        }
    }
    int kinds[CKPT_NKINDS], n = engine_kinds(e, kinds), same = n == m->nkinds;
    for (int k = 0; k < n && same; k++)
        same = kinds[k] == m->kinds[k];
    if (!same) {
        kinds_text(m->kinds, m->nkinds, a, sizeof a);
        kinds_text(kinds, n, b, sizeof b);
        return zero_fail(err, ZERO_EMISMATCH,
                         "%s: the checkpoint holds %s; this engine's "
                         "optimizer needs %s",
                         step_dir, a, b);
    }
    return ZERO_OK;
}

/* The same atom order (include/zero/atom.h): it fixes which samples each rank reads
 * at each micro-step and the tree the gradients are summed along, so continuing
 * in the other order would silently train on another data order than the run
 * being resumed. Atoms are global: any world size may continue in the same order. */
static int check_atom_order(const struct zero_engine *e, const struct ckpt_meta *m,
                            const char *step_dir, struct zero_error *err)
{
    enum zero_atom_order saved = m->cfg.libzero.atom_order, mine = e->cfg.libzero.atom_order;
    if (saved == mine)
        return ZERO_OK;
    const char *want = ckpt_atom_order_name(saved);
    return zero_fail(err, ZERO_EMISMATCH,
                     "%s: config.libzero.atom_order is %s in the checkpoint but %s in this run "
                     "(which samples each rank reads at each micro-step would change); resume "
                     "with libzero.atom_order = \"%s\" (the trainers' --atom-order %s)",
                     step_dir, want, ckpt_atom_order_name(mine), want, want);
}

/* Where this rank's part of a unit lies: [*begin, *begin + *n) of the flat buffer. */
static void part_of(const struct zero_engine *e, int u, int64_t *begin, int64_t *n)
{
    *begin = engine_update_begin(e, u);
    *n = engine_update_count(e, u);
}

struct upload {
    struct zero_engine *e;
    float *dst; /* this rank's buffer, at the first element of the range */
};

static int upload_sink(void *user, int64_t at, const float *values, int64_t n,
                       struct zero_error *err)
{
    struct upload *up = user;
    int rc = up->e->be->from_host(up->e->bself, up->dst + at, values, (size_t)n * 4);
    return rc ? engine_backend_error(up->e, rc, err, "uploading checkpoint values") : ZERO_OK;
}

/* Reads every (unit, state, parameter) range this rank needs; with apply,
 * zeroes its buffers and uploads the values, else only verifies them. */
static int read_states(struct zero_engine *e, struct ckpt_reader *r, const struct ckpt_meta *m,
                       int apply, struct zero_error *err)
{
    int rc = ZERO_OK;
    for (int u = 0; u < e->nunits && !rc; u++) {
        const struct unit_states *s = &e->us[u];
        int64_t begin, n;
        part_of(e, u, &begin, &n);
        if (apply && (rc = nvme_unit_load(e, u, 0, err)))
            return rc;
        for (int k = 0; k < m->nkinds && !rc; k++) {
            float *dst = state_buffer(e, u, m->kinds[k]);
            if (apply && n > 0 && (rc = e->be->fill(e->bself, dst, ZERO_F32, 0.0, (size_t)n)))
                return engine_backend_error(e, rc, err, "clearing unit %s",
                                            e->model->units[u]->name);
            for (int p = 0; p < s->layout.nparams && !rc; p++) {
                int64_t off = s->layout.offset[p], end = off + s->layout.numel[p];
                int64_t lo = off > begin ? off : begin, hi = end < begin + n ? end : begin + n;
                if (hi <= lo)
                    continue;
                int64_t old = m->units[u].params[p].offset + (lo - off);
                struct upload up = {.e = e, .dst = dst ? dst + (lo - begin) : NULL};
                rc = ckpt_read_range(r, u, m->kinds[k], old, old + (hi - lo),
                                     apply ? upload_sink : NULL, &up, err);
            }
        }
        int rs = apply ? nvme_unit_store(e, u, 1, err) : ZERO_OK;
        rc = rc ? rc : rs;
    }
    return rc;
}

/* The compute-dtype parameters from the master, whole where the stage keeps them whole. */
static int derive_params(struct zero_engine *e, struct zero_error *err)
{
    int rc = ZERO_OK;
    for (int u = 0; u < e->nunits && !rc; u++) {
        struct unit_states *s = &e->us[u];
        if (s->layout.padded == 0)
            continue;
        int64_t begin, n;
        part_of(e, u, &begin, &n);
        if ((rc = nvme_unit_load_agreed(e, u, 1, err))) /* the all-gather below */
            return rc;
        void *params = engine_at(e, s->params, engine_update_offset(e, u));
        if (engine_separate_master(e) &&
            (rc = e->be->cast(e->bself, params, e->cdt, engine_master(e, u), ZERO_F32, (size_t)n)))
            rc = engine_backend_error(e, rc, err, "casting the master of unit %s",
                                      e->model->units[u]->name);
        int rs = nvme_unit_store(e, u, nvme_holds_params(e, u), err);
        if (rc || (rc = rs))
            return rc;
        if (e->stage_def->after == ZERO_STAGE_ALL_GATHER_PARAMS &&
            (rc = mics_all_gather(e, params, s->params, e->cdt, (size_t)s->layout.shard, NULL)))
            return engine_backend_error(e, rc, err, "all-gather of loaded unit %s",
                                        e->model->units[u]->name);
        if (e->stage_def->shards_params && !s->stage3.persistent &&
            s->stage3.state == ZERO_UNIT_AVAILABLE && (rc = stage3_all_gather(e, u, NULL, err)))
            return rc;
    }
    return e->stage_def->shards_params ? stage3_gather_persistent(e, err) : ZERO_OK;
}

/* The step counters and the fp16 scaler's running state, through the modules that own
 * them (engine.c, loss_scaler.c) */
static void restore_counters(struct zero_engine *e, const struct ckpt_meta *m)
{
    engine_resume_counters(e, m->global_steps, m->applied_steps, m->has_scaler ? &m->scaler : NULL);
}

int zero_checkpoint_load(struct zero_engine *e, const char *path, char **user_meta_out,
                         struct zero_error *err)
{
    if (user_meta_out)
        *user_meta_out = NULL;
    if (!path || !path[0])
        return zero_fail(err, ZERO_EINVAL, "checkpoint load: no path given");
    int rc = check_call_point(e, "load", err);
    if (rc)
        return rc;
    char step_dir[4096];
    struct ckpt_meta m = {0};
    struct ckpt_reader *r = NULL;
    if (!(rc = ckpt_resolve(path, step_dir, sizeof step_dir, err)) &&
        !(rc = ckpt_meta_load(&m, step_dir, err)) && !(rc = check_model(e, &m, step_dir, err)) &&
        !(rc = check_atom_order(e, &m, step_dir, err)) &&
        !(rc = ckpt_reader_open(&r, &m, step_dir, e->rank, err)))
        rc = read_states(e, r, &m, 0, err);
    /* and the padding no range read touches, so that a load trusts what inspect does */
    for (int u = 0; u < m.nunits && !rc; u++)
        rc = ckpt_verify_padding(r, u, e->rank, e->world, err);
    /* nothing has changed yet: stop here unless every rank verified its part */
    if (!(rc = agree(e, rc, err))) {
        rc = read_states(e, r, &m, 1, err);
        if (!(rc = agree(e, rc, err))) /* derive_params' gathers need every rank */
            rc = derive_params(e, err);
        if (rc)
            zero_error_wrap(err, "the engine's state is partly loaded (the files changed while "
                                 "loading?): ");
        else
            restore_counters(e, &m);
        rc = agree(e, rc, err);
    }
    if (!rc && user_meta_out && m.user_json && !(*user_meta_out = strdup(m.user_json)))
        rc = zero_fail(err, ZERO_ENOMEM, "user metadata");
    ckpt_reader_close(r);
    ckpt_meta_free(&m);
    return rc;
}

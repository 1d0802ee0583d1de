/* The ZeRO-3 parameter lifecycle.
 *
 * Each unit is NOT_AVAILABLE (only this rank's shard is resident), INFLIGHT
 * (all-gather issued into a whole buffer) or AVAILABLE (whole). The engine
 * fetches a unit (and the owners of its external parameters) before its
 * forward and its backward and releases it after, unless it is persistent.
 * The order of fetches is recorded on the first forward+backward; later fetches
 * must repeat it, and each fetch prefetches the units that follow in that
 * order, up to stage3_prefetch_bucket_size elements, never exceeding
 * stage3_max_live_parameters gathered elements in total. A unit whose next
 * fetch in that order comes within stage3_max_reuse_distance elements of
 * other fetches is kept instead of released (DeepSpeed's rule: the last
 * units of forward stay gathered for their backward).
 * With offload_param the shard lives in host memory and each gather streams
 * it in first, on the comm stream, so a prefetch moves it ahead of use; a
 * shard on NVMe is read from its swap file first, and nvme_swap.c reads the
 * shards of the units next in the recorded order ahead into its buffers. The
 * whole buffer is often the block that drop() just freed while compute still
 * reads it; the backend orders a comm-stream copy_async after the compute work
 * queued before it (as it orders collectives), so the copy cannot overtake. */
#include <stdlib.h>

#include "engine_internal.h"
#include "stage3.h"
#include "nvme_swap.h"
#include "hpz.h"

static const char *uname(struct zero_engine *e, int u)
{
    return e->model->units[u]->name;
}

static void live_add(struct zero_engine *e, int64_t n)
{
    e->stage3.live_elements += n;
    if (e->stage3.live_elements > e->stage3.peak_live_elements)
        e->stage3.peak_live_elements = e->stage3.live_elements;
}

/* A shard read from NVMe is rank-local, the all-gather is not: every rank
 * learns the read's status first (one control exchange of an int per rank,
 * per gather from NVMe), so one rank's disk error stops every rank here
 * instead of leaving the others in the all-gather. */
static int agree_on_read(struct zero_engine *e, int u, int rc, struct zero_error *err)
{
    int first, xrc = engine_first_failed(e, rc, &first, err);
    if (rc || xrc || first < 0) /* rc's message names the swap file, the unit and the cause */
        return rc ? rc : xrc;
    char path[600];
    nvme_param_file(e, first, path, sizeof path);
    return zero_fail(err, ZERO_EIO,
                     "rank %d: stage-3 gather of unit %s stopped on every rank: rank %d could "
                     "not read its parameter shard from its NVMe swap file %s (rank %d's "
                     "error names the cause)",
                     e->rank, uname(e, u), first, path, first);
}

int stage3_all_gather(struct zero_engine *e, int u, struct zero_request **req,
                      struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    size_t shard = (size_t)s->layout.shard;
    void *mine = engine_at(e, s->stage3.gathered, s->shard_begin);
    int rc;
    if (!e->offload.param && qwz_on(e)) /* int8 codes and scales, dequantized after */
        rc = qwz_all_gather(e, u, s->params, req);
    else if (!e->offload.param)
        rc = mics_all_gather(e, s->params, s->stage3.gathered, e->cdt, shard, req);
    else if (!nvme_holds_params(e, u)) {
        /* host shard -> its place in the whole buffer, then the all-gather in place */
        rc = e->be->copy_async(e->bself, mine, s->params, shard * e->csize, ZERO_STREAM_COMM);
        if (!rc)
            rc = mics_all_gather(e, mine, s->stage3.gathered, e->cdt, shard, req);
    } else {
        /* swap file -> host buffer (read ahead) -> its place -> all-gather in place */
        const void *host = NULL;
        int pinned = 0;
        if ((rc = agree_on_read(e, u, nvme_param_shard(e, u, &host, &pinned, err), err)))
            return rc;
        void *ev = nvme_param_consumed_event(e, u);
        rc = pinned ? e->be->copy_async(e->bself, mine, host, shard * e->csize, ZERO_STREAM_COMM)
                    : e->be->from_host(e->bself, mine, host, shard * e->csize);
        if (!rc && pinned && ev)
            rc = e->be->event_record(e->bself, ev, ZERO_STREAM_COMM);
        if (!rc)
            rc = mics_all_gather(e, mine, s->stage3.gathered, e->cdt, shard, req);
    }
    return rc ? engine_backend_error(e, rc, err, "all-gather of unit %s", uname(e, u)) : ZERO_OK;
}

/* backward: the gather is for a backward pass, which hpZ serves from the group */
static int start_gather(struct zero_engine *e, int u, int prefetch, int backward,
                        struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    double t0 = engine_now();
    int rc;
    if (!s->stage3.gathered &&
        (rc = engine_alloc(e, (size_t)s->layout.padded * e->csize, ZERO_TAG_GATHER,
                           &s->stage3.gathered, "stage-3 gathered unit", err)))
        return zero_error_wrap(err, "unit %s: ", uname(e, u));
    live_add(e, s->layout.padded);
    s->stage3.from_group = backward && hpz_can_gather(e, u);
    rc = s->stage3.from_group ? hpz_gather(e, u, &s->stage3.req, err)
                              : stage3_all_gather(e, u, &s->stage3.req, err);
    if (rc) {
        /* nothing issued (the ranks agreed to stop before it): NOT_AVAILABLE again */
        e->stage3.live_elements -= s->layout.padded;
        engine_free(e, s->stage3.gathered);
        s->stage3.gathered = NULL;
        return rc;
    }
    s->stage3.state = ZERO_UNIT_INFLIGHT;
    s->stage3.t_issue = t0;
    engine_event(e, prefetch ? ZERO_EV_PREFETCH : ZERO_EV_GATHER, u, -1,
                 s->stage3.from_group ? "group_all_gather" : mics_gather_name(&e->mics),
                 s->layout.padded, t0);
    return ZERO_OK;
}

static int finish_gather(struct zero_engine *e, int u, struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    double t0 = engine_now();
    const char *what = s->stage3.from_group ? "group_all_gather" : mics_gather_name(&e->mics);
    int rc = s->stage3.req ? engine_wait(e, s->stage3.req, ZERO_EV_GATHER_WAIT, u, -1, what,
                                         s->layout.padded, s->stage3.t_issue)
                           : ZERO_OK;
    int waited = s->stage3.req != NULL;
    s->stage3.req = NULL;
    if (!rc && !s->stage3.from_group)
        rc = qwz_finish(e, u);
    if (rc)
        return engine_backend_error(e, rc, err, "waiting for the all-gather of %s", uname(e, u));
    s->stage3.state = ZERO_UNIT_AVAILABLE;
    if (!s->stage3.from_group && (rc = hpz_refresh(e, u, err)))
        return rc;
    if (!waited) /* completed at issue: the wait is still a step of the schedule */
        engine_event(e, ZERO_EV_GATHER_WAIT, u, -1, NULL, s->layout.padded, t0);
    return ZERO_OK;
}

static int drop(struct zero_engine *e, int u, struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    int rc;
    if (s->stage3.state == ZERO_UNIT_INFLIGHT && (rc = finish_gather(e, u, err)))
        return rc;
    double t0 = engine_now();
    engine_free(e, s->stage3.gathered);
    s->stage3.gathered = NULL;
    e->stage3.live_elements -= s->layout.padded;
    s->stage3.state = ZERO_UNIT_NOT_AVAILABLE;
    engine_event(e, ZERO_EV_RELEASE, u, -1, NULL, s->layout.padded, t0);
    return ZERO_OK;
}

int64_t stage3_reuse_distance(const struct zero_engine *e, int pos, int unit)
{
    int64_t distance = 0;
    for (; pos < e->stage3.trace_len; pos++) {
        if (e->stage3.trace[pos] == unit)
            return distance;
        distance += e->us[e->stage3.trace[pos]].layout.padded;
    }
    return -1;
}

/* Keep the unit gathered: it is needed again soon in the recorded order. */
static int reused_soon(const struct zero_engine *e, int unit)
{
    if (!e->stage3.trace_recorded || e->stage3.untraced)
        return 0; /* the first pass knows no order yet; eval passes are not in it */
    int64_t d = stage3_reuse_distance(e, e->stage3.trace_pos, unit);
    return d >= 0 && d <= e->cfg.zero_optimization.stage3_max_reuse_distance;
}

int stage3_release(struct zero_engine *e, int unit, struct zero_error *err)
{
    struct unit_states *s = &e->us[unit];
    if (!e->stage_def->shards_params || s->layout.padded == 0)
        return ZERO_OK;
    if (s->stage3.in_use > 0)
        s->stage3.in_use--;
    if (s->stage3.in_use > 0 || s->stage3.persistent || s->scope_pins > 0 ||
        s->stage3.state == ZERO_UNIT_NOT_AVAILABLE || reused_soon(e, unit))
        return ZERO_OK;
    return drop(e, unit, err);
}

/* Frees gathered units that are only prefetched (not in use) until need fits. */
static int make_room(struct zero_engine *e, int64_t need, int keep, struct zero_error *err)
{
    int64_t limit = e->cfg.zero_optimization.stage3_max_live_parameters;
    for (int u = e->nunits - 1; u >= 0 && e->stage3.live_elements + need > limit; u--) {
        struct unit_states *s = &e->us[u];
        if (u == keep || s->stage3.in_use > 0 || s->stage3.persistent || s->scope_pins > 0 ||
            s->stage3.state == ZERO_UNIT_NOT_AVAILABLE)
            continue;
        int rc = drop(e, u, err);
        if (rc)
            return rc;
    }
    return ZERO_OK;
}

static int record_or_check_order(struct zero_engine *e, int unit, struct zero_error *err)
{
    if (!e->stage3.trace_recorded) {
        if (e->stage3.trace_len == e->stage3.trace_cap) {
            int cap = e->stage3.trace_cap ? 2 * e->stage3.trace_cap : 64;
            int *t = realloc(e->stage3.trace, (size_t)cap * sizeof *t);
            int *g = t ? realloc(e->stage3.trace_group, (size_t)cap * sizeof *g) : NULL;
            if (t)
                e->stage3.trace = t;
            if (!t || !g)
                return zero_fail(err, ZERO_ENOMEM, "rank %d: stage-3 fetch trace", e->rank);
            e->stage3.trace_group = g;
            e->stage3.trace_cap = cap;
        }
        e->stage3.trace_group[e->stage3.trace_len] = e->stage3.fetch_group;
        e->stage3.trace[e->stage3.trace_len++] = unit;
        return ZERO_OK;
    }
    if (e->stage3.trace_pos >= e->stage3.trace_len || e->stage3.trace[e->stage3.trace_pos] != unit)
        return zero_fail(err, ZERO_EMISMATCH,
                         "rank %d: stage 3: unit fetch order changed at position %d: the order "
                         "recorded on the first step expects %s, this step fetches %s",
                         e->rank, e->stage3.trace_pos,
                         e->stage3.trace_pos < e->stage3.trace_len
                             ? uname(e, e->stage3.trace[e->stage3.trace_pos])
                             : "(end)",
                         uname(e, unit));
    e->stage3.trace_pos++;
    return ZERO_OK;
}

static int prefetch(struct zero_engine *e, struct zero_error *err)
{
    const struct zero_optimization_config *z = &e->cfg.zero_optimization;
    int64_t issued = 0;
    for (int pos = e->stage3.trace_pos; pos < e->stage3.trace_len; pos++) {
        int u = e->stage3.trace[pos];
        struct unit_states *s = &e->us[u];
        if (s->stage3.state != ZERO_UNIT_NOT_AVAILABLE)
            continue;
        if (issued + s->layout.padded > z->stage3_prefetch_bucket_size ||
            e->stage3.live_elements + s->layout.padded > z->stage3_max_live_parameters)
            break;
        int backward = e->stage3.backward_from >= 0 && pos >= e->stage3.backward_from;
        int rc = start_gather(e, u, 1, backward, err);
        if (rc)
            return rc;
        issued += s->layout.padded;
    }
    return ZERO_OK;
}

int stage3_fetch(struct zero_engine *e, int unit, struct zero_error *err)
{
    if (!e->stage_def->shards_params)
        return ZERO_OK;
    struct unit_states *s = &e->us[unit];
    int rc = e->stage3.untraced ? ZERO_OK : record_or_check_order(e, unit, err);
    if (rc || s->layout.padded == 0)
        return rc;
    if (s->stage3.state == ZERO_UNIT_NOT_AVAILABLE) {
        if ((rc = make_room(e, s->layout.padded, unit, err)) ||
            (rc = start_gather(e, unit, 0, e->stage3.in_backward, err)))
            return rc;
    }
    if (s->stage3.state == ZERO_UNIT_INFLIGHT && (rc = finish_gather(e, unit, err)))
        return rc;
    s->stage3.in_use++;
    return e->stage3.trace_recorded && !e->stage3.untraced ? prefetch(e, err) : ZERO_OK;
}

/* A gathered-parameters scope's gather: on demand, under the live limit, with
 * the events of any other gather. Refused when the units the scope already
 * holds (and what cannot be freed) leave no room under
 * stage3_max_live_parameters. */
int stage3_gather_for_scope(struct zero_engine *e, int unit, struct zero_error *err)
{
    struct unit_states *s = &e->us[unit];
    int64_t limit = e->cfg.zero_optimization.stage3_max_live_parameters;
    int rc;
    if (s->stage3.state == ZERO_UNIT_NOT_AVAILABLE) {
        if ((rc = make_room(e, s->layout.padded, unit, err)))
            return rc;
        if (e->stage3.live_elements + s->layout.padded > limit)
            return zero_fail(err, ZERO_EINVAL,
                             "rank %d: gathered-parameters scope: gathering unit %s (%lld "
                             "elements) would hold %lld gathered elements, above "
                             "zero_optimization.stage3_max_live_parameters = %lld",
                             e->rank, uname(e, unit), (long long)s->layout.padded,
                             (long long)(e->stage3.live_elements + s->layout.padded),
                             (long long)limit);
        if ((rc = start_gather(e, unit, 0, 0, err)))
            return rc;
    }
    if (s->stage3.state == ZERO_UNIT_INFLIGHT && (rc = finish_gather(e, unit, err)))
        return rc;
    return ZERO_OK;
}

int stage3_begin_pass(struct zero_engine *e, struct zero_error *err)
{
    (void)err;
    e->stage3.trace_pos = 0;
    return ZERO_OK;
}

int stage3_gather_persistent(struct zero_engine *e, struct zero_error *err)
{
    hpz_params_changed(e); /* called after whatever changed them: init, update, load */
    for (int u = 0; u < e->nunits; u++) {
        struct unit_states *s = &e->us[u];
        if (!s->stage3.persistent || s->layout.padded == 0)
            continue;
        int rc;
        if (s->stage3.state == ZERO_UNIT_NOT_AVAILABLE) {
            if ((rc = start_gather(e, u, 0, 0, err)) || (rc = finish_gather(e, u, err)))
                return rc;
        } else {
            /* refresh the whole copy after the optimizer updated the shard */
            double t0 = engine_now();
            if ((rc = stage3_all_gather(e, u, NULL, err)))
                return rc;
            engine_event(e, ZERO_EV_PARAM_GATHER, u, -1, mics_gather_name(&e->mics),
                         s->layout.padded, t0);
        }
    }
    return ZERO_OK;
}

int stage3_end_step(struct zero_engine *e, struct zero_error *err)
{
    return e->stage_def->shards_params ? stage3_gather_persistent(e, err) : ZERO_OK;
}

/* The smallest limit that lets every unit run: all persistent units plus the
 * largest fetch set (a unit and the owners of its external parameters). */
int stage3_check_live_limit(struct zero_engine *e, struct zero_error *err)
{
    int64_t persistent = 0, worst = 0;
    int worst_unit = 0;
    for (int u = 0; u < e->nunits; u++)
        if (e->us[u].stage3.persistent)
            persistent += e->us[u].layout.padded;
    for (int u = 0; u < e->nunits; u++) {
        const struct zero_unit *unit = e->model->units[u];
        int64_t need = e->us[u].stage3.persistent ? 0 : e->us[u].layout.padded;
        for (int x = 0; x < unit->nexternal; x++) {
            int o = unit->external[x].unit;
            if (!e->us[o].stage3.persistent && o != u)
                need += e->us[o].layout.padded;
        }
        if (need > worst) {
            worst = need;
            worst_unit = u;
        }
    }
    int64_t limit = e->cfg.zero_optimization.stage3_max_live_parameters;
    if (persistent + worst > limit)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.stage3_max_live_parameters %lld is too small: unit "
                         "%s needs %lld gathered elements live at once (%lld for its fetch set + "
                         "%lld persistent)",
                         (long long)limit, uname(e, worst_unit), (long long)(persistent + worst),
                         (long long)worst, (long long)persistent);
    return ZERO_OK;
}

void stage3_open_fetch_group(struct zero_engine *e)
{
    e->stage3.fetch_group++;
}

void stage3_set_untraced(struct zero_engine *e, int untraced)
{
    e->stage3.untraced = untraced;
}

void stage3_order_recorded(struct zero_engine *e)
{
    e->stage3.trace_recorded = 1;
}

void stage3_set_backward(struct zero_engine *e, int backward)
{
    e->stage3.in_backward = backward;
    if (backward && !e->stage3.trace_recorded && e->stage3.backward_from < 0)
        e->stage3.backward_from = e->stage3.trace_len;
}

void stage3_destroy(struct zero_engine *e)
{
    free(e->stage3.trace);
    free(e->stage3.trace_group);
    e->stage3.trace = e->stage3.trace_group = NULL;
}

void stage3_plan_unit(struct zero_engine *e, int u)
{
    struct unit_states *s = &e->us[u];
    int sharded = e->stage_def->shards_params;
    s->stage3.persistent =
        sharded && s->layout.padded < e->cfg.zero_optimization.stage3_param_persistence_threshold;
    s->stage3.state =
        sharded && s->layout.padded > 0 ? ZERO_UNIT_NOT_AVAILABLE : ZERO_UNIT_AVAILABLE;
}

void stage3_unit_destroy(struct zero_engine *e, int u)
{
    struct unit_states *s = &e->us[u];
    if (s->stage3.req)
        e->be->wait(e->bself, s->stage3.req);
    s->stage3.req = NULL;
    engine_free(e, s->stage3.gathered);
    s->stage3.gathered = NULL;
    hpz_unit_destroy(e, u);
    qwz_unit_destroy(e, u);
}

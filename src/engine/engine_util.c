/* Small helpers every engine file uses: tagged allocation and error wrapping. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "zero/fault.h"

int engine_alloc(struct zero_engine *e, size_t bytes, enum zero_tag tag, void **p, const char *what,
                 struct zero_error *err)
{
    *p = NULL;
    if (zero_fault("alloc"))
        return zero_fail(err, ZERO_ENOMEM,
                         "rank %d: allocating %zu bytes for %s (%s): injected "
                         "fault (ZERO_FAULT)",
                         e->rank, bytes, what, zero_tag_name(tag));
    int rc = e->be->alloc(e->bself, bytes > 0 ? bytes : 1, tag, p);
    if (rc)
        return zero_fail(err, rc, "rank %d: allocating %zu bytes for %s (%s): %s", e->rank, bytes,
                         what, zero_tag_name(tag), e->be->last_error(e->bself));
    return ZERO_OK;
}

void engine_free(struct zero_engine *e, void *p)
{
    if (p)
        e->be->free(e->bself, p);
}

int engine_host_alloc(struct zero_engine *e, size_t bytes, enum zero_tag tag, void **p,
                      const char *what, struct zero_error *err)
{
    *p = NULL;
    if (zero_fault("host_alloc"))
        return zero_fail(err, ZERO_ENOMEM,
                         "rank %d: allocating %zu bytes of host memory for %s "
                         "(%s): injected fault (ZERO_FAULT)",
                         e->rank, bytes, what, zero_tag_name(tag));
    int rc = e->be->host_alloc(e->bself, bytes > 0 ? bytes : 1, tag, p);
    if (rc)
        return zero_fail(err, rc, "rank %d: allocating %zu bytes of host memory for %s (%s): %s",
                         e->rank, bytes, what, zero_tag_name(tag), e->be->last_error(e->bself));
    return ZERO_OK;
}

void engine_host_free(struct zero_engine *e, void *p)
{
    if (p)
        e->be->host_free(e->bself, p);
}

int engine_backend_error(struct zero_engine *e, int rc, struct zero_error *err, const char *fmt,
                         ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return zero_fail(err, rc, "rank %d: %s: %s", e->rank, what, e->be->last_error(e->bself));
}

double engine_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The group a collective of the groups (backend_groups.h) spans: a gather hpZ's where
 * it is on, else MiCS's shard group (the replica group's gathers say so themselves);
 * MiCS's native reductions, a reduce-scatter in the shard group, an all-reduce in the
 * replica group. */
static enum zero_event_group event_group(const struct zero_engine *e, const char *collective)
{
    if (collective == NULL || strncmp(collective, "group_", 6) != 0)
        return ZERO_EVG_WORLD;
    if (strcmp(collective, "group_all_reduce") == 0)
        return ZERO_EVG_MICS_REPLICA;
    if (strcmp(collective, "group_reduce_scatter") == 0)
        return ZERO_EVG_MICS_SHARD;
    return e->hpz.size > 1 ? ZERO_EVG_HPZ : ZERO_EVG_MICS_SHARD;
}

/* ev's group, which one of its kind and its size */
static void set_group(const struct zero_engine *e, struct zero_event *ev, enum zero_event_group g)
{
    int size = g == ZERO_EVG_HPZ            ? e->hpz.size
               : g == ZERO_EVG_MICS_SHARD   ? e->mics.size
               : g == ZERO_EVG_MICS_REPLICA ? e->mics.replicas
               : g == ZERO_EVG_QGZ          ? e->qgz.size
               : g == ZERO_EVG_QGZ_ACROSS   ? e->world / e->qgz.size
                                            : e->world;
    ev->group = g;
    ev->group_size = size;
    ev->group_index = g == ZERO_EVG_MICS_REPLICA ? e->rank % e->mics.size
                      : g == ZERO_EVG_QGZ_ACROSS ? e->rank % e->qgz.size
                      : g == ZERO_EVG_WORLD      ? 0
                                                 : e->rank / size;
}

void engine_group_event(struct zero_engine *e, enum zero_event_kind kind, int unit, int bucket,
                        const char *collective, int64_t elements, int element_bytes,
                        enum zero_event_group group, double t0)
{
    if (!e->observer)
        return;
    struct zero_event ev = {
        .kind = kind,
        .unit = unit,
        .bucket = bucket,
        .collective = collective,
        .elements = elements,
        .element_bytes = element_bytes,
        .step = e->global_steps,
        .micro_step = e->micro_steps,
        .t_begin = t0 - e->t_created,
        .t_end = engine_now() - e->t_created,
    };
    set_group(e, &ev, group);
    e->observer(e->observer_user, &ev);
}

void engine_event(struct zero_engine *e, enum zero_event_kind kind, int unit, int bucket,
                  const char *collective, int64_t elements, double t0)
{
    /* the optimizer updates the fp32 master, its shard one of its group's (MiCS: the
     * shard group's); everything else moves the compute dtype */
    int optimizer = kind == ZERO_EV_OPTIMIZER;
    enum zero_event_group g =
        optimizer && mics_on(&e->mics) ? ZERO_EVG_MICS_SHARD : event_group(e, collective);
    engine_group_event(e, kind, unit, bucket, collective, elements, optimizer ? 4 : (int)e->csize,
                       g, t0);
}

const char *zero_event_group_name(enum zero_event_group g)
{
    static const char *const names[ZERO_EVG_COUNT] = {
        [ZERO_EVG_WORLD] = "world",
        [ZERO_EVG_HPZ] = "hpz group",
        [ZERO_EVG_MICS_SHARD] = "mics shard group",
        [ZERO_EVG_MICS_REPLICA] = "mics replica group",
        [ZERO_EVG_QGZ] = "qgz group",
        [ZERO_EVG_QGZ_ACROSS] = "across groups",
    };
    return (int)g >= 0 && g < ZERO_EVG_COUNT ? names[g] : "?";
}

int engine_wait(struct zero_engine *e, struct zero_request *req, enum zero_event_kind wait_kind,
                int unit, int bucket, const char *collective, int64_t elements, double t_issue)
{
    if (!req)
        return ZERO_OK; /* completed at issue */
    double t0 = engine_now(), done_ago = 0.0;
    int rc = e->be->wait_timed(e->bself, req, &done_ago);
    if (rc || !e->observer)
        return rc;
    engine_event(e, wait_kind, unit, bucket, NULL, elements, t0);
    struct zero_event ev = {
        .kind = ZERO_EV_INFLIGHT,
        .unit = unit,
        .bucket = bucket,
        .collective = collective,
        .elements = elements,
        .element_bytes = (int)e->csize, /* the collective moves the compute dtype */
        .step = e->global_steps,
        .micro_step = e->micro_steps,
        .t_begin = t_issue - e->t_created,
        .t_end = engine_now() - done_ago - e->t_created,
    };
    set_group(e, &ev, event_group(e, collective));
    if (ev.t_end < ev.t_begin)
        ev.t_end = ev.t_begin;
    e->observer(e->observer_user, &ev);
    return ZERO_OK;
}

const char *zero_event_name(enum zero_event_kind k)
{
    static const char *const names[ZERO_EV_KIND_COUNT] = {
        [ZERO_EV_FORWARD] = "forward",           [ZERO_EV_BACKWARD] = "backward",
        [ZERO_EV_RECOMPUTE] = "recompute",       [ZERO_EV_GATHER] = "gather",
        [ZERO_EV_PREFETCH] = "prefetch",         [ZERO_EV_GATHER_WAIT] = "gather_wait",
        [ZERO_EV_RELEASE] = "release",           [ZERO_EV_REDUCE] = "reduce",
        [ZERO_EV_PARAM_GATHER] = "param_gather", [ZERO_EV_NORM] = "norm",
        [ZERO_EV_OPTIMIZER] = "optimizer",       [ZERO_EV_REDUCE_WAIT] = "reduce_wait",
        [ZERO_EV_INFLIGHT] = "in_flight",        [ZERO_EV_PARAM_GATHER_WAIT] = "param_gather_wait",
    };
    return (int)k >= 0 && k < ZERO_EV_KIND_COUNT ? names[k] : "?";
}

int engine_first_failed(struct zero_engine *e, int rc, int *first, struct zero_error *err)
{
    /* called once per NVMe gather: no allocation for the usual world sizes */
    int mine = rc != ZERO_OK, few[64];
    int *all = e->world <= 64 ? few : calloc((size_t)e->world, sizeof *all);
    *first = -1;
    if (!all)
        return rc ? rc
                  : zero_fail(err, ZERO_ENOMEM, "rank %d: the ranks' status exchange", e->rank);
    int xrc = e->be->host_all_gather(e->bself, &mine, all, sizeof mine);
    for (int r = 0; r < e->world && !xrc && *first < 0; r++)
        if (all[r])
            *first = r;
    if (all != few)
        free(all);
    if (xrc && !rc)
        return engine_backend_error(e, xrc, err, "exchanging the ranks' status");
    return xrc;
}

/* Collective, only after a failure: every rank learns the first failing rank's
 * message, so whichever rank a program prints names the cause. */
static void share_first_message(struct zero_engine *e, int first, const struct zero_error *mine,
                                char *out, size_t len)
{
    struct zero_error *all = calloc((size_t)e->world, sizeof *all);
    if (!all) {
        out[0] = '\0';
        return;
    }
    if (e->be->host_all_gather(e->bself, mine, all, sizeof *mine) == ZERO_OK)
        snprintf(out, len, "%s", all[first].msg);
    else
        out[0] = '\0';
    free(all);
}

int engine_agree(struct zero_engine *e, int rc, int code, const char *what, struct zero_error *err)
{
    int first, xrc = engine_first_failed(e, rc, &first, err);
    if (xrc && !rc)
        return xrc;
    if (first < 0)
        return rc;
    struct zero_error sent = {0};
    if (rc)
        sent = *err;
    char cause[ZERO_ERRMSG_LEN];
    share_first_message(e, first, &sent, cause, sizeof cause);
    if (rc)
        return rc;
    return zero_fail(err, code, "rank %d: rank %d %s: %s", e->rank, first, what,
                     cause[0] ? cause : "(its message did not arrive)");
}

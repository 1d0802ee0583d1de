/* ZeRO-Offload (Ren et al., 2021): the fp32 master and the optimizer state of
 * this rank's shard live in host memory, where a vectorized host optimizer
 * (host_optim.c) updates them; with offload_param (stage 3) the parameter
 * shard lives there too, and every gather streams it in (stage3.c).
 *
 * The update is a pipeline over units. Every unit's reduced gradient shard is
 * queued at once for copying out on the comm stream; the host updates unit u
 * as soon as its copy has landed, while the copies of later units proceed,
 * and queues u's new compute-dtype parameters back behind them, out of the
 * same staging buffer the gradient came in through (host_optim.h allows the
 * copy to overwrite the gradient; both are in the compute dtype). With
 * offload_param the host optimizer writes the host parameter shard directly
 * and nothing goes back. Each unit's update is split over
 * libzero.offload_threads host threads (by default the node's processors
 * shared among the node's ranks); the update is element-wise, so the split
 * does not change a bit.
 *
 * With offload_optimizer.device = nvme (ZeRO-Infinity) the master and the
 * optimizer state are not in host memory at all: the host optimizer walks the
 * shards chunk by chunk through nvme_swap.c's ring, each chunk read ahead of
 * its update and written back behind it, the same loop on the same values.
 *
 * Exactness: the host optimizer is the loop the cpu backend's adam and sgd
 * entries run, so on the cpu backend an offloaded step gives the same bits as
 * one that is not (tests/test_offload.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "offload.h"
#include "engine/optimizer_args.h"
#include "engine/placement.h"
#include "base/host_optim.h"
#include "base/host_parallel.h"
#include "nvme_swap.h"

/* Ranks of this engine on this host, from every rank's host name: the host's
 * processors are shared among them. 1 if the names cannot be exchanged. */
static int ranks_on_this_host(struct zero_engine *e)
{
    enum { NAME = 256 };
    char mine[NAME] = "";
    char *all = calloc((size_t)e->world, NAME);
    int n = 0;
    gethostname(mine, NAME - 1);
    if (all && e->be->host_all_gather(e->bself, mine, all, NAME) == 0)
        for (int r = 0; r < e->world; r++)
            n += strncmp(all + (size_t)r * NAME, mine, NAME) == 0;
    free(all);
    return n > 0 ? n : 1;
}

int offload_configure(struct zero_engine *e, struct zero_error *err)
{
    const struct zero_optimization_config *z = &e->cfg.zero_optimization;
    e->offload.opt = z->offload_optimizer.device != ZERO_OFFLOAD_NONE;
    e->offload.param = z->offload_param.device != ZERO_OFFLOAD_NONE;
    /* the stage rules are zero_config_validate's, checked before this */
    int rc = nvme_configure(e, err);
    if (rc)
        return rc;
    if (e->offload.opt) { /* collective, as engine creation is */
        int64_t t = e->cfg.libzero.offload_threads;
        e->offload.threads = t > 0 ? (int)t : host_processors() / ranks_on_this_host(e);
        if (e->offload.threads < 1)
            e->offload.threads = 1;
    }
    return ZERO_OK;
}

/* Queues unit u's reduced gradient shard (n elements of t) into its host
 * staging buffer on the comm stream, and marks its landing. */
static int copy_out(struct zero_engine *e, int u, const void *grad, enum zero_dtype t, size_t n)
{
    struct unit_states *s = &e->us[u];
    int rc = e->be->copy_async(e->bself, s->offload.staging, grad, n * zero_dtype_size(t),
                               ZERO_STREAM_COMM);
    return rc ? rc : e->be->event_record(e->bself, s->offload.ready, ZERO_STREAM_COMM);
}

/* Makes stream `waits` wait for the work queued on stream `done` so far. */
static int fence(struct zero_engine *e, void *ev, enum zero_stream done, enum zero_stream waits)
{
    int rc = e->be->event_record(e->bself, ev, done);
    return rc ? rc : e->be->stream_wait_event(e->bself, waits, ev);
}

struct host_update {
    enum zero_host_isa isa;
    int sgd;
    struct zero_adam_consts adam;
    struct zero_sgd_args sgd_args;
};

static int prepare(struct zero_engine *e, float lr, float grad_div, struct host_update *h,
                   struct zero_error *err)
{
    char why[160];
    h->isa = zero_host_isa_best();
    h->sgd = e->cfg.optimizer.type == ZERO_OPTIM_SGD;
    h->sgd_args = optimizer_sgd_args(e, lr, grad_div);
    struct zero_adam_args a = optimizer_adam_args(e, lr, grad_div);
    int bad = h->sgd
                  ? zero_sgd_check(&h->sgd_args, e->cfg.optimizer.momentum != 0.0, why, sizeof why)
                  : zero_adam_prepare(&a, &h->adam, why, sizeof why);
    return bad ? zero_fail(err, ZERO_EINVAL, "rank %d: host optimizer: %s", e->rank, why) : ZERO_OK;
}

/* One unit's (or chunk's) host update, handed to host_parallel_for range by range. */
struct unit_job {
    const struct host_update *h;
    float *master, *exp_avg, *exp_avg_sq; /* (n,); exp_* NULL without the state */
    const void *grad;                     /* (grad_type, n) */
    enum zero_dtype grad_type, copy_type;
    void *out;   /* (copy_type, n) */
    size_t base; /* the sub-group's first element in the unit's shard */
};

static void update_range(void *arg, size_t b, size_t end)
{
    const struct unit_job *j = arg;
    const void *g = (const char *)j->grad + b * zero_dtype_size(j->grad_type);
    void *out = (char *)j->out + b * zero_dtype_size(j->copy_type);
    float *m = j->exp_avg ? j->exp_avg + b : NULL;
    if (j->h->sgd)
        zero_host_sgd(j->h->isa, &j->h->sgd_args, j->master + b, g, j->grad_type, m, end - b, out,
                      j->copy_type);
    else
        zero_host_adam(j->h->isa, &j->h->adam, j->master + b, g, j->grad_type, m, j->exp_avg_sq + b,
                       end - b, out, j->copy_type);
}

static void run_job(struct zero_engine *e, struct unit_job *job, size_t n)
{
    /* a grain of 16 Ki elements (tens of microseconds): enough work to pay for a thread */
    host_parallel_for(n, (size_t)1 << 14, e->offload.threads, update_range, job);
}

/* Unit u's new compute-dtype parameters (in its staging buffer) back to the device. */
static int copy_back(struct zero_engine *e, int u, struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    size_t n = (size_t)engine_update_count(e, u);
    int rc = e->be->copy_async(e->bself, engine_param_copy(e, u), s->offload.staging, n * e->csize,
                               ZERO_STREAM_COMM);
    return rc ? engine_backend_error(e, rc, err, "copying back the parameters of %s",
                                     e->model->units[u]->name)
              : ZERO_OK;
}

/* The host optimizer on unit u once its gradient (t) has landed; then its
 * parameters go back to the device unless they live on the host. */
static int update_on_host(struct zero_engine *e, int u, const struct host_update *h,
                          enum zero_dtype t, struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    size_t n = (size_t)engine_update_count(e, u);
    int rc = e->be->event_synchronize(e->bself, s->offload.ready);
    if (rc)
        return engine_backend_error(e, rc, err, "copying out the gradient of %s",
                                    e->model->units[u]->name);
    void *out = e->offload.param ? s->params : s->offload.staging; /* (cdt, n) */
    /* DeepSpeed's sub_group_size: the optimizer steps sub-group by sub-group (one
     * event each; 0: the unit's shard is one group). Element-wise: any split gives
     * the same bits. */
    int64_t sub = e->cfg.zero_optimization.sub_group_size;
    size_t group = sub > 0 && (uint64_t)sub < n ? (size_t)sub : (n > 0 ? n : 1);
    size_t gsize = zero_dtype_size(t), b = 0;
    do { /* once at least: an empty shard still reports its (empty) update */
        double t0 = engine_now();
        size_t len = n - b < group ? n - b : group;
        struct unit_job job = {.h = h,
                               .master = s->master + b,
                               .exp_avg = s->exp_avg ? s->exp_avg + b : NULL,
                               .exp_avg_sq = s->exp_avg_sq ? s->exp_avg_sq + b : NULL,
                               .grad = (const char *)s->offload.staging + b * gsize,
                               .grad_type = t,
                               .copy_type = e->cdt,
                               .out = (char *)out + b * e->csize};
        run_job(e, &job, len);
        engine_event(e, ZERO_EV_OPTIMIZER, u, -1, NULL, (int64_t)len, t0);
        b += len;
    } while (b < n);
    return e->offload.param ? ZERO_OK : copy_back(e, u, err);
}

/* Between a chunk's stage and device memory, on the comm stream behind the
 * reduction; wait = 1 waits for it. A stage in ordinary memory (pin_memory
 * false) moves synchronously (to_host / from_host take any host memory). */
static int copy_in_out(struct zero_engine *e, const struct nvme_chunk *c, void *dst,
                       const void *src, size_t bytes, int wait)
{
    int rc;
    if (!c->pinned) {
        /* the comm stream's reduction must have finished first */
        if ((rc = e->be->event_record(e->bself, c->ev, ZERO_STREAM_COMM)) ||
            (rc = e->be->event_synchronize(e->bself, c->ev)))
            return rc;
        return wait ? e->be->to_host(e->bself, dst, src, bytes)
                    : e->be->from_host(e->bself, dst, src, bytes);
    }
    if ((rc = e->be->copy_async(e->bself, dst, src, bytes, ZERO_STREAM_COMM)) ||
        (rc = e->be->event_record(e->bself, c->ev, ZERO_STREAM_COMM)))
        return rc;
    return wait ? e->be->event_synchronize(e->bself, c->ev) : ZERO_OK;
}

/* The NVMe step: every chunk of every shard through the ring, in unit order.
 * A chunk's gradient comes into its slot's stage, the update writes the new
 * compute-dtype parameters over it there, and they go back to the device (or
 * to the parameter swap file) from there: no per-unit staging shard. */
static int update_from_nvme(struct zero_engine *e, const struct host_update *h, enum zero_dtype t,
                            struct zero_error *err)
{
    struct nvme_chunk c;
    size_t gsize = zero_dtype_size(t);
    int rc, got;
    while (!(rc = nvme_stream_next(e, &c, &got, err)) && got) {
        struct unit_states *s = &e->us[c.unit];
        const char *name = e->model->units[c.unit]->name;
        /* the stage's last copy back must be done before the gradient lands there */
        if ((rc = e->be->event_synchronize(e->bself, c.ev)))
            return engine_backend_error(e, rc, err, "copying back the parameters of %s", name);
        const char *grad = (const char *)grad_for_update(e, c.unit, &t) + c.begin * gsize;
        if ((rc = copy_in_out(e, &c, c.stage, grad, (size_t)c.n * gsize, 1)))
            return engine_backend_error(e, rc, err, "copying out the gradient of %s", name);
        double t0 = engine_now();
        int host_params = e->offload.param && !c.params; /* max_in_cpu kept it in host memory */
        void *out = host_params ? engine_at(e, s->params, c.begin) : c.stage;
        struct unit_job job = {.h = h,
                               .master = c.master,
                               .exp_avg = c.exp_avg,
                               .exp_avg_sq = c.exp_avg_sq,
                               .grad = c.stage,
                               .grad_type = t,
                               .copy_type = e->cdt,
                               .out = out};
        run_job(e, &job, (size_t)c.n);
        engine_event(e, ZERO_EV_OPTIMIZER, c.unit, -1, NULL, c.n, t0);
        if (!e->offload.param &&
            (rc = copy_in_out(e, &c, engine_at(e, engine_param_copy(e, c.unit), c.begin), c.stage,
                              (size_t)c.n * e->csize, 0)))
            return engine_backend_error(e, rc, err, "copying back the parameters of %s", name);
        if ((rc = nvme_stream_put(e, &c, err)))
            return rc;
    }
    return rc ? rc : nvme_stream_end(e, err);
}

int offload_update(struct zero_engine *e, float lr, float grad_div, struct zero_error *err)
{
    struct host_update h;
    int rc = prepare(e, lr, grad_div, &h, err), first = -1, last = -1;
    for (int u = 0; u < e->nunits; u++)
        if (e->us[u].layout.shard > 0) {
            first = first < 0 ? u : first;
            last = u;
        }
    if (rc || first < 0)
        return rc;
    /* the step rewrites the parameter shards the NVMe read-ahead holds copies of */
    if ((rc = nvme_param_invalidate(e, err)))
        return rc;
    /* the copies out start once the compute stream has finished the gradients */
    if ((rc = fence(e, e->us[first].offload.ready, ZERO_STREAM_COMPUTE, ZERO_STREAM_COMM)))
        return engine_backend_error(e, rc, err, "ordering the gradient copies");
    enum zero_dtype t = e->cdt; /* the reduced gradient (grad_for_update) */
    for (int u = first; u <= last && !rc && !e->nvme.opt; u++)
        if (e->us[u].layout.shard > 0 &&
            (rc = copy_out(e, u, grad_for_update(e, u, &t), t, (size_t)engine_update_count(e, u))))
            rc = engine_backend_error(e, rc, err, "copying out the gradient of %s",
                                      e->model->units[u]->name);
    if (!rc && e->nvme.opt)
        rc = update_from_nvme(e, &h, t, err);
    for (int u = first; u <= last && !rc && !e->nvme.opt; u++)
        if (e->us[u].layout.shard > 0)
            rc = update_on_host(e, u, &h, t, err);
    /* the compute stream's next work reads the parameters copied back */
    if (!rc && (rc = fence(e, e->us[last].offload.ready, ZERO_STREAM_COMM, ZERO_STREAM_COMPUTE)))
        rc = engine_backend_error(e, rc, err, "ordering the copied-back parameters");
    return rc;
}

int offload_alloc_unit(struct zero_engine *e, int u, int64_t n, const char *what,
                       struct zero_error *err)
{
    struct unit_offload *o = &e->us[u].offload;
    /* the reduced gradient shard (cdt) comes in; the parameters (cdt) go out */
    int rc =
        e->nvme.opt /* NVMe: the gradient comes in through the ring */
            ? ZERO_OK
            : engine_host_alloc(e, (size_t)n * e->csize, ZERO_TAG_GRADS, &o->staging, what, err);
    if (!rc && (rc = e->be->event_create(e->bself, &o->ready)))
        return engine_backend_error(e, rc, err, "offload event of %s", e->model->units[u]->name);
    return rc;
}

void offload_unit_destroy(struct zero_engine *e, int u)
{
    struct unit_offload *o = &e->us[u].offload;
    engine_host_free(e, o->staging);
    if (o->ready)
        e->be->event_destroy(e->bself, o->ready);
    o->staging = o->ready = NULL;
}

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
 * Exactness: the host optimizer is the loop the cpu backend's adam and sgd
 * entries run, so on the cpu backend an offloaded step gives the same bits as
 * one that is not (tests/test_offload.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_internal.h"
#include "host_optim.h"
#include "host_parallel.h"

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
    /* nvme is refused with the other unimplemented features (config_unsupported.c) */
    e->offload_opt = z->offload_optimizer.device == ZERO_OFFLOAD_CPU;
    e->offload_param = z->offload_param.device == ZERO_OFFLOAD_CPU;
    (void)err; /* the stage rules are zero_config_validate's, checked before this */
    e->separate_master |= e->offload_opt; /* fp32 too: the parameters stay on the device */
    if (e->offload_opt) {                 /* collective, as engine creation is */
        int64_t t = e->cfg.libzero.offload_threads;
        e->offload_threads = t > 0 ? (int)t : host_processors() / ranks_on_this_host(e);
        if (e->offload_threads < 1)
            e->offload_threads = 1;
    }
    return ZERO_OK;
}

/* Queues unit u's reduced gradient shard (n elements of t) into its host
 * staging buffer on the comm stream, and marks its landing. */
static int copy_out(struct zero_engine *e, int u, const void *grad, enum zero_dtype t, size_t n)
{
    struct unit_states *s = &e->us[u];
    int rc =
        e->be->copy_async(e->bself, s->host_stage, grad, n * zero_dtype_size(t), ZERO_STREAM_COMM);
    return rc ? rc : e->be->event_record(e->bself, s->host_stage_ready, ZERO_STREAM_COMM);
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

/* One sub-group of a unit's host update, handed to host_parallel_for range by range. */
struct unit_job {
    const struct host_update *h;
    const struct unit_states *s;
    enum zero_dtype grad_type, copy_type;
    void *out;   /* (copy_type, n) */
    size_t base; /* the sub-group's first element in the unit's shard */
};

static void update_range(void *arg, size_t b, size_t end)
{
    const struct unit_job *j = arg;
    const struct unit_states *s = j->s;
    b += j->base;
    end += j->base;
    const void *g = (const char *)s->host_stage + b * zero_dtype_size(j->grad_type);
    void *out = (char *)j->out + b * zero_dtype_size(j->copy_type);
    float *m = s->exp_avg ? s->exp_avg + b : NULL;
    if (j->h->sgd)
        zero_host_sgd(j->h->isa, &j->h->sgd_args, s->master + b, g, j->grad_type, m, end - b, out,
                      j->copy_type);
    else
        zero_host_adam(j->h->isa, &j->h->adam, s->master + b, g, j->grad_type, m, s->exp_avg_sq + b,
                       end - b, out, j->copy_type);
}

/* The host optimizer on unit u once its gradient (t) has landed; then its
 * parameters go back to the device unless they live on the host. */
static int update_on_host(struct zero_engine *e, int u, const struct host_update *h,
                          enum zero_dtype t, struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    size_t n = optimizer_update_count(e, u);
    int rc = e->be->event_synchronize(e->bself, s->host_stage_ready);
    if (rc)
        return engine_backend_error(e, rc, err, "copying out the gradient of %s",
                                    e->model->units[u]->name);
    void *out = e->offload_param ? s->params : s->host_stage; /* (cdt, n) */
    struct unit_job job = {.h = h, .s = s, .grad_type = t, .copy_type = e->cdt, .out = out};
    /* DeepSpeed's sub_group_size: the optimizer steps sub-group by sub-group (one
     * event each; 0: the unit's shard is one group). Element-wise: any split gives
     * the same bits. */
    int64_t sub = e->cfg.zero_optimization.sub_group_size;
    size_t group = sub > 0 && (uint64_t)sub < n ? (size_t)sub : (n > 0 ? n : 1);
    size_t b = 0;
    do { /* once at least: an empty shard still reports its (empty) update */
        double t0 = engine_now();
        size_t len = n - b < group ? n - b : group;
        job.base = b;
        /* a grain of 16 Ki elements (tens of microseconds): enough work to pay for a thread */
        host_parallel_for(len, (size_t)1 << 14, e->offload_threads, update_range, &job);
        engine_event(e, ZERO_EV_OPTIMIZER, u, -1, NULL, (int64_t)len, t0);
        b += len;
    } while (b < n);
    if (!e->offload_param && (rc = e->be->copy_async(e->bself, optimizer_param_copy(e, u), out,
                                                     n * e->csize, ZERO_STREAM_COMM)))
        return engine_backend_error(e, rc, err, "copying back the parameters of %s",
                                    e->model->units[u]->name);
    return ZERO_OK;
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
    /* the copies out start once the compute stream has finished the gradients */
    if ((rc = fence(e, e->us[first].host_stage_ready, ZERO_STREAM_COMPUTE, ZERO_STREAM_COMM)))
        return engine_backend_error(e, rc, err, "ordering the gradient copies");
    enum zero_dtype t = e->cdt; /* the reduced gradient (reduce_shard_grads) */
    for (int u = first; u <= last && !rc; u++)
        if (e->us[u].layout.shard > 0 &&
            (rc = copy_out(e, u, reduce_shard_grads(e, u, &t), t, optimizer_update_count(e, u))))
            rc = engine_backend_error(e, rc, err, "copying out the gradient of %s",
                                      e->model->units[u]->name);
    for (int u = first; u <= last && !rc; u++)
        if (e->us[u].layout.shard > 0)
            rc = update_on_host(e, u, &h, t, err);
    /* the compute stream's next work reads the parameters copied back */
    if (!rc && (rc = fence(e, e->us[last].host_stage_ready, ZERO_STREAM_COMM, ZERO_STREAM_COMPUTE)))
        rc = engine_backend_error(e, rc, err, "ordering the copied-back parameters");
    return rc;
}

/* Parameter initialization with a counter-based generator.
 *
 * Every element's value is a pure function of (seed, parameter name, element
 * index), so it does not depend on the world size, the stage, or which rank
 * computes it: each rank initializes only its own shard and nobody ever holds
 * the whole model (stage 3). The normal values take Box-Muller's log and cos from
 * src/base/exact_math.h (sqrt is correctly rounded by IEEE-754), so they are the same bits
 * on every machine. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "init_rng.h"
#include "placement.h"
#include "base/exact_math.h"
#include "nvme_swap.h"

#define INIT_CHUNK 65536 /* elements generated on the host per upload */

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t name_hash(const char *unit, const char *param)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a over "unit.param" */
    for (const char *s = unit; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    h = (h ^ '.') * 0x100000001b3ULL;
    for (const char *s = param; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

static float init_value(const struct zero_param_spec *p, uint64_t key, int64_t index)
{
    uint64_t h = splitmix64(key + (uint64_t)index * 0x9e3779b97f4a7c15ULL);
    double u1 = (double)((h >> 40) + 1) * 0x1p-24;        /* (0, 1] */
    double u2 = (double)((h >> 16) & 0xffffff) * 0x1p-24; /* [0, 1) */
    switch (p->init) {
    case ZERO_INIT_ZEROS:
        return 0.0f;
    case ZERO_INIT_ONES:
        return 1.0f;
    case ZERO_INIT_UNIFORM:
        return (float)((2.0 * u2 - 1.0) * p->init_a);
    case ZERO_INIT_NORMAL:
        return (float)(sqrt(-2.0 * exact_log(u1)) * exact_cos(6.283185307179586 * u2) * p->init_a);
    }
    return 0.0f;
}

/* Fills flat elements [begin, end) of unit u, writing them at dst (backend
 * memory, element `begin` at dst[0]). Padding between and after parameters is zero. */
static int init_range(struct zero_engine *e, int u, int64_t begin, int64_t end, float *dst,
                      float *chunk, struct zero_error *err)
{
    const struct zero_unit *unit = e->model->units[u];
    const struct zero_unit_layout *l = &e->us[u].layout;
    uint64_t keys[ZERO_UNIT_MAX_PARAMS];
    for (int p = 0; p < unit->nparams; p++)
        keys[p] = splitmix64(e->cfg.libzero.seed ^ name_hash(unit->name, unit->params[p].name));
    for (int64_t at = begin; at < end; at += INIT_CHUNK) {
        int64_t n = end - at < INIT_CHUNK ? end - at : INIT_CHUNK;
        memset(chunk, 0, (size_t)n * sizeof(float));
        for (int p = 0; p < unit->nparams; p++) {
            int64_t p0 = l->offset[p], p1 = p0 + l->numel[p];
            int64_t lo = p0 > at ? p0 : at, hi = p1 < at + n ? p1 : at + n;
            for (int64_t i = lo; i < hi; i++)
                chunk[i - at] = init_value(&unit->params[p], keys[p], i - p0);
        }
        int rc = e->be->from_host(e->bself, dst + (at - begin), chunk, (size_t)n * sizeof(float));
        if (rc)
            return engine_backend_error(e, rc, err, "initializing unit %s", unit->name);
    }
    return ZERO_OK;
}

/* Each rank fills the fp32 master of its part (stage 0: the whole buffer;
 * stages 1-3: its shard), then the compute-dtype parameters are cast from it
 * (when the master is a buffer of its own). Stages 1-2 then all-gather the
 * parameters. */
int engine_init_params(struct zero_engine *e, struct zero_error *err)
{
    float *chunk = malloc(INIT_CHUNK * sizeof(float));
    if (!chunk)
        return zero_fail(err, ZERO_ENOMEM, "rank %d: initialization chunk", e->rank);
    int rc = ZERO_OK;
    for (int u = 0; u < e->nunits && !rc; u++) {
        struct unit_states *s = &e->us[u];
        int64_t begin = engine_update_begin(e, u), end = begin + engine_update_count(e, u);
        if ((rc = nvme_unit_load(e, u, 0, err)))
            break;
        float *master = engine_master(e, u);
        rc = init_range(e, u, begin, end, master, chunk, err);
        if (!rc && engine_separate_master(e)) {
            void *params = engine_at(e, s->params, engine_update_offset(e, u));
            if ((rc = e->be->cast(e->bself, params, e->cdt, master, ZERO_F32,
                                  (size_t)(end - begin))))
                rc = engine_backend_error(e, rc, err, "casting initial parameters of %s",
                                          e->model->units[u]->name);
        }
        /* fast_init: the optimizer state stays the sparse swap file's zeros */
        int fast = e->cfg.zero_optimization.offload_optimizer.fast_init;
        int rs = nvme_unit_store(e, u, rc ? 0 : fast ? 2 : 1, err);
        rc = rc ? rc : rs;
    }
    free(chunk);
    return rc;
}

/* ZeRO++ hpZ: the secondary partition within a group (hpz.h). */
#include "hpz.h"

#include "engine_internal.h"
#include "zero/backend_groups.h"

static const char *uname(const struct zero_engine *e, int u)
{
    return e->model->units[u]->name;
}

int hpz_open(struct zero_engine *e, struct zero_error *err)
{
    struct hpz_plan *h = &e->hpz;
    h->size = e->cfg.zero_optimization.zero_hpz_partition_size;
    h->rank = 0;
    h->group = NULL;
    h->epoch = 1;
    if (h->size <= 1) {
        h->size = 1;
        return ZERO_OK;
    }
    if (e->be->groups == NULL)
        return zero_fail(err, ZERO_ENOTSUP,
                         "zero_optimization.zero_hpz_partition_size = %d: backend '%s' has no "
                         "groups (zero/backend_groups.h), which hpZ's in-group gathers need",
                         h->size, e->be->name);
    /* the topology, for the report: whether the groups are the nodes */
    h->node_group = e->be->groups->node_group_size(e->bself);
    /* groups of g consecutive ranks: rank / g names this rank's */
    int rc = e->be->groups->group_open(e->bself, e->rank / h->size, &h->group);
    if (rc)
        return engine_backend_error(e, rc, err, "opening the hpZ group of %d ranks", h->size);
    int got = e->be->groups->group_size(e->bself, h->group);
    h->rank = e->be->groups->group_rank(e->bself, h->group);
    if (got != h->size || h->rank != e->rank % h->size)
        return zero_fail(err, ZERO_EBACKEND,
                         "rank %d: the backend's hpZ group has %d ranks (rank %d in it); "
                         "expected %d (rank %d)",
                         e->rank, got, h->rank, h->size, e->rank % h->size);
    return ZERO_OK;
}

void hpz_close(struct zero_engine *e)
{
    if (e->hpz.group != NULL)
        e->be->groups->group_close(e->bself, e->hpz.group);
    e->hpz.group = NULL;
}

void hpz_params_changed(struct zero_engine *e)
{
    e->hpz.epoch++;
}

int hpz_can_gather(const struct zero_engine *e, int u)
{
    return e->hpz.size > 1 && e->us[u].hpz.secondary != NULL && e->us[u].hpz.epoch == e->hpz.epoch;
}

int hpz_gather(struct zero_engine *e, int u, struct zero_request **req, struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    size_t part = (size_t)(s->layout.padded / e->hpz.size);
    int rc = e->be->groups->group_all_gather(e->bself, e->hpz.group, s->hpz.secondary,
                                             s->stage3.gathered, e->cdt, part, req);
    return rc ? engine_backend_error(e, rc, err, "hpZ in-group all-gather of unit %s", uname(e, u))
              : ZERO_OK;
}

int hpz_refresh(struct zero_engine *e, int u, struct zero_error *err)
{
    struct unit_states *s = &e->us[u];
    if (e->hpz.size <= 1 || s->stage3.persistent || s->layout.padded == 0)
        return ZERO_OK; /* persistent units stay whole: they are never gathered again */
    /* the whole buffer pads to a multiple of N align, and g divides N */
    size_t part = (size_t)(s->layout.padded / e->hpz.size), bytes = part * e->csize;
    int rc;
    if (s->hpz.secondary == NULL &&
        (rc = engine_alloc(e, bytes, ZERO_TAG_HPZ, &s->hpz.secondary, "hpZ secondary shard", err)))
        return zero_error_wrap(err, "unit %s: ", uname(e, u));
    const void *mine = engine_at(e, s->stage3.gathered, (int64_t)part * e->hpz.rank);
    if ((rc = e->be->copy(e->bself, s->hpz.secondary, mine, bytes)))
        return engine_backend_error(e, rc, err, "hpZ secondary shard of unit %s", uname(e, u));
    s->hpz.epoch = e->hpz.epoch;
    return ZERO_OK;
}

void hpz_unit_destroy(struct zero_engine *e, int u)
{
    engine_free(e, e->us[u].hpz.secondary);
    e->us[u].hpz.secondary = NULL;
}

/* The backend registry and zero_device: find a backend by name, check its table
 * (backend_check.c), probe it, open it with the device's own ledger and counters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zero/backend.h"
#include "zero/error.h"

/* The backends built into the library: add one name here (and guard it with the
 * configure result that builds it). The table symbol is zero_backend_<name>. */
#ifdef ZERO_HAVE_CUDA
#define ZERO_BACKENDS(X) X(cpu) X(cuda)
#else
#define ZERO_BACKENDS(X) X(cpu)
#endif

#define BACKEND_DECLARE(n) extern const struct zero_backend zero_backend_##n;
#define BACKEND_ENTRY(n) &zero_backend_##n,
#define BACKEND_NAME(n) #n,

ZERO_BACKENDS(BACKEND_DECLARE)

static const struct zero_backend *const backends[] = {ZERO_BACKENDS(BACKEND_ENTRY)};
static const char *const backend_names[] = {ZERO_BACKENDS(BACKEND_NAME) NULL};

#define BACKEND_COUNT (sizeof(backends) / sizeof(backends[0]))

const struct zero_backend *zero_backend_find(const char *name)
{
    for (size_t i = 0; name != NULL && i < BACKEND_COUNT; i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}

const char *const *zero_backend_names(void)
{
    return backend_names;
}

/* "cpu, cuda" */
static void format_names(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < BACKEND_COUNT && used + 1 < len; i++) {
        const char *parts[2] = {i ? ", " : "", backends[i]->name};
        for (int k = 0; k < 2; k++) /* copied, not printed: a long list is cut, not warned */
            for (const char *c = parts[k]; *c && used + 1 < len; c++)
                buf[used++] = *c;
        buf[used] = '\0';
    }
}

int zero_device_open(struct zero_device **dev, const char *name, void *comm,
                     const struct zero_backend_options *opt, struct zero_error *err)
{
    *dev = NULL;
    const struct zero_backend *be = zero_backend_find(name);
    if (be == NULL) {
        char names[256];
        format_names(names, sizeof(names));
        return zero_fail(err, ZERO_EINVAL, "backend '%s' is not built in (available: %s)",
                         name ? name : "(null)", names);
    }
    char why[ZERO_ERRMSG_LEN] = "";
    int rc = zero_backend_check(be, why, sizeof why);
    if (rc != ZERO_OK)
        return zero_fail(err, rc, "%s", why);
    rc = be->probe(why, sizeof(why));
    if (rc != ZERO_OK)
        return zero_fail(err, rc, "backend '%s' cannot run here: %s", be->name, why);

    struct zero_device *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return zero_fail(err, ZERO_ENOMEM, "backend '%s': out of memory for the device", be->name);
    zero_ledger_reset(&d->ledger);
    zero_ledger_reset(&d->host_ledger);
    struct zero_backend_options o = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    if (opt != NULL)
        o = *opt;
    o.ledger = &d->ledger;
    o.host_ledger = &d->host_ledger;
    o.comm_stats = &d->comm_stats;

    rc = be->open(&o, comm, &d->self, why, sizeof(why));
    if (rc != ZERO_OK) {
        free(d);
        return zero_fail(err, rc, "backend '%s': open failed: %s", be->name, why);
    }
    d->be = be;
    d->rank = be->rank(d->self);
    d->size = be->size(d->self);
    *dev = d;
    return ZERO_OK;
}

void zero_device_close(struct zero_device *dev)
{
    if (dev == NULL)
        return;
    dev->be->close(dev->self);
    free(dev);
}

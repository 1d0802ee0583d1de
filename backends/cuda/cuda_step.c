/* What a step keeps on the device so that its passes need no host wait: the loss
 * summed over the micro-steps (loss_accumulate) and the deferred range checks of token
 * ids and labels (graph_open turns them on; input_errors reads them at the step's
 * end). See include/zero/backend.h and docs/gpu.md, "CUDA Graphs".
 *
 * A deferred check is one kernel on the compute stream (cuda_step_kernels.cu): it
 * records the step's first bad id (which check, the row, the id) in a device record
 * that only the first finding writes, and replaces every bad id by 0, so that the
 * gather, the classifier and the embedding backward after it read and write inside
 * their tables. Which check it was is a small number, a site: the host keeps each
 * site's entry name, noun and limit, so the message at the step's end is the one the
 * immediate check (cuda_layer_ops.c) gives. */
#include <stdlib.h>
#include <string.h>

#include "cuda_launch.h"
#include "cuda_ops.h"

#define MAX_SITES 64

struct cuda_deferred {
    struct cuda_id_record *dev;  /* (1) device */
    struct cuda_id_record *host; /* (1) pinned mirror */
    struct site {
        const char *what, *noun; /* string literals of the entries */
        int64_t limit;
    } site[MAX_SITES];
    int nsites;
};

int cuda_loss_accumulate(void *self, double *acc, float *last, const float *losses, size_t n,
                         int64_t rows)
{
    struct cuda_state *s = self;
    if (acc == NULL || last == NULL || (losses == NULL && n > 0) || rows < 1)
        return cuda_fail(s, ZERO_EINVAL, "loss_accumulate: %s",
                         rows < 1 ? "rows must be positive" : "a NULL buffer");
    return cuda_check(s, cuda_launch_loss_accumulate(s->compute, acc, last, losses, n, rows),
                      "loss_accumulate");
}

/* all ones: site -1, nothing recorded */
static int clear_record(struct cuda_state *s)
{
    return cuda_check(
        s, cudaMemsetAsync(s->deferred->dev, 0xff, sizeof(*s->deferred->dev), s->compute),
        "deferred input checks: clearing the record");
}

int cuda_deferred_open(struct cuda_state *s)
{
    if (s->deferred != NULL)
        return ZERO_OK;
    struct cuda_deferred *d = calloc(1, sizeof(*d));
    if (d == NULL)
        return cuda_fail(s, ZERO_ENOMEM, "deferred input checks: out of host memory");
    s->deferred = d;
    size_t have = 0;
    int rc = cuda_buffer_grow(s, (void **)&d->dev, &have, sizeof(*d->dev), ZERO_TAG_WORKSPACE,
                              "deferred input checks");
    if (rc == ZERO_OK)
        rc = cuda_pinned_alloc(s, sizeof(*d->host), ZERO_TAG_WORKSPACE, (void **)&d->host);
    if (rc == ZERO_OK)
        rc = clear_record(s);
    if (rc != ZERO_OK)
        cuda_deferred_close(s);
    return rc;
}

void cuda_deferred_close(struct cuda_state *s)
{
    struct cuda_deferred *d = s->deferred;
    if (d == NULL)
        return;
    size_t have = d->dev != NULL ? sizeof(*d->dev) : 0;
    cuda_buffer_free(s, (void **)&d->dev, &have, ZERO_TAG_WORKSPACE);
    cuda_pinned_free(s, d->host, sizeof(*d->host), ZERO_TAG_WORKSPACE);
    free(d);
    s->deferred = NULL;
}

/* The site of (what, noun, limit), added on first use; the last one if the table is
 * full (its message then names that site's entry: never the case with the engine's
 * few checks). */
static int site_of(struct cuda_deferred *d, const char *what, const char *noun, int64_t limit)
{
    for (int i = 0; i < d->nsites; i++)
        if (d->site[i].what == what && d->site[i].noun == noun && d->site[i].limit == limit)
            return i;
    if (d->nsites == MAX_SITES)
        return MAX_SITES - 1;
    d->site[d->nsites] = (struct site){.what = what, .noun = noun, .limit = limit};
    return d->nsites++;
}

int cuda_defer_ids(struct cuda_state *s, const char *what, const char *noun, const int32_t *ids,
                   int64_t rows, int64_t limit)
{
    if (rows <= 0)
        return ZERO_OK;
    /* backend.h: a deferred check rewrites a bad id in the caller's buffer */
    int32_t *writable = (int32_t *)(uintptr_t)ids;
    int site = site_of(s->deferred, what, noun, limit);
    return cuda_check(
        s, cuda_launch_defer_ids(s->compute, writable, rows, limit, site, s->deferred->dev), what);
}

int cuda_input_errors(void *self)
{
    struct cuda_state *s = self;
    struct cuda_deferred *d = s->deferred;
    if (d == NULL)
        return ZERO_OK;
    if (s->capturing)
        return cuda_fail(s, ZERO_EINVAL, "input_errors: called inside a capture");
    cudaError_t e =
        cudaMemcpyAsync(d->host, d->dev, sizeof(*d->host), cudaMemcpyDeviceToHost, s->compute);
    if (e == cudaSuccess)
        e = cuda_host_waits(s);
    int rc = cuda_check(s, e, "input_errors: reading the record");
    if (rc != ZERO_OK)
        return rc;
    struct cuda_id_record got = *d->host;
    if (got.site < 0)
        return ZERO_OK;
    if ((rc = clear_record(s)) != ZERO_OK)
        return rc;
    const struct site *at = &d->site[got.site < d->nsites ? got.site : d->nsites - 1];
    return cuda_fail(s, ZERO_EINVAL, "%s: row %llu: %s %d is outside [0, %lld)", at->what, got.row,
                     at->noun, (int)got.value, (long long)at->limit);
}

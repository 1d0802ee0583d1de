/* Device memory of the cuda backend: a caching allocator in front of cudaMalloc,
 * copies, fill, pinned staging memory, streams and events.
 *
 * The engine frees and reallocates the same activation, gradient and gathered-unit
 * buffers every step; cudaMalloc and cudaFree are slow and cudaFree synchronizes the
 * whole device, so freed blocks are kept by size class and handed out again. Size
 * classes: multiples of 512 bytes up to 1 MiB, above that 8 classes per power of two
 * (at most 12.5% slack). Reuse is stream-ordered like PyTorch's allocator: kernels
 * and synchronous copies run on the compute stream, and the comm stream waits for the
 * compute stream before each collective and before each copy_async queued there, so
 * a block handed out again is only touched after the work queued on its previous
 * life. (The other direction is the engine's: a block last used on the comm stream
 * is freed only after wait() or a fence made the compute stream wait for that use.)
 *
 * CUDA Graphs (cuda_graph.c): while a capture is open, blocks come from the graphs'
 * pool, a second set of cached blocks that only captures take from, and a pool block
 * freed (inside a capture or not) returns to the pool: a block a graph's kernels use
 * is never handed to work outside the graphs. Inside a capture nothing here may make
 * the host wait: a miss reaches cudaMalloc in relaxed capture mode (the block stays in
 * the pool; it is counted as a blocker), the cache is never emptied or cudaFree'd, and
 * a grown buffer refuses to grow.
 *
 * The ledger counts live blocks at their requested size, as the cpu backend does;
 * cached blocks are not in use. ZERO_CUDA_CACHE_MB bounds the cache (default: no
 * bound; when cudaMalloc fails the cache is emptied and the call retried).
 *
 * Every copy says cudaMemcpyDefault: unified addressing tells device memory from
 * host_alloc memory (cuda_host.c) and ordinary host memory by the pointer, so copy,
 * to_host, from_host and copy_async accept any of them on either side. */
#include <stdlib.h>
#include <string.h>

#include "cuda_launch.h"
#include "cuda_ops.h"
#include "zero_cuda_profile.h"
#include "zero/knobs.h"

struct cuda_block {
    uintptr_t ptr; /* 0: empty slot of the live table */
    size_t bytes;  /* requested */
    size_t klass;  /* allocated */
    int tag;
    int pool; /* taken from the graphs' pool */
};

struct cuda_cache {
    struct cuda_block *live; /* open-addressing table keyed by ptr, power-of-two size */
    size_t live_cap, live_n;
    struct cuda_block *cached; /* free blocks kept for reuse (ptr, klass) */
    size_t cached_n, cached_cap;
    size_t held, limit; /* bytes in the cache, and its bound */
    /* the graphs' pool: free blocks only a capture takes (ptr, klass); no bound */
    struct cuda_block *pooled;
    size_t pooled_n, pooled_cap;
    int pool_open, pool_primed;
};

static size_t size_class(size_t bytes)
{
    const size_t small = (size_t)1 << 20;
    if (bytes <= small)
        return bytes == 0 ? 512 : (bytes + 511) / 512 * 512;
    size_t top = small;
    while (top <= bytes / 2)
        top *= 2; /* top: the largest power of two <= bytes */
    size_t step = top / 8;
    return (bytes + step - 1) / step * step;
}

static struct cuda_cache *cache_of(struct cuda_state *s)
{
    if (s->cache != NULL)
        return s->cache;
    struct cuda_cache *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    const char *mb = zero_knob(ZERO_KNOB_CUDA_CACHE_MB);
    c->limit = mb && *mb ? (size_t)strtoull(mb, NULL, 10) << 20 : SIZE_MAX;
    s->cache = c;
    return c;
}

static size_t slot_of(uintptr_t p, size_t cap)
{
    uint64_t h = (uint64_t)p * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 17) & (cap - 1);
}

static int live_insert(struct cuda_cache *c, struct cuda_block b);

static int live_grow(struct cuda_cache *c)
{
    size_t cap = c->live_cap ? c->live_cap * 2 : 1024;
    struct cuda_block *old = c->live;
    size_t old_cap = c->live_cap;
    c->live = calloc(cap, sizeof(*c->live));
    if (c->live == NULL) {
        c->live = old;
        return -1;
    }
    c->live_cap = cap;
    c->live_n = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].ptr != 0)
            live_insert(c, old[i]);
    free(old);
    return 0;
}

static int live_insert(struct cuda_cache *c, struct cuda_block b)
{
    if ((c->live_n + 1) * 2 > c->live_cap && live_grow(c) != 0)
        return -1;
    size_t i = slot_of(b.ptr, c->live_cap);
    while (c->live[i].ptr != 0)
        i = (i + 1) & (c->live_cap - 1);
    c->live[i] = b;
    c->live_n++;
    return 0;
}

/* p's slot in the live table; -1 if p is not live. */
static long live_find(const struct cuda_cache *c, uintptr_t p)
{
    if (c == NULL || c->live_cap == 0 || p == 0)
        return -1;
    size_t i = slot_of(p, c->live_cap);
    while (c->live[i].ptr != p) {
        if (c->live[i].ptr == 0)
            return -1;
        i = (i + 1) & (c->live_cap - 1);
    }
    return (long)i;
}

/* Removes p from the live table into *out; -1 if p is not live. */
static int live_remove(struct cuda_cache *c, uintptr_t p, struct cuda_block *out)
{
    long found = live_find(c, p);
    if (found < 0)
        return -1;
    size_t i = (size_t)found;
    *out = c->live[i];
    c->live[i].ptr = 0;
    c->live_n--;
    /* re-place the rest of the probe run so that lookups still find it */
    for (size_t j = (i + 1) & (c->live_cap - 1); c->live[j].ptr != 0;
         j = (j + 1) & (c->live_cap - 1)) {
        struct cuda_block b = c->live[j];
        c->live[j].ptr = 0;
        c->live_n--;
        live_insert(c, b);
    }
    return 0;
}

/* A free block of class klass from list (b, *n), newest first; 0 if none. */
static uintptr_t list_take(struct cuda_block *b, size_t *n, size_t klass)
{
    for (size_t i = *n; i > 0; i--) {
        if (b[i - 1].klass != klass)
            continue;
        uintptr_t p = b[i - 1].ptr;
        b[i - 1] = b[--*n];
        return p;
    }
    return 0;
}

static int list_put(struct cuda_block **b, size_t *n, size_t *cap, uintptr_t p, size_t klass)
{
    if (*n == *cap) {
        size_t grown = *cap ? *cap * 2 : 256;
        struct cuda_block *a = realloc(*b, grown * sizeof(*a));
        if (a == NULL)
            return 0;
        *b = a;
        *cap = grown;
    }
    (*b)[(*n)++] = (struct cuda_block){.ptr = p, .klass = klass};
    return 1;
}

static uintptr_t cache_take(struct cuda_cache *c, size_t klass)
{
    uintptr_t p = list_take(c->cached, &c->cached_n, klass);
    if (p != 0)
        c->held -= klass;
    return p;
}

/* bound: 0 inside a capture, where a block that does not fit cannot be cudaFree'd */
static int cache_put(struct cuda_cache *c, uintptr_t p, size_t klass, int bound)
{
    if (bound && (c->held + klass > c->limit || c->held + klass < c->held))
        return 0;
    if (!list_put(&c->cached, &c->cached_n, &c->cached_cap, p, klass))
        return 0;
    c->held += klass;
    return 1;
}

/* Returns every cached block to CUDA (after the device is idle). */
static void cache_empty(struct cuda_cache *c)
{
    if (c->cached_n > 0)
        cudaDeviceSynchronize();
    for (size_t i = 0; i < c->cached_n; i++)
        cudaFree((void *)c->cached[i].ptr);
    c->cached_n = 0;
    c->held = 0;
}

void cuda_memory_fini(struct cuda_state *s)
{
    struct cuda_cache *c = s->cache;
    if (c == NULL)
        return;
    cache_empty(c);
    cuda_memory_pool_close(s);
    for (size_t i = 0; i < c->live_cap; i++) /* blocks the caller never freed */
        if (c->live[i].ptr != 0)
            cudaFree((void *)c->live[i].ptr);
    free(c->live);
    free(c->cached);
    free(c->pooled);
    free(c);
    s->cache = NULL;
}

void cuda_memory_pool_open(struct cuda_state *s)
{
    struct cuda_cache *c = cache_of(s);
    if (c != NULL)
        c->pool_open = 1;
}

void cuda_memory_pool_prime(struct cuda_state *s)
{
    struct cuda_cache *c = s->cache;
    if (c == NULL || !c->pool_open || c->pool_primed)
        return;
    cache_empty(c);
    c->pool_primed = 1;
}

void cuda_memory_pool_close(struct cuda_state *s)
{
    struct cuda_cache *c = s->cache;
    if (c == NULL || !c->pool_open)
        return;
    if (c->pooled_n > 0)
        cudaDeviceSynchronize(); /* the graphs that used them are done */
    for (size_t i = 0; i < c->pooled_n; i++)
        cudaFree((void *)c->pooled[i].ptr);
    c->pooled_n = 0;
    c->pool_open = c->pool_primed = 0; /* live pool blocks return to the ordinary cache */
}

/* A fresh block of klass bytes. Inside a capture in relaxed mode, so that it does not
 * invalidate the capture (the block stays in the pool: no replay of the graph needs it
 * allocated again), and without emptying the cache (that would wait for the device). */
static int device_malloc(struct cuda_state *s, struct cuda_cache *c, size_t bytes, size_t klass,
                         enum zero_tag tag, uintptr_t *out)
{
    void *fresh = NULL;
    cudaError_t e;
    if (s->capturing) {
        /* in the capture's own (thread-local) mode cudaMalloc is refused and invalidates
         * the capture: relaxed for this call only, then the mode is put back */
        enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
        e = cudaThreadExchangeStreamCaptureMode(&mode);
        if (e == cudaSuccess) {
            e = cudaMalloc(&fresh, klass);
            cudaError_t back = cudaThreadExchangeStreamCaptureMode(&mode);
            if (e == cudaSuccess && back != cudaSuccess) {
                cudaFree(fresh); /* not captured: relaxed mode is still on for this call */
                fresh = NULL;
                e = back;
            }
        }
        s->capture_blockers++;
    } else {
        e = cudaMalloc(&fresh, klass);
    }
    size_t held = 0;
    if (e != cudaSuccess && !s->capturing) {
        (void)cudaGetLastError();
        held = c->held;
        cache_empty(c);
        e = cudaMalloc(&fresh, klass);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        return cuda_fail(s, ZERO_ENOMEM,
                         "alloc: device %d out of memory for %zu bytes (%s): %zu of %zu "
                         "bytes free after returning %zu cached bytes; %lld bytes live%s",
                         s->device, bytes, zero_tag_name(tag), free_b, total_b, held,
                         (long long)s->ledger->current_total,
                         s->capturing ? " (inside a captured pass: the cache was kept)" : "");
    }
    *out = (uintptr_t)fresh;
    s->device_mallocs++;
    return ZERO_OK;
}

int cuda_alloc(void *self, size_t bytes, enum zero_tag tag, void **dev)
{
    struct cuda_state *s = self;
    *dev = NULL;
    if ((int)tag < 0 || tag >= ZERO_TAG_COUNT)
        return cuda_fail(s, ZERO_EINVAL, "alloc: unknown tag %d", (int)tag);
    if (bytes > SIZE_MAX / 2)
        return cuda_fail(s, ZERO_ENOMEM, "alloc: %zu bytes (%s) is too large", bytes,
                         zero_tag_name(tag));
    struct cuda_cache *c = cache_of(s);
    if (c == NULL)
        return cuda_fail(s, ZERO_ENOMEM, "alloc: out of host memory for the allocator");
    size_t klass = size_class(bytes);
    int pool = s->capturing && c->pool_open;
    uintptr_t p = pool ? list_take(c->pooled, &c->pooled_n, klass) : cache_take(c, klass);
    int rc = p == 0 ? device_malloc(s, c, bytes, klass, tag, &p) : ZERO_OK;
    if (rc != ZERO_OK)
        return rc;
    if (live_insert(
            c, (struct cuda_block){
                   .ptr = p, .bytes = bytes, .klass = klass, .tag = (int)tag, .pool = pool}) != 0) {
        if (!(pool ? list_put(&c->pooled, &c->pooled_n, &c->pooled_cap, p, klass)
                   : cache_put(c, p, klass, !s->capturing)) &&
            !s->capturing)
            cudaFree((void *)p);
        return cuda_fail(s, ZERO_ENOMEM, "alloc: out of host memory for the block table");
    }
    zero_ledger_add(s->ledger, tag, (int64_t)bytes);
    *dev = (void *)p;
    return ZERO_OK;
}

int cuda_free(void *self, void *dev)
{
    struct cuda_state *s = self;
    if (dev == NULL)
        return ZERO_OK;
    struct cuda_block b;
    if (s->cache == NULL || live_remove(s->cache, (uintptr_t)dev, &b) != 0) {
        if (cuda_is_host_memory(s, dev))
            return cuda_fail(s, ZERO_EINVAL, "free: %p is host memory (host_free frees it)", dev);
        return cuda_fail(s, ZERO_EINVAL,
                         "free: %p is not a live block of this backend (freed twice?)", dev);
    }
    zero_ledger_add(s->ledger, (enum zero_tag)b.tag, -(int64_t)b.bytes);
    struct cuda_cache *c = s->cache;
    int kept = b.pool && c->pool_open
                   ? list_put(&c->pooled, &c->pooled_n, &c->pooled_cap, b.ptr, b.klass)
                   : cache_put(c, b.ptr, b.klass, !s->capturing);
    if (!kept && s->capturing) /* no host memory to keep it: lost until close, never reused */
        return cuda_fail(s, ZERO_ENOMEM, "free: out of host memory for the cache (in a capture)");
    if (!kept) {
        cudaError_t e = cudaFree(dev); /* synchronizes the device: the block is idle */
        if (e != cudaSuccess)
            return cuda_check(s, e, "free: cudaFree");
    }
    return ZERO_OK;
}

int cuda_is_device_block(struct cuda_state *s, const void *p)
{
    return live_find(s->cache, (uintptr_t)p) >= 0;
}

int cuda_buffer_grow(struct cuda_state *s, void **buf, size_t *have, size_t need, enum zero_tag tag,
                     const char *what)
{
    if (need <= *have)
        return ZERO_OK;
    if (s->capturing) /* the kernels captured so far read the old buffer */
        return cuda_fail(s, ZERO_ENOTSUP,
                         "%s: would grow from %zu to %zu bytes inside a captured pass; "
                         "libzero.cuda_graphs needs every micro-step to have the shapes of the "
                         "first step's",
                         what, *have, need);
    cuda_buffer_free(s, buf, have, tag); /* cudaFree waits for the device */
    cudaError_t e = cudaMalloc(buf, need);
    if (e != cudaSuccess) {
        *buf = NULL;
        (void)cudaGetLastError();
        return cuda_fail(s, ZERO_ENOMEM, "%s: no device memory for %zu bytes: %s", what, need,
                         cudaGetErrorString(e));
    }
    *have = need;
    s->device_mallocs++;
    zero_ledger_add(s->ledger, tag, (int64_t)need);
    return ZERO_OK;
}

void cuda_buffer_free(struct cuda_state *s, void **buf, size_t *have, enum zero_tag tag)
{
    if (*buf == NULL)
        return;
    cudaFree(*buf);
    zero_ledger_add(s->ledger, tag, -(int64_t)*have);
    *buf = NULL;
    *have = 0;
}

int cuda_pinned_alloc(struct cuda_state *s, size_t bytes, enum zero_tag tag, void **host)
{
    cudaError_t e = cudaMallocHost(host, bytes > 0 ? bytes : 1);
    if (e != cudaSuccess) {
        *host = NULL;
        (void)cudaGetLastError();
        return cuda_fail(s, ZERO_ENOMEM, "pinned host memory: %zu bytes (%s): %s", bytes,
                         zero_tag_name(tag), cudaGetErrorString(e));
    }
    s->pinned_mallocs++;
    zero_ledger_add(s->ledger, tag, (int64_t)bytes);
    return ZERO_OK;
}

void cuda_pinned_free(struct cuda_state *s, void *host, size_t bytes, enum zero_tag tag)
{
    if (host == NULL)
        return;
    cudaFreeHost(host);
    zero_ledger_add(s->ledger, tag, -(int64_t)bytes);
}

/* the host waits for the compute stream: counted, as a CUDA Graph cannot hold it; inside
 * a capture it is refused and the capture marked broken (graph_end launches nothing) */
cudaError_t cuda_host_waits(struct cuda_state *s)
{
    s->stream_syncs++;
    if (s->capturing) {
        s->capture_blockers++;
        s->capture_broken = 1;
        return cudaErrorStreamCaptureUnsupported;
    }
    return cudaStreamSynchronize(s->compute);
}

int zero_cuda_graph_blockers(void *self, struct zero_cuda_blockers *out)
{
    const struct cuda_state *s = self;
    if (s == NULL || out == NULL)
        return ZERO_EINVAL;
    out->device_mallocs = s->device_mallocs;
    out->pinned_mallocs = s->pinned_mallocs;
    out->stream_syncs = s->stream_syncs;
    out->in_capture = s->capture_blockers;
    out->graph_launches = s->graph_launches;
    out->graph_updates = s->graph_updates;
    out->graph_instantiations = s->graph_instantiations;
    return ZERO_OK;
}

int cuda_read_flag(struct cuda_state *s, const char *what, unsigned long long *out)
{
    cudaError_t e = cudaMemcpyAsync(s->flag_host, s->flag_dev, sizeof(*s->flag_host),
                                    cudaMemcpyDeviceToHost, s->compute);
    if (e == cudaSuccess)
        e = cuda_host_waits(s);
    if (e != cudaSuccess)
        return cuda_check(s, e, what);
    *out = *s->flag_host;
    return ZERO_OK;
}

int cuda_comm_after_compute(struct cuda_state *s, const char *what)
{
    cudaError_t e = cudaEventRecord(s->compute_ready, s->compute);
    if (e == cudaSuccess)
        e = cudaStreamWaitEvent(s->comm_stream, s->compute_ready, 0);
    return cuda_check(s, e, what);
}

/* ---- copies ---- */

static cudaStream_t stream_of(struct cuda_state *s, enum zero_stream st)
{
    return st == ZERO_STREAM_COMM ? s->comm_stream : s->compute;
}

static int check_stream(struct cuda_state *s, const char *what, enum zero_stream st)
{
    if (st != ZERO_STREAM_COMPUTE && st != ZERO_STREAM_COMM)
        return cuda_fail(s, ZERO_EINVAL, "%s: unknown stream %d", what, (int)st);
    return ZERO_OK;
}

static int overlap(const void *a, const void *b, size_t bytes)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return bytes > 0 && x < y + bytes && y < x + bytes;
}

/* device or host_alloc memory on either side, memmove semantics (overlapping copies go
 * through a device temporary) */
static int copy(struct cuda_state *s, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0 || dst == src)
        return ZERO_OK;
    if (!overlap(dst, src, bytes))
        return cuda_check(s, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s->compute),
                          "copy: cudaMemcpyAsync");
    void *tmp = NULL;
    int rc = cuda_alloc(s, bytes, ZERO_TAG_WORKSPACE, &tmp);
    if (rc == ZERO_OK)
        rc = cuda_check(s, cudaMemcpyAsync(tmp, src, bytes, cudaMemcpyDefault, s->compute),
                        "copy: cudaMemcpyAsync (to temporary)");
    if (rc == ZERO_OK)
        rc = cuda_check(s, cudaMemcpyAsync(dst, tmp, bytes, cudaMemcpyDefault, s->compute),
                        "copy: cudaMemcpyAsync (from temporary)");
    int rc2 = cuda_free(s, tmp);
    return rc != ZERO_OK ? rc : rc2;
}

int cuda_copy(void *self, void *dst, const void *src, size_t bytes)
{
    struct cuda_state *s = self;
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_COPY);
    return cuda_prof_end(s, &pm, 0, 2.0 * (double)bytes, copy(s, dst, src, bytes));
}

int cuda_to_host(void *self, void *host, const void *dev, size_t bytes)
{
    struct cuda_state *s = self;
    if (bytes == 0)
        return ZERO_OK;
    if (s->capturing) /* refused before the copy: pageable memory cannot be captured */
        return cuda_check(s, cuda_host_waits(s), "to_host");
    cudaError_t e = cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDefault, s->compute);
    if (e == cudaSuccess)
        e = cuda_host_waits(s);
    return cuda_check(s, e, "to_host");
}

int cuda_from_host(void *self, void *dev, const void *host, size_t bytes)
{
    struct cuda_state *s = self;
    if (bytes == 0)
        return ZERO_OK;
    if (s->capturing) /* refused before the copy: pageable memory cannot be captured */
        return cuda_check(s, cuda_host_waits(s), "from_host");
    cudaError_t e = cudaMemcpyAsync(dev, host, bytes, cudaMemcpyDefault, s->compute);
    if (e == cudaSuccess)
        e = cuda_host_waits(s);
    return cuda_check(s, e, "from_host");
}

/* Queued on stream st behind the work already there; the caller's event_record on st
 * marks its completion. Between host_alloc and device memory this is a DMA that
 * overlaps the kernels queued on the compute stream after it. On the comm stream it
 * first waits for the compute work queued so far, as a collective does: dst may be a
 * block the allocator just handed out again (a stage-3 gather with offload_param
 * streams a shard into the block that drop() freed) which kernels already queued on
 * compute still read, and src may be what those kernels are writing. In the
 * host-staged comm mode the comm stream carries no collectives (they run on compute
 * and complete before they return, after waiting for the comm stream: cuda_staged.c),
 * so the order is the same. */
int cuda_copy_async(void *self, void *dst, const void *src, size_t bytes, enum zero_stream st)
{
    struct cuda_state *s = self;
    int rc = check_stream(s, "copy_async", st);
    if (rc != ZERO_OK || bytes == 0 || dst == src)
        return rc;
    /* memmove would need a temporary whose reuse is ordered on the compute stream only */
    if (overlap(dst, src, bytes))
        return cuda_fail(s, ZERO_EINVAL, "copy_async: dst %p and src %p overlap (%zu bytes)", dst,
                         src, bytes);
    if (st == ZERO_STREAM_COMM && (rc = cuda_comm_after_compute(s, "copy_async")) != ZERO_OK)
        return rc;
    return cuda_check(s, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_of(s, st)),
                      "copy_async: cudaMemcpyAsync");
}

int cuda_fill(void *self, void *x, enum zero_dtype t, double value, size_t n)
{
    struct cuda_state *s = self;
    uint64_t pattern = 0;
    size_t size = zero_dtype_size(t);
    switch (t) {
    case ZERO_F32: {
        float v = (float)value;
        uint32_t b;
        memcpy(&b, &v, sizeof(b));
        pattern = b;
        break;
    }
    case ZERO_F64:
        memcpy(&pattern, &value, sizeof(pattern));
        break;
    case ZERO_F16:
        pattern = zero_f32_to_f16((float)value);
        break;
    case ZERO_BF16:
        pattern = zero_f32_to_bf16((float)value);
        break;
    case ZERO_I32:
        pattern = (uint32_t)(int32_t)value;
        break;
    case ZERO_I64:
        pattern = (uint64_t)(int64_t)value;
        break;
    default:
        return cuda_fail(s, ZERO_EINVAL, "fill: unknown dtype %d", (int)t);
    }
    struct cuda_prof_mark pm = cuda_prof_begin(s, ZERO_CUDA_K_ELEMENTWISE);
    return cuda_prof_end(s, &pm, 0, (double)n * (double)size,
                         cuda_check(s, cuda_launch_fill(s->compute, x, size, pattern, n), "fill"));
}

/* ---- streams and events ---- */

int cuda_event_create(void *self, void **ev)
{
    cudaEvent_t e = NULL;
    int rc = cuda_check(self, cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event_create");
    *ev = rc == ZERO_OK ? (void *)e : NULL;
    return rc;
}

int cuda_event_destroy(void *self, void *ev)
{
    if (ev == NULL)
        return ZERO_OK;
    return cuda_check(self, cudaEventDestroy((cudaEvent_t)ev), "event_destroy");
}

int cuda_event_record(void *self, void *ev, enum zero_stream st)
{
    struct cuda_state *s = self;
    int rc = check_stream(s, "event_record", st);
    if (rc != ZERO_OK)
        return rc;
    return cuda_check(s, cudaEventRecord((cudaEvent_t)ev, stream_of(s, st)), "event_record");
}

int cuda_stream_wait_event(void *self, enum zero_stream st, void *ev)
{
    struct cuda_state *s = self;
    int rc = check_stream(s, "stream_wait_event", st);
    if (rc != ZERO_OK)
        return rc;
    return cuda_check(s, cudaStreamWaitEvent(stream_of(s, st), (cudaEvent_t)ev, 0),
                      "stream_wait_event");
}

int cuda_event_synchronize(void *self, void *ev)
{
    return cuda_check(self, cudaEventSynchronize((cudaEvent_t)ev), "event_synchronize");
}

int cuda_synchronize(void *self)
{
    struct cuda_state *s = self;
    cudaError_t e = cuda_host_waits(s);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(s->comm_stream);
    int rc = cuda_check(s, e, "synchronize");
    return rc != ZERO_OK ? rc : cuda_coll_drain_timing(s);
}

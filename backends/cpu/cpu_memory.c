/* Host memory for the cpu backend. Every block carries a 64-byte header with its
 * size and tag, so free() can take the bytes back off the ledger; the block itself
 * starts 64-byte aligned (a cache line, and an AVX-512 vector). Streams and events
 * are trivial: every call completes before it returns.
 *
 * Freed blocks are kept in a small cache and handed out again for the same size,
 * like a GPU caching allocator: the engine frees and reallocates the same
 * activation, gradient and gathered-unit buffers every step, and returning them
 * to the system each time costs a page fault per 4 KiB on the next use (glibc
 * maps large blocks with mmap and unmaps them on free). The ledger counts live
 * blocks only; cached ones are not in use. ZERO_CPU_CACHE_MB bounds the cache
 * (default 4096; 0 disables it). */
#include <stdlib.h>
#include <string.h>

#include "cpu_ops.h"
#include "zero/knobs.h"

#define CPU_ALIGN 64
#define CPU_MAGIC 0x5a45524fu      /* "ZERO": a live block */
#define CPU_MAGIC_HOST 0x5a455248u /* "ZERH": a live host_alloc block */

struct cpu_block_header {
    size_t bytes;
    int tag;
    uint32_t magic;
    unsigned char pad[CPU_ALIGN - sizeof(size_t) - sizeof(int) - sizeof(uint32_t)];
};

_Static_assert(sizeof(struct cpu_block_header) == CPU_ALIGN, "header keeps the block aligned");

static struct cpu_block_header *header_of(void *dev)
{
    return (struct cpu_block_header *)((unsigned char *)dev - CPU_ALIGN);
}

#define CPU_CACHE_SLOTS 256
#ifdef __SANITIZE_ADDRESS__
#define CPU_CACHE_DEFAULT_MB 0 /* let AddressSanitizer see every use after free */
#else
#define CPU_CACHE_DEFAULT_MB 4096
#endif

struct cpu_cache {
    size_t limit, held; /* bytes */
    int n;
    struct cpu_block_header *block[CPU_CACHE_SLOTS];
    size_t size[CPU_CACHE_SLOTS]; /* padded bytes of each cached block */
};

static struct cpu_cache *cache_of(struct cpu_state *s)
{
    if (s->cache == NULL) {
        s->cache = calloc(1, sizeof *s->cache);
        if (s->cache == NULL)
            return NULL;
        const char *mb = zero_knob(ZERO_KNOB_CPU_CACHE_MB);
        s->cache->limit = (size_t)(mb ? strtoull(mb, NULL, 10) : CPU_CACHE_DEFAULT_MB) << 20;
    }
    return s->cache;
}

/* A cached block of exactly `padded` bytes, newest first, or NULL. */
static struct cpu_block_header *cache_take(struct cpu_state *s, size_t padded)
{
    struct cpu_cache *c = cache_of(s);
    for (int i = c ? c->n - 1 : -1; i >= 0; i--) {
        if (c->size[i] != padded)
            continue;
        struct cpu_block_header *h = c->block[i];
        c->held -= padded;
        c->n--;
        c->block[i] = c->block[c->n];
        c->size[i] = c->size[c->n];
        return h;
    }
    return NULL;
}

/* Keeps h for reuse; 0 if the cache is full (the caller frees it). */
static int cache_put(struct cpu_state *s, struct cpu_block_header *h, size_t padded)
{
    struct cpu_cache *c = cache_of(s);
    if (c == NULL || c->n == CPU_CACHE_SLOTS || c->held + padded > c->limit)
        return 0;
    c->block[c->n] = h;
    c->size[c->n] = padded;
    c->n++;
    c->held += padded;
    return 1;
}

void cpu_memory_fini(struct cpu_state *s)
{
    if (s->cache == NULL)
        return;
    for (int i = 0; i < s->cache->n; i++)
        free(s->cache->block[i]);
    free(s->cache);
    s->cache = NULL;
}

static size_t padded_size(size_t bytes)
{
    return (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
}

/* A block of `bytes` for the ledger l, marked with magic: from the cache for
 * device blocks, fresh for host blocks (offloaded states live for the run). */
static int block_alloc(struct cpu_state *s, const char *what, size_t bytes, enum zero_tag tag,
                       uint32_t magic, void **out)
{
    *out = NULL;
    if ((int)tag < 0 || tag >= ZERO_TAG_COUNT)
        return cpu_fail(s, ZERO_EINVAL, "%s: unknown tag %d", what, (int)tag);
    if (bytes > SIZE_MAX - 2 * CPU_ALIGN)
        return cpu_fail(s, ZERO_ENOMEM, "%s: %zu bytes (%s) is too large", what, bytes,
                        zero_tag_name(tag));
    size_t padded = padded_size(bytes);
    struct cpu_block_header *h = magic == CPU_MAGIC ? cache_take(s, padded) : NULL;
    if (h == NULL)
        h = aligned_alloc(CPU_ALIGN, CPU_ALIGN + padded);
    if (h == NULL)
        return cpu_fail(s, ZERO_ENOMEM, "%s: out of memory for %zu bytes (%s)", what, bytes,
                        zero_tag_name(tag));
    h->bytes = bytes;
    h->tag = (int)tag;
    h->magic = magic;
    zero_ledger_add(magic == CPU_MAGIC ? s->ledger : s->host_ledger, tag, (int64_t)bytes);
    *out = (unsigned char *)h + CPU_ALIGN;
    return ZERO_OK;
}

/* Takes p's bytes off its ledger; 0, or an error if p is not a live block of
 * the kind `magic` says (foreign pointers, double frees while the memory has
 * not been reused: best effort). */
static int block_release(struct cpu_state *s, const char *what, void *p, uint32_t magic,
                         struct cpu_block_header **out)
{
    struct cpu_block_header *h = header_of(p);
    if (h->magic == CPU_MAGIC_HOST && magic == CPU_MAGIC)
        return cpu_fail(s, ZERO_EINVAL, "%s: %p is host memory (host_free frees it)", what, p);
    if (h->magic == CPU_MAGIC && magic == CPU_MAGIC_HOST)
        return cpu_fail(s, ZERO_EINVAL, "%s: %p is device memory (free frees it)", what, p);
    if (h->magic != magic)
        return cpu_fail(s, ZERO_EINVAL, "%s: %p is not a live block of this backend (freed twice?)",
                        what, p);
    zero_ledger_add(magic == CPU_MAGIC ? s->ledger : s->host_ledger, (enum zero_tag)h->tag,
                    -(int64_t)h->bytes);
    h->magic = 0;
    *out = h;
    return ZERO_OK;
}

int cpu_alloc(void *self, size_t bytes, enum zero_tag tag, void **dev)
{
    return block_alloc(self, "alloc", bytes, tag, CPU_MAGIC, dev);
}

int cpu_free(void *self, void *dev)
{
    struct cpu_state *s = self;
    struct cpu_block_header *h = NULL;
    if (dev == NULL)
        return ZERO_OK;
    int rc = block_release(s, "free", dev, CPU_MAGIC, &h);
    if (rc == ZERO_OK && !cache_put(s, h, padded_size(h->bytes)))
        free(h);
    return rc;
}

/* Host memory is the same memory here; it differs only in the ledger it counts on. */
int cpu_host_alloc(void *self, size_t bytes, enum zero_tag tag, void **host)
{
    return block_alloc(self, "host_alloc", bytes, tag, CPU_MAGIC_HOST, host);
}

int cpu_host_free(void *self, void *host)
{
    struct cpu_block_header *h = NULL;
    if (host == NULL)
        return ZERO_OK;
    int rc = block_release(self, "host_free", host, CPU_MAGIC_HOST, &h);
    if (rc == ZERO_OK)
        free(h);
    return rc;
}

int cpu_copy(void *self, void *dst, const void *src, size_t bytes)
{
    (void)self;
    if (bytes > 0)
        memmove(dst, src, bytes);
    return ZERO_OK;
}

static int check_stream(struct cpu_state *s, const char *what, enum zero_stream st);

/* Completes before it returns, like every call here. */
int cpu_copy_async(void *self, void *dst, const void *src, size_t bytes, enum zero_stream st)
{
    int rc = check_stream(self, "copy_async", st);
    return rc ? rc : cpu_copy(self, dst, src, bytes);
}

int cpu_to_host(void *self, void *host, const void *dev, size_t bytes)
{
    return cpu_copy(self, host, dev, bytes);
}

int cpu_from_host(void *self, void *dev, const void *host, size_t bytes)
{
    return cpu_copy(self, dev, host, bytes);
}

int cpu_fill(void *self, void *x, enum zero_dtype t, double value, size_t n)
{
    switch (t) {
    case ZERO_F32: {
        float *p = x, v = (float)value;
        for (size_t i = 0; i < n; i++)
            p[i] = v;
        return ZERO_OK;
    }
    case ZERO_F64: {
        double *p = x;
        for (size_t i = 0; i < n; i++)
            p[i] = value;
        return ZERO_OK;
    }
    case ZERO_F16:
    case ZERO_BF16: {
        uint16_t *p = x;
        uint16_t v = t == ZERO_F16 ? zero_f32_to_f16((float)value) : zero_f32_to_bf16((float)value);
        for (size_t i = 0; i < n; i++)
            p[i] = v;
        return ZERO_OK;
    }
    case ZERO_I32: {
        int32_t *p = x, v = (int32_t)value;
        for (size_t i = 0; i < n; i++)
            p[i] = v;
        return ZERO_OK;
    }
    case ZERO_I64: {
        int64_t *p = x, v = (int64_t)value;
        for (size_t i = 0; i < n; i++)
            p[i] = v;
        return ZERO_OK;
    }
    default:
        return cpu_fail(self, ZERO_EINVAL, "fill: unknown dtype %d", (int)t);
    }
}

/* Work is done when a call returns, so an event has nothing to remember: every
 * handle points at this one byte. */
static char cpu_event_token;

int cpu_event_create(void *self, void **ev)
{
    (void)self;
    *ev = &cpu_event_token;
    return ZERO_OK;
}

int cpu_event_destroy(void *self, void *ev)
{
    (void)self;
    (void)ev;
    return ZERO_OK;
}

static int check_stream(struct cpu_state *s, const char *what, enum zero_stream st)
{
    if (st != ZERO_STREAM_COMPUTE && st != ZERO_STREAM_COMM)
        return cpu_fail(s, ZERO_EINVAL, "%s: unknown stream %d", what, (int)st);
    return ZERO_OK;
}

int cpu_event_record(void *self, void *ev, enum zero_stream s)
{
    (void)ev;
    return check_stream(self, "event_record", s);
}

int cpu_stream_wait_event(void *self, enum zero_stream s, void *ev)
{
    (void)ev;
    return check_stream(self, "stream_wait_event", s);
}

int cpu_event_synchronize(void *self, void *ev)
{
    (void)self;
    (void)ev;
    return ZERO_OK;
}

int cpu_synchronize(void *self)
{
    (void)self;
    return ZERO_OK;
}

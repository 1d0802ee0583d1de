/* Host memory for ZeRO-Offload (host_alloc, host_free): page-locked blocks that
 * copy_async moves by DMA while kernels run, and that every entry of the table takes
 * in place of device memory.
 *
 * cudaHostAlloc with Portable | Mapped: under unified virtual addressing a pinned block
 * is mapped into every device's address space at the address the host sees, so a
 * kernel (cast, adam, fill, ...) dereferences the host pointer itself over the bus and
 * copies infer the direction from the pointer. host_alloc checks that promise once per
 * block (cudaPointerGetAttributes: a host block whose device pointer is the same); a
 * system without it fails there, not in a kernel. Write-combined memory is not used:
 * the host reads these blocks back (optimizer states, checkpoints).
 *
 * The blocks are counted on the host ledger, never on the device ledger, and never pass
 * through the device caching allocator: offloaded states live for the run. The table
 * below keeps each block's size for host_free and answers "is this pointer inside a
 * host block?" (gemm stages such operands through device memory). It is sorted by
 * address; blocks are few (a handful per offloaded unit), so inserts move the tail. */
#include <stdlib.h>
#include <string.h>

#include "cuda_ops.h"

struct cuda_host_block {
    uintptr_t ptr;
    size_t bytes; /* requested (the ledger's count); at least one byte is allocated */
    int tag;
};

struct cuda_hosts {
    struct cuda_host_block *b; /* (n) sorted by ptr */
    size_t n, cap;
};

/* The number of blocks that start at or below p. */
static size_t upper_bound(const struct cuda_hosts *h, uintptr_t p)
{
    size_t lo = 0, hi = h->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->b[mid].ptr <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int cuda_is_host_memory(struct cuda_state *s, const void *p)
{
    const struct cuda_hosts *h = s->hosts;
    if (h == NULL || h->n == 0 || p == NULL)
        return 0;
    size_t i = upper_bound(h, (uintptr_t)p);
    if (i == 0)
        return 0;
    const struct cuda_host_block *b = &h->b[i - 1];
    return (uintptr_t)p - b->ptr < (b->bytes > 0 ? b->bytes : 1);
}

/* Room for one more block; -1 if the host is out of memory. */
static int reserve(struct cuda_state *s)
{
    if (s->hosts == NULL && (s->hosts = calloc(1, sizeof(*s->hosts))) == NULL)
        return -1;
    struct cuda_hosts *h = s->hosts;
    if (h->n < h->cap)
        return 0;
    size_t cap = h->cap ? h->cap * 2 : 64;
    struct cuda_host_block *b = realloc(h->b, cap * sizeof(*b));
    if (b == NULL)
        return -1;
    h->b = b;
    h->cap = cap;
    return 0;
}

int cuda_host_alloc(void *self, size_t bytes, enum zero_tag tag, void **host)
{
    struct cuda_state *s = self;
    *host = NULL;
    if ((int)tag < 0 || tag >= ZERO_TAG_COUNT)
        return cuda_fail(s, ZERO_EINVAL, "host_alloc: unknown tag %d", (int)tag);
    if (bytes > SIZE_MAX / 2)
        return cuda_fail(s, ZERO_ENOMEM, "host_alloc: %zu bytes (%s) is too large", bytes,
                         zero_tag_name(tag));
    if (reserve(s) != 0)
        return cuda_fail(s, ZERO_ENOMEM, "host_alloc: out of host memory for the block table");
    void *p = NULL;
    cudaError_t e =
        cudaHostAlloc(&p, bytes > 0 ? bytes : 1, cudaHostAllocPortable | cudaHostAllocMapped);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return cuda_fail(s, ZERO_ENOMEM, "host_alloc: out of memory for %zu bytes (%s): %s", bytes,
                         zero_tag_name(tag), cudaGetErrorString(e));
    }
    /* kernels are handed p itself: it must be the device's address of the block too */
    struct cudaPointerAttributes a;
    memset(&a, 0, sizeof(a));
    e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess || a.type != cudaMemoryTypeHost || a.devicePointer != p) {
        (void)cudaGetLastError();
        cudaFreeHost(p);
        return cuda_fail(s, ZERO_ENOTSUP,
                         "host_alloc: pinned block %p (%zu bytes, %s) is not mapped at the same "
                         "address on device %d (%s); offload needs unified addressing",
                         p, bytes, zero_tag_name(tag), s->device,
                         e != cudaSuccess ? cudaGetErrorString(e) : "other device address");
    }
    struct cuda_hosts *h = s->hosts;
    size_t i = upper_bound(h, (uintptr_t)p);
    memmove(&h->b[i + 1], &h->b[i], (h->n - i) * sizeof(*h->b));
    h->b[i] = (struct cuda_host_block){.ptr = (uintptr_t)p, .bytes = bytes, .tag = (int)tag};
    h->n++;
    zero_ledger_add(s->host_ledger, tag, (int64_t)bytes);
    *host = p;
    return ZERO_OK;
}

int cuda_host_free(void *self, void *host)
{
    struct cuda_state *s = self;
    if (host == NULL)
        return ZERO_OK;
    struct cuda_hosts *h = s->hosts;
    size_t i = h != NULL ? upper_bound(h, (uintptr_t)host) : 0;
    if (i == 0 || h->b[i - 1].ptr != (uintptr_t)host) {
        if (cuda_is_device_block(s, host))
            return cuda_fail(s, ZERO_EINVAL, "host_free: %p is device memory (free frees it)",
                             host);
        return cuda_fail(s, ZERO_EINVAL,
                         "host_free: %p is not a live block of this backend (freed twice?)", host);
    }
    struct cuda_host_block b = h->b[i - 1];
    memmove(&h->b[i - 1], &h->b[i], (h->n - i) * sizeof(*h->b));
    h->n--;
    zero_ledger_add(s->host_ledger, (enum zero_tag)b.tag, -(int64_t)b.bytes);
    /* no stream order protects a pinned block: the caller has waited for the copies and
     * kernels that use it (event_synchronize, synchronize) before freeing it */
    return cuda_check(s, cudaFreeHost(host), "host_free: cudaFreeHost");
}

void cuda_hosts_fini(struct cuda_state *s)
{
    struct cuda_hosts *h = s->hosts;
    if (h == NULL)
        return;
    for (size_t i = 0; i < h->n; i++) /* blocks the caller never freed */
        cudaFreeHost((void *)h->b[i].ptr);
    free(h->b);
    free(h);
    s->hosts = NULL;
}

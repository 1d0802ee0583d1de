/* The table of host_alloc's blocks (cuda_host.c): each block's size and tag for
 * host_free, and the answer to "is this pointer inside a host block?" (gemm stages such
 * operands through device memory; free names them in its error). Sorted by address;
 * blocks are few (a handful per offloaded unit), so inserts move the tail. A floor below
 * cuda_host.c and cuda_memory.c, which both ask it. */
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
int cuda_host_table_reserve(struct cuda_state *s)
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

void cuda_host_table_insert(struct cuda_state *s, void *p, size_t bytes, enum zero_tag tag)
{
    struct cuda_hosts *h = s->hosts;
    size_t i = upper_bound(h, (uintptr_t)p);
    memmove(&h->b[i + 1], &h->b[i], (h->n - i) * sizeof(*h->b));
    h->b[i] = (struct cuda_host_block){.ptr = (uintptr_t)p, .bytes = bytes, .tag = (int)tag};
    h->n++;
}

int cuda_host_table_remove(struct cuda_state *s, const void *p, size_t *bytes, enum zero_tag *tag)
{
    struct cuda_hosts *h = s->hosts;
    size_t i = h != NULL ? upper_bound(h, (uintptr_t)p) : 0;
    if (i == 0 || h->b[i - 1].ptr != (uintptr_t)p)
        return -1;
    struct cuda_host_block b = h->b[i - 1];
    memmove(&h->b[i - 1], &h->b[i], (h->n - i) * sizeof(*h->b));
    h->n--;
    *bytes = b.bytes;
    *tag = (enum zero_tag)b.tag;
    return 0;
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

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
 * of blocks (cuda_host_table.c) keeps each block's size for host_free. */
#include <stdlib.h>
#include <string.h>

#include "cuda_ops.h"

int cuda_host_alloc(void *self, size_t bytes, enum zero_tag tag, void **host)
{
    struct cuda_state *s = self;
    *host = NULL;
    if ((int)tag < 0 || tag >= ZERO_TAG_COUNT)
        return cuda_fail(s, ZERO_EINVAL, "host_alloc: unknown tag %d", (int)tag);
    if (bytes > SIZE_MAX / 2)
        return cuda_fail(s, ZERO_ENOMEM, "host_alloc: %zu bytes (%s) is too large", bytes,
                         zero_tag_name(tag));
    if (cuda_host_table_reserve(s) != 0)
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
    cuda_host_table_insert(s, p, bytes, tag);
    zero_ledger_add(s->host_ledger, tag, (int64_t)bytes);
    *host = p;
    return ZERO_OK;
}

int cuda_host_free(void *self, void *host)
{
    struct cuda_state *s = self;
    if (host == NULL)
        return ZERO_OK;
    size_t bytes = 0;
    enum zero_tag tag = ZERO_TAG_WORKSPACE;
    if (cuda_host_table_remove(s, host, &bytes, &tag) != 0) {
        if (cuda_is_device_block(s, host))
            return cuda_fail(s, ZERO_EINVAL, "host_free: %p is device memory (free frees it)",
                             host);
        return cuda_fail(s, ZERO_EINVAL,
                         "host_free: %p is not a live block of this backend (freed twice?)", host);
    }
    zero_ledger_add(s->host_ledger, tag, -(int64_t)bytes);
    /* no stream order protects a pinned block: the caller has waited for the copies and
     * kernels that use it (event_synchronize, synchronize) before freeing it */
    return cuda_check(s, cudaFreeHost(host), "host_free: cudaFreeHost");
}

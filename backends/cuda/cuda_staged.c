/* Host-staged collectives (ZERO_CUDA_COMM=mpi): a TEST MODE, so that several ranks can
 * share one GPU, which NCCL refuses. Each collective copies its device input to a
 * pinned host buffer, runs the cpu backend's collective on it, and copies the result
 * back; every call completes before it returns (no overlap).
 *
 * The cpu backend (always built in) is opened as an inner instance, on the same
 * communicator, ledger and comm stats: its exact mode (owner combine in canonical tree
 * order), its native mode, its shared-memory path and its stats counting are used as
 * they are, so the bits equal the cpu backend's by construction. The inner instance
 * counts each collective; the staging buffer is on the ledger under "comm". */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_ops.h"

struct cuda_staged {
    const struct zero_backend *cpu;
    void *inner;
    void *host; /* pinned staging buffer */
    size_t host_bytes;
};

/* Named here, not looked up in the registry (src/base/registry.c), which lists this
 * backend: the registry calls the backends, they do not call it back. */
extern const struct zero_backend zero_backend_cpu; /* backends/cpu/cpu_backend.c */

int cuda_staged_open(struct cuda_state *s, void *comm, char *why, size_t why_len)
{
    const struct zero_backend *cpu = &zero_backend_cpu;
    struct cuda_staged *st = calloc(1, sizeof(*st));
    if (st == NULL) {
        snprintf(why, why_len, "cuda backend: out of memory for the host-staged mode");
        return ZERO_ENOMEM;
    }
    struct zero_backend_options o = {
        .coll_mode = s->mode,
        .device = -1,
        .ledger = s->ledger,
        .host_ledger = s->host_ledger,
        .comm_stats = s->stats,
    };
    char inner_why[ZERO_ERRMSG_LEN] = "";
    int rc = cpu->open(&o, comm, &st->inner, inner_why, sizeof(inner_why));
    if (rc != ZERO_OK) {
        snprintf(why, why_len, "cuda backend: host-staged mode: %s", inner_why);
        free(st);
        return rc;
    }
    st->cpu = cpu;
    s->staged = st;
    return ZERO_OK;
}

void cuda_staged_close(struct cuda_state *s)
{
    struct cuda_staged *st = s->staged;
    if (st == NULL)
        return;
    cuda_pinned_free(s, st->host, st->host_bytes, ZERO_TAG_COMM);
    st->cpu->close(st->inner);
    free(st);
    s->staged = NULL;
}

int cuda_staged_set_mode(struct cuda_state *s, enum zero_coll_mode mode)
{
    struct cuda_staged *st = s->staged;
    if (st->cpu->set_coll_mode(st->inner, mode) != ZERO_OK)
        return cuda_fail(s, ZERO_EINVAL, "set_coll_mode: %s", st->cpu->last_error(st->inner));
    return ZERO_OK;
}

/* The pinned buffer, at least bytes long. */
static int staging(struct cuda_state *s, size_t bytes, char **host)
{
    struct cuda_staged *st = s->staged;
    if (bytes > st->host_bytes) {
        cuda_pinned_free(s, st->host, st->host_bytes, ZERO_TAG_COMM);
        st->host = NULL;
        st->host_bytes = 0;
        int rc = cuda_pinned_alloc(s, bytes, ZERO_TAG_COMM, &st->host);
        if (rc != ZERO_OK)
            return rc;
        st->host_bytes = bytes;
    }
    *host = st->host;
    return ZERO_OK;
}

/* The comm stream idle: a copy_async queued there (a shard moving to or from host_alloc
 * memory) lands before the collective reads or writes its buffers, as it would ahead of
 * an NCCL call on that stream. */
static int after_comm_stream(struct cuda_state *s)
{
    return cuda_check(s, cudaStreamSynchronize(s->comm_stream), "host-staged: comm stream");
}

/* The inner backend's message, prefixed so that the path is visible. */
static int inner_failed(struct cuda_state *s, int rc)
{
    const char *msg = s->staged->cpu->last_error(s->staged->inner);
    return cuda_fail(s, rc, "host-staged: %s", msg);
}

int cuda_staged_reduce_scatter(struct cuda_state *s, const void *send, enum zero_dtype wire_type,
                               void *recv, enum zero_dtype recv_type, size_t count)
{
    size_t n = (size_t)s->size, wsize = zero_dtype_size(wire_type);
    size_t in_bytes = n * count * wsize, out_bytes = count * zero_dtype_size(recv_type);
    int in_place =
        recv == (const char *)send + (size_t)s->rank * count * wsize && recv_type == wire_type;
    char *h;
    int rc = after_comm_stream(s);
    if (rc == ZERO_OK)
        rc = staging(s, in_bytes + (in_place ? 0 : out_bytes), &h);
    if (rc == ZERO_OK)
        rc = cuda_to_host(s, h, send, in_bytes);
    if (rc != ZERO_OK)
        return rc;
    char *h_out = in_place ? h + (size_t)s->rank * count * wsize : h + in_bytes;
    rc = s->staged->cpu->reduce_scatter(s->staged->inner, h, wire_type, h_out, recv_type, count,
                                        NULL);
    if (rc != ZERO_OK)
        return inner_failed(s, rc);
    return cuda_from_host(s, recv, h_out, out_bytes);
}

int cuda_staged_all_gather(struct cuda_state *s, const void *send, void *recv, enum zero_dtype t,
                           size_t count)
{
    size_t n = (size_t)s->size, bytes = count * zero_dtype_size(t);
    char *h = NULL;
    int rc = after_comm_stream(s);
    if (rc == ZERO_OK)
        rc = staging(s, n * bytes, &h);
    if (rc != ZERO_OK)
        return rc;
    char *mine = h + (size_t)s->rank * bytes;
    rc = cuda_to_host(s, mine, send, bytes);
    if (rc != ZERO_OK)
        return rc;
    rc = s->staged->cpu->all_gather(s->staged->inner, mine, h, t, count, NULL);
    if (rc != ZERO_OK)
        return inner_failed(s, rc);
    return cuda_from_host(s, recv, h, n * bytes);
}

int cuda_staged_all_reduce(struct cuda_state *s, const void *send, void *recv, enum zero_dtype t,
                           size_t count)
{
    size_t bytes = count * zero_dtype_size(t);
    char *h;
    int rc = after_comm_stream(s);
    if (rc == ZERO_OK)
        rc = staging(s, bytes, &h);
    if (rc == ZERO_OK)
        rc = cuda_to_host(s, h, send, bytes);
    if (rc != ZERO_OK)
        return rc;
    rc = s->staged->cpu->all_reduce(s->staged->inner, h, h, t, count, NULL);
    if (rc != ZERO_OK)
        return inner_failed(s, rc);
    return cuda_from_host(s, recv, h, bytes);
}

int cuda_staged_broadcast(struct cuda_state *s, void *buf, enum zero_dtype t, size_t count,
                          int root)
{
    size_t bytes = count * zero_dtype_size(t);
    char *h;
    int rc = after_comm_stream(s);
    if (rc == ZERO_OK)
        rc = staging(s, bytes, &h);
    if (rc == ZERO_OK && s->rank == root)
        rc = cuda_to_host(s, h, buf, bytes);
    if (rc != ZERO_OK)
        return rc;
    rc = s->staged->cpu->broadcast(s->staged->inner, h, t, count, root, NULL);
    if (rc != ZERO_OK)
        return inner_failed(s, rc);
    return s->rank == root ? ZERO_OK : cuda_from_host(s, buf, h, bytes);
}

int cuda_staged_barrier(struct cuda_state *s)
{
    int rc = s->staged->cpu->barrier(s->staged->inner);
    return rc == ZERO_OK ? ZERO_OK : inner_failed(s, rc);
}

int cuda_staged_host_all_gather(struct cuda_state *s, const void *send_host, void *recv_host,
                                size_t bytes)
{
    int rc = s->staged->cpu->host_all_gather(s->staged->inner, send_host, recv_host, bytes);
    return rc == ZERO_OK ? ZERO_OK : inner_failed(s, rc);
}

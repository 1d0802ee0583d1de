/* CUDA Graphs of the engine's passes (libzero.cuda_graphs; docs/gpu.md, "CUDA Graphs").
 *
 * graph_begin starts a capture on the compute stream and joins the comm stream to it
 * (an event recorded on compute that comm waits for), so that the collectives the pass
 * issues are captured too; graph_end joins comm back (compute waits for an event
 * recorded on comm), ends the capture and launches the graph. Each pass is captured
 * again every time it runs, with the engine's host code running as it always does
 * (its state, the allocator, the ledger and the comm stats stay exactly as without
 * graphs): the new graph updates the executable graph kept under the pass's key
 * (cudaGraphExecUpdate: the same topology, new parameters), or, where it cannot, is
 * instantiated in its place. What the graph saves is the launches: the whole pass goes
 * to the device in one call, so no kernel waits for the host to queue it.
 *
 * Order with the work outside: before the capture the compute stream waits for the
 * comm stream (work queued there eagerly, such as a request the pass will wait for,
 * is then ordered before the graph), and the graph itself ends with compute waiting
 * for comm, so a request issued inside a capture and waited for after it needs no
 * wait of its own (cuda_coll.c skips it: its event belongs to the ended capture).
 *
 * Memory: while a capture is open alloc takes blocks from the graphs' pool
 * (cuda_memory.c), so the blocks a graph's kernels use are never handed to work
 * outside the graphs; a block freed inside a capture that came from outside returns
 * to the ordinary cache, and whatever takes it later is queued after the graph's
 * launch on the same stream (or, on comm, after a wait for compute). Inside a capture
 * nothing may wait for the host: those entries fail, the capture is then invalid and
 * graph_end reports it (zero_cuda_graph_blockers counts them). */
#include <stdlib.h>
#include <string.h>

#include "cuda_ops.h"

struct cuda_graphs {
    cudaGraphExec_t *exec; /* (n) by key; NULL: not instantiated yet */
    int n;
    int key; /* the open capture's key */
    cudaEvent_t fork, join, before;
};

/* Ends the open capture and drops its graph, whatever state it is in: comm is joined
 * back first (ending a capture with comm still forked from it is
 * cudaErrorStreamCaptureUnjoined), so that neither stream stays in capture mode; a
 * comm stream that never joined is left alone (waiting for its uncaptured event inside
 * the capture would be an isolation error). */
static void discard_capture(struct cuda_state *s, struct cuda_graphs *g, int comm_joined)
{
    if (comm_joined && cudaEventRecord(g->join, s->comm_stream) == cudaSuccess)
        (void)cudaStreamWaitEvent(s->compute, g->join, 0);
    cudaGraph_t graph = NULL;
    (void)cudaStreamEndCapture(s->compute, &graph);
    if (graph != NULL)
        cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    s->capturing = 0;
}

int cuda_graph_open(void *self)
{
    struct cuda_state *s = self;
    if (s->comm_kind == CUDA_COMM_MPI)
        return cuda_fail(s, ZERO_ENOTSUP,
                         "the host-staged collectives (ZERO_CUDA_COMM=mpi, or ranks sharing a "
                         "GPU) wait on the host: a pass cannot be captured");
    if (s->prof != NULL)
        return cuda_fail(s, ZERO_ENOTSUP,
                         "the kernel profile is on: its events cannot be read inside a capture");
#ifdef ZERO_HAVE_NCCL
    /* NCCL's calls can be captured from 2.9 on (its user guide, "Using NCCL with CUDA
     * Graphs"); the version is the loaded library's, not the header's */
    int nccl_version = 0;
    if (s->comm_kind == CUDA_COMM_NCCL && s->nccl != NULL &&
        (ncclGetVersion(&nccl_version) != ncclSuccess || nccl_version < 20900))
        return cuda_fail(s, ZERO_ENOTSUP,
                         "NCCL %d is loaded: capturing its collectives needs NCCL 2.9 (20900) "
                         "or newer",
                         nccl_version);
#endif
    if (s->graphs != NULL)
        return ZERO_OK;
    struct cuda_graphs *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return cuda_fail(s, ZERO_ENOMEM, "graph_open: out of host memory");
    cudaError_t e = cudaEventCreateWithFlags(&g->fork, cudaEventDisableTiming);
    if (e == cudaSuccess)
        e = cudaEventCreateWithFlags(&g->join, cudaEventDisableTiming);
    if (e == cudaSuccess)
        e = cudaEventCreateWithFlags(&g->before, cudaEventDisableTiming);
    s->graphs = g;
    int rc = cuda_check(s, e, "graph_open: cudaEventCreate");
    /* cuBLAS (the fallback GEMM) inside a capture: a workspace of ours, so that its
     * captured calls allocate nothing (the cuBLASLt one; both run on compute in order) */
    if (rc == ZERO_OK)
        rc = cuda_blas_capture_workspace(s);
    if (rc == ZERO_OK)
        rc = cuda_deferred_open(s);
    if (rc == ZERO_OK)
        cuda_memory_pool_open(s);
    if (rc != ZERO_OK)
        cuda_graph_close(s);
    return rc;
}

void cuda_graph_close(void *self)
{
    struct cuda_state *s = self;
    struct cuda_graphs *g = s->graphs;
    if (g == NULL)
        return;
    if (s->capturing) { /* a pass that never ended: drop its capture */
        discard_capture(s, g, 1);
    }
    cudaStreamSynchronize(s->compute); /* the graphs and their pool are idle */
    for (int k = 0; k < g->n; k++)
        if (g->exec[k] != NULL)
            cudaGraphExecDestroy(g->exec[k]);
    free(g->exec);
    cudaEventDestroy(g->fork);
    cudaEventDestroy(g->join);
    cudaEventDestroy(g->before);
    free(g);
    s->graphs = NULL;
    cuda_memory_pool_close(s);
    cuda_deferred_close(s);
}

int cuda_graph_begin(void *self, int key)
{
    struct cuda_state *s = self;
    struct cuda_graphs *g = s->graphs;
    if (g == NULL || key < 0 || s->capturing)
        return cuda_fail(s, ZERO_EINVAL, "graph_begin: %s",
                         g == NULL ? "graph_open was not called"
                         : key < 0 ? "negative key"
                                   : "a capture is already open");
    if (s->prof != NULL)
        return cuda_fail(s, ZERO_ENOTSUP, "graph_begin: the kernel profile is on");
    if (key >= g->n) {
        int n = key + 1;
        cudaGraphExec_t *a = realloc(g->exec, (size_t)n * sizeof(*a));
        if (a == NULL)
            return cuda_fail(s, ZERO_ENOMEM, "graph_begin: out of host memory");
        memset(a + g->n, 0, (size_t)(n - g->n) * sizeof(*a));
        g->exec = a;
        g->n = n;
    }
    cuda_memory_pool_prime(s);
    /* the eager comm work before the capture, ordered before the graph */
    cudaError_t e = cudaEventRecord(g->before, s->comm_stream);
    if (e == cudaSuccess)
        e = cudaStreamWaitEvent(s->compute, g->before, 0);
    if (e == cudaSuccess)
        e = cudaStreamBeginCapture(s->compute, cudaStreamCaptureModeThreadLocal);
    int rc = cuda_check(s, e, "graph_begin: cudaStreamBeginCapture");
    if (rc != ZERO_OK)
        return rc;
    s->capturing = 1;
    s->capture_broken = 0;
    s->capture_gen++;
    g->key = key;
    e = cudaEventRecord(g->fork, s->compute);
    if (e == cudaSuccess)
        e = cudaStreamWaitEvent(s->comm_stream, g->fork, 0);
    if ((rc = cuda_check(s, e, "graph_begin: joining the comm stream")) != ZERO_OK)
        discard_capture(s, g, 0); /* keeps this message (cuda_graph_end would replace it) */
    return rc;
}

/* Puts graph into the executable kept under key: updated in place where the topology
 * is the same, else instantiated anew (the old one is freed once its launches end). */
static int install(struct cuda_state *s, struct cuda_graphs *g, int key, cudaGraph_t graph)
{
    cudaGraphExec_t *exec = &g->exec[key];
    if (*exec != NULL) {
        cudaGraphExecUpdateResultInfo info;
        if (cudaGraphExecUpdate(*exec, graph, &info) == cudaSuccess) {
            s->graph_updates++;
            return ZERO_OK;
        }
        (void)cudaGetLastError();
        cudaGraphExecDestroy(*exec);
        *exec = NULL;
    }
    cudaError_t e = cudaGraphInstantiate(exec, graph, 0);
    if (e != cudaSuccess) {
        *exec = NULL;
        return cuda_check(s, e, "graph_end: cudaGraphInstantiate");
    }
    s->graph_instantiations++;
    return ZERO_OK;
}

int cuda_graph_end(void *self, int key, int launch)
{
    struct cuda_state *s = self;
    struct cuda_graphs *g = s->graphs;
    if (g == NULL || !s->capturing || key != g->key) {
        int open = g != NULL && s->capturing ? g->key : -1;
        if (open >= 0) /* never leave compute capturing: everything after would be captured */
            discard_capture(s, g, 1);
        return cuda_fail(s, ZERO_EINVAL, "graph_end: no capture of key %d is open%s", key,
                         open >= 0 ? " (the open one, of another key, was discarded)" : "");
    }
    cudaError_t e = cudaEventRecord(g->join, s->comm_stream);
    if (e == cudaSuccess)
        e = cudaStreamWaitEvent(s->compute, g->join, 0);
    cudaGraph_t graph = NULL;
    cudaError_t end = cudaStreamEndCapture(s->compute, &graph);
    s->capturing = 0;
    if (e == cudaSuccess)
        e = end;
    int rc = cuda_check(s, e, "graph_end: cudaStreamEndCapture");
    if (rc == ZERO_OK && s->capture_broken)
        rc = cuda_fail(s, ZERO_EBACKEND,
                       "graph_end: a call inside the captured pass waited for the host "
                       "(zero_cuda_graph_blockers counts it): nothing was launched");
    if (rc == ZERO_OK && launch)
        rc = install(s, g, key, graph);
    if (rc == ZERO_OK && launch) {
        rc = cuda_check(s, cudaGraphLaunch(g->exec[key], s->compute), "graph_end: cudaGraphLaunch");
        if (rc == ZERO_OK)
            s->graph_launches++;
    }
    if (graph != NULL)
        cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return rc;
}

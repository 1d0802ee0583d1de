/* Per-kernel-class device time (zero_cuda_profile.h): two events on the compute stream
 * around each profiled entry, read back when the benchmark asks. Nested entries (a
 * cast that calls copy) count once, in the outer class. */
#include <stdlib.h>
#include <string.h>

#include "cuda_ops.h"
#include "zero_cuda_profile.h"

struct cuda_profile {
    int depth; /* entries open; only the outermost is timed */
    struct zero_cuda_ktime total[ZERO_CUDA_K_COUNT];
    struct span {
        cudaEvent_t start, end;
        int klass;
    } * pending;
    size_t npending, cap;
    cudaEvent_t *pool; /* timing events not in use */
    size_t npool, pool_cap;
};

const char *zero_cuda_kclass_name(int k)
{
    static const char *names[ZERO_CUDA_K_COUNT] = {
        [ZERO_CUDA_K_GEMM] = "gemm",           [ZERO_CUDA_K_ATTENTION] = "attention",
        [ZERO_CUDA_K_LAYERNORM] = "layernorm", [ZERO_CUDA_K_GELU] = "gelu",
        [ZERO_CUDA_K_BIAS] = "bias",           [ZERO_CUDA_K_XENT] = "cross-entropy",
        [ZERO_CUDA_K_EMBEDDING] = "embedding", [ZERO_CUDA_K_CAST] = "cast",
        [ZERO_CUDA_K_OPTIMIZER] = "optimizer", [ZERO_CUDA_K_ELEMENTWISE] = "elementwise",
        [ZERO_CUDA_K_REDUCTION] = "reduction", [ZERO_CUDA_K_COPY] = "copy"};
    return k >= 0 && k < ZERO_CUDA_K_COUNT ? names[k] : "?";
}

static cudaEvent_t event_take(struct cuda_profile *p)
{
    if (p->npool > 0)
        return p->pool[--p->npool];
    cudaEvent_t e = NULL;
    if (cudaEventCreate(&e) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return e;
}

static void event_give(struct cuda_profile *p, cudaEvent_t e)
{
    if (e == NULL)
        return;
    if (p->npool == p->pool_cap) {
        size_t cap = p->pool_cap ? 2 * p->pool_cap : 256;
        cudaEvent_t *a = realloc(p->pool, cap * sizeof *a);
        if (a == NULL) {
            cudaEventDestroy(e);
            return;
        }
        p->pool = a;
        p->pool_cap = cap;
    }
    p->pool[p->npool++] = e;
}

/* m's span: its end event now, its time read later (zero_cuda_profile_read) */
static void record(struct cuda_profile *p, struct cuda_state *s, struct cuda_prof_mark *m,
                   double flops, double bytes)
{
    struct zero_cuda_ktime *t = &p->total[m->klass];
    t->calls++;
    t->flops += flops;
    t->bytes += bytes;
    cudaEvent_t end = event_take(p);
    if (end == NULL || cudaEventRecord(end, s->compute) != cudaSuccess) {
        event_give(p, m->start);
        event_give(p, end);
        return;
    }
    if (p->npending == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 1024;
        struct span *a = realloc(p->pending, cap * sizeof *a);
        if (a == NULL) {
            event_give(p, m->start);
            event_give(p, end);
            return;
        }
        p->pending = a;
        p->cap = cap;
    }
    p->pending[p->npending++] = (struct span){.start = m->start, .end = end, .klass = m->klass};
}

struct cuda_prof_mark cuda_prof_begin(struct cuda_state *s, int klass)
{
    struct cuda_prof_mark m = {.on = 0, .klass = klass, .start = NULL};
    struct cuda_profile *p = s->prof;
    if (p == NULL || p->depth++ > 0)
        return m;
    m.start = event_take(p);
    m.on = m.start != NULL && cudaEventRecord(m.start, s->compute) == cudaSuccess;
    if (!m.on && m.start != NULL)
        event_give(p, m.start);
    return m;
}

int cuda_prof_end(struct cuda_state *s, struct cuda_prof_mark *m, double flops, double bytes,
                  int rc)
{
    struct cuda_profile *p = s->prof;
    if (p == NULL)
        return rc;
    if (p->depth > 0)
        p->depth--;
    if (!m->on)
        return rc;
    record(p, s, m, flops, bytes);
    return rc;
}
static void profile_free(struct cuda_profile *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->npending; i++) {
        cudaEventDestroy(p->pending[i].start);
        cudaEventDestroy(p->pending[i].end);
    }
    for (size_t i = 0; i < p->npool; i++)
        cudaEventDestroy(p->pool[i]);
    free(p->pending);
    free(p->pool);
    free(p);
}

void cuda_prof_fini(struct cuda_state *s)
{
    profile_free(s->prof);
    s->prof = NULL;
}

int zero_cuda_profile_enable(void *self, int on)
{
    struct cuda_state *s = self;
    if (!on) {
        cuda_prof_fini(s);
        return ZERO_OK;
    }
    if (s->prof == NULL && (s->prof = calloc(1, sizeof *s->prof)) == NULL)
        return cuda_fail(s, ZERO_ENOMEM, "profile: out of host memory");
    return ZERO_OK;
}

int zero_cuda_profile_read(void *self, struct zero_cuda_ktime *out)
{
    struct cuda_state *s = self;
    struct cuda_profile *p = s->prof;
    memset(out, 0, ZERO_CUDA_K_COUNT * sizeof *out);
    if (p == NULL)
        return cuda_fail(s, ZERO_EINVAL, "profile_read: profiling is off");
    cudaError_t err = cudaSuccess;
    for (size_t i = 0; i < p->npending; i++) {
        struct span *sp = &p->pending[i];
        float ms = 0.0f;
        cudaError_t e = cudaEventSynchronize(sp->end);
        if (e == cudaSuccess)
            e = cudaEventElapsedTime(&ms, sp->start, sp->end);
        if (e == cudaSuccess)
            p->total[sp->klass].seconds += (double)ms * 1e-3;
        else if (err == cudaSuccess)
            err = e;
        event_give(p, sp->start);
        event_give(p, sp->end);
    }
    p->npending = 0;
    memcpy(out, p->total, sizeof p->total);
    memset(p->total, 0, sizeof p->total);
    return cuda_check(s, err, "profile_read");
}

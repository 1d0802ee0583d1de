/* The cuda backend against the cpu backend, entry by entry, on the same inputs.
 *
 * Bit-exact where the contract allows it (casts, fill, axpy/scale/add, Adam/AdamW/SGD,
 * sumsq_blocks, bias, GELU, xent backward, embedding, LayerNorm, the exact-mode
 * collectives, all-gather, broadcast); to a stated tolerance where cuBLAS or a tree sum
 * forms the result differently (GEMM, softmax cross-entropy forward, attention,
 * native-mode sums). Error messages equal the cpu backend's, rank prefix included.
 *
 * Runs at 1 and 2 ranks; skips (exit 77) where no CUDA device is found. Ranks that
 * share one GPU use the host-staged mode (ZERO_CUDA_COMM=auto unless set). */
#include <check.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backends/cuda/zero_cuda_profile.h"
#include "cuda_pair.h"
#include "mpi_check.h"
#include "stored_entries_ref.h"
#include "zero/backend.h"
#include "zero/backend_attention.h"
#include "zero/backend_bf16_dot.h"
#include "zero/backend_classifier.h"
#include "zero/backend_device_step.h"
#include "zero/backend_fused.h"
#include "zero/backend_groups.h"
#include "zero/backend_quant.h"
#include "zero/backend_stored.h"
#include "zero/error.h"
#include "zero/gpt.h"
#include "zero/zero.h"

static struct zero_device *cpu, *gpu;

/* Deterministic values in [-1, 1) that differ from element to element. */
static float val(uint32_t i, uint32_t seed)
{
    uint32_t x = i * 2654435761u + seed * 40503u + 12345u;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    return (float)(x & 0xffffff) / (float)0x800000 - 1.0f;
}

static float *vals(size_t n, uint32_t seed, float scale)
{
    float *x = malloc(n * sizeof(float));
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < n; i++)
        x[i] = scale * val((uint32_t)i, seed);
    return x;
}

/* ---- moving data to and from a device ---- */

static void *upload(struct zero_device *d, const void *host, size_t bytes)
{
    void *p = NULL;
    ck_assert_int_eq(d->be->alloc(d->self, bytes, ZERO_TAG_WORKSPACE, &p), ZERO_OK);
    if (bytes > 0)
        ck_assert_int_eq(d->be->from_host(d->self, p, host, bytes), ZERO_OK);
    return p;
}

static void *download(struct zero_device *d, const void *dev, size_t bytes)
{
    void *h = malloc(bytes > 0 ? bytes : 1);
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(d->be->synchronize(d->self), ZERO_OK);
    if (bytes > 0)
        ck_assert_int_eq(d->be->to_host(d->self, h, dev, bytes), ZERO_OK);
    return h;
}

static void release(struct zero_device *d, void *p)
{
    ck_assert_int_eq(d->be->free(d->self, p), ZERO_OK);
}

/* d's buffer p (bytes) equals host's bits */
static void assert_same_bits(struct zero_device *d, const void *p, const void *host, size_t bytes,
                             const char *what)
{
    unsigned char *h = download(d, p, bytes);
    size_t i = 0;
    while (i < bytes && h[i] == ((const unsigned char *)host)[i])
        i++;
    free(h);
    ck_assert_msg(i == bytes, "%s: first differing byte at %zu of %zu", what, i, bytes);
}

/* every element of got within rel * (|want| + floor) of want */
static void assert_close(const float *got, const float *want, size_t n, double rel, double floor,
                         const char *what)
{
    for (size_t i = 0; i < n; i++) {
        double bound = rel * (fabs((double)want[i]) + floor);
        ck_assert_msg(fabs((double)got[i] - (double)want[i]) <= bound,
                      "%s: element %zu: cuda %.9g, cpu %.9g", what, i, (double)got[i],
                      (double)want[i]);
    }
}

/* ---- one computation on both devices ----
 * A kernel runs on the cpu device and on the cuda device over copies of the same
 * host inputs; `out` names the buffer whose results are compared. */

struct pair {
    void *c, *g; /* the cpu's and the gpu's copy */
    size_t bytes;
};

static struct pair both(const void *host, size_t bytes)
{
    return (struct pair){upload(cpu, host, bytes), upload(gpu, host, bytes), bytes};
}

/* bytes of the same arbitrary contents on both devices */
static struct pair both_blank(size_t bytes)
{
    unsigned char *h = malloc(bytes > 0 ? bytes : 1);
    ck_assert_ptr_nonnull(h);
    for (size_t i = 0; i < bytes; i++)
        h[i] = (unsigned char)(i * 131u + 7u);
    struct pair p = both(h, bytes);
    free(h);
    return p;
}

static struct pair both_vals(size_t n, uint32_t seed, float scale)
{
    float *x = vals(n, seed, scale);
    struct pair p = both(x, n * sizeof(float));
    free(x);
    return p;
}

static void pair_free(struct pair p)
{
    release(cpu, p.c);
    release(gpu, p.g);
}

static void pair_same(struct pair p, const char *what)
{
    void *want = download(cpu, p.c, p.bytes);
    assert_same_bits(gpu, p.g, want, p.bytes, what);
    free(want);
}

static void pair_close(struct pair p, double rel, double floor, const char *what)
{
    float *want = download(cpu, p.c, p.bytes), *got = download(gpu, p.g, p.bytes);
    assert_close(got, want, p.bytes / sizeof(float), rel, floor, what);
    free(want);
    free(got);
}

/* c's cuda values against the cpu's (n floats) within GELU backward's tolerance, scaled by
 * the size of the product it multiplies (prod, the cpu's): 1e-3 (|product| + 0.1) + 1e-4 */
static void pair_close_to_product(struct pair c, struct pair prod, size_t n, const char *what)
{
    float *want = download(cpu, c.c, n * 4), *got = download(gpu, c.g, n * 4);
    float *product = download(cpu, prod.c, n * 4);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabs((double)got[i] - (double)want[i]) <=
                          1e-3 * (fabs((double)product[i]) + 0.1) + 1e-4,
                      "%s: element %zu: cuda %.9g, cpu %.9g (product %.9g)", what, i,
                      (double)got[i], (double)want[i], (double)product[i]);
    free(want);
    free(got);
    free(product);
}

#define ON_BOTH(call_cpu, call_gpu)                                                                \
    do {                                                                                           \
        ck_assert_int_eq((call_cpu), ZERO_OK);                                                     \
        int rc_ = (call_gpu);                                                                      \
        ck_assert_msg(rc_ == ZERO_OK, "cuda: %s", gpu->be->last_error(gpu->self));                 \
    } while (0)

/* ---------------------------------------------------------------- memory */

START_TEST(test_cuda_alloc_reports_live_bytes_and_reuses_freed_blocks)
{
    int64_t before = gpu->ledger.current[ZERO_TAG_ACTIVATIONS];
    void *a = NULL, *b = NULL;
    ck_assert_int_eq(gpu->be->alloc(gpu->self, 1000, ZERO_TAG_ACTIVATIONS, &a), ZERO_OK);
    ck_assert_int_eq(gpu->ledger.current[ZERO_TAG_ACTIVATIONS], before + 1000);
    ck_assert_int_eq(gpu->be->free(gpu->self, a), ZERO_OK);
    ck_assert_int_eq(gpu->ledger.current[ZERO_TAG_ACTIVATIONS], before);
    ck_assert_int_eq(gpu->be->alloc(gpu->self, 900, ZERO_TAG_ACTIVATIONS, &b), ZERO_OK);
    ck_assert_ptr_eq(a, b); /* same size class: the cached block comes back */
    ck_assert_int_eq(gpu->be->free(gpu->self, b), ZERO_OK);
    ck_assert_int_eq(gpu->be->free(gpu->self, b), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(gpu->be->last_error(gpu->self), "not a live block"));
}
END_TEST

/* A step's allocations repeated (the same sizes, frees in another order, a block freed
 * and taken again inside the step) reach cudaMalloc only the first time: the steady
 * state a CUDA Graph needs. A readback is one counted host wait. */
START_TEST(test_cuda_steady_state_steps_make_no_cudamalloc_and_count_host_waits)
{
    static const size_t sizes[] = {1000,    4096,    4096,     100000,   1 << 20,
                                   3 << 20, 5 << 20, 12345678, 33 << 20, 512};
    enum { NS = sizeof(sizes) / sizeof(sizes[0]) };
    struct zero_cuda_blockers first, after;
    for (int step = 0; step < 3; step++) {
        void *p[NS];
        for (int i = 0; i < NS; i++)
            ck_assert_int_eq(gpu->be->alloc(gpu->self, sizes[i], ZERO_TAG_ACTIVATIONS, &p[i]),
                             ZERO_OK);
        ck_assert_int_eq(gpu->be->free(gpu->self, p[3]), ZERO_OK);
        ck_assert_int_eq(gpu->be->alloc(gpu->self, sizes[3], ZERO_TAG_WORKSPACE, &p[3]), ZERO_OK);
        for (int i = step % 2 ? 0 : NS - 1; step % 2 ? i < NS : i >= 0; i += step % 2 ? 1 : -1)
            ck_assert_int_eq(gpu->be->free(gpu->self, p[i]), ZERO_OK);
        ck_assert_int_eq(zero_cuda_graph_blockers(gpu->self, step == 0 ? &first : &after), ZERO_OK);
    }
    ck_assert_msg(after.device_mallocs == first.device_mallocs,
                  "cudaMalloc calls: %lld after the first step, %lld after two more",
                  (long long)first.device_mallocs, (long long)after.device_mallocs);
    float one = 1.0f, back = 0.0f;
    float *d = upload(gpu, &one, sizeof one);
    ck_assert_int_eq(zero_cuda_graph_blockers(gpu->self, &first), ZERO_OK);
    ck_assert_int_eq(gpu->be->to_host(gpu->self, &back, d, sizeof back), ZERO_OK);
    ck_assert_int_eq(zero_cuda_graph_blockers(gpu->self, &after), ZERO_OK);
    ck_assert_int_eq(after.stream_syncs, first.stream_syncs + 1);
    ck_assert(back == 1.0f);
    release(gpu, d);
}
END_TEST

START_TEST(test_cuda_copy_of_overlapping_ranges_moves_like_memmove)
{
    enum { N = 1000 };
    struct pair p = both_vals(N, 1, 1.0f);
    float *c = p.c, *g = p.g;
    ON_BOTH(cpu->be->copy(cpu->self, c + 10, c, 900 * sizeof(float)),
            gpu->be->copy(gpu->self, g + 10, g, 900 * sizeof(float)));
    ON_BOTH(cpu->be->copy(cpu->self, c, c + 50, 900 * sizeof(float)),
            gpu->be->copy(gpu->self, g, g + 50, 900 * sizeof(float)));
    pair_same(p, "copy");
    pair_free(p);
}
END_TEST

START_TEST(test_cuda_fill_writes_the_cpu_bits_for_every_dtype)
{
    for (int t = 0; t < ZERO_DTYPE_COUNT; t++) {
        size_t n = 777, bytes = n * zero_dtype_size((enum zero_dtype)t);
        struct pair p = {NULL, NULL, bytes};
        ck_assert_int_eq(cpu->be->alloc(cpu->self, bytes, ZERO_TAG_WORKSPACE, &p.c), ZERO_OK);
        ck_assert_int_eq(gpu->be->alloc(gpu->self, bytes, ZERO_TAG_WORKSPACE, &p.g), ZERO_OK);
        ON_BOTH(cpu->be->fill(cpu->self, p.c, (enum zero_dtype)t, -3.140625, n),
                gpu->be->fill(gpu->self, p.g, (enum zero_dtype)t, -3.140625, n));
        pair_same(p, zero_dtype_name((enum zero_dtype)t));
        pair_free(p);
    }
}
END_TEST

/* ---------------------------------------------------------------- host memory (offload) */

static void *host_new(size_t bytes, enum zero_tag tag)
{
    void *h = NULL;
    int rc = gpu->be->host_alloc(gpu->self, bytes, tag, &h);
    ck_assert_msg(rc == ZERO_OK, "host_alloc: %s", gpu->be->last_error(gpu->self));
    ck_assert_ptr_nonnull(h);
    return h;
}

static void host_release(void *h)
{
    ck_assert_int_eq(gpu->be->host_free(gpu->self, h), ZERO_OK);
}

/* queued on s, then waited for through an event, as the engine does */
static void copy_async_and_wait(void *dst, const void *src, size_t bytes, enum zero_stream s)
{
    void *ev = NULL;
    ck_assert_int_eq(gpu->be->event_create(gpu->self, &ev), ZERO_OK);
    int rc = gpu->be->copy_async(gpu->self, dst, src, bytes, s);
    ck_assert_msg(rc == ZERO_OK, "copy_async: %s", gpu->be->last_error(gpu->self));
    ck_assert_int_eq(gpu->be->event_record(gpu->self, ev, s), ZERO_OK);
    ck_assert_int_eq(gpu->be->event_synchronize(gpu->self, ev), ZERO_OK);
    ck_assert_int_eq(gpu->be->event_destroy(gpu->self, ev), ZERO_OK);
}

START_TEST(test_cuda_host_alloc_counts_on_the_host_ledger_and_round_trips)
{
    enum { N = 100003 };
    const size_t bytes = N * sizeof(float);
    float *x = vals(N, 60, 1.0f);
    int64_t dev_before = gpu->ledger.current_total;
    int64_t host_before = gpu->host_ledger.current[ZERO_TAG_OPTIM];
    float *h = host_new(bytes, ZERO_TAG_OPTIM);
    ck_assert_int_eq(gpu->host_ledger.current[ZERO_TAG_OPTIM], host_before + (int64_t)bytes);
    ck_assert_int_eq(gpu->ledger.current_total, dev_before); /* not device memory */

    /* device -> host on the comm stream, host -> device on the compute stream */
    void *d1 = upload(gpu, x, bytes), *d2 = NULL;
    ck_assert_int_eq(gpu->be->alloc(gpu->self, bytes, ZERO_TAG_WORKSPACE, &d2), ZERO_OK);
    copy_async_and_wait(h, d1, bytes, ZERO_STREAM_COMM);
    ck_assert_mem_eq(h, x, bytes); /* the host reads the block directly */
    h[7] = 42.0f;
    x[7] = 42.0f;
    copy_async_and_wait(d2, h, bytes, ZERO_STREAM_COMPUTE);
    assert_same_bits(gpu, d2, x, bytes, "device -> host -> device");
    /* the synchronous entries take host_alloc memory on either side too */
    float *back = host_new(bytes, ZERO_TAG_WORKSPACE);
    ck_assert_int_eq(gpu->be->copy(gpu->self, back, d2, bytes), ZERO_OK);
    ck_assert_int_eq(gpu->be->synchronize(gpu->self), ZERO_OK);
    ck_assert_mem_eq(back, x, bytes);
    memset(back, 0, bytes);
    ck_assert_int_eq(gpu->be->to_host(gpu->self, back, h, bytes), ZERO_OK);
    ck_assert_mem_eq(back, x, bytes);
    ck_assert_int_eq(gpu->be->from_host(gpu->self, d1, back, bytes), ZERO_OK);
    assert_same_bits(gpu, d1, x, bytes, "from_host out of host_alloc memory");

    /* wrong frees name the other entry; a bad stream is refused */
    ck_assert_int_eq(gpu->be->free(gpu->self, h), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(gpu->be->last_error(gpu->self), "host memory (host_free"));
    ck_assert_int_eq(gpu->be->host_free(gpu->self, d1), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(gpu->be->last_error(gpu->self), "device memory (free"));
    ck_assert_int_eq(gpu->be->copy_async(gpu->self, d1, h, bytes, (enum zero_stream)3),
                     ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(gpu->be->last_error(gpu->self), "copy_async: unknown stream 3"));

    host_release(back);
    host_release(h);
    ck_assert_int_eq(gpu->host_ledger.current[ZERO_TAG_OPTIM], host_before);
    ck_assert_int_eq(gpu->be->host_free(gpu->self, h), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(gpu->be->last_error(gpu->self), "not a live block"));
    ck_assert_int_eq(gpu->be->host_free(gpu->self, NULL), ZERO_OK);
    release(gpu, d1);
    release(gpu, d2);
    free(x);
}
END_TEST

/* The same kernels on host_alloc memory and on device memory give the same bits:
 * fill, cast, Adam with a bf16 copy, and a gemm (its host operands staged). */
START_TEST(test_cuda_kernels_on_host_alloc_memory_match_device_memory_bits)
{
    enum { N = 4099, M = 37, K = 53, NC = 29 };
    float *x = vals(N, 61, 1.0f), *g = vals(N, 62, 0.5f);
    const size_t fb = N * sizeof(float), hb = N * sizeof(uint16_t);
    /* device copies */
    float *dp = upload(gpu, x, fb), *dm = upload(gpu, g, fb), *dv = upload(gpu, g, fb);
    float *dg = upload(gpu, g, fb);
    void *dc = upload(gpu, x, hb);
    /* host_alloc copies of the same values */
    float *hp = host_new(fb, ZERO_TAG_MASTER), *hm = host_new(fb, ZERO_TAG_OPTIM);
    float *hv = host_new(fb, ZERO_TAG_OPTIM), *hg = host_new(fb, ZERO_TAG_GRADS);
    void *hc = host_new(hb, ZERO_TAG_PARAMS);
    memcpy(hp, x, fb);
    memcpy(hm, g, fb);
    memcpy(hv, g, fb);
    memcpy(hg, g, fb);
    memcpy(hc, x, hb);
    for (size_t i = 0; i < N; i++) /* exp_avg_sq must not be negative */
        hv[i] = hv[i] * hv[i];
    ck_assert_int_eq(gpu->be->from_host(gpu->self, dv, hv, fb), ZERO_OK);

    ck_assert_int_eq(gpu->be->fill(gpu->self, dm, ZERO_F32, 0.25, 100), ZERO_OK);
    ck_assert_int_eq(gpu->be->fill(gpu->self, hm, ZERO_F32, 0.25, 100), ZERO_OK);
    ck_assert_int_eq(gpu->be->cast(gpu->self, dc, ZERO_BF16, dg, ZERO_F32, N), ZERO_OK);
    ck_assert_int_eq(gpu->be->cast(gpu->self, hc, ZERO_BF16, hg, ZERO_F32, N), ZERO_OK);
    for (int step = 1; step <= 3; step++) {
        struct zero_adam_args a = {.lr = 1e-3f,
                                   .beta1 = 0.9f,
                                   .beta2 = 0.999f,
                                   .eps = 1e-8f,
                                   .weight_decay = 0.01f,
                                   .step = step,
                                   .adamw = 1,
                                   .bias_correction = 1,
                                   .grad_div = 2.0f};
        ck_assert_int_eq(gpu->be->adam(gpu->self, dp, dg, ZERO_F32, dm, dv, N, &a, dc, ZERO_BF16),
                         ZERO_OK);
        ck_assert_int_eq(gpu->be->adam(gpu->self, hp, hg, ZERO_F32, hm, hv, N, &a, hc, ZERO_BF16),
                         ZERO_OK);
    }
    ck_assert_int_eq(gpu->be->synchronize(gpu->self), ZERO_OK);
    assert_same_bits(gpu, dp, hp, fb, "adam on host memory: param");
    assert_same_bits(gpu, dm, hm, fb, "adam on host memory: exp_avg");
    assert_same_bits(gpu, dv, hv, fb, "adam on host memory: exp_avg_sq");
    assert_same_bits(gpu, dc, hc, hb, "adam on host memory: bf16 copy");

    /* C (M, NC) = 0.5 A (M, K) @ B^T (K, NC) + 0.25 C: host A and C, device B */
    const size_t ab = (size_t)M * K * sizeof(float), bb = (size_t)NC * K * sizeof(float);
    const size_t cb = (size_t)M * NC * sizeof(float);
    float *a32 = vals((size_t)M * K, 63, 1.0f), *b32 = vals((size_t)NC * K, 64, 1.0f);
    float *c32 = vals((size_t)M * NC, 65, 1.0f);
    float *da = upload(gpu, a32, ab), *db = upload(gpu, b32, bb), *dcc = upload(gpu, c32, cb);
    float *ha = host_new(ab, ZERO_TAG_PARAMS), *hcc = host_new(cb, ZERO_TAG_ACTIVATIONS);
    memcpy(ha, a32, ab);
    memcpy(hcc, c32, cb);
    ck_assert_int_eq(gpu->be->gemm(gpu->self, 0, 1, M, NC, K, 0.5f, da, ZERO_F32, K, db, ZERO_F32,
                                   K, 0.25f, dcc, ZERO_F32, NC),
                     ZERO_OK);
    int rc = gpu->be->gemm(gpu->self, 0, 1, M, NC, K, 0.5f, ha, ZERO_F32, K, db, ZERO_F32, K, 0.25f,
                           hcc, ZERO_F32, NC);
    ck_assert_msg(rc == ZERO_OK, "gemm on host memory: %s", gpu->be->last_error(gpu->self));
    ck_assert_int_eq(gpu->be->synchronize(gpu->self), ZERO_OK);
    assert_same_bits(gpu, dcc, hcc, cb, "gemm with host operands");

    void *dev_ptrs[] = {dp, dm, dv, dg, dc, da, db, dcc};
    for (size_t i = 0; i < sizeof(dev_ptrs) / sizeof(dev_ptrs[0]); i++)
        release(gpu, dev_ptrs[i]);
    void *host_ptrs[] = {hp, hm, hv, hg, hc, ha, hcc};
    for (size_t i = 0; i < sizeof(host_ptrs) / sizeof(host_ptrs[0]); i++)
        host_release(host_ptrs[i]);
    free(x);
    free(g);
    free(a32);
    free(b32);
    free(c32);
}
END_TEST

/* ---------------------------------------------------------------- casts, elementwise */

START_TEST(test_cuda_cast_from_every_fp16_and_bf16_pattern_matches_cpu)
{
    enum { N = 65536 };
    uint16_t *h = malloc(N * sizeof(uint16_t));
    for (uint32_t i = 0; i < N; i++)
        h[i] = (uint16_t)i;
    struct pair in = both(h, N * sizeof(uint16_t)), out = both_blank(N * sizeof(float));
    struct pair wide = both_blank(N * sizeof(double));
    for (int t = ZERO_F16; t <= ZERO_BF16; t++) {
        ON_BOTH(cpu->be->cast(cpu->self, out.c, ZERO_F32, in.c, (enum zero_dtype)t, N),
                gpu->be->cast(gpu->self, out.g, ZERO_F32, in.g, (enum zero_dtype)t, N));
        pair_same(out, t == ZERO_F16 ? "fp16 -> fp32" : "bf16 -> fp32");
        ON_BOTH(cpu->be->cast(cpu->self, wide.c, ZERO_F64, in.c, (enum zero_dtype)t, N),
                gpu->be->cast(gpu->self, wide.g, ZERO_F64, in.g, (enum zero_dtype)t, N));
        pair_same(wide, t == ZERO_F16 ? "fp16 -> fp64" : "bf16 -> fp64");
    }
    pair_free(in);
    pair_free(out);
    pair_free(wide);
    free(h);
}
END_TEST

/* fp32 patterns around every rounding boundary: halfway cases, subnormals, overflow,
 * NaN payloads, and a sweep of random bits */
START_TEST(test_cuda_cast_to_fp16_and_bf16_rounds_like_the_cpu)
{
    enum { N = 1 << 18 };
    uint32_t *bits = malloc(N * sizeof(uint32_t));
    for (uint32_t i = 0; i < N; i++) {
        uint32_t x = i * 2654435761u;
        x ^= x >> 13;
        x *= 0x5bd1e995u;
        bits[i] = (i & 1) ? x : (x & 0xffff0000u) | (i & 2 ? 0x8000u : 0x1000u);
    }
    const uint32_t special[] = {0x7f800000, 0xff800000, 0x7fc00001, 0x7f800001, 0xffa00000,
                                0x477ff000, 0x477fefff, 0x33000000, 0x33000001, 0x38800000,
                                0x387fffff, 0x00000001, 0x80000000, 0x3f808000, 0x3f818000};
    memcpy(bits, special, sizeof(special));
    struct pair in = both(bits, N * sizeof(uint32_t)), out = both_blank(N * sizeof(uint16_t));
    struct pair wide = both_blank(N * sizeof(double));
    for (int t = ZERO_F16; t <= ZERO_BF16; t++) {
        ON_BOTH(cpu->be->cast(cpu->self, out.c, (enum zero_dtype)t, in.c, ZERO_F32, N),
                gpu->be->cast(gpu->self, out.g, (enum zero_dtype)t, in.g, ZERO_F32, N));
        pair_same(out, t == ZERO_F16 ? "fp32 -> fp16" : "fp32 -> bf16");
    }
    ON_BOTH(cpu->be->cast(cpu->self, wide.c, ZERO_F64, in.c, ZERO_F32, N),
            gpu->be->cast(gpu->self, wide.g, ZERO_F64, in.g, ZERO_F32, N));
    pair_same(wide, "fp32 -> fp64");
    ON_BOTH(cpu->be->cast(cpu->self, in.c, ZERO_F32, wide.c, ZERO_F64, N),
            gpu->be->cast(gpu->self, in.g, ZERO_F32, wide.g, ZERO_F64, N));
    pair_same(in, "fp64 -> fp32");
    pair_free(in);
    pair_free(out);
    pair_free(wide);
    free(bits);
}
END_TEST

/* The contiguous fp32 <-> fp16/bf16 casts (stored activations, libzero.activations =
 * "compute", pass through them twice per value) take 128-bit packs of 8 where both
 * pointers are 16-byte aligned, and a scalar tail: every element offset 0..8 (aligned
 * and not, as the kernel sees a sub-buffer) and lengths with every tail give the cpu's
 * bits both ways, and nothing outside the range is written. */
START_TEST(test_cuda_cast_x128_packs_and_tails_match_cpu_bits)
{
    enum { N = 4096 + 64 };
    const size_t lens[] = {1, 7, 8, 9, 15, 16, 17, 1000, 4095, 4096};
    struct pair src = both_vals(N, 7, 3.0f), narrow = both_blank(N * sizeof(uint16_t)),
                wide = both_blank(N * sizeof(float));
    for (int t = ZERO_F16; t <= ZERO_BF16; t++)
        for (size_t off = 0; off <= 8; off++)
            for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                const enum zero_dtype dt = (enum zero_dtype)t;
                const size_t n = lens[l];
                ON_BOTH(cpu->be->cast(cpu->self, (uint16_t *)narrow.c + off, dt,
                                      (float *)src.c + off, ZERO_F32, n),
                        gpu->be->cast(gpu->self, (uint16_t *)narrow.g + off, dt,
                                      (float *)src.g + off, ZERO_F32, n));
                ON_BOTH(cpu->be->cast(cpu->self, (float *)wide.c + off, ZERO_F32,
                                      (uint16_t *)narrow.c + off, dt, n),
                        gpu->be->cast(gpu->self, (float *)wide.g + off, ZERO_F32,
                                      (uint16_t *)narrow.g + off, dt, n));
            }
    pair_same(narrow, "fp32 -> fp16/bf16, x128 packs and tails");
    pair_same(wide, "fp16/bf16 -> fp32, x128 packs and tails");
    pair_free(src);
    pair_free(narrow);
    pair_free(wide);
}
END_TEST

START_TEST(test_cuda_axpy_scale_add_match_cpu_bits)
{
    enum { N = 10007 };
    struct pair x = both_vals(N, 2, 3.0f), y = both_vals(N, 3, 1.0f), z = both_vals(N, 4, 1.0f);
    ON_BOTH(cpu->be->axpy(cpu->self, 0.3f, x.c, y.c, N),
            gpu->be->axpy(gpu->self, 0.3f, x.g, y.g, N));
    ON_BOTH(cpu->be->scale(cpu->self, 1.7f, y.c, N), gpu->be->scale(gpu->self, 1.7f, y.g, N));
    ON_BOTH(cpu->be->add(cpu->self, z.c, x.c, y.c, N), gpu->be->add(gpu->self, z.g, x.g, y.g, N));
    ON_BOTH(cpu->be->add(cpu->self, z.c, z.c, x.c, N), gpu->be->add(gpu->self, z.g, z.g, x.g, N));
    pair_same(y, "axpy then scale");
    pair_same(z, "add, then add in place");
    pair_free(x);
    pair_free(y);
    pair_free(z);
}
END_TEST

/* qwZ's int8 blocks (zero/backend_quant.h): the codes, scales and dequantized values of
 * every float type are the cpu's bits, with a short last block, an all-zero block and a
 * block holding inf */
START_TEST(test_cuda_quant_int8_codes_and_values_match_cpu_bits)
{
    enum { N = 2 * 256 + 3 * 256 + 77, B = 256, NB = (N + B - 1) / B };
    ck_assert_ptr_nonnull(gpu->be->quant);
    float *x = vals(N, 21, 2.0f);
    for (size_t i = 256; i < 512; i++)
        x[i] = 0.0f;
    x[600] = INFINITY;
    const enum zero_dtype types[] = {ZERO_F32, ZERO_F16, ZERO_BF16};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        enum zero_dtype t = types[k];
        struct pair in = both_blank(N * zero_dtype_size(t)), f = both(x, N * sizeof(float));
        ON_BOTH(cpu->be->cast(cpu->self, in.c, t, f.c, ZERO_F32, N),
                gpu->be->cast(gpu->self, in.g, t, f.g, ZERO_F32, N));
        struct pair scales = both_blank(NB * sizeof(float)), q = both_blank(N);
        struct pair out = both_blank(N * zero_dtype_size(t));
        ON_BOTH(cpu->be->quant->quantize_int8(cpu->self, in.c, t, N, B, scales.c, q.c),
                gpu->be->quant->quantize_int8(gpu->self, in.g, t, N, B, scales.g, q.g));
        ON_BOTH(cpu->be->quant->dequantize_int8(cpu->self, scales.c, q.c, N, B, out.c, t),
                gpu->be->quant->dequantize_int8(gpu->self, scales.g, q.g, N, B, out.g, t));
        pair_same(scales, "quantize_int8 scales");
        pair_same(q, "quantize_int8 codes");
        pair_same(out, "dequantize_int8 values");
        pair_free(in);
        pair_free(f);
        pair_free(scales);
        pair_free(q);
        pair_free(out);
    }
    free(x);
}
END_TEST

/* qgZ's int4 blocks: the scales, the packed nibbles (an odd count: the last high nibble
 * 0) and the dequantized values of every float type are the cpu's bits */
START_TEST(test_cuda_quant_int4_codes_and_values_match_cpu_bits)
{
    enum { N = 2 * 256 + 3 * 256 + 77, B = 256, NB = (N + B - 1) / B };
    float *x = vals(N, 22, 2.0f);
    for (size_t i = 256; i < 512; i++)
        x[i] = 0.0f;
    x[600] = INFINITY;
    const enum zero_dtype types[] = {ZERO_F32, ZERO_F16, ZERO_BF16};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        enum zero_dtype t = types[k];
        struct pair in = both_blank(N * zero_dtype_size(t)), f = both(x, N * sizeof(float));
        ON_BOTH(cpu->be->cast(cpu->self, in.c, t, f.c, ZERO_F32, N),
                gpu->be->cast(gpu->self, in.g, t, f.g, ZERO_F32, N));
        struct pair scales = both_blank(NB * sizeof(float)), q = both_blank((N + 1) / 2);
        struct pair out = both_blank(N * zero_dtype_size(t));
        ON_BOTH(cpu->be->quant->quantize_int4(cpu->self, in.c, t, N, B, scales.c, q.c),
                gpu->be->quant->quantize_int4(gpu->self, in.g, t, N, B, scales.g, q.g));
        ON_BOTH(cpu->be->quant->dequantize_int4(cpu->self, scales.c, q.c, N, B, out.c, t),
                gpu->be->quant->dequantize_int4(gpu->self, scales.g, q.g, N, B, out.g, t));
        pair_same(scales, "quantize_int4 scales");
        pair_same(q, "quantize_int4 nibbles");
        pair_same(out, "dequantize_int4 values");
        pair_free(in);
        pair_free(f);
        pair_free(scales);
        pair_free(q);
        pair_free(out);
    }
    free(x);
}
END_TEST

/* ---------------------------------------------------------------- optimizers */

static void adam_both(int adamw, float wd, enum zero_dtype grad_type, int with_copy)
{
    enum { N = 4099 };
    struct pair p = both_vals(N, 5, 1.0f), m = both_vals(N, 6, 0.0f), v = both_vals(N, 7, 0.0f);
    float *g32 = vals(N, 8, 0.5f);
    uint16_t *g16 = malloc(N * sizeof(uint16_t));
    for (size_t i = 0; i < N; i++)
        g16[i] = grad_type == ZERO_F16 ? zero_f32_to_f16(g32[i]) : zero_f32_to_bf16(g32[i]);
    struct pair g =
        grad_type == ZERO_F32 ? both(g32, N * sizeof(float)) : both(g16, N * sizeof(uint16_t));
    struct pair copy = both(g16, N * sizeof(uint16_t));
    for (int step = 1; step <= 5; step++) {
        struct zero_adam_args a = {.lr = 1e-3f,
                                   .beta1 = 0.9f,
                                   .beta2 = 0.999f,
                                   .eps = 1e-8f,
                                   .weight_decay = wd,
                                   .step = step,
                                   .adamw = adamw,
                                   .bias_correction = 1,
                                   .grad_div = 3.0f};
        ON_BOTH(cpu->be->adam(cpu->self, p.c, g.c, grad_type, m.c, v.c, N, &a,
                              with_copy ? copy.c : NULL, ZERO_BF16),
                gpu->be->adam(gpu->self, p.g, g.g, grad_type, m.g, v.g, N, &a,
                              with_copy ? copy.g : NULL, ZERO_BF16));
    }
    pair_same(p, "adam: param");
    pair_same(m, "adam: exp_avg");
    pair_same(v, "adam: exp_avg_sq");
    if (with_copy)
        pair_same(copy, "adam: bf16 copy");
    pair_free(p);
    pair_free(m);
    pair_free(v);
    pair_free(g);
    pair_free(copy);
    free(g32);
    free(g16);
}

START_TEST(test_cuda_adamw_matches_cpu_bits_over_five_steps)
{
    adam_both(1, 0.01f, ZERO_F32, 0);
}
END_TEST

START_TEST(test_cuda_adam_l2_with_bf16_grads_and_copy_matches_cpu_bits)
{
    adam_both(0, 0.1f, ZERO_BF16, 1);
    adam_both(1, 0.0f, ZERO_F16, 1);
}
END_TEST

START_TEST(test_cuda_sgd_nesterov_and_momentum_match_cpu_bits)
{
    enum { N = 3001 };
    for (int nesterov = 0; nesterov <= 1; nesterov++) {
        struct pair p = both_vals(N, 9, 1.0f), buf = both_vals(N, 10, 0.0f);
        struct pair g = both_vals(N, 11, 1.0f);
        for (int step = 1; step <= 4; step++) {
            struct zero_sgd_args a = {.lr = 0.05f,
                                      .momentum = 0.9f,
                                      .dampening = nesterov ? 0.0f : 0.1f,
                                      .weight_decay = 0.01f,
                                      .nesterov = nesterov,
                                      .step = step,
                                      .grad_div = 2.0f};
            ON_BOTH(cpu->be->sgd(cpu->self, p.c, g.c, ZERO_F32, buf.c, N, &a, NULL, ZERO_F32),
                    gpu->be->sgd(gpu->self, p.g, g.g, ZERO_F32, buf.g, N, &a, NULL, ZERO_F32));
        }
        pair_same(p, "sgd: param");
        pair_same(buf, "sgd: momentum");
        pair_free(p);
        pair_free(buf);
        pair_free(g);
    }
}
END_TEST

/* ---------------------------------------------------------------- reductions */

START_TEST(test_cuda_sumsq_blocks_matches_cpu_bits_in_every_float_type)
{
    enum { N = 10000, BLOCK = 2048, NB = (N + BLOCK - 1) / BLOCK };
    float *x = vals(N, 12, 100.0f);
    double wide[N];
    uint16_t half[N];
    for (int i = 0; i < N; i++) {
        wide[i] = (double)x[i] * 1.000000001;
        half[i] = zero_f32_to_bf16(x[i]);
    }
    struct pair in32 = both(x, sizeof(float) * N), in64 = both(wide, sizeof(wide));
    struct pair in16 = both(half, sizeof(half)), out = both(wide, NB * sizeof(double));
    const struct pair *ins[] = {&in32, &in16, &in64};
    const enum zero_dtype types[] = {ZERO_F32, ZERO_BF16, ZERO_F64};
    for (int k = 0; k < 3; k++) {
        ON_BOTH(cpu->be->sumsq_blocks(cpu->self, ins[k]->c, types[k], N, BLOCK, out.c),
                gpu->be->sumsq_blocks(gpu->self, ins[k]->g, types[k], N, BLOCK, out.g));
        pair_same(out, zero_dtype_name(types[k]));
    }
    pair_free(in32);
    pair_free(in64);
    pair_free(in16);
    pair_free(out);
    free(x);
}
END_TEST

START_TEST(test_cuda_nonfinite_flags_inf_and_nan_and_nothing_else)
{
    enum { N = 5000 };
    float *x = vals(N, 13, 1e30f);
    struct pair p = both(x, sizeof(float) * N);
    int flag = -1;
    ck_assert_int_eq(gpu->be->nonfinite(gpu->self, p.g, ZERO_F32, N, &flag), ZERO_OK);
    ck_assert_int_eq(flag, 0);
    const float bad[] = {INFINITY, -INFINITY, NAN};
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(gpu->be->from_host(gpu->self, (float *)p.g + 4321, &bad[k], 4), ZERO_OK);
        ck_assert_int_eq(gpu->be->nonfinite(gpu->self, p.g, ZERO_F32, N, &flag), ZERO_OK);
        ck_assert_int_eq(flag, 1);
    }
    uint16_t h[3] = {0x3c00, 0x7c00, 0x0001};
    struct pair q = both(h, sizeof(h));
    ck_assert_int_eq(gpu->be->nonfinite(gpu->self, q.g, ZERO_F16, 3, &flag), ZERO_OK);
    ck_assert_int_eq(flag, 1);
    ck_assert_int_eq(gpu->be->nonfinite(gpu->self, q.g, ZERO_BF16, 3, &flag), ZERO_OK);
    ck_assert_int_eq(flag, 0); /* 0x7c00 is a finite bf16 */
    pair_free(p);
    pair_free(q);
    free(x);
}
END_TEST

/* ---------------------------------------------------------------- gemm */

/* x (n) stored as t on both devices (converted on the host) */
static struct pair both_typed(const float *x, size_t n, enum zero_dtype t)
{
    if (t == ZERO_F32)
        return both(x, n * sizeof(float));
    uint16_t *h = malloc(n * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++)
        h[i] = t == ZERO_F16 ? zero_f32_to_f16(x[i]) : zero_f32_to_bf16(x[i]);
    struct pair p = both(h, n * sizeof(uint16_t));
    free(h);
    return p;
}

/* d's buffer (n elements of t) as fp32 on the host */
static float *download_f32(struct zero_device *d, const void *p, size_t n, enum zero_dtype t)
{
    void *raw = download(d, p, n * zero_dtype_size(t));
    if (t == ZERO_F32)
        return raw;
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        uint16_t h = ((uint16_t *)raw)[i];
        x[i] = t == ZERO_F16 ? zero_f16_to_f32(h) : zero_bf16_to_f32(h);
    }
    free(raw);
    return x;
}

/* cuBLAS (native mode) or the exact kernel (exact mode) and OpenBLAS add the k products
 * in different orders: fp32 results agree to 1e-5 of (|c| + 8) (k = 53 products of
 * magnitude < 1), fp16/bf16 results to one unit in the last place of the output type.
 * Padding columns of C stay untouched. Run in both modes (_i: 0 native, 1 exact). */
START_TEST(test_cuda_gemm_matches_cpu_for_all_transposes_and_dtypes)
{
    enum zero_coll_mode mode = _i ? ZERO_COLL_EXACT : ZERO_COLL_NATIVE;
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, mode), ZERO_OK);
    const int m = 37, n = 29, k = 53, pad = 3;
    const enum zero_dtype in_types[][2] = {
        {ZERO_F32, ZERO_F32}, {ZERO_BF16, ZERO_BF16}, {ZERO_F16, ZERO_F16}, {ZERO_F32, ZERO_BF16}};
    float *a32 = vals((size_t)(k + pad) * (m + pad), 14, 1.0f);
    float *b32 = vals((size_t)(k + pad) * (n + pad), 15, 1.0f);
    float *c32 = vals((size_t)m * (n + pad), 16, 1.0f);
    for (int ta = 0; ta <= 1; ta++)
        for (int tb = 0; tb <= 1; tb++)
            for (size_t ti = 0; ti < sizeof(in_types) / sizeof(in_types[0]); ti++)
                for (int narrow_c = 0; narrow_c <= 1; narrow_c++) {
                    enum zero_dtype at = in_types[ti][0], bt = in_types[ti][1];
                    enum zero_dtype ct = narrow_c ? bt : ZERO_F32;
                    if (narrow_c && bt == ZERO_F32)
                        continue;
                    int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
                    size_t na = (size_t)(ta ? k : m) * lda, nb = (size_t)(tb ? n : k) * ldb;
                    size_t nc = (size_t)m * ldc;
                    struct pair A = both_typed(a32, na, at), B = both_typed(b32, nb, bt);
                    struct pair C = both_typed(c32, nc, ct);
                    ON_BOTH(cpu->be->gemm(cpu->self, ta, tb, m, n, k, 0.75f, A.c, at, lda, B.c, bt,
                                          ldb, 0.5f, C.c, ct, ldc),
                            gpu->be->gemm(gpu->self, ta, tb, m, n, k, 0.75f, A.g, at, lda, B.g, bt,
                                          ldb, 0.5f, C.g, ct, ldc));
                    float *want = download_f32(cpu, C.c, nc, ct);
                    float *got = download_f32(gpu, C.g, nc, ct);
                    double rel = ct == ZERO_F32 ? 1e-5 : ct == ZERO_F16 ? 1e-3 : 8e-3;
                    double floor = ct == ZERO_F32 ? 8.0 : 0.05;
                    char what[96];
                    snprintf(what, sizeof(what), "gemm ta=%d tb=%d %s x %s -> %s", ta, tb,
                             zero_dtype_name(at), zero_dtype_name(bt), zero_dtype_name(ct));
                    assert_close(got, want, nc, rel, floor, what);
                    for (int i = 0; i < m; i++) /* padding untouched */
                        for (int j = n; j < ldc; j++)
                            ck_assert_msg(memcmp(&got[i * ldc + j], &want[i * ldc + j], 4) == 0,
                                          "%s: padding (%d, %d) written", what, i, j);
                    free(want);
                    free(got);
                    pair_free(A);
                    pair_free(B);
                    pair_free(C);
                }
    free(a32);
    free(b32);
    free(c32);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

/* The bf16 contracts (zero/backend_bf16_dot.h) on the GPU: with the same one on in both
 * backends (_i / 2: the bf16-product contract, then the bf16-tile one), a bf16 x bf16
 * gemm gives the cpu's bits exactly (the cpu's VDPBF16PS, TDPBF16PS or their emulation),
 * in exact and native mode (_i % 2), every transpose, an odd K over two blocks of 32, C
 * fp32 and bf16, beta 0 and 1, on values whose products and sums lie around 2^-126 (DAZ
 * and FTZ act) and on ordinary ones. */
START_TEST(test_cuda_bf16_dot_gemm_gives_the_cpu_bits)
{
    ck_assert_ptr_nonnull(gpu->be->bf16_dot);
    const enum zero_coll_mode mode = _i % 2 ? ZERO_COLL_EXACT : ZERO_COLL_NATIVE;
    const enum zero_bf16_product product = _i / 2 ? ZERO_BF16_PRODUCT_TILE : ZERO_BF16_PRODUCT_DOT;
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, mode), ZERO_OK);
    ck_assert_int_eq(cpu->be->bf16_dot->set_bf16_product(cpu->self, product), ZERO_OK);
    ck_assert_int_eq(gpu->be->bf16_dot->set_bf16_product(gpu->self, product), ZERO_OK);
    const int m = 37, n = 29, k = 53, pad = 3;
    for (int tiny = 0; tiny <= 1; tiny++) {
        const float scale = tiny ? 0x1p-63f : 1.0f; /* products near 2^-126 */
        float *a32 = vals((size_t)(k + pad) * (m + pad), 24, scale);
        float *b32 = vals((size_t)(k + pad) * (n + pad), 25, scale);
        float *c32 = vals((size_t)m * (n + pad), 26, tiny ? 0x1p-125f : 1.0f);
        for (int ta = 0; ta <= 1; ta++)
            for (int tb = 0; tb <= 1; tb++)
                for (int narrow_c = 0; narrow_c <= 1; narrow_c++) {
                    const enum zero_dtype ct = narrow_c ? ZERO_BF16 : ZERO_F32;
                    const float beta = narrow_c ? 0.0f : 1.0f;
                    int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
                    size_t na = (size_t)(ta ? k : m) * lda, nb = (size_t)(tb ? n : k) * ldb;
                    size_t nc = (size_t)m * ldc;
                    struct pair A = both_typed(a32, na, ZERO_BF16);
                    struct pair B = both_typed(b32, nb, ZERO_BF16), C = both_typed(c32, nc, ct);
                    ON_BOTH(cpu->be->gemm(cpu->self, ta, tb, m, n, k, 1.0f, A.c, ZERO_BF16, lda,
                                          B.c, ZERO_BF16, ldb, beta, C.c, ct, ldc),
                            gpu->be->gemm(gpu->self, ta, tb, m, n, k, 1.0f, A.g, ZERO_BF16, lda,
                                          B.g, ZERO_BF16, ldb, beta, C.g, ct, ldc));
                    float *want = download_f32(cpu, C.c, nc, ct);
                    float *got = download_f32(gpu, C.g, nc, ct);
                    ck_assert_msg(
                        memcmp(got, want, nc * sizeof(float)) == 0,
                        "bf16 product %d gemm ta=%d tb=%d -> %s tiny=%d: not the cpu's bits",
                        (int)product, ta, tb, zero_dtype_name(ct), tiny);
                    free(want);
                    free(got);
                    pair_free(A);
                    pair_free(B);
                    pair_free(C);
                }
        free(a32);
        free(b32);
        free(c32);
    }
    ck_assert_int_eq(cpu->be->bf16_dot->set_bf16_product(cpu->self, ZERO_BF16_PRODUCT_FP32),
                     ZERO_OK);
    ck_assert_int_eq(gpu->be->bf16_dot->set_bf16_product(gpu->self, ZERO_BF16_PRODUCT_FP32),
                     ZERO_OK);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

/* gemm_bias (the bias and GELU in cuBLASLt's epilogue) against the cpu's gemm, bias_add
 * and tanh gelu_forward: c within the GEMM tolerance above, 1e-5 of (|c| + 8); the GELU
 * output within 1e-3 of (|c| + 0.1), room for cuBLASLt's own tanh (a missing bias or
 * GELU is off by O(1)). Cases (_i): fp32 and bf16 operands through the GELU and the bias
 * epilogues, B transposed as nn_affine_forward has it; n = 37 (the auxiliary output's
 * leading dimension is not a multiple of 8) takes the unfused fallback; exact mode
 * always does. The padding past m * n is never written. */
START_TEST(test_cuda_gemm_bias_matches_cpu_gemm_then_bias_add_then_gelu)
{
    static const struct {
        enum zero_dtype t;
        int n, tb, gelu;
        enum zero_coll_mode mode;
    } cases[] = {
        {ZERO_F32, 96, 0, 1, ZERO_COLL_NATIVE},  {ZERO_BF16, 96, 1, 1, ZERO_COLL_NATIVE},
        {ZERO_BF16, 96, 0, 0, ZERO_COLL_NATIVE}, {ZERO_F32, 37, 0, 1, ZERO_COLL_NATIVE},
        {ZERO_F32, 96, 1, 1, ZERO_COLL_EXACT},
    };
    const int m = 64, k = 48, n = cases[_i].n, tb = cases[_i].tb, pad = 8;
    const enum zero_dtype t = cases[_i].t;
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, cases[_i].mode), ZERO_OK);
    const int ldb = tb ? k : n;
    float *a32 = vals((size_t)m * k, 111, 1.0f), *b32 = vals((size_t)k * n, 112, 1.0f);
    struct pair A = both_typed(a32, (size_t)m * k, t), B = both_typed(b32, (size_t)k * n, t);
    struct pair bias = both_vals(n, 113, 1.0f);
    const size_t nc = (size_t)m * n + pad; /* pad: must stay as it was */
    struct pair c = both_blank(nc * 4), g = both_blank(nc * 4);
    float *before = download(cpu, g.c, nc * 4);
    float *gelu_c = cases[_i].gelu ? g.c : NULL, *gelu_g = cases[_i].gelu ? g.g : NULL;
    ck_assert_int_eq(cpu->be->gemm(cpu->self, 0, tb, m, n, k, 1.0f, A.c, t, k, B.c, t, ldb, 0.0f,
                                   c.c, ZERO_F32, n),
                     ZERO_OK);
    ck_assert_int_eq(cpu->be->bias_add(cpu->self, c.c, bias.c, m, n), ZERO_OK);
    if (gelu_c != NULL)
        ck_assert_int_eq(
            cpu->be->gelu_forward(cpu->self, gelu_c, c.c, (size_t)m * n, ZERO_GELU_TANH), ZERO_OK);
    int rc = gpu->be->fused->gemm_bias(gpu->self, 0, tb, m, n, k, A.g, t, k, B.g, t, ldb, bias.g,
                                       c.g, n, gelu_g, ZERO_GELU_TANH);
    ck_assert_msg(rc == ZERO_OK, "cuda: %s", gpu->be->last_error(gpu->self));
    float *want = download(cpu, c.c, nc * 4), *got = download(gpu, c.g, nc * 4);
    assert_close(got, want, (size_t)m * n, 1e-5, 8.0, "gemm_bias c");
    ck_assert_msg(memcmp(got + (size_t)m * n, want + (size_t)m * n, pad * 4) == 0,
                  "gemm_bias: c written past m * n");
    float *want_g = download(cpu, g.c, nc * 4), *got_g = download(gpu, g.g, nc * 4);
    if (cases[_i].gelu) {
        for (size_t i = 0; i < (size_t)m * n; i++)
            ck_assert_msg(fabs((double)got_g[i] - (double)want_g[i]) <=
                              1e-3 * (fabs((double)want[i]) + 0.1),
                          "gemm_bias gelu: element %zu: cuda %.9g, cpu %.9g (pre-activation %.9g)",
                          i, (double)got_g[i], (double)want_g[i], (double)want[i]);
        ck_assert_msg(memcmp(got_g + (size_t)m * n, before + (size_t)m * n, pad * 4) == 0,
                      "gemm_bias: gelu written past m * n");
    } else {
        ck_assert_msg(memcmp(got_g, before, nc * 4) == 0, "gemm_bias: gelu written without one");
    }
    free(a32);
    free(b32);
    free(before);
    free(want);
    free(got);
    free(want_g);
    free(got_g);
    pair_free(A);
    pair_free(B);
    pair_free(bias);
    pair_free(c);
    pair_free(g);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

/* gemm_dgelu (GELU's derivative in cuBLASLt's DGELU epilogue) against the cpu's gemm then
 * tanh gelu_backward in place: within 1e-3 of (|product| + 0.1) + 1e-4, room for the
 * GEMM's order and cuBLASLt's own tanh (a missing or wrong derivative is off by O(1)).
 * Cases (_i): fp32 and bf16 (B transposed, as conv1d's dx product has it) through the
 * epilogue, n = 37 through the fallback, exact mode. */
START_TEST(test_cuda_gemm_dgelu_matches_cpu_gemm_then_gelu_backward)
{
    static const struct {
        enum zero_dtype t;
        int n, tb;
        enum zero_coll_mode mode;
    } cases[] = {
        {ZERO_F32, 96, 1, ZERO_COLL_NATIVE},
        {ZERO_BF16, 96, 1, ZERO_COLL_NATIVE},
        {ZERO_F32, 37, 0, ZERO_COLL_NATIVE},
        {ZERO_F32, 96, 1, ZERO_COLL_EXACT},
    };
    const int m = 64, k = 48, n = cases[_i].n, tb = cases[_i].tb;
    const enum zero_dtype t = cases[_i].t;
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, cases[_i].mode), ZERO_OK);
    const int ldb = tb ? k : n;
    const size_t nc = (size_t)m * n;
    float *a32 = vals((size_t)m * k, 121, 1.0f), *b32 = vals((size_t)k * n, 122, 1.0f);
    struct pair A = both_typed(a32, (size_t)m * k, t), B = both_typed(b32, (size_t)k * n, t);
    struct pair pre = both_vals(nc, 123, 3.0f), c = both_blank(nc * 4), prod = both_blank(nc * 4);
    ck_assert_int_eq(cpu->be->gemm(cpu->self, 0, tb, m, n, k, 1.0f, A.c, t, k, B.c, t, ldb, 0.0f,
                                   prod.c, ZERO_F32, n),
                     ZERO_OK);
    ck_assert_int_eq(cpu->be->copy(cpu->self, c.c, prod.c, nc * 4), ZERO_OK);
    ck_assert_int_eq(cpu->be->gelu_backward(cpu->self, c.c, pre.c, c.c, nc, ZERO_GELU_TANH),
                     ZERO_OK);
    int rc = gpu->be->fused->gemm_dgelu(gpu->self, 0, tb, m, n, k, A.g, t, k, B.g, t, ldb, c.g, n,
                                        pre.g, ZERO_GELU_TANH);
    ck_assert_msg(rc == ZERO_OK, "cuda: %s", gpu->be->last_error(gpu->self));
    pair_close_to_product(c, prod, nc, "gemm_dgelu");
    free(a32);
    free(b32);
    pair_free(A);
    pair_free(B);
    pair_free(pre);
    pair_free(c);
    pair_free(prod);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

/* one unit in the last place of a 16-bit type, relative to the value, at most (normal range) */
static double ulp16(enum zero_dtype t)
{
    return t == ZERO_BF16 ? 1.0 / 128 : t == ZERO_F16 ? 1.0 / 1024 : 0.0;
}

/* gemm_bias_stored (stored activations: the pre-activation c and its GELU written in 16
 * bits) against the cpu's gemm, bias_add, gelu_forward then cast (stored_entries_ref.c,
 * the contract's definition). Exact mode: the cpu's bits, and nothing written past m * n.
 * Native mode: c (widened) within gemm_bias's 1e-5 of (|c| + 8) plus one unit in the
 * last place of out_type (ulp16 of |c|): the fp32 value may differ by the GEMM's order and
 * then round the other way; the GELU within gemm_bias's 1e-3 of (|c| + 0.1) plus ulp16 of
 * |gelu|. A missing bias or GELU, or a GELU of the rounded c where the cpu's differs by
 * more than that, fails. Cases (_i): bf16 and fp16 operands through the GELU and the bias
 * epilogues (cuBLASLt's 16-bit D and aux, or the fallback where it refuses the fp32 bias),
 * fp32 operands with a bf16 output (fallback), n = 37 (odd: the aux's ld is not a multiple
 * of 8, and the cast's tail), outputs 2 bytes past 16-byte alignment (off 1: the scalar
 * cast), exact mode for each shape. */
START_TEST(test_cuda_gemm_bias_stored_16_bits_matches_cpu_gemm_bias_then_cast)
{
    static const struct {
        enum zero_dtype t, out;
        int n, gelu, off;
        enum zero_coll_mode mode;
    } cases[] = {
        {ZERO_BF16, ZERO_BF16, 96, 1, 0, ZERO_COLL_NATIVE},
        {ZERO_BF16, ZERO_BF16, 96, 0, 0, ZERO_COLL_NATIVE},
        {ZERO_F16, ZERO_F16, 96, 1, 0, ZERO_COLL_NATIVE},
        {ZERO_F32, ZERO_BF16, 96, 1, 0, ZERO_COLL_NATIVE},
        {ZERO_BF16, ZERO_BF16, 37, 1, 0, ZERO_COLL_NATIVE},
        {ZERO_BF16, ZERO_BF16, 96, 1, 1, ZERO_COLL_NATIVE},
        {ZERO_BF16, ZERO_BF16, 96, 1, 0, ZERO_COLL_EXACT},
        {ZERO_F16, ZERO_F16, 37, 1, 1, ZERO_COLL_EXACT},
        {ZERO_F32, ZERO_BF16, 37, 0, 1, ZERO_COLL_EXACT},
    };
    const int m = 64, k = 48, n = cases[_i].n, off = cases[_i].off, pad = 8;
    const enum zero_dtype t = cases[_i].t, out = cases[_i].out;
    const int exact = cases[_i].mode == ZERO_COLL_EXACT;
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, cases[_i].mode), ZERO_OK);
    float *a32 = vals((size_t)m * k, 131, 1.0f), *b32 = vals((size_t)k * n, 132, 1.0f);
    struct pair A = both_typed(a32, (size_t)m * k, t), B = both_typed(b32, (size_t)k * n, t);
    struct pair bias = both_vals(n, 133, 1.0f);
    const size_t mn = (size_t)m * n, es = zero_dtype_size(out), bytes = (mn + off + pad) * es;
    struct pair c = both_blank(bytes), g = both_blank(bytes);
    char *before = download(cpu, g.c, bytes);
    const size_t at = (size_t)off * es; /* off elements into each buffer */
    ck_assert_int_eq(ref_gemm_bias_stored(cpu->be, cpu->self, 0, 0, m, n, k, A.c, t, k, B.c, t, n,
                                          bias.c, (char *)c.c + at,
                                          cases[_i].gelu ? (char *)g.c + at : NULL, out, n,
                                          ZERO_GELU_TANH),
                     ZERO_OK);
    int rc = gpu->be->stored->gemm_bias_stored(
        gpu->self, 0, 0, m, n, k, A.g, t, k, B.g, t, n, bias.g, (char *)c.g + at,
        cases[_i].gelu ? (char *)g.g + at : NULL, out, n, ZERO_GELU_TANH);
    ck_assert_msg(rc == ZERO_OK, "cuda: %s", gpu->be->last_error(gpu->self));
    if (exact) {
        pair_same(c, "exact gemm_bias_stored c (and the bytes around it)");
        pair_same(g, "exact gemm_bias_stored gelu (and the bytes around it)");
    } else {
        char *rawc = download(gpu, c.g, bytes), *rawg = download(gpu, g.g, bytes);
        char *wantc = download(cpu, c.c, bytes);
        ck_assert_msg(memcmp(rawc, wantc, at) == 0 &&
                          memcmp(rawc + at + mn * es, wantc + at + mn * es, pad * es) == 0,
                      "gemm_bias_stored: c written outside its m * n elements");
        ck_assert_msg(memcmp(rawg, before, at) == 0 &&
                          memcmp(rawg + at + mn * es, before + at + mn * es, pad * es) == 0,
                      "gemm_bias_stored: gelu written outside its m * n elements");
        float *want = download_f32(cpu, (char *)c.c + at, mn, out);
        float *got = download_f32(gpu, (char *)c.g + at, mn, out);
        for (size_t i = 0; i < mn; i++)
            ck_assert_msg(fabs((double)got[i] - want[i]) <=
                              1e-5 * (fabs((double)want[i]) + 8.0) + ulp16(out) * fabs(want[i]),
                          "gemm_bias_stored c: element %zu: cuda %.9g, cpu %.9g", i, (double)got[i],
                          (double)want[i]);
        if (cases[_i].gelu) {
            float *want_g = download_f32(cpu, (char *)g.c + at, mn, out);
            float *got_g = download_f32(gpu, (char *)g.g + at, mn, out);
            for (size_t i = 0; i < mn; i++)
                ck_assert_msg(fabs((double)got_g[i] - want_g[i]) <=
                                  1e-3 * (fabs((double)want[i]) + 0.1) +
                                      ulp16(out) * fabs(want_g[i]),
                              "gemm_bias_stored gelu: element %zu: cuda %.9g, cpu %.9g (c %.9g)", i,
                              (double)got_g[i], (double)want_g[i], (double)want[i]);
            free(want_g);
            free(got_g);
        } else {
            ck_assert_msg(memcmp(rawg, before, bytes) == 0,
                          "gemm_bias_stored: gelu written without one");
        }
        free(want);
        free(got);
        free(rawc);
        free(rawg);
        free(wantc);
    }
    free(a32);
    free(b32);
    free(before);
    pair_free(A);
    pair_free(B);
    pair_free(bias);
    pair_free(c);
    pair_free(g);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

/* gemm_dgelu_stored (the GELU backward reading the 16-bit saved pre-activation) against
 * the cpu's widen then gemm, gelu_backward (stored_entries_ref.c). Exact mode: the cpu's
 * bits. Native mode: gemm_dgelu's tolerance, 1e-3 of (|product| + 0.1) + 1e-4, the
 * widening being exact (a pre read as the wrong type or not at all is off by O(1)).
 * Cases (_i): bf16 operands with a bf16 pre (cuBLASLt's DGELU with a 16-bit aux where it
 * takes it, else the widening), fp32 operands with an fp16 pre, n = 37, pre 2 bytes past
 * 16-byte alignment, exact mode for each. */
START_TEST(test_cuda_gemm_dgelu_stored_16_bits_matches_cpu_widen_then_gemm_dgelu)
{
    static const struct {
        enum zero_dtype t, pre;
        int n, off;
        enum zero_coll_mode mode;
    } cases[] = {
        {ZERO_BF16, ZERO_BF16, 96, 0, ZERO_COLL_NATIVE},
        {ZERO_F32, ZERO_F16, 96, 0, ZERO_COLL_NATIVE},
        {ZERO_BF16, ZERO_BF16, 37, 0, ZERO_COLL_NATIVE},
        {ZERO_BF16, ZERO_BF16, 96, 1, ZERO_COLL_NATIVE},
        {ZERO_BF16, ZERO_BF16, 96, 0, ZERO_COLL_EXACT},
        {ZERO_F16, ZERO_F16, 37, 1, ZERO_COLL_EXACT},
    };
    const int m = 64, k = 48, n = cases[_i].n, off = cases[_i].off;
    const enum zero_dtype t = cases[_i].t, pt = cases[_i].pre;
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, cases[_i].mode), ZERO_OK);
    const size_t mn = (size_t)m * n, es = zero_dtype_size(pt), at = (size_t)off * es;
    float *a32 = vals((size_t)m * k, 141, 1.0f), *b32 = vals((size_t)k * n, 142, 1.0f);
    float *p32 = vals(mn + (size_t)off, 143, 3.0f);
    struct pair A = both_typed(a32, (size_t)m * k, t), B = both_typed(b32, (size_t)k * n, t);
    struct pair pre = both_typed(p32, mn + (size_t)off, pt);
    struct pair c = both_blank(mn * 4), prod = both_blank(mn * 4);
    /* B (n, k) transposed, as conv1d's dx = dy w^T reads w */
    ck_assert_int_eq(cpu->be->gemm(cpu->self, 0, 1, m, n, k, 1.0f, A.c, t, k, B.c, t, k, 0.0f,
                                   prod.c, ZERO_F32, n),
                     ZERO_OK);
    ck_assert_int_eq(ref_gemm_dgelu_stored(cpu->be, cpu->self, 0, 1, m, n, k, A.c, t, k, B.c, t, k,
                                           c.c, n, (char *)pre.c + at, pt, ZERO_GELU_TANH),
                     ZERO_OK);
    int rc = gpu->be->stored->gemm_dgelu_stored(gpu->self, 0, 1, m, n, k, A.g, t, k, B.g, t, k, c.g,
                                                n, (char *)pre.g + at, pt, ZERO_GELU_TANH);
    ck_assert_msg(rc == ZERO_OK, "cuda: %s", gpu->be->last_error(gpu->self));
    pair_same(pre, "gemm_dgelu_stored: pre untouched");
    if (cases[_i].mode == ZERO_COLL_EXACT)
        pair_same(c, "exact gemm_dgelu_stored c");
    else
        pair_close_to_product(c, prod, mn, "gemm_dgelu_stored");
    free(a32);
    free(b32);
    free(p32);
    pair_free(A);
    pair_free(B);
    pair_free(pre);
    pair_free(c);
    pair_free(prod);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

/* An out_type or pre_type that is not a float of 16 or 32 bits is refused by name. */
START_TEST(test_cuda_16_bit_epilogue_entries_reject_other_types)
{
    float dummy = 0.0f;
    ck_assert_int_eq(gpu->be->stored->gemm_bias_stored(gpu->self, 0, 0, 1, 1, 1, &dummy, ZERO_F32,
                                                       1, &dummy, ZERO_F32, 1, &dummy, &dummy, NULL,
                                                       ZERO_F64, 1, ZERO_GELU_TANH),
                     ZERO_ENOTSUP);
    ck_assert_msg(strstr(gpu->be->last_error(gpu->self), "gemm_bias_stored") != NULL, "%s",
                  gpu->be->last_error(gpu->self));
    ck_assert_int_eq(gpu->be->stored->gemm_dgelu_stored(gpu->self, 0, 0, 1, 1, 1, &dummy, ZERO_F32,
                                                        1, &dummy, ZERO_F32, 1, &dummy, 1, &dummy,
                                                        ZERO_I32, ZERO_GELU_TANH),
                     ZERO_ENOTSUP);
    ck_assert_msg(strstr(gpu->be->last_error(gpu->self), "gemm_dgelu_stored") != NULL, "%s",
                  gpu->be->last_error(gpu->self));
}
END_TEST

/* x (n) rounded to t and widened back: the values a typed operand holds */
static float *as_typed(const float *x, size_t n, enum zero_dtype t)
{
    float *y = malloc(n * sizeof(float));
    ck_assert_ptr_nonnull(y);
    for (size_t i = 0; i < n; i++)
        y[i] = t == ZERO_F16    ? zero_f16_to_f32(zero_f32_to_f16(x[i]))
               : t == ZERO_BF16 ? zero_bf16_to_f32(zero_f32_to_bf16(x[i]))
                                : x[i];
    return y;
}

/* gemm_bgrad (the bias gradient in cuBLASLt's BGRADA / BGRADB epilogue) against the
 * cpu's gemm then bias_grad, in both layouts the layers use (ta 1, tb 0): linear's
 * dw = dy^T x (dy is a, db_side 0) and conv1d's dw = x^T dy (dy is b, db_side 1).
 * dy holds values its GEMM dtype represents exactly, so the fused sum of the operand and
 * the cpu's sum of dy are the same sum in another order: db within 1e-5 of (sum |dy| +
 * 1) per element (a missing, fresh-instead-of-added or wrong-side sum is off by O(1));
 * c within the GEMM tolerance, 1e-5 of (|c| + 8). The bf16 cases ask for the epilogue on
 * a rounded dy (ZERO_CUDA_BGRAD=lowp). Where the unfused sequence runs (exact mode,
 * ZERO_CUDA_FUSED=off, a bias gradient not 16-byte aligned, a bf16 dy without
 * ZERO_CUDA_BGRAD=lowp) db is the cpu's bits, as bias_grad is. Cases (_i): fresh and
 * accumulating (beta 1 for c, 1 for db: another unit or micro-step wrote them) in fp32
 * and bf16, each side; the fallbacks. Nothing past m * n or len is written. */
START_TEST(test_cuda_gemm_bgrad_matches_cpu_gemm_then_bias_grad_fresh_and_accumulating)
{
    static const struct {
        enum zero_dtype t;
        int side, acc, fallback; /* 1 exact mode, 2 FUSED=off, 3 unaligned db, 4 no lowp */
    } cases[] = {
        {ZERO_BF16, 0, 0, 0}, {ZERO_BF16, 1, 0, 0}, {ZERO_BF16, 0, 1, 0}, {ZERO_BF16, 1, 1, 0},
        {ZERO_F32, 0, 0, 0},  {ZERO_F32, 1, 1, 0},  {ZERO_BF16, 1, 1, 1}, {ZERO_BF16, 0, 1, 2},
        {ZERO_BF16, 1, 0, 3}, {ZERO_BF16, 1, 1, 4},
    };
    const enum zero_dtype t = cases[_i].t;
    const int side = cases[_i].side, fallback = cases[_i].fallback, pad = 8;
    const float beta = cases[_i].acc ? 1.0f : 0.0f;
    /* (m, n, k) = linear's (out, in, rows) or conv1d's (in, out, rows); dy (k, len) */
    const int k = 48, len = 96, other = 64, m = side == 0 ? len : other;
    const int n = side == 0 ? other : len;
    ck_assert_int_eq(
        gpu->be->set_coll_mode(gpu->self, fallback == 1 ? ZERO_COLL_EXACT : ZERO_COLL_NATIVE),
        ZERO_OK);
    if (fallback == 2)
        setenv("ZERO_CUDA_FUSED", "off", 1);
    if (fallback != 4)
        setenv("ZERO_CUDA_BGRAD", "lowp", 1);
    float *raw = vals((size_t)k * len, 131, 1.0f), *x32 = vals((size_t)k * other, 132, 1.0f);
    float *dy32 = as_typed(raw, (size_t)k * len, t); /* exact in t */
    struct pair dy = both(dy32, (size_t)k * len * sizeof(float));
    struct pair DY = both_typed(dy32, (size_t)k * len, t),
                X = both_typed(x32, (size_t)k * other, t);
    const struct pair A = side == 0 ? DY : X, B = side == 0 ? X : DY;
    const size_t nc = (size_t)m * n + pad;
    struct pair c = both_vals(nc, 133, 1.0f), db = both_vals((size_t)len + 1 + pad, 134, 1.0f);
    const int off = fallback == 3; /* db one float in: 4-byte aligned */
    float *c_before = download(cpu, c.c, nc * 4);
    float *db_before = download(cpu, db.c, ((size_t)len + 1 + pad) * 4);
    ck_assert_int_eq(
        cpu->be->gemm(cpu->self, 1, 0, m, n, k, 1.0f, A.c, t, m, B.c, t, n, beta, c.c, ZERO_F32, n),
        ZERO_OK);
    ck_assert_int_eq(cpu->be->bias_grad(cpu->self, (float *)db.c + off, dy.c, k, len, beta),
                     ZERO_OK);
    int rc = gpu->be->fused->gemm_bgrad(gpu->self, 1, 0, m, n, k, A.g, t, m, B.g, t, n, beta, c.g,
                                        n, side, dy.g, (float *)db.g + off, beta);
    unsetenv("ZERO_CUDA_FUSED");
    unsetenv("ZERO_CUDA_BGRAD");
    ck_assert_msg(rc == ZERO_OK, "cuda: %s", gpu->be->last_error(gpu->self));
    float *want = download(cpu, c.c, nc * 4), *got = download(gpu, c.g, nc * 4);
    char what[96];
    snprintf(what, sizeof(what), "gemm_bgrad c (%s, side %d, beta %g, fallback %d)",
             zero_dtype_name(t), side, (double)beta, fallback);
    assert_close(got, want, (size_t)m * n, 1e-5, 8.0, what);
    ck_assert_msg(memcmp(got + (size_t)m * n, c_before + (size_t)m * n, pad * 4) == 0,
                  "%s: written past m * n", what);
    const size_t nd = (size_t)len + 1 + pad;
    float *want_db = download(cpu, db.c, nd * 4), *got_db = download(gpu, db.g, nd * 4);
    for (int j = 0; j < len; j++) {
        double abs_sum = 0;
        for (int r = 0; r < k; r++)
            abs_sum += fabs((double)dy32[(size_t)r * len + j]);
        const double g = got_db[off + j], w = want_db[off + j];
        if (fallback)
            ck_assert_msg(memcmp(&got_db[off + j], &want_db[off + j], 4) == 0,
                          "gemm_bgrad db (fallback %d): element %d: cuda %.9g, cpu %.9g (bits)",
                          fallback, j, g, w);
        else
            ck_assert_msg(fabs(g - w) <= 1e-5 * (abs_sum + 1.0),
                          "gemm_bgrad db (%s, side %d, db_beta %g): element %d: cuda %.9g, cpu "
                          "%.9g (sum |dy| %.9g)",
                          zero_dtype_name(t), side, (double)beta, j, g, w, abs_sum);
    }
    ck_assert_msg(memcmp(got_db + off + len, db_before + off + len, (nd - off - len) * 4) == 0 &&
                      (off == 0 || memcmp(got_db, db_before, 4) == 0),
                  "gemm_bgrad: db written outside its %d elements", len);
    free(raw);
    free(x32);
    free(dy32);
    free(c_before);
    free(db_before);
    free(want);
    free(got);
    free(want_db);
    free(got_db);
    pair_free(dy);
    pair_free(DY);
    pair_free(X);
    pair_free(c);
    pair_free(db);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

/* gemm_bgrad's shape rule: dy must be the reduced operand stored (k, len) */
START_TEST(test_cuda_gemm_bgrad_rejects_a_dy_that_is_not_stored_k_by_len)
{
    const int m = 8, n = 8, k = 8;
    struct pair a = both_vals(64, 141, 1.0f), b = both_vals(64, 142, 1.0f);
    struct pair c = both_blank(64 * 4), db = both_blank(8 * 4);
    int rc = gpu->be->fused->gemm_bgrad(gpu->self, 0, 0, m, n, k, a.g, ZERO_F32, k, b.g, ZERO_F32,
                                        n, 0.0f, c.g, n, 0, a.g, db.g, 0.0f);
    ck_assert_int_eq(rc, ZERO_EINVAL);
    ck_assert_msg(strstr(gpu->be->last_error(gpu->self), "gemm_bgrad") != NULL, "message: %s",
                  gpu->be->last_error(gpu->self));
    rc = gpu->be->fused->gemm_bgrad(gpu->self, 1, 1, m, n, k, a.g, ZERO_F32, m, b.g, ZERO_F32, k,
                                    0.0f, c.g, n, 1, b.g, db.g, 0.0f);
    ck_assert_int_eq(rc, ZERO_EINVAL);
    pair_free(a);
    pair_free(b);
    pair_free(c);
    pair_free(db);
}
END_TEST

/* The exact GEMM's rule (backends/cuda/cuda_exact_gemm.cu), written out on the host:
 * C[i, j] of C = alpha op(A) op(B) + beta C, row-major, as fp32 before C's rounding. */
static float exact_ref(int ta, int tb, int i, int j, int k, float alpha, const float *a, int lda,
                       const float *b, int ldb, float beta, float c_old)
{
    float acc = beta == 1.0f && alpha == 1.0f ? c_old : 0.0f;
    for (int p = 0; p < k; p++)
        acc = fmaf(ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p],
                   tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j], acc);
    if (alpha == 1.0f && (beta == 0.0f || beta == 1.0f))
        return acc;
    float t = alpha * acc;
    return beta == 0.0f ? t : fmaf(beta, c_old, t);
}

/* Exact mode: every output is one fmaf chain over k in increasing order, so the GPU
 * equals the rule computed on the host in every bit: m, n across several 64-wide tiles
 * and k across 16-deep slices with ragged ends, every transpose, fp32/fp16/bf16 and a
 * mix, C fp32 or narrow, the alpha/beta cases of the rule (beta 0 over a C of NaNs). */
START_TEST(test_cuda_exact_gemm_is_one_fmaf_chain_per_output_in_every_bit)
{
    const int m = 131, n = 70, k = 37, pad = 2;
    const enum zero_dtype in_types[][2] = {
        {ZERO_F32, ZERO_F32}, {ZERO_BF16, ZERO_BF16}, {ZERO_F16, ZERO_F16}, {ZERO_BF16, ZERO_F32}};
    const float ab[][2] = {{1.0f, 0.0f}, {1.0f, 1.0f}, {0.75f, 0.0f}, {-0.5f, 1.0f}, {0.75f, 0.5f}};
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
    float *a32 = vals((size_t)(k + pad) * (m + pad), 31, 1.0f);
    float *b32 = vals((size_t)(k + pad) * (n + pad), 32, 1.0f);
    float *c32 = vals((size_t)m * (n + pad), 33, 4.0f);
    for (int ta = 0; ta <= 1; ta++)
        for (int tb = 0; tb <= 1; tb++)
            for (size_t ti = 0; ti < sizeof(in_types) / sizeof(in_types[0]); ti++)
                for (size_t x = 0; x < sizeof(ab) / sizeof(ab[0]); x++) {
                    enum zero_dtype at = in_types[ti][0], bt = in_types[ti][1];
                    enum zero_dtype ct = x % 2 ? at : ZERO_F32; /* narrow C every other case */
                    float alpha = ab[x][0], beta = ab[x][1];
                    int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
                    size_t na = (size_t)(ta ? k : m) * lda, nb = (size_t)(tb ? n : k) * ldb;
                    size_t nc = (size_t)m * ldc;
                    float *c_in = as_typed(c32, nc, ct);
                    if (beta == 0.0f)
                        for (size_t e = 0; e < nc; e++)
                            c_in[e] = NAN; /* never read */
                    float *a_in = as_typed(a32, na, at), *b_in = as_typed(b32, nb, bt);
                    struct pair pa = both_typed(a_in, na, at), pb = both_typed(b_in, nb, bt);
                    struct pair pc = both_typed(c_in, nc, ct);
                    int rc = gpu->be->gemm(gpu->self, ta, tb, m, n, k, alpha, pa.g, at, lda, pb.g,
                                           bt, ldb, beta, pc.g, ct, ldc);
                    ck_assert_msg(rc == ZERO_OK, "cuda: %s", gpu->be->last_error(gpu->self));
                    void *got = download(gpu, pc.g, nc * zero_dtype_size(ct));
                    char what[112];
                    snprintf(what, sizeof(what),
                             "exact gemm ta=%d tb=%d %s x %s -> %s alpha %g beta %g", ta, tb,
                             zero_dtype_name(at), zero_dtype_name(bt), zero_dtype_name(ct),
                             (double)alpha, (double)beta);
                    for (int i = 0; i < m; i++)
                        for (int j = 0; j < ldc; j++) {
                            size_t e = (size_t)i * ldc + j;
                            float want = j < n ? exact_ref(ta, tb, i, j, k, alpha, a_in, lda, b_in,
                                                           ldb, beta, c_in[e])
                                               : c_in[e]; /* padding untouched */
                            uint32_t w32, g32;
                            uint16_t w16, g16;
                            if (ct == ZERO_F32) {
                                memcpy(&w32, &want, 4);
                                memcpy(&g32, (float *)got + e, 4);
                                ck_assert_msg(w32 == g32, "%s: C(%d, %d) = %a, the rule gives %a",
                                              what, i, j, (double)((float *)got)[e], (double)want);
                            } else {
                                w16 =
                                    ct == ZERO_F16 ? zero_f32_to_f16(want) : zero_f32_to_bf16(want);
                                g16 = ((uint16_t *)got)[e];
                                ck_assert_msg(w16 == g16,
                                              "%s: C(%d, %d) = 0x%04x, the rule gives 0x%04x", what,
                                              i, j, g16, w16);
                            }
                        }
                    free(got);
                    free(a_in);
                    free(b_in);
                    free(c_in);
                    pair_free(pa);
                    pair_free(pb);
                    pair_free(pc);
                }
    free(a32);
    free(b32);
    free(c32);
}
END_TEST

START_TEST(test_cuda_gemm_beta_zero_ignores_nan_and_rejects_short_ld_like_cpu)
{
    float a[6] = {1, 2, 3, 4, 5, 6}, c[4] = {NAN, NAN, NAN, NAN};
    struct pair A = both(a, sizeof(a)), C = both(c, sizeof(c));
    /* C (2, 2) = A (2, 3) A^T */
    ON_BOTH(cpu->be->gemm(cpu->self, 0, 1, 2, 2, 3, 1.0f, A.c, ZERO_F32, 3, A.c, ZERO_F32, 3, 0.0f,
                          C.c, ZERO_F32, 2),
            gpu->be->gemm(gpu->self, 0, 1, 2, 2, 3, 1.0f, A.g, ZERO_F32, 3, A.g, ZERO_F32, 3, 0.0f,
                          C.g, ZERO_F32, 2));
    pair_same(C, "gemm beta 0");
    int rc_cpu = cpu->be->gemm(cpu->self, 0, 0, 2, 2, 3, 1.0f, A.c, ZERO_F32, 2, A.c, ZERO_F32, 2,
                               0.0f, C.c, ZERO_F32, 2);
    int rc_gpu = gpu->be->gemm(gpu->self, 0, 0, 2, 2, 3, 1.0f, A.g, ZERO_F32, 2, A.g, ZERO_F32, 2,
                               0.0f, C.g, ZERO_F32, 2);
    ck_assert_int_eq(rc_gpu, rc_cpu);
    ck_assert_str_eq(gpu->be->last_error(gpu->self), cpu->be->last_error(cpu->self));
    pair_free(A);
    pair_free(C);
}
END_TEST

/* ---------------------------------------------------------------- layers */

START_TEST(test_cuda_bias_add_and_bias_grad_match_cpu_bits)
{
    enum { R = 300, C = 70 };
    struct pair y = both_vals(R * C, 17, 1.0f), b = both_vals(C, 18, 1.0f);
    struct pair db = both_vals(C, 19, 1.0f);
    ON_BOTH(cpu->be->bias_add(cpu->self, y.c, b.c, R, C),
            gpu->be->bias_add(gpu->self, y.g, b.g, R, C));
    pair_same(y, "bias_add");
    for (int beta = 0; beta <= 1; beta++) {
        ON_BOTH(cpu->be->bias_grad(cpu->self, db.c, y.c, R, C, (float)beta),
                gpu->be->bias_grad(gpu->self, db.g, y.g, R, C, (float)beta));
        pair_same(db, beta ? "bias_grad beta 1" : "bias_grad beta 0");
    }
    pair_free(y);
    pair_free(b);
    pair_free(db);
}
END_TEST

/* Both backends call src/base/exact_math.h's erf, tanh and exp (not the device's or glibc's
 * libm) in the same operations and order: the bits agree. */
START_TEST(test_cuda_gelu_equals_cpu_bit_for_bit)
{
    enum { N = 20000 };
    struct pair x = both_vals(N, 20, 6.0f), dy = both_vals(N, 21, 1.0f),
                out = both_vals(N, 22, 1.0f);
    for (int kind = ZERO_GELU_ERF; kind <= ZERO_GELU_TANH; kind++) {
        ON_BOTH(cpu->be->gelu_forward(cpu->self, out.c, x.c, N, (enum zero_gelu)kind),
                gpu->be->gelu_forward(gpu->self, out.g, x.g, N, (enum zero_gelu)kind));
        pair_same(out, kind == ZERO_GELU_ERF ? "gelu erf" : "gelu tanh");
        ON_BOTH(cpu->be->gelu_backward(cpu->self, out.c, x.c, dy.c, N, (enum zero_gelu)kind),
                gpu->be->gelu_backward(gpu->self, out.g, x.g, dy.g, N, (enum zero_gelu)kind));
        pair_same(out, kind == ZERO_GELU_ERF ? "gelu' erf" : "gelu' tanh");
    }
    pair_free(x);
    pair_free(dy);
    pair_free(out);
}
END_TEST

START_TEST(test_cuda_xent_matches_cpu_and_backward_is_bit_exact)
{
    enum { R = 33, K = 1000 };
    int32_t labels[R];
    for (int r = 0; r < R; r++)
        labels[r] = (r * 397) % K;
    struct pair z = both_vals(R * K, 23, 20.0f), p = both_vals(R * K, 24, 1.0f);
    struct pair loss = both_vals(R, 25, 1.0f), lab = both(labels, sizeof(labels));
    ON_BOTH(cpu->be->xent_forward(cpu->self, loss.c, p.c, z.c, lab.c, R, K),
            gpu->be->xent_forward(gpu->self, loss.g, p.g, z.g, lab.g, R, K));
    pair_close(loss, 1e-6, 1.0, "xent loss");
    pair_close(p, 1e-5, 1e-6, "xent probs");
    /* the backward from the same probabilities: elementwise, the cpu's bits */
    float *probs = download(cpu, p.c, R * K * sizeof(float));
    ck_assert_int_eq(gpu->be->from_host(gpu->self, p.g, probs, R * K * sizeof(float)), ZERO_OK);
    ON_BOTH(cpu->be->xent_backward(cpu->self, z.c, p.c, lab.c, R, K, 0.125f),
            gpu->be->xent_backward(gpu->self, z.g, p.g, lab.g, R, K, 0.125f));
    pair_same(z, "xent backward");
    free(probs);
    pair_free(z);
    pair_free(p);
    pair_free(loss);
    pair_free(lab);
}
END_TEST

START_TEST(test_cuda_xent_and_embedding_reject_bad_ids_with_the_cpu_message)
{
    enum { R = 6, K = 5 };
    int32_t labels[R] = {0, 1, 4, 7, -1, 2};
    struct pair z = both_vals(R * K, 26, 1.0f), p = both_vals(R * K, 27, 1.0f);
    struct pair loss = both_vals(R, 28, 1.0f), lab = both(labels, sizeof(labels));
    float *before = download(gpu, loss.g, sizeof(float) * R);
    int rc_cpu = cpu->be->xent_forward(cpu->self, loss.c, p.c, z.c, lab.c, R, K);
    int rc_gpu = gpu->be->xent_forward(gpu->self, loss.g, p.g, z.g, lab.g, R, K);
    ck_assert_int_eq(rc_cpu, ZERO_EINVAL);
    ck_assert_int_eq(rc_gpu, ZERO_EINVAL);
    ck_assert_str_eq(gpu->be->last_error(gpu->self), cpu->be->last_error(cpu->self));
    assert_same_bits(gpu, loss.g, before, sizeof(float) * R, "losses after a bad label");
    rc_cpu = cpu->be->embedding_forward(cpu->self, z.c, lab.c, p.c, R, 1, K);
    rc_gpu = gpu->be->embedding_forward(gpu->self, z.g, lab.g, p.g, R, 1, K);
    ck_assert_int_eq(rc_gpu, rc_cpu);
    ck_assert_str_eq(gpu->be->last_error(gpu->self), cpu->be->last_error(cpu->self));
    free(before);
    pair_free(z);
    pair_free(p);
    pair_free(loss);
    pair_free(lab);
}
END_TEST

/* ---------------------------------------------------------------- a step's device side */

/* The loss summed on the device has the host loop's bits (engine_forward.c's mean_loss
 * and the step's sum). */
START_TEST(test_cuda_loss_accumulate_gives_the_host_sums_bits)
{
    enum { N = 1000, ROWS = 250 };
    float *l = vals(N, 51, 3.0f);
    for (int i = 0; i < N; i++)
        l[i] = fabsf(l[i]);
    float *dl = upload(gpu, l, sizeof(float) * N);
    double zero[2] = {0.0, 0.0};
    double *acc = upload(gpu, zero, sizeof zero);
    double want = 0.0;
    float last = 0.0f;
    for (int m = 0; m < 3; m++) {
        double sum = 0.0;
        for (int i = 0; i < N - m; i++)
            sum += l[i];
        last = (float)(sum / (double)ROWS);
        want += (double)last;
        ck_assert_int_eq(gpu->be->device_step->loss_accumulate(gpu->self, acc, (float *)(acc + 1),
                                                               dl, (size_t)(N - m), ROWS),
                         ZERO_OK);
    }
    double got[2];
    ck_assert_int_eq(gpu->be->to_host(gpu->self, got, acc, sizeof got), ZERO_OK);
    float got_last;
    memcpy(&got_last, &got[1], sizeof got_last);
    ck_assert(memcmp(&got[0], &want, sizeof want) == 0);
    ck_assert(memcmp(&got_last, &last, sizeof last) == 0);
    release(gpu, dl);
    release(gpu, acc);
    free(l);
}
END_TEST

/* graph_open, or 0 where this instance cannot capture: the host-staged collectives
 * (ranks sharing a GPU), whose refusal must name them. */
static int graphs_open(void)
{
    int rc = gpu->be->device_step->graph_open(gpu->self);
    if (rc == ZERO_OK)
        return 1;
    ck_assert_int_eq(rc, ZERO_ENOTSUP);
    ck_assert_ptr_nonnull(strstr(gpu->be->last_error(gpu->self), "host-staged"));
    return 0;
}

/* With the checks deferred (graph_open) a bad id is no error at the call: it is read
 * at input_errors with the immediate check's message, replaced by 0 in place (the
 * gather reads row 0), and cleared; graph_close makes the checks immediate again. */
START_TEST(test_cuda_deferred_checks_report_the_first_bad_id_at_input_errors)
{
    enum { R = 6, C = 3, V = 5 };
    int32_t ids[R] = {0, 1, 4, 7, -1, 2};
    struct pair id = both(ids, sizeof(ids)), table = both_vals(V * C, 52, 1.0f);
    struct pair y = both_vals(R * C, 53, 1.0f);
    ck_assert_int_eq(cpu->be->embedding_forward(cpu->self, y.c, id.c, table.c, R, C, V),
                     ZERO_EINVAL);
    char immediate[512];
    snprintf(immediate, sizeof immediate, "%s", cpu->be->last_error(cpu->self));
    if (!graphs_open()) {
        pair_free(id);
        pair_free(table);
        pair_free(y);
        return;
    }
    ck_assert_int_eq(gpu->be->embedding_forward(gpu->self, y.g, id.g, table.g, R, C, V), ZERO_OK);
    ck_assert_int_eq(gpu->be->embedding_forward(gpu->self, y.g, id.g, table.g, R, C, V), ZERO_OK);
    int32_t back[R];
    ck_assert_int_eq(gpu->be->to_host(gpu->self, back, id.g, sizeof back), ZERO_OK);
    ck_assert_int_eq(back[3], 0);
    ck_assert_int_eq(back[4], 0);
    ck_assert_int_eq(back[5], 2);
    ck_assert_int_eq(gpu->be->device_step->input_errors(gpu->self), ZERO_EINVAL);
    ck_assert_str_eq(gpu->be->last_error(gpu->self), immediate);
    ck_assert_int_eq(gpu->be->device_step->input_errors(gpu->self), ZERO_OK);
    gpu->be->device_step->graph_close(gpu->self);
    ck_assert_int_eq(gpu->be->from_host(gpu->self, id.g, ids, sizeof ids), ZERO_OK);
    ck_assert_int_eq(gpu->be->embedding_forward(gpu->self, y.g, id.g, table.g, R, C, V),
                     ZERO_EINVAL);
    ck_assert_str_eq(gpu->be->last_error(gpu->self), immediate);
    pair_free(id);
    pair_free(table);
    pair_free(y);
}
END_TEST

/* A captured stretch gives the eager stretch's bits, launched at graph_end; its blocks
 * come from the graphs' pool (a block freed inside a capture is not handed to an
 * allocation outside); a second capture of the same key updates the executable graph;
 * nothing waited for the host inside; a readback inside a capture fails the capture. */
START_TEST(test_cuda_graph_capture_replays_the_eager_bits_from_a_private_pool)
{
    enum { N = 4096 };
    float *x = vals(N, 54, 1.0f);
    float *dx = upload(gpu, x, sizeof(float) * N), *dy = upload(gpu, x, sizeof(float) * N);
    float *eager = upload(gpu, x, sizeof(float) * N);
    if (!graphs_open()) {
        release(gpu, dx);
        release(gpu, dy);
        release(gpu, eager);
        free(x);
        return;
    }
    struct zero_cuda_blockers b0, b1;
    for (int round = 0; round < 3; round++) {
        ck_assert_int_eq(gpu->be->axpy(gpu->self, 0.5f, dx, eager, N), ZERO_OK);
        ck_assert_int_eq(gpu->be->gelu_forward(gpu->self, eager, eager, N, ZERO_GELU_TANH),
                         ZERO_OK);
        ck_assert_int_eq(zero_cuda_graph_blockers(gpu->self, &b0), ZERO_OK);
        ck_assert_int_eq(gpu->be->device_step->graph_begin(gpu->self, 3), ZERO_OK);
        void *tmp = NULL;
        ck_assert_int_eq(gpu->be->alloc(gpu->self, sizeof(float) * N, ZERO_TAG_WORKSPACE, &tmp),
                         ZERO_OK);
        ck_assert_int_eq(gpu->be->copy(gpu->self, tmp, dx, sizeof(float) * N), ZERO_OK);
        ck_assert_int_eq(gpu->be->scale(gpu->self, 0.5f, tmp, N), ZERO_OK);
        ck_assert_int_eq(gpu->be->add(gpu->self, dy, dy, tmp, N), ZERO_OK);
        ck_assert_int_eq(gpu->be->gelu_forward(gpu->self, dy, dy, N, ZERO_GELU_TANH), ZERO_OK);
        ck_assert_int_eq(gpu->be->free(gpu->self, tmp), ZERO_OK);
        ck_assert_int_eq(gpu->be->device_step->graph_end(gpu->self, 3, 1), ZERO_OK);
        void *outside = NULL;
        ck_assert_int_eq(gpu->be->alloc(gpu->self, sizeof(float) * N, ZERO_TAG_WORKSPACE, &outside),
                         ZERO_OK);
        ck_assert_ptr_ne(outside, tmp); /* the pool's block stays the graphs' */
        release(gpu, outside);
        ck_assert_int_eq(zero_cuda_graph_blockers(gpu->self, &b1), ZERO_OK);
        ck_assert_int_eq(b1.graph_launches, b0.graph_launches + 1);
        if (round > 0) {
            ck_assert_int_eq(b1.in_capture, b0.in_capture);
            ck_assert_int_eq(b1.device_mallocs, b0.device_mallocs);
            ck_assert_int_eq(b1.graph_updates, b0.graph_updates + 1);
        }
        float *want = download(gpu, eager, sizeof(float) * N);
        assert_same_bits(gpu, dy, want, sizeof(float) * N, "captured stretch");
        free(want);
    }
    /* a readback inside: the capture fails and is reported, nothing launched */
    float one = 0.0f;
    ck_assert_int_eq(gpu->be->device_step->graph_begin(gpu->self, 0), ZERO_OK);
    ck_assert_int_ne(gpu->be->to_host(gpu->self, &one, dx, sizeof one), ZERO_OK);
    ck_assert_int_ne(gpu->be->device_step->graph_end(gpu->self, 0, 1), ZERO_OK);
    ck_assert_int_eq(zero_cuda_graph_blockers(gpu->self, &b1), ZERO_OK);
    ck_assert_int_eq(b1.in_capture, b0.in_capture + 1);
    gpu->be->device_step->graph_close(gpu->self);
    ck_assert_int_eq(gpu->be->synchronize(gpu->self), ZERO_OK);
    release(gpu, dx);
    release(gpu, dy);
    release(gpu, eager);
    free(x);
}
END_TEST

/* ---------------------------------------------------------------- GPT kernels */

START_TEST(test_cuda_embedding_forward_and_backward_match_cpu_bits)
{
    enum { R = 200, C = 48, V = 50 };
    int32_t ids[R];
    for (int r = 0; r < R; r++)
        ids[r] = (r * 7 + r / 3) % V; /* repeated ids: rows must add in order */
    struct pair id = both(ids, sizeof(ids)), table = both_vals(V * C, 29, 1.0f);
    struct pair y = both_vals(R * C, 30, 1.0f), dt = both_vals(V * C, 31, 1.0f);
    ON_BOTH(cpu->be->embedding_forward(cpu->self, y.c, id.c, table.c, R, C, V),
            gpu->be->embedding_forward(gpu->self, y.g, id.g, table.g, R, C, V));
    pair_same(y, "embedding forward");
    for (int beta = 1; beta >= 0; beta--) {
        ON_BOTH(cpu->be->embedding_backward(cpu->self, dt.c, id.c, y.c, R, C, V, (float)beta),
                gpu->be->embedding_backward(gpu->self, dt.g, id.g, y.g, R, C, V, (float)beta));
        pair_same(dt, beta ? "embedding backward beta 1" : "embedding backward beta 0");
    }
    pair_free(id);
    pair_free(table);
    pair_free(y);
    pair_free(dt);
}
END_TEST

/* Native mode: the bucketed embedding backward (rows sorted by id, one warp per run) gives
 * every table element its rows in ascending order, the cpu's chain: the same bits, beta 1
 * and 0. C = 48 takes the 128-bit path, 769 the scalar one over 7 column chunks (_i); id
 * 3 owns a run of 40 rows (longer than the 8 rows in flight), ids above 20 none. */
START_TEST(test_cuda_bucketed_embedding_backward_matches_cpu_bits)
{
    const int R = 300, V = 50, C = _i ? 769 : 48;
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_NATIVE), ZERO_OK);
    int32_t ids[300];
    for (int r = 0; r < R; r++)
        ids[r] = r % 7 == 0 ? 3 : (r * 13 + r / 5) % 21;
    struct pair id = both(ids, sizeof(ids)), dy = both_vals((size_t)R * C, 101, 1.0f);
    struct pair dt = both_vals((size_t)V * C, 102, 1.0f);
    for (int beta = 1; beta >= 0; beta--) {
        ON_BOTH(cpu->be->embedding_backward(cpu->self, dt.c, id.c, dy.c, R, C, V, (float)beta),
                gpu->be->embedding_backward(gpu->self, dt.g, id.g, dy.g, R, C, V, (float)beta));
        pair_same(dt, beta ? "bucketed embedding backward beta 1"
                           : "bucketed embedding backward beta 0");
    }
    pair_free(id);
    pair_free(dy);
    pair_free(dt);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

START_TEST(test_cuda_layernorm_forward_and_backward_match_cpu_bits)
{
    enum { R = 65, C = 96 };
    struct pair x = both_vals(R * C, 32, 3.0f), w = both_vals(C, 33, 1.0f),
                b = both_vals(C, 34, 1.0f);
    struct pair y = both_vals(R * C, 35, 1.0f), mean = both_vals(R, 36, 1.0f);
    struct pair rstd = both_vals(R, 37, 1.0f), dy = both_vals(R * C, 38, 1.0f);
    struct pair dx = both_vals(R * C, 39, 1.0f), dw = both_vals(C, 40, 1.0f),
                db = both_vals(C, 41, 1.0f);
    ON_BOTH(cpu->be->layernorm_forward(cpu->self, y.c, mean.c, rstd.c, x.c, w.c, b.c, R, C, 1e-5f),
            gpu->be->layernorm_forward(gpu->self, y.g, mean.g, rstd.g, x.g, w.g, b.g, R, C, 1e-5f));
    pair_same(y, "layernorm y");
    pair_same(mean, "layernorm mean");
    pair_same(rstd, "layernorm rstd");
    for (int beta = 0; beta <= 1; beta++) {
        ON_BOTH(cpu->be->layernorm_backward(cpu->self, dx.c, dw.c, db.c, dy.c, x.c, w.c, mean.c,
                                            rstd.c, R, C, (float)beta, (float)beta, 1.0f),
                gpu->be->layernorm_backward(gpu->self, dx.g, dw.g, db.g, dy.g, x.g, w.g, mean.g,
                                            rstd.g, R, C, (float)beta, (float)beta, 1.0f));
        pair_same(dx, "layernorm dx");
        pair_same(dw, "layernorm dweight");
        pair_same(db, "layernorm dbias");
    }
    pair_free(x);
    pair_free(w);
    pair_free(b);
    pair_free(y);
    pair_free(mean);
    pair_free(rstd);
    pair_free(dy);
    pair_free(dx);
    pair_free(dw);
    pair_free(db);
}
END_TEST

/* cuBLAS and OpenBLAS order the head products' sums differently: 1e-5 relative to
 * (|x| + 1e-2); the attention weights above the diagonal are exactly zero on both. */
START_TEST(test_cuda_attention_matches_cpu_within_fp32_rounding)
{
    enum { B = 2, T = 24, C = 32, NH = 4 };
    struct pair qkv = both_vals(B * T * 3 * C, 42, 1.0f), y = both_vals(B * T * C, 43, 1.0f);
    struct pair att = both_vals(B * NH * T * T, 44, 1.0f), dy = both_vals(B * T * C, 45, 1.0f);
    struct pair dqkv = both_vals(B * T * 3 * C, 46, 1.0f),
                scratch = both_vals(B * NH * T * T, 47, 1.0f);
    ON_BOTH(cpu->be->attention_forward(cpu->self, y.c, att.c, qkv.c, B, T, C, NH, ZERO_F32),
            gpu->be->attention_forward(gpu->self, y.g, att.g, qkv.g, B, T, C, NH, ZERO_F32));
    pair_close(y, 1e-5, 1e-2, "attention y");
    pair_close(att, 1e-5, 1e-2, "attention weights");
    float *a = download(gpu, att.g, att.bytes);
    for (int h = 0; h < B * NH; h++)
        for (int i = 0; i < T; i++)
            for (int j = i + 1; j < T; j++)
                ck_assert_msg(a[(h * T + i) * T + j] == 0.0f, "att above the diagonal");
    free(a);
    ON_BOTH(cpu->be->attention_backward(cpu->self, dqkv.c, scratch.c, dy.c, qkv.c, att.c, B, T, C,
                                        NH, ZERO_F32),
            gpu->be->attention_backward(gpu->self, dqkv.g, scratch.g, dy.g, qkv.g, att.g, B, T, C,
                                        NH, ZERO_F32));
    pair_close(dqkv, 1e-4, 1e-2, "attention dqkv");
    pair_free(qkv);
    pair_free(y);
    pair_free(att);
    pair_free(dy);
    pair_free(dqkv);
    pair_free(scratch);
}
END_TEST

/* every element of got within bound[i] + rel * (|want| + 1e-2) of want; and on average got
 * is within a tenth of the distance between want and the fp32 result f32 */
static void assert_lowp_close(const float *got, const float *want, const float *f32,
                              const double *bound, size_t n, double rel, const char *what)
{
    double dist = 0.0, lowp_vs_f32 = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        ck_assert_msg(d <= bound[i] + rel * (fabs((double)want[i]) + 1e-2),
                      "%s: element %zu: cuda %.9g, cpu %.9g, bound %.3g", what, i, (double)got[i],
                      (double)want[i], bound[i]);
        dist += d;
        lowp_vs_f32 += fabs((double)want[i] - (double)f32[i]);
    }
    ck_assert_msg(dist <= 0.1 * lowp_vs_f32,
                  "%s: cuda is %.3g from the cpu on average, the cpu's fp32 result %.3g", what,
                  dist / (double)n, lowp_vs_f32 / (double)n);
}

/* bf16 attention products (matmul_type bf16). Both backends round the same fp32 values to
 * the same bf16 values (the cast kernel gives the cpu's bits) and a bf16 product is exact
 * in fp32, so products of operands both round alike differ only by the order and rounding
 * of their fp32 sums: at most k 2^-23 sum |terms| for k <= 32 terms, below 2^-16 S with
 * S = |alpha| sum_p |A_ip| |B_pj| of the element, plus the fp32 test's tolerance for what
 * the inputs already differ by. att (q, k alike) and dv (the cpu's att given to both
 * backwards) get just that. The exception: an operand each backend computes in fp32 itself
 * (att for y, ds for dq and dk) can lie so close to a bf16 rounding boundary that the two
 * round it to neighbouring bf16 values, one bf16 ulp (at most 2^-7 of the value) apart;
 * the element then moves by at most 2^-7 S, added to the bound of those three products,
 * with S from the cpu's att and a double ds. Such near-ties are rare (fp32 differences of
 * ~1e-6 relative against a bf16 ulp of ~4e-3), so on average the cuda results must also
 * lie far closer to the cpu's bf16 results than those lie to the fp32 ones: a cuda path
 * that ignored matmul_type fails that. */
START_TEST(test_cuda_bf16_attention_matches_cpu_within_one_bf16_rounding_of_att_and_ds)
{
    enum { B = 2, T = 24, C = 32, NH = 4, HS = C / NH, C3 = 3 * C };
    enum { NQ = B * T * C3, NY = B * T * C, NA = B * NH * T * T };
    _Static_assert(NA >= NQ && NA >= NY, "a (NA) seeds the fp32 runs' buffers below");
    const double sums = 1.0 / 65536, flip = 1.0 / 128 + sums; /* 2^-16, 2^-7 + 2^-16 */
    const float scale = 1.0f / sqrtf((float)HS);
    struct pair qkv = both_vals(NQ, 42, 1.0f), y = both_vals(NY, 43, 1.0f);
    struct pair att = both_vals(NA, 44, 1.0f), dy = both_vals(NY, 45, 1.0f);
    struct pair dqkv = both_vals(NQ, 46, 1.0f), scratch = both_vals(NA, 47, 1.0f);
    ON_BOTH(cpu->be->attention_forward(cpu->self, y.c, att.c, qkv.c, B, T, C, NH, ZERO_BF16),
            gpu->be->attention_forward(gpu->self, y.g, att.g, qkv.g, B, T, C, NH, ZERO_BF16));
    pair_close(att, 1e-5, 1e-2, "bf16 attention weights");
    float *a = download(cpu, att.c, att.bytes); /* (B, NH, T, T) */
    ck_assert_int_eq(gpu->be->from_host(gpu->self, att.g, a, att.bytes), ZERO_OK);
    ON_BOTH(cpu->be->attention_backward(cpu->self, dqkv.c, scratch.c, dy.c, qkv.c, att.c, B, T, C,
                                        NH, ZERO_BF16),
            gpu->be->attention_backward(gpu->self, dqkv.g, scratch.g, dy.g, qkv.g, att.g, B, T, C,
                                        NH, ZERO_BF16));

    /* the cpu's fp32 results on the same inputs */
    float *y32 = upload(cpu, a, y.bytes), *att32 = upload(cpu, a, att.bytes);
    float *d32 = upload(cpu, a, dqkv.bytes), *s32 = upload(cpu, a, att.bytes);
    ck_assert_int_eq(
        cpu->be->attention_forward(cpu->self, y32, att32, qkv.c, B, T, C, NH, ZERO_F32), ZERO_OK);
    ck_assert_int_eq(
        cpu->be->attention_backward(cpu->self, d32, s32, dy.c, qkv.c, att.c, B, T, C, NH, ZERO_F32),
        ZERO_OK);

    /* the bounds, from the rounded operands x = qkv (B*T, 3C), g = dy (B*T, C) */
    float *x = vals(NQ, 42, 1.0f), *g = vals(NY, 45, 1.0f);
    for (int i = 0; i < NQ; i++)
        x[i] = zero_bf16_to_f32(zero_f32_to_bf16(x[i]));
    for (int i = 0; i < NY; i++)
        g[i] = zero_bf16_to_f32(zero_f32_to_bf16(g[i]));
    double *by = calloc(NY, sizeof(double)), *bd = calloc(NQ, sizeof(double));
    ck_assert(by != NULL && bd != NULL);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                const float *ar = a + ((b * NH + h) * T + i) * T; /* att row i */
                const float *qi = x + (b * T + i) * C3 + h * HS,
                            *dyi = g + (b * T + i) * C + h * HS;
                double ds[T] = {0}, dot = 0.0;
                for (int j = 0; j <= i; j++) { /* datt[i, j] = dy_i . v_j, then ds */
                    const float *vj = x + (b * T + j) * C3 + 2 * C + h * HS;
                    for (int c = 0; c < HS; c++)
                        ds[j] += (double)dyi[c] * vj[c];
                    dot += ar[j] * ds[j];
                }
                for (int j = 0; j <= i; j++)
                    ds[j] = ar[j] * (ds[j] - dot);
                for (int c = 0; c < HS; c++)
                    for (int j = 0; j <= i; j++) {
                        const float *kj = x + (b * T + j) * C3 + C + h * HS, *vj = kj + C;
                        double *dk = bd + (b * T + j) * C3 + C + h * HS, *dv = dk + C;
                        by[(b * T + i) * C + h * HS + c] += flip * ar[j] * fabs(vj[c]);
                        bd[(b * T + i) * C3 + h * HS + c] += flip * scale * fabs(ds[j] * kj[c]);
                        dk[c] += flip * scale * fabs(ds[j] * qi[c]);
                        dv[c] += sums * ar[j] * fabs(dyi[c]);
                    }
            }
    float *yc = download(cpu, y.c, y.bytes), *yg = download(gpu, y.g, y.bytes);
    float *dc = download(cpu, dqkv.c, dqkv.bytes), *dg = download(gpu, dqkv.g, dqkv.bytes);
    float *yf = download(cpu, y32, y.bytes), *df = download(cpu, d32, dqkv.bytes);
    assert_lowp_close(yg, yc, yf, by, NY, 1e-5, "bf16 attention y");
    assert_lowp_close(dg, dc, df, bd, NQ, 1e-4, "bf16 attention dqkv");
    free(x);
    free(g);
    free(by);
    free(bd);
    free(a);
    free(yc);
    free(yg);
    free(dc);
    free(dg);
    free(yf);
    free(df);
    release(cpu, y32);
    release(cpu, att32);
    release(cpu, d32);
    release(cpu, s32);
    pair_free(qkv);
    pair_free(y);
    pair_free(att);
    pair_free(dy);
    pair_free(dqkv);
    pair_free(scratch);
}
END_TEST

/* Native mode: the warp-per-row LayerNorm forward (fp32 moments along a shuffle tree,
 * 128-bit loads when C % 4 == 0) within 1e-5 of (|x| + 1e-3) of the cpu's fp64 moments,
 * mean and rstd too; C = 768 (GPT-2, vector loads) and 97 (scalar loads) (_i). */
START_TEST(test_cuda_fast_layernorm_forward_matches_cpu_within_fp32_rounding)
{
    const int R = 37, C = _i ? 97 : 768;
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_NATIVE), ZERO_OK);
    struct pair x = both_vals((size_t)R * C, 62, 3.0f), w = both_vals(C, 63, 1.0f),
                b = both_vals(C, 64, 1.0f);
    struct pair y = both_vals((size_t)R * C, 65, 1.0f), mean = both_vals(R, 66, 1.0f);
    struct pair rstd = both_vals(R, 67, 1.0f);
    ON_BOTH(cpu->be->layernorm_forward(cpu->self, y.c, mean.c, rstd.c, x.c, w.c, b.c, R, C, 1e-5f),
            gpu->be->layernorm_forward(gpu->self, y.g, mean.g, rstd.g, x.g, w.g, b.g, R, C, 1e-5f));
    pair_close(y, 1e-5, 1e-3, "fast layernorm y");
    pair_close(mean, 1e-5, 1e-3, "fast layernorm mean");
    pair_close(rstd, 1e-5, 1e-3, "fast layernorm rstd");
    pair_free(x);
    pair_free(w);
    pair_free(b);
    pair_free(y);
    pair_free(mean);
    pair_free(rstd);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

/* Native mode: the online-softmax cross-entropy forward within 1e-5 of the cpu's (loss to
 * 1e-5 of (|loss| + 1), probabilities to 1e-5 of (|p| + 1e-6)); K = 50304 (GPT-2's padded
 * vocabulary, many classes per thread) and 7 (fewer classes than threads) (_i). */
START_TEST(test_cuda_fast_xent_forward_matches_cpu_within_fp32_rounding)
{
    const int R = 9, K = _i ? 7 : 50304;
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_NATIVE), ZERO_OK);
    int32_t labels[9];
    for (int r = 0; r < R; r++)
        labels[r] = (r * 397) % K;
    struct pair z = both_vals((size_t)R * K, 73, 20.0f), p = both_vals((size_t)R * K, 74, 1.0f);
    struct pair loss = both_vals(R, 75, 1.0f), lab = both(labels, sizeof(labels));
    ON_BOTH(cpu->be->xent_forward(cpu->self, loss.c, p.c, z.c, lab.c, R, K),
            gpu->be->xent_forward(gpu->self, loss.g, p.g, z.g, lab.g, R, K));
    pair_close(loss, 1e-5, 1.0, "fast xent loss");
    pair_close(p, 1e-5, 1e-6, "fast xent probs");
    pair_free(z);
    pair_free(p);
    pair_free(loss);
    pair_free(lab);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

/* dlogits within the fused classifier's tolerance of the cpu's: 1e-5 of (|want| + dloss *
 * 1e-6) off the label (the fast forward's probabilities, scaled) and of (|want| + dloss)
 * on it, where p - 1 cancels; bf16 adds its rounding, 2^-8 of |want|. */
static void assert_dlogits_close(const float *got, const float *want, const int32_t *labels, int R,
                                 int K, float dloss, int bf16)
{
    for (int r = 0; r < R; r++)
        for (int c = 0; c < K; c++) {
            size_t i = (size_t)r * K + c;
            double w = fabs((double)want[i]);
            double bound =
                1e-5 * (w + (c == labels[r] ? dloss : dloss * 1e-6)) + (bf16 ? w / 256.0 : 0.0);
            ck_assert_msg(fabs((double)got[i] - (double)want[i]) <= bound,
                          "fused classifier dlogits: row %d class %d (label %d): cuda %.9g, cpu "
                          "%.9g",
                          r, c, labels[r], (double)got[i], (double)want[i]);
        }
}

/* The fused classifier (xent_fused: loss and dlogits in one pass, no probabilities)
 * against the cpu's xent_forward then xent_backward on the same (typed) logits. Native
 * mode: the loss to 1e-5 of (|loss| + 1), dlogits as assert_dlogits_close says; exact
 * mode: the cpu's bits (bf16: the cpu's fp32 dlogits rounded once, the bits of the cpu's
 * own xent_fused, which the GPT head calls on both backends). K = 50304 takes the
 * 128-bit path, 1001 the scalar one; in place and out of place; fp32 and bf16 (_i).
 * Labels 0 and K - 1 test the one-hot at both ends of a row; the output buffer starts
 * as garbage, so a skipped element fails. */
START_TEST(test_cuda_fused_classifier_matches_cpu_xent_forward_then_backward)
{
    static const struct {
        enum zero_dtype t;
        int K, in_place;
        enum zero_coll_mode mode;
    } cases[] = {
        {ZERO_F32, 50304, 1, ZERO_COLL_NATIVE},  {ZERO_F32, 1001, 0, ZERO_COLL_NATIVE},
        {ZERO_BF16, 50304, 1, ZERO_COLL_NATIVE}, {ZERO_BF16, 1001, 0, ZERO_COLL_NATIVE},
        {ZERO_F32, 1001, 1, ZERO_COLL_EXACT},    {ZERO_F32, 50304, 0, ZERO_COLL_EXACT},
        {ZERO_BF16, 50304, 1, ZERO_COLL_EXACT},  {ZERO_BF16, 1001, 0, ZERO_COLL_EXACT},
    };
    const int R = 9, K = cases[_i].K, in_place = cases[_i].in_place;
    const enum zero_dtype t = cases[_i].t;
    const float dloss = 0.125f;
    const size_t n = (size_t)R * K, esize = zero_dtype_size(t);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, cases[_i].mode), ZERO_OK);
    int32_t labels[9];
    for (int r = 0; r < R; r++)
        labels[r] = (r * 397) % K;
    labels[0] = 0;
    labels[1] = K - 1;
    float *z = vals(n, 81, 20.0f), *zt = as_typed(z, n, t); /* zt: what the typed logits hold */
    /* the cpu: forward and backward on the typed values */
    float *zc = upload(cpu, zt, n * sizeof(float)), *pc = upload(cpu, zt, n * sizeof(float));
    float *dc = upload(cpu, zt, n * sizeof(float)), *lc = upload(cpu, zt, R * sizeof(float));
    int32_t *labc = upload(cpu, labels, sizeof(labels));
    ck_assert_int_eq(cpu->be->xent_forward(cpu->self, lc, pc, zc, labc, R, K), ZERO_OK);
    ck_assert_int_eq(cpu->be->xent_backward(cpu->self, dc, pc, labc, R, K, dloss), ZERO_OK);
    float *want_loss = download(cpu, lc, R * sizeof(float)), *want = download(cpu, dc, n * 4);
    /* the gpu: typed logits, garbage in the output buffers */
    struct pair zg = both_typed(z, n, t), dg = both_blank(n * esize), lg = both_blank(R * 4);
    int32_t *labg = upload(gpu, labels, sizeof(labels));
    void *out = in_place ? zg.g : dg.g;
    int rc = gpu->be->classifier->xent_fused(gpu->self, lg.g, out, zg.g, t, labg, R, K, dloss);
    ck_assert_msg(rc == ZERO_OK, "cuda: %s", gpu->be->last_error(gpu->self));
    float *got = download_f32(gpu, out, n, t), *got_loss = download(gpu, lg.g, R * 4);
    if (cases[_i].mode == ZERO_COLL_EXACT) {
        /* bf16: the cpu's dlogits rounded once (the cpu's xent_fused, test_kernels.c) */
        float *want_t = as_typed(want, n, t);
        ck_assert_msg(memcmp(got, want_t, n * 4) == 0, "exact fused classifier: dlogits bits");
        free(want_t);
        ck_assert_msg(memcmp(got_loss, want_loss, R * 4) == 0, "exact fused classifier: loss");
    } else {
        assert_close(got_loss, want_loss, R, 1e-5, 1.0, "fused classifier loss");
        assert_dlogits_close(got, want, labels, R, K, dloss, t == ZERO_BF16);
    }
    free(z);
    free(zt);
    free(want_loss);
    free(want);
    free(got);
    free(got_loss);
    release(cpu, zc);
    release(cpu, pc);
    release(cpu, dc);
    release(cpu, lc);
    release(cpu, labc);
    release(gpu, labg);
    pair_free(zg);
    pair_free(dg);
    pair_free(lg);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

/* The residual add fused with LayerNorm against the cpu's add then layernorm_forward:
 * res = a + b to the bit (one fp32 add either way); native mode y, mean and rstd within
 * the fast LayerNorm's 1e-5 of (|x| + 1e-3), exact mode to the bit. C = 768 (128-bit
 * path) and 97 (scalar); res is a, b or its own buffer (_i). */
START_TEST(test_cuda_residual_layernorm_matches_cpu_add_then_layernorm)
{
    static const struct {
        int C, res_is; /* 0: a, 1: b, 2: its own buffer */
        enum zero_coll_mode mode;
    } cases[] = {
        {768, 0, ZERO_COLL_NATIVE}, {97, 1, ZERO_COLL_NATIVE}, {768, 2, ZERO_COLL_NATIVE},
        {768, 0, ZERO_COLL_EXACT},  {97, 2, ZERO_COLL_EXACT},
    };
    const int R = 37, C = cases[_i].C;
    const size_t n = (size_t)R * C;
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, cases[_i].mode), ZERO_OK);
    struct pair a = both_vals(n, 91, 3.0f), b = both_vals(n, 92, 0.5f),
                own = both_vals(n, 93, 1.0f);
    struct pair w = both_vals(C, 94, 1.0f), bias = both_vals(C, 95, 1.0f);
    struct pair y = both_vals(n, 96, 1.0f), mean = both_vals(R, 97, 1.0f);
    struct pair rstd = both_vals(R, 98, 1.0f);
    struct pair res = cases[_i].res_is == 0 ? a : cases[_i].res_is == 1 ? b : own;
    ON_BOTH(cpu->be->add(cpu->self, res.c, a.c, b.c, n),
            gpu->be->fused->residual_layernorm_forward(gpu->self, res.g, y.g, mean.g, rstd.g, a.g,
                                                       b.g, w.g, bias.g, R, C, 1e-5f));
    ck_assert_int_eq(
        cpu->be->layernorm_forward(cpu->self, y.c, mean.c, rstd.c, res.c, w.c, bias.c, R, C, 1e-5f),
        ZERO_OK);
    pair_same(res, "residual a + b");
    if (cases[_i].mode == ZERO_COLL_EXACT) {
        pair_same(y, "exact residual layernorm y");
        pair_same(mean, "exact residual layernorm mean");
        pair_same(rstd, "exact residual layernorm rstd");
    } else {
        pair_close(y, 1e-5, 1e-3, "residual layernorm y");
        pair_close(mean, 1e-5, 1e-3, "residual layernorm mean");
        pair_close(rstd, 1e-5, 1e-3, "residual layernorm rstd");
    }
    pair_free(a);
    pair_free(b);
    pair_free(own);
    pair_free(w);
    pair_free(bias);
    pair_free(y);
    pair_free(mean);
    pair_free(rstd);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

/* layernorm_forward_stored (stored activations: LN outputs written in 16 bits) against the
 * cpu's layernorm_forward (after the add, residual form) then cast. Exact mode: the
 * cpu's bits (y, mean, rstd, res). Native mode (the warp kernel's 128-bit stores of 8):
 * res to the bit, y (widened) within one 16-bit rounding step of the cpu's, 2^-7
 * relative for bf16 and 2^-10 for fp16 (the fast LayerNorm's 1e-5 can move a value
 * across a rounding boundary), plus 2e-5, over (|y| + 1e-3); mean and rstd within the
 * fast LayerNorm's 1e-5. C = 768 (packs of 8), 100 (float4 loads, scalar stores) and
 * 97 (scalar); plain (x) and residual (res = a + b, res is a); bf16 and fp16 (_i). */
START_TEST(test_cuda_layernorm_forward_stored_16_bits_matches_cpu_layernorm_then_cast)
{
    static const struct {
        int C, residual;
        enum zero_dtype t;
        enum zero_coll_mode mode;
    } cases[] = {
        {768, 0, ZERO_BF16, ZERO_COLL_NATIVE}, {768, 1, ZERO_BF16, ZERO_COLL_NATIVE},
        {100, 1, ZERO_BF16, ZERO_COLL_NATIVE}, {97, 0, ZERO_F16, ZERO_COLL_NATIVE},
        {768, 1, ZERO_F16, ZERO_COLL_NATIVE},  {768, 1, ZERO_BF16, ZERO_COLL_EXACT},
        {97, 0, ZERO_BF16, ZERO_COLL_EXACT},
    };
    const int R = 37, C = cases[_i].C, residual = cases[_i].residual;
    const enum zero_dtype t = cases[_i].t;
    const size_t n = (size_t)R * C;
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, cases[_i].mode), ZERO_OK);
    struct pair a = both_vals(n, 101, 3.0f), b = both_vals(n, 102, 0.5f);
    struct pair w = both_vals(C, 103, 1.0f), bias = both_vals(C, 104, 1.0f);
    struct pair y = both_blank(n * 2), y32 = both_vals(n, 105, 1.0f);
    struct pair mean = both_vals(R, 106, 1.0f), rstd = both_vals(R, 107, 1.0f);
    if (residual)
        ck_assert_int_eq(cpu->be->add(cpu->self, a.c, a.c, b.c, n), ZERO_OK);
    ck_assert_int_eq(
        cpu->be->layernorm_forward(cpu->self, y32.c, mean.c, rstd.c, a.c, w.c, bias.c, R, C, 1e-5f),
        ZERO_OK);
    ck_assert_int_eq(cpu->be->cast(cpu->self, y.c, t, y32.c, ZERO_F32, n), ZERO_OK);
    int rc = gpu->be->stored->layernorm_forward_stored(gpu->self, y.g, t, mean.g, rstd.g,
                                                       residual ? NULL : a.g, residual ? a.g : NULL,
                                                       a.g, b.g, w.g, bias.g, R, C, 1e-5f);
    ck_assert_msg(rc == ZERO_OK, "cuda: %s", gpu->be->last_error(gpu->self));
    pair_same(a, "layernorm_forward_stored: res = a + b (or x untouched)");
    if (cases[_i].mode == ZERO_COLL_EXACT) {
        pair_same(y, "exact layernorm_forward_stored y");
        pair_same(mean, "exact layernorm_forward_stored mean");
        pair_same(rstd, "exact layernorm_forward_stored rstd");
    } else {
        float *want = download_f32(cpu, y.c, n, t), *got = download_f32(gpu, y.g, n, t);
        assert_close(got, want, n, (t == ZERO_BF16 ? 1.0 / 128 : 1.0 / 1024) + 2e-5, 1e-3,
                     "layernorm_forward_stored y");
        free(want);
        free(got);
        pair_close(mean, 1e-5, 1e-3, "layernorm_forward_stored mean");
        pair_close(rstd, 1e-5, 1e-3, "layernorm_forward_stored rstd");
    }
    pair_free(a);
    pair_free(b);
    pair_free(w);
    pair_free(bias);
    pair_free(y);
    pair_free(y32);
    pair_free(mean);
    pair_free(rstd);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

/* The fused entries' host-side checks: a bad label fails before anything is written
 * (naming the row, as xent_forward does), partial overlaps and an unknown dtype are
 * refused, in both modes. */
START_TEST(test_cuda_fused_entries_reject_bad_labels_overlaps_and_dtypes)
{
    enum { R = 4, K = 8 };
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_NATIVE), ZERO_OK);
    int32_t labels[R] = {0, 7, 8, 1};
    float *z = vals(R * K, 99, 1.0f);
    float *zg = upload(gpu, z, sizeof(float) * R * K), *lg = upload(gpu, z, sizeof(float) * R);
    int32_t *labg = upload(gpu, labels, sizeof(labels));
    int rc = gpu->be->classifier->xent_fused(gpu->self, lg, zg, zg, ZERO_F32, labg, R, K, 1.0f);
    ck_assert_int_eq(rc, ZERO_EINVAL);
    ck_assert_msg(strstr(gpu->be->last_error(gpu->self), "xent_fused: row 2: label 8") != NULL,
                  "%s", gpu->be->last_error(gpu->self));
    assert_same_bits(gpu, zg, z, sizeof(float) * R * K, "logits after a bad label");
    assert_same_bits(gpu, lg, z, sizeof(float) * R, "losses after a bad label");
    ck_assert_int_eq(
        gpu->be->classifier->xent_fused(gpu->self, lg, zg + 1, zg, ZERO_F32, labg, R, K, 1.0f),
        ZERO_EINVAL);
    ck_assert_int_eq(
        gpu->be->classifier->xent_fused(gpu->self, lg, zg, zg, ZERO_F16, labg, R, K, 1.0f),
        ZERO_ENOTSUP);
    for (int mode = 0; mode < 2; mode++) {
        ck_assert_int_eq(
            gpu->be->set_coll_mode(gpu->self, mode ? ZERO_COLL_EXACT : ZERO_COLL_NATIVE), ZERO_OK);
        /* res one float into a; y over b */
        ck_assert_int_eq(gpu->be->fused->residual_layernorm_forward(
                             gpu->self, zg + 1, lg, lg, lg, zg, zg + 16, zg, zg, 1, 8, 1e-5f),
                         ZERO_EINVAL);
        ck_assert_int_eq(gpu->be->fused->residual_layernorm_forward(
                             gpu->self, zg, zg + 20, lg, lg, zg, zg + 16, zg, zg, 1, 8, 1e-5f),
                         ZERO_EINVAL);
    }
    free(z);
    release(gpu, zg);
    release(gpu, lg);
    release(gpu, labg);
}
END_TEST

/* Native mode: the fused causal attention (cuda_flash_attention.cu: online softmax, no
 * T x T matrix) against the cpu's reference within fp32 rounding: y to 1e-5 and dqkv
 * to 1e-4 of (|x| + 1e-2), as the reference path above. T = 150 spans three 64-query
 * tiles with a ragged end; head sizes 16 and 64 (_i), GPT-2's 64 included. Two runs
 * give the same bits (one owner per output, no atomics). */
START_TEST(test_cuda_fused_attention_matches_cpu_and_repeats_its_bits)
{
    const int B = 2, T = 150, NH = 2, C = _i ? 128 : 32;
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_NATIVE), ZERO_OK);
    size_t n3 = (size_t)B * T * 3 * C, n = (size_t)B * T * C, tt = (size_t)B * NH * T * T;
    struct pair qkv = both_vals(n3, 52, 1.0f), y = both_vals(n, 53, 1.0f);
    struct pair att = both_vals(tt, 54, 1.0f), dy = both_vals(n, 55, 1.0f);
    struct pair dqkv = both_vals(n3, 56, 1.0f), scratch = both_vals(tt, 57, 1.0f);
    ON_BOTH(cpu->be->attention_forward(cpu->self, y.c, att.c, qkv.c, B, T, C, NH, ZERO_F32),
            gpu->be->attention_forward(gpu->self, y.g, att.g, qkv.g, B, T, C, NH, ZERO_F32));
    pair_close(y, 1e-5, 1e-2, "fused attention y");
    ON_BOTH(cpu->be->attention_backward(cpu->self, dqkv.c, scratch.c, dy.c, qkv.c, att.c, B, T, C,
                                        NH, ZERO_F32),
            gpu->be->attention_backward(gpu->self, dqkv.g, scratch.g, dy.g, qkv.g, att.g, B, T, C,
                                        NH, ZERO_F32));
    pair_close(dqkv, 1e-4, 1e-2, "fused attention dqkv");
    /* again: the same bits */
    void *y1 = download(gpu, y.g, y.bytes), *d1 = download(gpu, dqkv.g, dqkv.bytes);
    int rc = gpu->be->attention_forward(gpu->self, y.g, att.g, qkv.g, B, T, C, NH, ZERO_F32);
    if (rc == ZERO_OK)
        rc = gpu->be->attention_backward(gpu->self, dqkv.g, scratch.g, dy.g, qkv.g, att.g, B, T, C,
                                         NH, ZERO_F32);
    ck_assert_msg(rc == ZERO_OK, "cuda: %s", gpu->be->last_error(gpu->self));
    assert_same_bits(gpu, y.g, y1, y.bytes, "fused attention y, second run");
    assert_same_bits(gpu, dqkv.g, d1, dqkv.bytes, "fused attention dqkv, second run");
    free(y1);
    free(d1);
    pair_free(qkv);
    pair_free(y);
    pair_free(att);
    pair_free(dy);
    pair_free(dqkv);
    pair_free(scratch);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

START_TEST(test_cuda_attention_rejects_an_unsupported_matmul_type_with_the_cpu_message)
{
    enum { B = 1, T = 2, C = 4, NH = 2 };
    struct pair qkv = both_vals(B * T * 3 * C, 48, 1.0f), y = both_vals(B * T * C, 49, 1.0f);
    struct pair att = both_vals(B * NH * T * T, 50, 1.0f);
    ck_assert_int_eq(
        cpu->be->attention_forward(cpu->self, y.c, att.c, qkv.c, B, T, C, NH, ZERO_I32),
        ZERO_ENOTSUP);
    ck_assert_int_eq(
        gpu->be->attention_forward(gpu->self, y.g, att.g, qkv.g, B, T, C, NH, ZERO_I32),
        ZERO_ENOTSUP);
    ck_assert_str_eq(gpu->be->last_error(gpu->self), cpu->be->last_error(cpu->self));
    pair_free(qkv);
    pair_free(y);
    pair_free(att);
}
END_TEST

/* attention_state_floats: the floats of att and scratch the entries use, by the very
 * decision that picks the kernels (use_flash): the fused kernels' (B, NH, T) in native
 * mode where they take the shape; the reference's (B, NH, T, T) in exact mode, with
 * ZERO_CUDA_ATTENTION=reference, or for a head size they do not take (12). */
START_TEST(test_cuda_attention_state_floats_follow_the_kernel_choice)
{
    const int64_t B = 2, T = 150, NH = 2;
    const size_t state = (size_t)(B * NH * T), tt = state * (size_t)T;
    struct {
        enum zero_coll_mode mode;
        int reference;
        int64_t C;
        size_t want;
    } cases[] = {{ZERO_COLL_EXACT, 0, 128, tt},
                 {ZERO_COLL_NATIVE, 0, 128, state},
                 {ZERO_COLL_NATIVE, 0, 32, state},
                 {ZERO_COLL_NATIVE, 0, 24, tt},
                 {ZERO_COLL_NATIVE, 1, 128, tt}};
    ck_assert_ptr_null(cpu->be->attention);
    ck_assert_ptr_nonnull(gpu->be->attention);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, cases[i].mode), ZERO_OK);
        if (cases[i].reference)
            setenv("ZERO_CUDA_ATTENTION", "reference", 1);
        size_t att = 0, scratch = 0;
        gpu->be->attention->attention_state_floats(gpu->self, B, T, cases[i].C, NH, ZERO_BF16, &att,
                                                   &scratch);
        unsetenv("ZERO_CUDA_ATTENTION");
        ck_assert_msg(att == cases[i].want && scratch == cases[i].want,
                      "case %zu: att %zu, scratch %zu floats; %zu expected", i, att, scratch,
                      cases[i].want);
    }
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

/* The stored attention entries (16-bit qkv and y) against widen -> the fp32 entry ->
 * cast, on the GPU, bit for bit: y, the state (att, of attention_state_floats's size:
 * the buffers are exactly that big) and dqkv. Widening is exact and the kernels round
 * y once from the fp32 value the fp32 kernel stores, so nothing may differ. Cases
 * (_i): bf16 and fp16 (bit 0), qkv and y 16-byte aligned (128-bit loads and stores) or
 * one element off (the scalar path; bit 1), native mode (the fused kernels) or exact
 * (the reference path through a workspace, its products in t; bit 2). T = 150: ragged
 * tiles; each case at every head size the fused kernels take (hs 64, 32, 16, 8: C = 2 hs),
 * since each is its own instantiation with its own 128-bit offsets (hs 8: a backward
 * thread's half of a head is 4 values, loaded one by one). */
static void check_stored_attention(enum zero_dtype t, size_t off, int native, int64_t C)
{
    const enum zero_dtype mt = t; /* the products' dtype: the fused kernels take fp32 anyway */
    const int64_t B = 2, T = 150, NH = 2;
    const size_t n3 = (size_t)(B * T * 3 * C), n = (size_t)(B * T * C), es = 2;
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, native ? ZERO_COLL_NATIVE : ZERO_COLL_EXACT),
                     ZERO_OK);
    size_t na = 0, ns = 0;
    gpu->be->attention->attention_state_floats(gpu->self, B, T, C, NH, mt, &na, &ns);
    ck_assert_uint_eq(na, native ? (size_t)(B * NH * T) : (size_t)(B * NH * T * T));
    float *hq = vals(n3, 61, 1.0f), *hdy = vals(n, 62, 1.0f);
    void *q16 = NULL, *y16 = NULL, *yref = NULL;
    float *q32 = NULL, *y32 = NULL, *att1 = NULL, *att2 = NULL, *s1 = NULL, *s2 = NULL;
    float *d1 = NULL, *d2 = NULL, *dy = upload(gpu, hdy, n * sizeof(float));
    float *hq_dev = upload(gpu, hq, n3 * sizeof(float));
    const struct zero_backend *be = gpu->be;
    void *g = gpu->self;
    ck_assert_int_eq(be->alloc(g, (n3 + 8) * es, ZERO_TAG_WORKSPACE, &q16), ZERO_OK);
    ck_assert_int_eq(be->alloc(g, (n + 8) * es, ZERO_TAG_WORKSPACE, &y16), ZERO_OK);
    ck_assert_int_eq(be->alloc(g, n * es, ZERO_TAG_WORKSPACE, &yref), ZERO_OK);
    ck_assert_int_eq(be->alloc(g, n3 * 4, ZERO_TAG_WORKSPACE, (void **)&q32), ZERO_OK);
    ck_assert_int_eq(be->alloc(g, n * 4, ZERO_TAG_WORKSPACE, (void **)&y32), ZERO_OK);
    ck_assert_int_eq(be->alloc(g, na * 4, ZERO_TAG_WORKSPACE, (void **)&att1), ZERO_OK);
    ck_assert_int_eq(be->alloc(g, na * 4, ZERO_TAG_WORKSPACE, (void **)&att2), ZERO_OK);
    ck_assert_int_eq(be->alloc(g, ns * 4, ZERO_TAG_WORKSPACE, (void **)&s1), ZERO_OK);
    ck_assert_int_eq(be->alloc(g, ns * 4, ZERO_TAG_WORKSPACE, (void **)&s2), ZERO_OK);
    ck_assert_int_eq(be->alloc(g, n3 * 4, ZERO_TAG_WORKSPACE, (void **)&d1), ZERO_OK);
    ck_assert_int_eq(be->alloc(g, n3 * 4, ZERO_TAG_WORKSPACE, (void **)&d2), ZERO_OK);
    void *q = (char *)q16 + off * es, *y = (char *)y16 + off * es;
    int rc = be->cast(g, q, t, hq_dev, ZERO_F32, n3);
    if (!rc) /* the reference: widen, the fp32 entries, cast */
        rc = be->cast(g, q32, ZERO_F32, q, t, n3);
    if (!rc)
        rc = be->attention_forward(g, y32, att1, q32, B, T, C, NH, mt);
    if (!rc)
        rc = be->cast(g, yref, t, y32, ZERO_F32, n);
    if (!rc)
        rc = be->attention_backward(g, d1, s1, dy, q32, att1, B, T, C, NH, mt);
    if (!rc) /* the _stored entries on the 16-bit buffers themselves */
        rc = be->attention->attention_forward_stored(g, y, att2, q, t, B, T, C, NH, mt);
    if (!rc)
        rc = be->attention->attention_backward_stored(g, d2, s2, dy, q, t, att2, B, T, C, NH, mt);
    ck_assert_msg(rc == ZERO_OK, "cuda: %s", be->last_error(g));
    void *want_y = download(gpu, yref, n * es), *want_att = download(gpu, att1, na * 4);
    void *want_d = download(gpu, d1, n3 * 4);
    assert_same_bits(gpu, y, want_y, n * es, "stored attention y");
    assert_same_bits(gpu, att2, want_att, na * 4, "stored attention state");
    assert_same_bits(gpu, d2, want_d, n3 * 4, "stored attention dqkv");
    free(want_y);
    free(want_att);
    free(want_d);
    void *bufs[] = {q16, y16, yref, q32, y32, att1, att2, s1, s2, d1, d2, dy, hq_dev};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        release(gpu, bufs[i]);
    free(hq);
    free(hdy);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}

START_TEST(test_cuda_stored_attention_gives_the_bits_of_widen_attention_cast)
{
    const enum zero_dtype t = _i & 1 ? ZERO_F16 : ZERO_BF16;
    const size_t off = _i & 2 ? 1 : 0;
    const int native = (_i & 4) == 0;
    const int64_t C[] = {128, 64, 32, 16};
    for (size_t c = 0; c < sizeof C / sizeof C[0]; c++)
        check_stored_attention(t, off, native, C[c]);
}
END_TEST

/* The state size in a training run: a tiny GPT (2 layers, 2 heads, hs 16, T 64, 2
 * sequences a rank) trained 2 steps in native mode with the fused attention and with
 * ZERO_CUDA_ATTENTION=reference, fp32 and bf16 with bf16 activations (the _stored
 * entries): both train, and the ledger's activation peak of the fused runs is lower by
 * exactly the T x T the blocks no longer keep: n_layer * B * NH * (T * T - T) * 4. */
static int64_t tiny_gpt_activation_peak(int reference, int bf16, float *loss)
{
    const struct zero_gpt_config g = {
        .n_layer = 2, .n_head = 2, .n_embd = 32, .block_size = 64, .vocab_size = 40};
    struct zero_config cfg;
    zero_config_defaults(&cfg);
    snprintf(cfg.libzero.backend, sizeof cfg.libzero.backend, "cuda");
    cfg.libzero.coll_mode = ZERO_COLL_NATIVE;
    cfg.train_micro_batch_size_per_gpu = 2;
    cfg.bf16.enabled = bf16;
    cfg.libzero.activations = bf16 ? ZERO_ACTIVATIONS_COMPUTE : ZERO_ACTIVATIONS_FP32;
    struct zero_error err = {0};
    struct zero_model *m = NULL;
    struct zero_engine *e = NULL;
    if (reference)
        setenv("ZERO_CUDA_ATTENTION", "reference", 1);
    zero_ledger_reset_peaks(&gpu->ledger);
    int rc = zero_nn_build_gpt(&m, &g, &err);
    if (!rc)
        rc = zero_engine_create(&e, &cfg, m, gpu, &err);
    int32_t tokens[2 * 64], labels[2 * 64];
    for (int i = 0; i < 2 * 64; i++) {
        tokens[i] = (i * 7 + gpu->rank) % 40;
        labels[i] = (i * 7 + 3 + gpu->rank) % 40;
    }
    for (int step = 0; step < 2 && !rc; step++) {
        struct zero_batch b = {.rows = 2 * 64, .tokens = tokens, .labels = labels};
        if (!(rc = zero_engine_forward(e, &b, NULL, &err)) && !(rc = zero_engine_backward(e, &err)))
            rc = zero_engine_step(e, NULL, &err);
    }
    if (!rc)
        *loss = (float)zero_engine_last_step(e)->loss;
    const int64_t peak = gpu->ledger.peak[ZERO_TAG_ACTIVATIONS];
    zero_engine_destroy(e);
    zero_model_destroy(m);
    unsetenv("ZERO_CUDA_ATTENTION");
    ck_assert_msg(rc == ZERO_OK, "tiny GPT (reference %d, bf16 %d): %s", reference, bf16, err.msg);
    return peak;
}

START_TEST(test_cuda_fused_attention_keeps_only_its_state_in_a_training_run)
{
    const int64_t fall = 2 * 2 * 2 * (64 * 64 - 64) * (int64_t)sizeof(float);
    for (int bf16 = 0; bf16 < 2; bf16++) {
        float lf = NAN, lr = NAN;
        const int64_t fused = tiny_gpt_activation_peak(0, bf16, &lf);
        const int64_t ref = tiny_gpt_activation_peak(1, bf16, &lr);
        ck_assert_msg(isfinite(lf) && isfinite(lr) && fabs(lf - lr) <= 1e-2 * fabs(lr),
                      "bf16 %d: loss %.9g fused, %.9g reference", bf16, lf, lr);
        ck_assert_msg(ref - fused == fall,
                      "bf16 %d: peak activations %lld fused, %lld reference: expected %lld less",
                      bf16, (long long)fused, (long long)ref, (long long)fall);
    }
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

/* ---------------------------------------------------------------- streams */

START_TEST(test_cuda_event_orders_comm_stream_after_compute)
{
    void *ev = NULL;
    ck_assert_int_eq(gpu->be->event_create(gpu->self, &ev), ZERO_OK);
    ck_assert_int_eq(gpu->be->event_record(gpu->self, ev, ZERO_STREAM_COMPUTE), ZERO_OK);
    ck_assert_int_eq(gpu->be->stream_wait_event(gpu->self, ZERO_STREAM_COMM, ev), ZERO_OK);
    ck_assert_int_eq(gpu->be->event_record(gpu->self, ev, ZERO_STREAM_COMM), ZERO_OK);
    ck_assert_int_eq(gpu->be->event_synchronize(gpu->self, ev), ZERO_OK);
    ck_assert_int_eq(gpu->be->event_record(gpu->self, ev, (enum zero_stream)7), ZERO_EINVAL);
    ck_assert_int_eq(gpu->be->event_destroy(gpu->self, ev), ZERO_OK);
}
END_TEST

/* ---------------------------------------------------------------- collectives */

static int rank_, size_;

/* calls, payload and sent bytes of every kind moved the same on both devices since the
 * snapshots were taken */
static void assert_same_counts(const struct zero_comm_stats *c0, const struct zero_comm_stats *g0)
{
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++) {
        const struct zero_coll_counter *c = &cpu->comm_stats.kind[k], *g = &gpu->comm_stats.kind[k];
        ck_assert_int_eq(g->calls - g0->kind[k].calls, c->calls - c0->kind[k].calls);
        ck_assert_int_eq(g->payload_bytes - g0->kind[k].payload_bytes,
                         c->payload_bytes - c0->kind[k].payload_bytes);
        ck_assert_int_eq(g->sent_bytes - g0->kind[k].sent_bytes,
                         c->sent_bytes - c0->kind[k].sent_bytes);
    }
}

static void set_mode(enum zero_coll_mode mode)
{
    ck_assert_int_eq(cpu->be->set_coll_mode(cpu->self, mode), ZERO_OK);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, mode), ZERO_OK);
}

/* every rank's input differs; values in [-4, 4) */
static struct pair rank_vals(size_t n, uint32_t seed, enum zero_dtype t)
{
    float *x = vals(n, seed * 97 + (uint32_t)rank_, 4.0f);
    struct pair p = both_typed(x, n, t);
    free(x);
    return p;
}

static void reduce_scatter_case(enum zero_dtype wire, enum zero_dtype recv_t, int in_place,
                                int nonblocking)
{
    const size_t count = 3001;
    struct pair send = rank_vals(size_ * count, 50, wire);
    struct pair recv = rank_vals(count, 51, recv_t);
    size_t off = (size_t)rank_ * count * zero_dtype_size(wire);
    void *recv_c = in_place ? (char *)send.c + off : recv.c;
    void *recv_g = in_place ? (char *)send.g + off : recv.g;
    struct zero_comm_stats c0 = cpu->comm_stats, g0 = gpu->comm_stats;
    struct zero_request *req = NULL;
    ON_BOTH(cpu->be->reduce_scatter(cpu->self, send.c, wire, recv_c, recv_t, count, NULL),
            gpu->be->reduce_scatter(gpu->self, send.g, wire, recv_g, recv_t, count,
                                    nonblocking ? &req : NULL));
    if (nonblocking)
        ck_assert_int_eq(gpu->be->wait(gpu->self, req), ZERO_OK);
    size_t bytes = count * zero_dtype_size(recv_t);
    void *want = download(cpu, recv_c, bytes);
    char what[80];
    snprintf(what, sizeof(what), "reduce_scatter %s -> %s%s", zero_dtype_name(wire),
             zero_dtype_name(recv_t), in_place ? " in place" : "");
    assert_same_bits(gpu, recv_g, want, bytes, what);
    assert_same_counts(&c0, &g0);
    free(want);
    pair_free(send);
    pair_free(recv);
}

START_TEST(test_cuda_exact_reduce_scatter_matches_cpu_bits)
{
    set_mode(ZERO_COLL_EXACT);
    reduce_scatter_case(ZERO_F32, ZERO_F32, 0, 0);
    reduce_scatter_case(ZERO_BF16, ZERO_F32, 0, 1);
    reduce_scatter_case(ZERO_BF16, ZERO_BF16, 1, 0);
    reduce_scatter_case(ZERO_F16, ZERO_F16, 0, 1);
    reduce_scatter_case(ZERO_F32, ZERO_F32, 1, 1);
}
END_TEST

START_TEST(test_cuda_exact_all_reduce_of_uneven_count_matches_cpu_bits)
{
    set_mode(ZERO_COLL_EXACT);
    const enum zero_dtype types[] = {ZERO_F32, ZERO_BF16};
    for (int k = 0; k < 2; k++)
        for (int in_place = 0; in_place <= 1; in_place++) {
            const size_t count = 1001; /* not a multiple of 2, 3 or 4 */
            struct pair send = rank_vals(count, 52, types[k]),
                        recv = rank_vals(count, 53, types[k]);
            struct zero_comm_stats c0 = cpu->comm_stats, g0 = gpu->comm_stats;
            struct zero_request *req = NULL;
            ON_BOTH(cpu->be->all_reduce(cpu->self, send.c, in_place ? send.c : recv.c, types[k],
                                        count, NULL),
                    gpu->be->all_reduce(gpu->self, send.g, in_place ? send.g : recv.g, types[k],
                                        count, &req));
            ck_assert_int_eq(gpu->be->wait(gpu->self, req), ZERO_OK);
            pair_same(in_place ? send : recv, "exact all_reduce");
            assert_same_counts(&c0, &g0);
            pair_free(send);
            pair_free(recv);
        }
}
END_TEST

START_TEST(test_cuda_all_gather_and_broadcast_match_cpu_bits)
{
    const size_t count = 777;
    for (int in_place = 0; in_place <= 1; in_place++) {
        struct pair send = rank_vals(count, 54, ZERO_BF16);
        struct pair recv = rank_vals(size_ * count, 55, ZERO_BF16);
        size_t off = (size_t)rank_ * count * 2;
        if (in_place) { /* our piece already in place */
            void *h = download(cpu, send.c, count * 2);
            ck_assert_int_eq(cpu->be->from_host(cpu->self, (char *)recv.c + off, h, count * 2), 0);
            ck_assert_int_eq(gpu->be->from_host(gpu->self, (char *)recv.g + off, h, count * 2), 0);
            free(h);
        }
        struct zero_comm_stats c0 = cpu->comm_stats, g0 = gpu->comm_stats;
        ON_BOTH(cpu->be->all_gather(cpu->self, in_place ? (char *)recv.c + off : send.c, recv.c,
                                    ZERO_BF16, count, NULL),
                gpu->be->all_gather(gpu->self, in_place ? (char *)recv.g + off : send.g, recv.g,
                                    ZERO_BF16, count, NULL));
        pair_same(recv, "all_gather");
        assert_same_counts(&c0, &g0);
        pair_free(send);
        pair_free(recv);
    }
    struct pair buf = rank_vals(count, 56, ZERO_F32);
    int root = size_ - 1;
    struct zero_comm_stats c0 = cpu->comm_stats, g0 = gpu->comm_stats;
    struct zero_request *req = NULL;
    ON_BOTH(cpu->be->broadcast(cpu->self, buf.c, ZERO_F32, count, root, NULL),
            gpu->be->broadcast(gpu->self, buf.g, ZERO_F32, count, root, &req));
    ck_assert_int_eq(gpu->be->wait(gpu->self, req), ZERO_OK);
    pair_same(buf, "broadcast");
    assert_same_counts(&c0, &g0);
    pair_free(buf);
}
END_TEST

/* Native mode sums in the communication library's order: fp32 results agree with the
 * cpu's to 1e-6 of (|x| + 4 N); the stats count the same bytes. */
START_TEST(test_cuda_native_collectives_agree_with_cpu_to_rounding)
{
    set_mode(ZERO_COLL_NATIVE);
    const size_t count = 2048;
    struct pair send = rank_vals(size_ * count, 57, ZERO_F32),
                recv = rank_vals(count, 58, ZERO_F32);
    struct zero_comm_stats c0 = cpu->comm_stats, g0 = gpu->comm_stats;
    ON_BOTH(cpu->be->reduce_scatter(cpu->self, send.c, ZERO_F32, recv.c, ZERO_F32, count, NULL),
            gpu->be->reduce_scatter(gpu->self, send.g, ZERO_F32, recv.g, ZERO_F32, count, NULL));
    pair_close(recv, 1e-6, 4.0 * size_, "native reduce_scatter");
    ON_BOTH(cpu->be->all_reduce(cpu->self, send.c, send.c, ZERO_F32, size_ * count, NULL),
            gpu->be->all_reduce(gpu->self, send.g, send.g, ZERO_F32, size_ * count, NULL));
    pair_close(send, 1e-6, 4.0 * size_, "native all_reduce");
    assert_same_counts(&c0, &g0);
    set_mode(ZERO_COLL_EXACT);
    pair_free(send);
    pair_free(recv);
}
END_TEST

START_TEST(test_cuda_host_all_gather_and_barrier_work_like_cpu)
{
    int mine = 1000 + rank_, all[8] = {0};
    ck_assert_int_le(size_, 8);
    struct zero_comm_stats c0 = cpu->comm_stats, g0 = gpu->comm_stats;
    ck_assert_int_eq(cpu->be->host_all_gather(cpu->self, &mine, all, sizeof(int)), ZERO_OK);
    ck_assert_int_eq(gpu->be->host_all_gather(gpu->self, &mine, all, sizeof(int)), ZERO_OK);
    for (int r = 0; r < size_; r++)
        ck_assert_int_eq(all[r], 1000 + r);
    assert_same_counts(&c0, &g0);
    ck_assert_int_eq(gpu->be->barrier(gpu->self), ZERO_OK);
}
END_TEST

/* Groups: with NCCL a group of this rank alone (color rank) gathers its piece like the
 * cpu backend's, counted in comm_stats.group; ranks that share a GPU (host-staged)
 * refuse to open one, naming why. */
START_TEST(test_cuda_group_all_gather_matches_cpu_or_is_refused_host_staged)
{
    const struct zero_groups_ops *g = gpu->be->groups;
    ck_assert_ptr_nonnull(g);
    ck_assert_int_ge(g->node_group_size(gpu->self), 0);
    struct zero_group *grp = NULL;
    int rc = g->group_open(gpu->self, rank_, &grp);
    if (rc != ZERO_OK) {
        ck_assert_int_eq(rc, ZERO_ENOTSUP);
        ck_assert_ptr_nonnull(strstr(gpu->be->last_error(gpu->self), "host-staged"));
        return;
    }
    ck_assert_int_eq(g->group_size(gpu->self, grp), 1);
    ck_assert_int_eq(g->group_rank(gpu->self, grp), 0);
    size_t n = 1000;
    float *x = vals(n, 31, 1.0f), *back = malloc(n * sizeof(float));
    ck_assert_ptr_nonnull(back);
    void *send = upload(gpu, x, n * sizeof(float)), *recv = NULL;
    ck_assert_int_eq(gpu->be->alloc(gpu->self, n * sizeof(float), ZERO_TAG_WORKSPACE, &recv),
                     ZERO_OK);
    struct zero_request *req = NULL;
    int64_t calls = gpu->comm_stats.group[ZERO_COLL_ALL_GATHER].calls;
    ck_assert_int_eq(g->group_all_gather(gpu->self, grp, send, recv, ZERO_F32, n, &req), ZERO_OK);
    ck_assert_int_eq(gpu->be->wait(gpu->self, req), ZERO_OK);
    ck_assert_int_eq(gpu->be->to_host(gpu->self, back, recv, n * sizeof(float)), ZERO_OK);
    ck_assert_int_eq(memcmp(back, x, n * sizeof(float)), 0);
    ck_assert_int_eq(gpu->comm_stats.group[ZERO_COLL_ALL_GATHER].calls, calls + 1);
    gpu->be->free(gpu->self, send);
    gpu->be->free(gpu->self, recv);
    g->group_close(gpu->self, grp);
    free(x);
    free(back);
}
END_TEST

/* Groups' reductions (backend_groups.h v2) over a group of every rank (color 0): in exact
 * mode the cuda backend's reduce-scatter (fp32 and bf16 wire into fp32) and all-reduce
 * (an uneven count, in place) give the cpu backend's group bits (the owner combine over
 * the group's ranks); in native mode (_i 0: NCCL's own) they agree to 1e-5 of (|x| + 1).
 * Counted in comm_stats.group. Host-staged ranks skip (no groups there). */
START_TEST(test_cuda_group_reductions_match_cpu)
{
    enum zero_coll_mode mode = _i ? ZERO_COLL_EXACT : ZERO_COLL_NATIVE;
    const struct zero_groups_ops *g = gpu->be->groups, *cg = cpu->be->groups;
    struct zero_group *grp = NULL, *cgrp = NULL;
    if (g->group_open(gpu->self, 0, &grp) != ZERO_OK) {
        ck_assert_ptr_nonnull(strstr(gpu->be->last_error(gpu->self), "host-staged"));
        return;
    }
    ck_assert_int_eq(cg->group_open(cpu->self, 0, &cgrp), ZERO_OK);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, mode), ZERO_OK);
    size_t count = 1003, n = (size_t)size_ * count;
    for (int v = 0; v < 2; v++) {
        enum zero_dtype wire = v ? ZERO_BF16 : ZERO_F32;
        float *x = vals(n, 41 + (uint32_t)rank_, 1.0f);
        struct pair send = both_typed(x, n, wire);
        void *rc_ = malloc(count * sizeof(float)), *rg = NULL;
        ck_assert_ptr_nonnull(rc_);
        ck_assert_int_eq(gpu->be->alloc(gpu->self, count * sizeof(float), ZERO_TAG_WORKSPACE, &rg),
                         ZERO_OK);
        int64_t calls = gpu->comm_stats.group[ZERO_COLL_REDUCE_SCATTER].calls;
        struct zero_request *req = NULL;
        ck_assert_int_eq(
            cg->group_reduce_scatter(cpu->self, cgrp, send.c, wire, rc_, ZERO_F32, count, NULL),
            ZERO_OK);
        ck_assert_int_eq(
            g->group_reduce_scatter(gpu->self, grp, send.g, wire, rg, ZERO_F32, count, &req),
            ZERO_OK);
        ck_assert_int_eq(gpu->be->wait(gpu->self, req), ZERO_OK);
        float *got = download_f32(gpu, rg, count, ZERO_F32);
        if (mode == ZERO_COLL_EXACT)
            ck_assert_int_eq(memcmp(got, rc_, count * sizeof(float)), 0);
        else
            assert_close(got, rc_, count, 1e-5, 1.0, "group_reduce_scatter, native");
        ck_assert_int_eq(gpu->comm_stats.group[ZERO_COLL_REDUCE_SCATTER].calls, calls + 1);
        free(got);
        free(rc_);
        free(x);
        gpu->be->free(gpu->self, rg);
        pair_free(send);
    }
    size_t odd = 1001;
    float *x = vals(odd, 51 + (uint32_t)rank_, 1.0f);
    struct pair buf = both_typed(x, odd, ZERO_F32);
    ck_assert_int_eq(cg->group_all_reduce(cpu->self, cgrp, buf.c, buf.c, ZERO_F32, odd, NULL),
                     ZERO_OK);
    ck_assert_int_eq(g->group_all_reduce(gpu->self, grp, buf.g, buf.g, ZERO_F32, odd, NULL),
                     ZERO_OK);
    float *got = download_f32(gpu, buf.g, odd, ZERO_F32);
    if (mode == ZERO_COLL_EXACT)
        ck_assert_int_eq(memcmp(got, buf.c, odd * sizeof(float)), 0);
    else
        assert_close(got, buf.c, odd, 1e-5, 1.0, "group_all_reduce, native");
    free(got);
    free(x);
    pair_free(buf);
    g->group_close(gpu->self, grp);
    cg->group_close(cpu->self, cgrp);
    ck_assert_int_eq(gpu->be->set_coll_mode(gpu->self, ZERO_COLL_EXACT), ZERO_OK);
}
END_TEST

/* The quant group's all_to_all over the world: with NCCL every rank gets from rank j
 * the j-th block of 100 bytes rank j filled with its number, the same as the cpu
 * backend's, counted in comm_stats.kind; host-staged, refused naming why. */
START_TEST(test_cuda_all_to_all_delivers_blocks_in_rank_order_or_is_refused_host_staged)
{
    size_t block = 100, n = (size_t)size_;
    size_t *bytes = malloc(n * sizeof *bytes);
    unsigned char *host = malloc(n * block), *back = malloc(n * block);
    ck_assert(bytes && host && back);
    for (size_t j = 0; j < n; j++)
        bytes[j] = block;
    memset(host, rank_ & 0xff, n * block);
    void *send = upload(gpu, host, n * block), *recv = NULL;
    ck_assert_int_eq(gpu->be->alloc(gpu->self, n * block, ZERO_TAG_WORKSPACE, &recv), ZERO_OK);
    int64_t calls = gpu->comm_stats.kind[ZERO_COLL_ALL_TO_ALL].calls;
    int rc = gpu->be->quant->all_to_all(gpu->self, NULL, send, bytes, recv, bytes);
    if (rc != ZERO_OK) {
        ck_assert_int_eq(rc, ZERO_ENOTSUP);
        ck_assert_ptr_nonnull(strstr(gpu->be->last_error(gpu->self), "host-staged"));
    } else {
        ck_assert_int_eq(gpu->be->to_host(gpu->self, back, recv, n * block), ZERO_OK);
        for (size_t j = 0; j < n; j++)
            for (size_t i = 0; i < block; i++)
                ck_assert_int_eq(back[j * block + i], (int)(j & 0xff));
        ck_assert_int_eq(gpu->comm_stats.kind[ZERO_COLL_ALL_TO_ALL].calls, calls + 1);
    }
    gpu->be->free(gpu->self, send);
    gpu->be->free(gpu->self, recv);
    free(bytes);
    free(host);
    free(back);
}
END_TEST

static Suite *cuda_suite(void)
{
    Suite *s = suite_create("cuda backend vs cpu backend");
    TCase *mem = tcase_create("memory");
    tcase_add_test(mem, test_cuda_alloc_reports_live_bytes_and_reuses_freed_blocks);
    tcase_add_test(mem, test_cuda_steady_state_steps_make_no_cudamalloc_and_count_host_waits);
    tcase_add_test(mem, test_cuda_copy_of_overlapping_ranges_moves_like_memmove);
    tcase_add_test(mem, test_cuda_fill_writes_the_cpu_bits_for_every_dtype);
    tcase_add_test(mem, test_cuda_event_orders_comm_stream_after_compute);
    tcase_add_test(mem, test_cuda_host_alloc_counts_on_the_host_ledger_and_round_trips);
    tcase_add_test(mem, test_cuda_kernels_on_host_alloc_memory_match_device_memory_bits);
    suite_add_tcase(s, mem);

    TCase *elem = tcase_create("elementwise");
    tcase_add_test(elem, test_cuda_cast_from_every_fp16_and_bf16_pattern_matches_cpu);
    tcase_add_test(elem, test_cuda_cast_to_fp16_and_bf16_rounds_like_the_cpu);
    tcase_add_test(elem, test_cuda_cast_x128_packs_and_tails_match_cpu_bits);
    tcase_add_test(elem, test_cuda_axpy_scale_add_match_cpu_bits);
    tcase_add_test(elem, test_cuda_quant_int8_codes_and_values_match_cpu_bits);
    tcase_add_test(elem, test_cuda_quant_int4_codes_and_values_match_cpu_bits);
    tcase_add_test(elem, test_cuda_adamw_matches_cpu_bits_over_five_steps);
    tcase_add_test(elem, test_cuda_adam_l2_with_bf16_grads_and_copy_matches_cpu_bits);
    tcase_add_test(elem, test_cuda_sgd_nesterov_and_momentum_match_cpu_bits);
    tcase_add_test(elem, test_cuda_sumsq_blocks_matches_cpu_bits_in_every_float_type);
    tcase_add_test(elem, test_cuda_nonfinite_flags_inf_and_nan_and_nothing_else);
    suite_add_tcase(s, elem);

    TCase *blas = tcase_create("gemm");
    tcase_add_loop_test(blas, test_cuda_gemm_matches_cpu_for_all_transposes_and_dtypes, 0, 2);
    tcase_add_loop_test(blas, test_cuda_bf16_dot_gemm_gives_the_cpu_bits, 0, 4);
    tcase_add_test(blas, test_cuda_exact_gemm_is_one_fmaf_chain_per_output_in_every_bit);
    tcase_add_test(blas, test_cuda_gemm_beta_zero_ignores_nan_and_rejects_short_ld_like_cpu);
    tcase_add_loop_test(blas, test_cuda_gemm_bias_matches_cpu_gemm_then_bias_add_then_gelu, 0, 5);
    tcase_add_loop_test(blas, test_cuda_gemm_dgelu_matches_cpu_gemm_then_gelu_backward, 0, 4);
    tcase_add_loop_test(blas, test_cuda_gemm_bias_stored_16_bits_matches_cpu_gemm_bias_then_cast, 0,
                        9);
    tcase_add_loop_test(blas, test_cuda_gemm_dgelu_stored_16_bits_matches_cpu_widen_then_gemm_dgelu,
                        0, 6);
    tcase_add_test(blas, test_cuda_16_bit_epilogue_entries_reject_other_types);
    tcase_add_loop_test(
        blas, test_cuda_gemm_bgrad_matches_cpu_gemm_then_bias_grad_fresh_and_accumulating, 0, 10);
    tcase_add_test(blas, test_cuda_gemm_bgrad_rejects_a_dy_that_is_not_stored_k_by_len);
    suite_add_tcase(s, blas);

    TCase *layers = tcase_create("layers");
    tcase_add_test(layers, test_cuda_bias_add_and_bias_grad_match_cpu_bits);
    tcase_add_test(layers, test_cuda_gelu_equals_cpu_bit_for_bit);
    tcase_add_test(layers, test_cuda_xent_matches_cpu_and_backward_is_bit_exact);
    tcase_add_test(layers, test_cuda_xent_and_embedding_reject_bad_ids_with_the_cpu_message);
    tcase_add_test(layers, test_cuda_loss_accumulate_gives_the_host_sums_bits);
    tcase_add_test(layers, test_cuda_deferred_checks_report_the_first_bad_id_at_input_errors);
    tcase_add_test(layers, test_cuda_graph_capture_replays_the_eager_bits_from_a_private_pool);
    tcase_add_test(layers, test_cuda_embedding_forward_and_backward_match_cpu_bits);
    tcase_add_loop_test(layers, test_cuda_bucketed_embedding_backward_matches_cpu_bits, 0, 2);
    tcase_add_test(layers, test_cuda_layernorm_forward_and_backward_match_cpu_bits);
    tcase_add_test(layers, test_cuda_attention_matches_cpu_within_fp32_rounding);
    tcase_add_test(layers,
                   test_cuda_bf16_attention_matches_cpu_within_one_bf16_rounding_of_att_and_ds);
    tcase_add_test(layers,
                   test_cuda_attention_rejects_an_unsupported_matmul_type_with_the_cpu_message);
    tcase_add_loop_test(layers, test_cuda_fused_attention_matches_cpu_and_repeats_its_bits, 0, 2);
    tcase_add_test(layers, test_cuda_attention_state_floats_follow_the_kernel_choice);
    tcase_add_loop_test(layers, test_cuda_stored_attention_gives_the_bits_of_widen_attention_cast,
                        0, 8);
    tcase_add_test(layers, test_cuda_fused_attention_keeps_only_its_state_in_a_training_run);
    tcase_add_loop_test(layers, test_cuda_fast_layernorm_forward_matches_cpu_within_fp32_rounding,
                        0, 2);
    tcase_add_loop_test(layers, test_cuda_fast_xent_forward_matches_cpu_within_fp32_rounding, 0, 2);
    tcase_add_loop_test(layers, test_cuda_fused_classifier_matches_cpu_xent_forward_then_backward,
                        0, 8);
    tcase_add_loop_test(layers, test_cuda_residual_layernorm_matches_cpu_add_then_layernorm, 0, 5);
    tcase_add_loop_test(
        layers, test_cuda_layernorm_forward_stored_16_bits_matches_cpu_layernorm_then_cast, 0, 7);
    tcase_add_test(layers, test_cuda_fused_entries_reject_bad_labels_overlaps_and_dtypes);
    suite_add_tcase(s, layers);

    TCase *coll = tcase_create("collectives");
    tcase_set_timeout(coll, 120);
    tcase_add_test(coll, test_cuda_exact_reduce_scatter_matches_cpu_bits);
    tcase_add_test(coll, test_cuda_exact_all_reduce_of_uneven_count_matches_cpu_bits);
    tcase_add_test(coll, test_cuda_all_gather_and_broadcast_match_cpu_bits);
    tcase_add_test(coll, test_cuda_native_collectives_agree_with_cpu_to_rounding);
    tcase_add_test(coll, test_cuda_host_all_gather_and_barrier_work_like_cpu);
    tcase_add_test(coll, test_cuda_group_all_gather_matches_cpu_or_is_refused_host_staged);
    tcase_add_loop_test(coll, test_cuda_group_reductions_match_cpu, 0, 2);
    tcase_add_test(coll,
                   test_cuda_all_to_all_delivers_blocks_in_rank_order_or_is_refused_host_staged);
    suite_add_tcase(s, coll);
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    int opened = cuda_pair_open("test_cuda_backend", &cpu, &gpu);
    if (opened != 0) {
        MPI_Finalize();
        return opened;
    }
    /* what the backend holds from open on: the cuBLASLt workspace */
    int64_t own = gpu->ledger.current_total - gpu->ledger.current[ZERO_TAG_COMM];
    int status = mpi_check_run(cuda_suite);
    /* every test freed what it allocated; the backend's own comm buffers may stay */
    int64_t live = gpu->ledger.current_total - gpu->ledger.current[ZERO_TAG_COMM] - own;
    int64_t host_live = gpu->host_ledger.current_total;
    zero_device_close(gpu);
    zero_device_close(cpu);
    MPI_Finalize();
    if (live != 0 || host_live != 0) {
        fprintf(stderr, "rank %d: %lld device and %lld host_alloc bytes still live at the end\n",
                rank_, (long long)live, (long long)host_live);
        return EXIT_FAILURE;
    }
    return status;
}

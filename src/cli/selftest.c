/* zero selftest: runs every collective of a backend in exact and native mode on the
 * current mpirun world, with fp32/fp16/bf16 elements and odd sizes, and checks the
 * results on every rank: exact results bit for bit against a serial evaluation of the
 * canonical tree (src/base/tree.h), native results within rounding, copies byte for byte.
 * Every operation runs blocking and non-blocking. Prints one table row per collective,
 * dtype and mode; exits 0 only if every row passes. Buffers go through the backend's
 * own memory (alloc, from_host, to_host), so any backend can be checked. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_run.h"
#include "commands.h"
#include "base/tree.h"
#include "program/flags.h"
#include "zero/backend.h"
#include "zero/error.h"

enum coll { RS, AG, AR, BC, N_COLL };
static const char *const coll_name[N_COLL] = {"reduce_scatter", "all_gather", "all_reduce",
                                              "broadcast"};
static const enum zero_dtype dtypes[] = {ZERO_F32, ZERO_F16, ZERO_BF16};
static const size_t sizes[] = {1, 7, 1001, 65537}; /* odd; 65537 spans many combine blocks */
#define N_DTYPES (sizeof(dtypes) / sizeof(dtypes[0]))
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

struct selftest {
    struct zero_device *dev;
    int rank, size;
    char why[ZERO_ERRMSG_LEN]; /* this rank's first problem in the current row */
};

static void note(struct selftest *st, const char *fmt, const char *what, size_t a, size_t b)
{
    if (st->why[0] == '\0')
        snprintf(st->why, sizeof(st->why), fmt, what, a, b);
}

/* ---- inputs and the reference ---- */

/* Rank r's value for element i, the same on every rank: random signs, mantissas and
 * exponents in [-8, 8), so the order of additions shows in the bits. */
static float input(int r, size_t i)
{
    uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15ull ^ (uint64_t)(r + 1) * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    float frac = (float)(h >> 40) / 16777216.0f;
    float v = ldexpf(1.0f + frac, (int)((h >> 8) & 15) - 8);
    return h & 1 ? -v : v;
}

static void encode(void *buf, enum zero_dtype t, size_t i, float v)
{
    if (t == ZERO_F32)
        ((float *)buf)[i] = v;
    else if (t == ZERO_F16)
        ((uint16_t *)buf)[i] = zero_f32_to_f16(v);
    else
        ((uint16_t *)buf)[i] = zero_f32_to_bf16(v);
}

static float decode(const void *buf, enum zero_dtype t, size_t i)
{
    if (t == ZERO_F32)
        return ((const float *)buf)[i];
    if (t == ZERO_F16)
        return zero_f16_to_f32(((const uint16_t *)buf)[i]);
    return zero_bf16_to_f32(((const uint16_t *)buf)[i]);
}

static float as_wire(enum zero_dtype t, float v)
{
    unsigned char w[4];
    encode(w, t, 0, v);
    return decode(w, t, 0);
}

static double unit_roundoff(enum zero_dtype t)
{
    return t == ZERO_F32 ? ldexp(1.0, -24) : t == ZERO_F16 ? ldexp(1.0, -11) : ldexp(1.0, -8);
}

/* Element i of a sum: 1 if got (t) is right. Exact mode: the serial tree over ranks,
 * rounded once to t, bit for bit. Native: within N * 2u * sum |g_r| + 2^-24. */
static int sum_is_right(const struct selftest *st, enum zero_coll_mode mode, enum zero_dtype t,
                        const void *got, size_t at, size_t i)
{
    float leaves[256] = {0};
    double magnitude = 0.0;
    for (int r = 0; r < st->size; r++) {
        leaves[r] = as_wire(t, input(r, i));
        magnitude += fabs(leaves[r]);
    }
    unsigned char want[4];
    encode(want, t, 0, zero_tree_sum(leaves, (size_t)st->size));
    size_t esize = zero_dtype_size(t);
    if (mode == ZERO_COLL_EXACT)
        return memcmp(want, (const char *)got + at * esize, esize) == 0;
    double tol = st->size * 2.0 * unit_roundoff(t) * magnitude + ldexp(1.0, -24);
    return fabs((double)decode(got, t, at) - (double)decode(want, t, 0)) <= tol;
}

/* ---- one operation on the device ---- */

struct buf {
    void *dev;
    void *host;
    size_t bytes;
};

static int buf_make(struct selftest *st, struct buf *b, size_t bytes)
{
    b->bytes = bytes;
    b->host = calloc(1, bytes > 0 ? bytes : 1);
    int rc = st->dev->be->alloc(st->dev->self, bytes, ZERO_TAG_WORKSPACE, &b->dev);
    if (b->host == NULL && rc == ZERO_OK)
        rc = ZERO_ENOMEM;
    return rc;
}

static void buf_free(struct selftest *st, struct buf *b)
{
    st->dev->be->free(st->dev->self, b->dev);
    free(b->host);
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 1 on every rank if cond holds on every rank. */
static int all_ok(int cond)
{
    zero_comm_allreduce_int(zero_comm_world(), &cond, ZERO_COMM_MIN);
    return cond;
}

/* Runs collective c once on the device buffers, blocking or not; 0 or a status. */
static int launch(struct selftest *st, enum coll c, enum zero_dtype t, size_t count, int root,
                  struct buf *send, struct buf *recv, int nonblocking)
{
    const struct zero_backend *be = st->dev->be;
    void *self = st->dev->self;
    struct zero_request *req = NULL, **rp = nonblocking ? &req : NULL;
    int rc;
    switch (c) {
    case RS:
        rc = be->reduce_scatter(self, send->dev, t, recv->dev, t, count, rp);
        break;
    case AG:
        rc = be->all_gather(self, send->dev, recv->dev, t, count, rp);
        break;
    case AR:
        rc = be->all_reduce(self, send->dev, recv->dev, t, count, rp);
        break;
    default:
        rc = be->broadcast(self, recv->dev, t, count, root, rp);
        break;
    }
    if (rc == ZERO_OK && req != NULL)
        rc = be->wait(self, req);
    if (rc == ZERO_OK)
        rc = be->to_host(self, recv->host, recv->dev, recv->bytes);
    return rc;
}

/* Checks collective c at one size (both blocking and non-blocking); 1 if right here. */
static int check_size(struct selftest *st, enum coll c, enum zero_dtype t, enum zero_coll_mode mode,
                      size_t count)
{
    const struct zero_backend *be = st->dev->be;
    size_t n = (size_t)st->size, esize = zero_dtype_size(t);
    size_t send_n = c == RS ? n * count : count, recv_n = c == AG ? n * count : count;
    struct buf send = {0}, recv = {0};
    int rc = buf_make(st, &send, send_n * esize);
    if (rc == ZERO_OK)
        rc = buf_make(st, &recv, recv_n * esize);
    for (size_t i = 0; i < send_n; i++)
        encode(send.host, t, i, input(st->rank, i));
    if (rc == ZERO_OK)
        rc = be->from_host(st->dev->self, send.dev, send.host, send.bytes);

    /* every rank runs every launch whatever it found, so that no rank waits alone in a
     * collective; a failed call stops all ranks together */
    int ok = 1;
    for (int nb = 0; nb < 2 && all_ok(rc == ZERO_OK); nb++) {
        for (int root = 0; root < (c == BC ? st->size : 1) && all_ok(rc == ZERO_OK); root++) {
            if (c == BC) { /* the root's values everywhere; others start from its negation */
                for (size_t i = 0; i < count; i++)
                    encode(recv.host, t, i, st->rank == root ? input(root, i) : -input(root, i));
                rc = be->from_host(st->dev->self, recv.dev, recv.host, recv.bytes);
            }
            if (rc == ZERO_OK)
                rc = launch(st, c, t, count, root, &send, &recv, nb);
            for (size_t i = 0; rc == ZERO_OK && i < recv_n; i++) {
                int right;
                if (c == RS || c == AR) {
                    size_t first = c == RS ? (size_t)st->rank * count : 0;
                    right = sum_is_right(st, mode, t, recv.host, i, first + i);
                } else {
                    int from = c == AG ? (int)(i / count) : root;
                    size_t at = c == AG ? i % count : i;
                    right = decode(recv.host, t, i) == as_wire(t, input(from, at));
                }
                if (!right)
                    note(st, "%s: element %zu of %zu is wrong", nb ? "non-blocking" : "blocking", i,
                         recv_n);
                ok &= right;
            }
        }
    }
    ok &= rc == ZERO_OK;
    if (rc != ZERO_OK && st->why[0] == '\0')
        snprintf(st->why, sizeof(st->why), "%s", be->last_error(st->dev->self));
    buf_free(st, &send);
    buf_free(st, &recv);
    return ok;
}

/* One table row: every size; 1 if every rank got everything right. */
static int check_row(struct selftest *st, enum coll c, enum zero_dtype t, enum zero_coll_mode mode)
{
    st->why[0] = '\0';
    int ok = st->dev->be->set_coll_mode(st->dev->self, mode) == ZERO_OK;
    for (size_t k = 0; k < N_SIZES; k++)
        ok &= check_size(st, c, t, mode, sizes[k]);
    int all = all_ok(ok);
    if (!ok)
        fprintf(stderr, "rank %d: %s %s %s: %s\n", st->rank, coll_name[c], zero_dtype_name(t),
                mode == ZERO_COLL_EXACT ? "exact" : "native", st->why);
    return all;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mpirun -np N zero selftest [--backend NAME]\n\n"
            "Runs reduce_scatter, all_gather, all_reduce and broadcast in exact and native\n"
            "mode with fp32, fp16 and bf16 elements and odd sizes, blocking and non-blocking,\n"
            "on every rank of the MPI world, and checks the results: exact mode bit for bit\n"
            "against a serial evaluation of the canonical summation tree, native mode within\n"
            "rounding (N * 2u * sum |x|), copies byte for byte. Exit status 0 if all pass.\n\n"
            "  --backend NAME   backend to check (default: cpu)\n"
            "  --help           this text\n");
}

int zero_cmd_selftest(int argc, char **argv)
{
    const char *backend = "cpu";
    struct program_startup su;
    program_startup_init(&su, "zero selftest");
    const struct flag t[] = {FLAG_ANY("backend", "NAME", NULL, FLAG_STR, &backend)};
    const struct flag *f;
    char msg[256];
    int help = 0, bad = 0;
    for (int i = 1; i < argc && !help && !bad; i++) {
        int took = 0;
        if (flags_is_help(argv[i]))
            help = 1;
        else if ((took = flags_take(t, 1, argc, argv, &i, &f, msg, sizeof msg)) < 0)
            bad = program_fail(&su, 2, "%s\n", msg); /* then the usage */
        else if (took == 0)
            bad = program_fail(&su, 2, "unknown argument '%s'\n", argv[i]);
    }
    program_field(&su, help ? "--help" : "--backend", "%s", help ? "given" : backend);
    int owned, agreed = cli_startup(&su, &owned), me = zero_comm_rank(zero_comm_world());
    if (agreed || help) {
        if (me == 0 && (bad || !agreed))
            usage(bad ? stderr : stdout);
        if (owned)
            zero_job_finalize();
        return agreed;
    }
    struct selftest st = {0};
    struct zero_comm *world = zero_comm_world();
    st.rank = zero_comm_rank(world);
    st.size = zero_comm_size(world);
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    struct zero_error err = {0};
    if (st.size > 256 ||
        zero_device_open(&st.dev, backend, zero_comm_device_handle(world), &opt, &err) != ZERO_OK) {
        if (st.rank == 0)
            fprintf(stderr, "zero selftest: %s\n", st.size > 256 ? "at most 256 ranks" : err.msg);
        zero_job_finalize();
        return 1;
    }

    double t0 = seconds_now();
    int rows = 0, passed = 0;
    if (st.rank == 0)
        printf("zero selftest: backend %s, %d rank%s\n\n%-15s %-6s %-7s %-20s %s\n", backend,
               st.size, st.size == 1 ? "" : "s", "collective", "dtype", "mode", "elements",
               "result");
    for (int c = 0; c < N_COLL; c++) {
        for (size_t t = 0; t < N_DTYPES; t++) {
            for (int mode = ZERO_COLL_EXACT; mode <= ZERO_COLL_NATIVE; mode++) {
                int ok = check_row(&st, (enum coll)c, dtypes[t], (enum zero_coll_mode)mode);
                rows++;
                passed += ok;
                if (st.rank == 0)
                    printf("%-15s %-6s %-7s %-20s %s\n", coll_name[c], zero_dtype_name(dtypes[t]),
                           mode == ZERO_COLL_EXACT ? "exact" : "native", "1, 7, 1001, 65537",
                           ok ? "OK" : "FAIL");
            }
        }
    }
    if (st.rank == 0) {
        printf("\nelements: per rank for reduce_scatter and all_gather, in all for all_reduce "
               "and broadcast\n");
        if (passed == rows)
            printf("all %d checks passed (%.1f s)\n", rows, seconds_now() - t0);
        else
            printf("%d of %d checks FAILED (details on stderr)\n", rows - passed, rows);
    }
    zero_device_close(st.dev);
    zero_job_finalize();
    return passed == rows ? 0 : 1;
}

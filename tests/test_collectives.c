/* The cpu backend's collectives, at every world size the harness runs (np1..np4).
 *
 * Exact mode must equal a serial evaluation of the canonical tree (src/base/tree.h) bit for
 * bit; native mode must agree with exact within rounding; copies (all-gather, broadcast)
 * must be copies. Every check runs on both data paths: ranks reading each other's pieces
 * through a shared-memory window, and plain MPI messages (ZERO_CPU_NO_SHM=1).
 *
 * Inputs are pseudo-random values chosen per (rank, element), the same on every rank, so
 * each rank can compute every expected result itself. Buffers are plain host memory: the
 * cpu backend's memory is host memory. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"
#include "base/tree.h"
#include "zero/backend.h"
#include "zero/backend_groups.h"
#include "zero/backend_quant.h"
#include "zero/error.h"

enum { PATH_SHM, PATH_MPI, PATH_COUNT };
static const char *const path_name[PATH_COUNT] = {"shared memory", "MPI"};
static struct zero_device *devs[PATH_COUNT];
static int me, nranks;

static const enum zero_dtype float_types[] = {ZERO_F32, ZERO_F16, ZERO_BF16};
#define N_FLOAT_TYPES 3

/* ---- inputs and elements ---- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Rank r's contribution to element i. Every fourth element is a cancellation: about +2^13
 * on rank 0, -2^13 on the last rank, about 2^-12 in between: 25 bits apart, so even fp16
 * and bf16 inputs round differently in fp32 depending on the grouping. The rest have
 * random exponents in [-8, 8). Magnitudes stay within fp16's normal range. */
static float input_value(int r, size_t i)
{
    uint64_t h = mix(((uint64_t)(r + 1) << 40) ^ (uint64_t)i);
    float frac = (float)(h >> 40) / (float)(1 << 24); /* [0, 1) */
    if (i % 4 == 0 && nranks > 1) {
        if (r == 0)
            return ldexpf(1.0f + frac, 13);
        if (r == nranks - 1)
            return -ldexpf(1.0f + frac, 13);
        return ldexpf(1.0f + frac, -12);
    }
    float v = ldexpf(1.0f + frac, (int)((h >> 8) % 16) - 8);
    return h & 1 ? -v : v;
}

static void put(void *buf, enum zero_dtype t, size_t i, float v)
{
    if (t == ZERO_F32)
        ((float *)buf)[i] = v;
    else if (t == ZERO_F16)
        ((uint16_t *)buf)[i] = zero_f32_to_f16(v);
    else
        ((uint16_t *)buf)[i] = zero_f32_to_bf16(v);
}

static float get(const void *buf, enum zero_dtype t, size_t i)
{
    if (t == ZERO_F32)
        return ((const float *)buf)[i];
    if (t == ZERO_F16)
        return zero_f16_to_f32(((const uint16_t *)buf)[i]);
    return zero_bf16_to_f32(((const uint16_t *)buf)[i]);
}

/* buf (n, t) = rank r's inputs for elements [first, first + n) */
static void fill_inputs(void *buf, enum zero_dtype t, int r, size_t first, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put(buf, t, i, input_value(r, first + i));
}

/* The serial reference: element i summed over ranks along the tree, as the wire carries
 * it, rounded once to out_type; written into out[0]. */
static void serial_tree(void *out, enum zero_dtype out_type, enum zero_dtype wire_type, size_t i)
{
    float leaves[64], wire[1];
    for (int r = 0; r < nranks; r++) {
        put(wire, wire_type, 0, input_value(r, i));
        leaves[r] = get(wire, wire_type, 0);
    }
    put(out, out_type, 0, zero_tree_sum(leaves, (size_t)nranks));
}

/* Elements of buf (n, t) that differ in any bit from the serial tree of elements
 * [first, first + n). */
static long count_tree_mismatches(const void *buf, enum zero_dtype t, enum zero_dtype wire_type,
                                  size_t first, size_t n)
{
    size_t esize = zero_dtype_size(t);
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char want[4];
        serial_tree(want, t, wire_type, first + i);
        bad += memcmp(want, (const char *)buf + i * esize, esize) != 0;
    }
    return bad;
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes > 0 ? bytes : 1);
    ck_assert_ptr_nonnull(p);
    return p;
}

static void set_mode(struct zero_device *d, enum zero_coll_mode mode)
{
    ck_assert_int_eq(d->be->set_coll_mode(d->self, mode), ZERO_OK);
}

/* A call's status, agreed on by all ranks, with the first failing rank's message. */
#define ASSERT_ALL_OK(d, rc)                                                                       \
    ck_assert_msg(mpi_check_all((rc) == ZERO_OK), "rank %d: status %d: %s", me, (int)(rc),         \
                  (rc) == ZERO_OK ? "(ok here)" : (d)->be->last_error((d)->self))

/* A count of wrong elements, judged on the worst rank. */
#define ASSERT_NONE_WRONG(bad, fmt, ...)                                                           \
    do {                                                                                           \
        long worst_ = mpi_check_max(bad);                                                          \
        ck_assert_msg(worst_ == 0, fmt ": %ld wrong on the worst rank", __VA_ARGS__, worst_);      \
    } while (0)

static int wait_if(struct zero_device *d, struct zero_request *req)
{
    return req != NULL ? d->be->wait(d->self, req) : ZERO_OK;
}

/* ---- reduce-scatter ---- */

/* recv (count, out_type) after reduce-scatter of every rank's inputs; NULL on error */
static void *run_reduce_scatter(struct zero_device *d, enum zero_dtype wire, enum zero_dtype out,
                                size_t count, int in_place, int nonblocking)
{
    size_t wsize = zero_dtype_size(wire), osize = zero_dtype_size(out);
    char *send = xmalloc((size_t)nranks * count * wsize);
    fill_inputs(send, wire, me, 0, (size_t)nranks * count);
    char *mine = send + (size_t)me * count * wsize;
    char *recv = in_place ? mine : xmalloc(count * osize);
    struct zero_request *req = NULL;
    int rc =
        d->be->reduce_scatter(d->self, send, wire, recv, out, count, nonblocking ? &req : NULL);
    if (rc == ZERO_OK)
        rc = wait_if(d, req);
    ASSERT_ALL_OK(d, rc);
    char *result = xmalloc(count * osize);
    memcpy(result, recv, count * osize);
    if (!in_place)
        free(recv);
    free(send);
    return result;
}

static void check_exact_reduce_scatter(enum zero_dtype wire, enum zero_dtype out, int in_place)
{
    static const size_t counts[] = {1, 3, 1000, 5003}; /* 5003: several combine blocks */
    for (int p = 0; p < PATH_COUNT; p++) {
        set_mode(devs[p], ZERO_COLL_EXACT);
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            void *recv = run_reduce_scatter(devs[p], wire, out, counts[c], in_place, 0);
            long bad = count_tree_mismatches(recv, out, wire, (size_t)me * counts[c], counts[c]);
            free(recv);
            ASSERT_NONE_WRONG(bad, "%s path, wire %s, recv %s, count %zu%s vs the serial tree",
                              path_name[p], zero_dtype_name(wire), zero_dtype_name(out), counts[c],
                              in_place ? " (in place)" : "");
        }
    }
}

START_TEST(test_inputs_make_the_sum_order_matter)
{
    if (nranks < 3)
        return; /* with two leaves there is only one order */
    long differ = 0;
    for (size_t i = 0; i < 1000; i++) {
        float leaves[64], reversed = 0.0f;
        for (int r = 0; r < nranks; r++)
            leaves[r] = input_value(r, i);
        for (int r = nranks - 1; r >= 0; r--)
            reversed = leaves[r] + reversed;
        differ += zero_tree_sum(leaves, (size_t)nranks) != reversed;
    }
    ck_assert_msg(differ > 0, "inputs too tame: the tree equals the reversed sum everywhere");
}
END_TEST

START_TEST(test_exact_reduce_scatter_matches_serial_tree_fp32)
{
    check_exact_reduce_scatter(ZERO_F32, ZERO_F32, 0);
    check_exact_reduce_scatter(ZERO_F32, ZERO_BF16, 0);
}
END_TEST

START_TEST(test_exact_reduce_scatter_matches_serial_tree_fp16)
{
    check_exact_reduce_scatter(ZERO_F16, ZERO_F16, 0);
    check_exact_reduce_scatter(ZERO_F16, ZERO_F32, 0);
}
END_TEST

START_TEST(test_exact_reduce_scatter_matches_serial_tree_bf16)
{
    check_exact_reduce_scatter(ZERO_BF16, ZERO_BF16, 0);
    check_exact_reduce_scatter(ZERO_BF16, ZERO_F32, 0);
}
END_TEST

START_TEST(test_exact_reduce_scatter_in_place_matches_serial_tree)
{
    for (int t = 0; t < N_FLOAT_TYPES; t++)
        check_exact_reduce_scatter(float_types[t], float_types[t], 1);
}
END_TEST

/* ---- all-reduce ---- */

static void *run_all_reduce(struct zero_device *d, enum zero_dtype t, size_t count, int in_place,
                            int nonblocking)
{
    size_t esize = zero_dtype_size(t);
    char *send = xmalloc(count * esize);
    fill_inputs(send, t, me, 0, count);
    char *recv = in_place ? send : xmalloc(count * esize);
    struct zero_request *req = NULL;
    int rc = d->be->all_reduce(d->self, send, recv, t, count, nonblocking ? &req : NULL);
    if (rc == ZERO_OK)
        rc = wait_if(d, req);
    ASSERT_ALL_OK(d, rc);
    if (!in_place)
        free(send);
    return recv;
}

static void *run_all_gather(struct zero_device *d, const void *send, enum zero_dtype t,
                            size_t count, int in_place, int nonblocking)
{
    size_t esize = zero_dtype_size(t);
    char *recv = xmalloc((size_t)nranks * count * esize);
    memset(recv, 0xA5, (size_t)nranks * count * esize);
    char *mine = recv + (size_t)me * count * esize;
    if (in_place)
        memcpy(mine, send, count * esize);
    struct zero_request *req = NULL;
    int rc = d->be->all_gather(d->self, in_place ? mine : send, recv, t, count,
                               nonblocking ? &req : NULL);
    if (rc == ZERO_OK)
        rc = wait_if(d, req);
    ASSERT_ALL_OK(d, rc);
    return recv;
}

START_TEST(test_exact_all_reduce_equals_reduce_scatter_then_all_gather)
{
    size_t shard = 777, count = shard * (size_t)nranks;
    for (int p = 0; p < PATH_COUNT; p++) {
        set_mode(devs[p], ZERO_COLL_EXACT);
        for (int t = 0; t < N_FLOAT_TYPES; t++) {
            enum zero_dtype type = float_types[t];
            void *all = run_all_reduce(devs[p], type, count, 0, 0);
            void *piece = run_reduce_scatter(devs[p], type, type, shard, 0, 0);
            void *gathered = run_all_gather(devs[p], piece, type, shard, 0, 0);
            int same = memcmp(all, gathered, count * zero_dtype_size(type)) == 0;
            free(all);
            free(piece);
            free(gathered);
            ck_assert_msg(mpi_check_all(same),
                          "%s path, %s: all-reduce differs from reduce-scatter + all-gather",
                          path_name[p], zero_dtype_name(type));
        }
    }
}
END_TEST

START_TEST(test_exact_all_reduce_matches_serial_tree_for_uneven_counts)
{
    size_t n = (size_t)nranks;
    const size_t counts[] = {0, 1, n > 1 ? n - 1 : 2, 5 * n + 1, 3000 * n + n / 2 + 1};
    for (int p = 0; p < PATH_COUNT; p++) {
        set_mode(devs[p], ZERO_COLL_EXACT);
        for (int t = 0; t < N_FLOAT_TYPES; t++) {
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
                for (int in_place = 0; in_place < 2; in_place++) {
                    enum zero_dtype type = float_types[t];
                    void *recv = run_all_reduce(devs[p], type, counts[c], in_place, 0);
                    long bad = count_tree_mismatches(recv, type, type, 0, counts[c]);
                    free(recv);
                    ASSERT_NONE_WRONG(bad, "%s path, %s, count %zu%s vs the serial tree",
                                      path_name[p], zero_dtype_name(type), counts[c],
                                      in_place ? " (in place)" : "");
                }
            }
        }
    }
}
END_TEST

/* ---- pieces through the window (cpu_coll_gather.c) ---- */

/* Piece sizes in bytes around the shared-memory all-gather's threshold (32 KiB: smaller
 * pieces take MPI's all-gather), so both sides of it run on the shared-memory path. */
static const size_t window_piece_bytes[] = {32 * 1024 - 8, 32 * 1024, 96 * 1024 + 8};
#define N_WINDOW_PIECES 3

/* Large all-gathers, blocking and not, in place and not: byte copies on both paths,
 * every element dtype the engine gathers. An all-gather uses only a window a reduction
 * grew, so reduce-scatters first size both windows (the caller's and the communication
 * thread's) for the largest piece. */
START_TEST(test_large_all_gather_concatenates_on_both_paths)
{
    const enum zero_dtype types[] = {ZERO_F32, ZERO_F16, ZERO_BF16, ZERO_I64};
    for (int p = 0; p < PATH_COUNT; p++) {
        set_mode(devs[p], ZERO_COLL_EXACT);
        for (int nonblocking = 0; nonblocking < 2; nonblocking++)
            free(run_reduce_scatter(devs[p], ZERO_F32, ZERO_F32,
                                    window_piece_bytes[N_WINDOW_PIECES - 1] / 4 + 1, 0,
                                    nonblocking));
        for (int t = 0; t < 4; t++) {
            for (int k = 0; k < N_WINDOW_PIECES * 4; k++) {
                int in_place = k % 2, nonblocking = k / 2 % 2;
                size_t esize = zero_dtype_size(types[t]);
                size_t count = window_piece_bytes[k / 4] / esize;
                unsigned char *send = xmalloc(count * esize);
                for (size_t i = 0; i < count * esize; i++)
                    send[i] = (unsigned char)mix((uint64_t)me * 1000003 + i);
                unsigned char *recv =
                    run_all_gather(devs[p], send, types[t], count, in_place, nonblocking);
                long bad = 0;
                for (int r = 0; r < nranks; r++)
                    for (size_t i = 0; i < count * esize; i++)
                        bad += recv[(size_t)r * count * esize + i] !=
                               (unsigned char)mix((uint64_t)r * 1000003 + i);
                free(send);
                free(recv);
                ASSERT_NONE_WRONG(bad, "%s path, %s, %zu elements%s%s", path_name[p],
                                  zero_dtype_name(types[t]), count, in_place ? ", in place" : "",
                                  nonblocking ? ", non-blocking" : "");
            }
        }
    }
}
END_TEST

/* Large exact all-reduces (uneven pieces: count = N * piece + 1) equal the serial tree on
 * both paths, and the shared-memory path's bits equal the MPI path's (its all-gather is
 * MPI's), blocking and not, every float dtype. */
START_TEST(test_large_exact_all_reduce_equals_the_tree_and_the_mpi_path)
{
    for (int t = 0; t < N_FLOAT_TYPES; t++) {
        enum zero_dtype type = float_types[t];
        size_t esize = zero_dtype_size(type);
        for (int k = 0; k < N_WINDOW_PIECES * 2; k++) {
            int nonblocking = k % 2;
            size_t count = (size_t)nranks * (window_piece_bytes[k / 2] / esize) + 1;
            void *got[PATH_COUNT];
            for (int p = 0; p < PATH_COUNT; p++) {
                set_mode(devs[p], ZERO_COLL_EXACT);
                got[p] = run_all_reduce(devs[p], type, count, k / 2 % 2, nonblocking);
            }
            long bad = count_tree_mismatches(got[PATH_SHM], type, type, 0, count);
            bad += memcmp(got[PATH_SHM], got[PATH_MPI], count * esize) != 0;
            free(got[PATH_SHM]);
            free(got[PATH_MPI]);
            ASSERT_NONE_WRONG(bad, "%s, count %zu%s: shared memory vs the tree and MPI",
                              zero_dtype_name(type), count, nonblocking ? ", non-blocking" : "");
        }
    }
}
END_TEST

/* ---- copies ---- */

START_TEST(test_all_gather_concatenates_in_place_and_not)
{
    const enum zero_dtype types[] = {ZERO_F32, ZERO_BF16, ZERO_I64};
    for (int p = 0; p < PATH_COUNT; p++) {
        for (int mode = 0; mode < 2; mode++) {
            set_mode(devs[p], (enum zero_coll_mode)mode);
            for (int t = 0; t < 3; t++) {
                for (int in_place = 0; in_place < 2; in_place++) {
                    size_t count = 301, esize = zero_dtype_size(types[t]);
                    unsigned char *send = xmalloc(count * esize);
                    for (size_t i = 0; i < count * esize; i++)
                        send[i] = (unsigned char)mix((uint64_t)me * 100000 + i);
                    unsigned char *recv =
                        run_all_gather(devs[p], send, types[t], count, in_place, 0);
                    long bad = 0;
                    for (int r = 0; r < nranks; r++)
                        for (size_t i = 0; i < count * esize; i++)
                            bad += recv[(size_t)r * count * esize + i] !=
                                   (unsigned char)mix((uint64_t)r * 100000 + i);
                    free(send);
                    free(recv);
                    ASSERT_NONE_WRONG(bad, "%s path, mode %d, %s%s, bytes", path_name[p], mode,
                                      zero_dtype_name(types[t]), in_place ? " (in place)" : "");
                }
            }
        }
    }
}
END_TEST

/* Groups (backend_groups.h): interleaved colors (rank % 2) and blocks (rank / 2) each
 * gather exactly their members' pieces in world order, in place and not, counted in
 * comm_stats.group and not in kind; on one machine the node split is one group of all. */
START_TEST(test_group_all_gather_concatenates_the_members_in_world_order)
{
    struct zero_device *d = devs[PATH_SHM];
    const struct zero_groups_ops *g = d->be->groups;
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(g->node_group_size(d->self), nranks);
    for (int split = 0; split < 2; split++) {
        int color = split ? me % 2 : me / 2;
        struct zero_group *grp = NULL;
        ck_assert_int_eq(g->group_open(d->self, color, &grp), ZERO_OK);
        int members[8], n = 0;
        for (int r = 0; r < nranks; r++)
            if ((split ? r % 2 : r / 2) == color)
                members[n++] = r;
        ck_assert_int_eq(g->group_size(d->self, grp), n);
        int mine = 0;
        while (members[mine] != me)
            mine++;
        ck_assert_int_eq(g->group_rank(d->self, grp), mine);
        for (int in_place = 0; in_place < 2; in_place++) {
            size_t count = 257;
            float *recv = xmalloc((size_t)n * count * sizeof(float));
            float *send = in_place ? recv + (size_t)mine * count : xmalloc(count * sizeof(float));
            for (size_t i = 0; i < count; i++)
                send[i] = input_value(me, i);
            struct zero_comm_stats before = d->comm_stats;
            struct zero_request *req = NULL;
            ck_assert_int_eq(g->group_all_gather(d->self, grp, send, recv, ZERO_F32, count, &req),
                             ZERO_OK);
            ck_assert_int_eq(d->be->wait(d->self, req), ZERO_OK);
            long bad = 0;
            for (int k = 0; k < n; k++)
                for (size_t i = 0; i < count; i++)
                    bad += recv[(size_t)k * count + i] != input_value(members[k], i);
            ASSERT_NONE_WRONG(bad, "split %d%s, elements", split, in_place ? " (in place)" : "");
            const struct zero_coll_counter *c = &d->comm_stats.group[ZERO_COLL_ALL_GATHER];
            ck_assert_int_eq(c->calls - before.group[ZERO_COLL_ALL_GATHER].calls, 1);
            ck_assert_int_eq(c->sent_bytes - before.group[ZERO_COLL_ALL_GATHER].sent_bytes,
                             (int64_t)((size_t)(n - 1) * count * sizeof(float)));
            ck_assert_int_eq(d->comm_stats.kind[ZERO_COLL_ALL_GATHER].calls,
                             before.kind[ZERO_COLL_ALL_GATHER].calls);
            if (!in_place)
                free(send);
            free(recv);
        }
        g->group_close(d->self, grp);
    }
    struct zero_group *grp = NULL;
    ck_assert_int_eq(g->group_open(d->self, -1, &grp), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(d->be->last_error(d->self), "color -1"));
}
END_TEST

/* the unit roundoff of t */
static double unit_roundoff(enum zero_dtype t)
{
    return t == ZERO_F32 ? ldexp(1.0, -24) : t == ZERO_F16 ? ldexp(1.0, -11) : ldexp(1.0, -8);
}

/* The group's members' tree of element i (leaves as the wire carries them), rounded once
 * to out_type into out[0]; *magnitude = the sum of the members' |inputs|. */
static void group_tree(void *out, enum zero_dtype out_type, enum zero_dtype wire_type,
                       const int *members, int n, size_t i, double *magnitude)
{
    float leaves[64], wire[1];
    *magnitude = 0.0;
    for (int k = 0; k < n; k++) {
        put(wire, wire_type, 0, input_value(members[k], i));
        leaves[k] = get(wire, wire_type, 0);
        *magnitude += fabs(input_value(members[k], i));
    }
    put(out, out_type, 0, zero_tree_sum(leaves, (size_t)n));
}

/* Elements of buf (n, t), [first, first + n) of the members' sum, that are not the group's
 * tree bit for bit (exact) or not within native's tolerance of it (count_outside_tolerance's
 * rule over the G members). */
static long count_group_misses(const void *buf, enum zero_dtype t, enum zero_dtype wire,
                               const int *members, int g, size_t first, size_t n, int exact)
{
    size_t esize = zero_dtype_size(t);
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char want[4];
        double magnitude;
        group_tree(want, t, wire, members, g, first + i, &magnitude);
        if (exact) {
            bad += memcmp(want, (const char *)buf + i * esize, esize) != 0;
            continue;
        }
        double tol = g * (unit_roundoff(wire) + unit_roundoff(t)) * magnitude + ldexp(1.0, -24);
        bad += !(fabs((double)get(buf, t, i) - (double)get(want, t, 0)) <= tol);
    }
    return bad;
}

/* Groups' reductions (backend_groups.h v2): blocks (rank / 2) and interleaved colors
 * (rank % 2), on both data paths. Exact mode: every element is the members' canonical
 * tree bit for bit (reduce-scatter in place and not, fp32 into fp32 and bf16 into fp32;
 * all-reduce of an uneven count in place); native mode: within rounding of it. Counted in
 * comm_stats.group with the world's volumes, never in kind. */
START_TEST(test_group_reductions_sum_the_members_along_their_tree)
{
    for (int p = 0; p < PATH_COUNT; p++) {
        struct zero_device *d = devs[p];
        const struct zero_groups_ops *g = d->be->groups;
        for (int mode = 0; mode < 2; mode++) {
            set_mode(d, (enum zero_coll_mode)mode);
            for (int split = 0; split < 2; split++) {
                int color = split ? me % 2 : me / 2, members[8], n = 0, mine = 0;
                struct zero_group *grp = NULL;
                ck_assert_int_eq(g->group_open(d->self, color, &grp), ZERO_OK);
                for (int r = 0; r < nranks; r++)
                    if ((split ? r % 2 : r / 2) == color)
                        members[n++] = r;
                while (members[mine] != me)
                    mine++;
                for (int v = 0; v < 3; v++) { /* fp32, in place; fp32; bf16 into fp32 */
                    enum zero_dtype wire = v == 2 ? ZERO_BF16 : ZERO_F32;
                    size_t count = 203, wsize = zero_dtype_size(wire);
                    char *send = xmalloc((size_t)n * count * wsize);
                    fill_inputs(send, wire, me, 0, (size_t)n * count);
                    void *recv = v == 0 ? send + (size_t)mine * count * wsize
                                        : xmalloc(count * sizeof(float));
                    struct zero_comm_stats before = d->comm_stats;
                    struct zero_request *req = NULL;
                    ck_assert_int_eq(g->group_reduce_scatter(d->self, grp, send, wire, recv,
                                                             ZERO_F32, count, &req),
                                     ZERO_OK);
                    ck_assert_int_eq(d->be->wait(d->self, req), ZERO_OK);
                    if (v == 0) { /* in place: the wire's own dtype */
                        ASSERT_NONE_WRONG(count_group_misses(recv, ZERO_F32, wire, members, n,
                                                             (size_t)mine * count, count, !mode),
                                          "%s path, mode %d, split %d, in place", path_name[p],
                                          mode, split);
                    } else {
                        ASSERT_NONE_WRONG(count_group_misses(recv, ZERO_F32, wire, members, n,
                                                             (size_t)mine * count, count, !mode),
                                          "%s path, mode %d, split %d, %s", path_name[p], mode,
                                          split, zero_dtype_name(wire));
                        free(recv);
                    }
                    const struct zero_coll_counter *c =
                        &d->comm_stats.group[ZERO_COLL_REDUCE_SCATTER];
                    ck_assert_int_eq(c->sent_bytes -
                                         before.group[ZERO_COLL_REDUCE_SCATTER].sent_bytes,
                                     (int64_t)((size_t)(n - 1) * count * wsize));
                    ck_assert_int_eq(d->comm_stats.kind[ZERO_COLL_REDUCE_SCATTER].calls,
                                     before.kind[ZERO_COLL_REDUCE_SCATTER].calls);
                    free(send);
                }
                size_t count = 301; /* uneven over the members */
                float *buf = xmalloc(count * sizeof(float));
                fill_inputs(buf, ZERO_F32, me, 0, count);
                struct zero_comm_stats before = d->comm_stats;
                ck_assert_int_eq(g->group_all_reduce(d->self, grp, buf, buf, ZERO_F32, count, NULL),
                                 ZERO_OK);
                ASSERT_NONE_WRONG(
                    count_group_misses(buf, ZERO_F32, ZERO_F32, members, n, 0, count, !mode),
                    "%s path, mode %d, split %d, all-reduce", path_name[p], mode, split);
                ck_assert_int_eq(d->comm_stats.group[ZERO_COLL_ALL_REDUCE].calls,
                                 before.group[ZERO_COLL_ALL_REDUCE].calls + 1);
                ck_assert_int_eq(d->comm_stats.kind[ZERO_COLL_ALL_REDUCE].calls,
                                 before.kind[ZERO_COLL_ALL_REDUCE].calls);
                free(buf);
                g->group_close(d->self, grp);
            }
        }
        set_mode(d, ZERO_COLL_EXACT);
    }
}
END_TEST

/* The quant group's all_to_all (qgZ's): rank r sends r + j + 1 bytes of value
 * (r, j) to member j, and none to the members j = r + 1 (mod n) where n > 2, over the
 * world and over a group of the interleaved ranks (rank % 2); every rank receives its
 * own part copied and each peer's in member order, counted in kind[] for the world and
 * group[] for the group, sent = the bytes to the others. */
static void all_to_all_once(struct zero_device *d, struct zero_group *grp, int n, int mine,
                            const int *members)
{
    size_t *sb = xmalloc(2 * (size_t)n * sizeof *sb), *rb = sb + n, ts = 0, tr = 0, sent = 0;
    for (int j = 0; j < n; j++) {
        int skip_to = n > 2 && j == (mine + 1) % n, skip_from = n > 2 && mine == (j + 1) % n;
        sb[j] = skip_to ? 0 : (size_t)(members[mine] + members[j] + 1);
        rb[j] = skip_from ? 0 : (size_t)(members[j] + members[mine] + 1);
        ts += sb[j];
        tr += rb[j];
        sent += j != mine ? sb[j] : 0;
    }
    unsigned char *send = xmalloc(ts + 1), *recv = xmalloc(tr + 1);
    for (int j = 0, at = 0; j < n; at += (int)sb[j], j++)
        memset(send + at, (members[mine] * 16 + members[j]) & 0xff, sb[j]);
    struct zero_comm_stats before = d->comm_stats;
    ck_assert_int_eq(d->be->quant->all_to_all(d->self, grp, send, sb, recv, rb), ZERO_OK);
    long bad = 0;
    for (int j = 0, at = 0; j < n; at += (int)rb[j], j++)
        for (size_t i = 0; i < rb[j]; i++)
            bad += recv[at + i] != ((members[j] * 16 + members[mine]) & 0xff);
    ASSERT_NONE_WRONG(bad, "all_to_all over %s, bytes", grp ? "a group" : "the world");
    const struct zero_coll_counter *c = grp ? &d->comm_stats.group[ZERO_COLL_ALL_TO_ALL]
                                            : &d->comm_stats.kind[ZERO_COLL_ALL_TO_ALL];
    const struct zero_coll_counter *b =
        grp ? &before.group[ZERO_COLL_ALL_TO_ALL] : &before.kind[ZERO_COLL_ALL_TO_ALL];
    ck_assert_int_eq(c->calls - b->calls, 1);
    ck_assert_int_eq(c->sent_bytes - b->sent_bytes, (int64_t)sent);
    free(send);
    free(recv);
    free(sb);
}

START_TEST(test_all_to_all_delivers_each_members_bytes_in_member_order)
{
    struct zero_device *d = devs[PATH_SHM];
    ck_assert_ptr_nonnull(d->be->quant);
    int world[8];
    for (int r = 0; r < nranks; r++)
        world[r] = r;
    all_to_all_once(d, NULL, nranks, me, world);
    struct zero_group *grp = NULL;
    ck_assert_int_eq(d->be->groups->group_open(d->self, me % 2, &grp), ZERO_OK);
    int members[8], n = 0, mine = 0;
    for (int r = 0; r < nranks; r++)
        if (r % 2 == me % 2) {
            mine = r == me ? n : mine;
            members[n++] = r;
        }
    all_to_all_once(d, grp, n, mine, members);
    d->be->groups->group_close(d->self, grp);
}
END_TEST

START_TEST(test_broadcast_copies_from_every_root)
{
    for (int p = 0; p < PATH_COUNT; p++) {
        for (int mode = 0; mode < 2; mode++) {
            set_mode(devs[p], (enum zero_coll_mode)mode);
            for (int root = 0; root < nranks; root++) {
                size_t count = 513;
                float *buf = xmalloc(count * sizeof(float));
                for (size_t i = 0; i < count; i++)
                    buf[i] = me == root ? input_value(root, i) : -1.0f;
                struct zero_request *req = NULL;
                int rc = devs[p]->be->broadcast(devs[p]->self, buf, ZERO_F32, count, root,
                                                mode == ZERO_COLL_NATIVE ? &req : NULL);
                if (rc == ZERO_OK)
                    rc = wait_if(devs[p], req);
                ASSERT_ALL_OK(devs[p], rc);
                long bad = 0;
                for (size_t i = 0; i < count; i++)
                    bad += buf[i] != input_value(root, i);
                free(buf);
                ASSERT_NONE_WRONG(bad, "%s path, mode %d, root %d", path_name[p], mode, root);
            }
        }
    }
}
END_TEST

/* ---- native mode ---- */

/* Native may round every partial sum to the wire type, and then to out_type: the stated
 * tolerance is |native - exact| <= N (u_wire + u_out) sum_r |g_r| + 2^-24 (the absolute
 * term covers fp16 subnormals). */
static long count_outside_tolerance(const void *native, const void *exact, enum zero_dtype out,
                                    enum zero_dtype wire, size_t first, size_t n)
{
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        double magnitude = 0.0;
        for (int r = 0; r < nranks; r++)
            magnitude += fabs(input_value(r, first + i));
        double tol =
            nranks * (unit_roundoff(wire) + unit_roundoff(out)) * magnitude + ldexp(1.0, -24);
        bad += !(fabs((double)get(native, out, i) - (double)get(exact, out, i)) <= tol);
    }
    return bad;
}

START_TEST(test_native_agrees_with_exact_within_tolerance)
{
    size_t count = 2001;
    for (int p = 0; p < PATH_COUNT; p++) {
        for (int t = 0; t < N_FLOAT_TYPES; t++) {
            enum zero_dtype type = float_types[t];
            set_mode(devs[p], ZERO_COLL_EXACT);
            void *rs_exact = run_reduce_scatter(devs[p], type, ZERO_F32, count, 0, 0);
            void *ar_exact = run_all_reduce(devs[p], type, count, 0, 0);
            set_mode(devs[p], ZERO_COLL_NATIVE);
            void *rs_native = run_reduce_scatter(devs[p], type, ZERO_F32, count, 0, 0);
            void *ar_native = run_all_reduce(devs[p], type, count, 0, 0);
            void *rs_in_place = run_reduce_scatter(devs[p], type, type, count, 1, 0);
            long bad_rs = count_outside_tolerance(rs_native, rs_exact, ZERO_F32, type,
                                                  (size_t)me * count, count);
            long bad_ar = count_outside_tolerance(ar_native, ar_exact, type, type, 0, count);
            long bad_ip = 0;
            for (size_t i = 0; i < count; i++) { /* same numbers, rounded to the wire type */
                float want[1];
                put(want, type, 0, get(rs_native, ZERO_F32, i));
                bad_ip += get(rs_in_place, type, i) != get(want, type, 0);
            }
            free(rs_exact);
            free(ar_exact);
            free(rs_native);
            free(ar_native);
            free(rs_in_place);
            ck_assert_msg(mpi_check_max(bad_rs + bad_ar + bad_ip) == 0,
                          "%s path, %s: native outside tolerance on rank %d: reduce-scatter "
                          "%ld, all-reduce %ld, in-place reduce-scatter %ld",
                          path_name[p], zero_dtype_name(type), me, bad_rs, bad_ar, bad_ip);
        }
    }
}
END_TEST

/* ---- non-blocking ---- */

/* Exact mode: identical bits. Native mode: the copies are identical; MPI may pick a
 * different summation order for MPI_Ireduce_scatter_block than for the blocking call, so
 * reductions only agree within tolerance. */
START_TEST(test_nonblocking_gives_the_same_bits_as_blocking)
{
    size_t count = 1234;
    for (int p = 0; p < PATH_COUNT; p++) {
        for (int mode = 0; mode < 2; mode++) {
            set_mode(devs[p], (enum zero_coll_mode)mode);
            for (int t = 0; t < N_FLOAT_TYPES; t++) {
                enum zero_dtype type = float_types[t];
                size_t esize = zero_dtype_size(type);
                void *rs_b = run_reduce_scatter(devs[p], type, type, count, 0, 0);
                void *rs_n = run_reduce_scatter(devs[p], type, type, count, 0, 1);
                void *ar_b = run_all_reduce(devs[p], type, count, 1, 0);
                void *ar_n = run_all_reduce(devs[p], type, count, 1, 1);
                void *ag_b = run_all_gather(devs[p], rs_b, type, count, 1, 0);
                void *ag_n = run_all_gather(devs[p], rs_b, type, count, 1, 1);
                long bad = memcmp(ag_b, ag_n, (size_t)nranks * count * esize) != 0;
                if (mode == ZERO_COLL_EXACT) {
                    bad += memcmp(rs_b, rs_n, count * esize) != 0;
                    bad += memcmp(ar_b, ar_n, count * esize) != 0;
                } else {
                    bad +=
                        count_outside_tolerance(rs_n, rs_b, type, type, (size_t)me * count, count);
                    bad += count_outside_tolerance(ar_n, ar_b, type, type, 0, count);
                }
                free(rs_b);
                free(rs_n);
                free(ar_b);
                free(ar_n);
                free(ag_b);
                free(ag_n);
                ASSERT_NONE_WRONG(bad, "%s path, mode %d, %s, non-blocking vs blocking",
                                  path_name[p], mode, zero_dtype_name(type));
            }
        }
    }
}
END_TEST

START_TEST(test_several_requests_in_flight_complete_in_any_order)
{
    size_t count = 999;
    for (int p = 0; p < PATH_COUNT; p++) {
        for (int mode = 0; mode < 2; mode++) {
            struct zero_device *d = devs[p];
            set_mode(d, (enum zero_coll_mode)mode);
            float *send = xmalloc((size_t)nranks * count * sizeof(float));
            float *rs = xmalloc(count * sizeof(float));
            float *ar = xmalloc(count * sizeof(float));
            float *bc = xmalloc(count * sizeof(float));
            fill_inputs(send, ZERO_F32, me, 0, (size_t)nranks * count);
            fill_inputs(ar, ZERO_F32, me, 0, count);
            for (size_t i = 0; i < count; i++)
                bc[i] = me == 0 ? (float)i : 0.0f;
            struct zero_request *r1 = NULL, *r2 = NULL, *r3 = NULL;
            int rc = d->be->reduce_scatter(d->self, send, ZERO_F32, rs, ZERO_F32, count, &r1);
            if (rc == ZERO_OK)
                rc = d->be->all_reduce(d->self, ar, ar, ZERO_F32, count, &r2);
            if (rc == ZERO_OK)
                rc = d->be->broadcast(d->self, bc, ZERO_F32, count, 0, &r3);
            int rc3 = wait_if(d, r3), rc1 = wait_if(d, r1), rc2 = wait_if(d, r2);
            if (rc == ZERO_OK)
                rc = rc3 ? rc3 : rc1 ? rc1 : rc2;
            ASSERT_ALL_OK(d, rc);
            long bad = 0;
            for (size_t i = 0; i < count; i++)
                bad += bc[i] != (float)i;
            if (mode == ZERO_COLL_EXACT) {
                bad += count_tree_mismatches(rs, ZERO_F32, ZERO_F32, (size_t)me * count, count);
                bad += count_tree_mismatches(ar, ZERO_F32, ZERO_F32, 0, count);
            }
            free(send);
            free(rs);
            free(ar);
            free(bc);
            ASSERT_NONE_WRONG(bad, "%s path, mode %d", path_name[p], mode);
        }
    }
}
END_TEST

/* The communication thread (MPI_THREAD_MULTIPLE) runs an exact reduce-scatter while the
 * caller's thread does a blocking all-reduce on its own communicator: both keep the
 * tree's bits, and the buffers the thread grows for it reach the device's ledger. */
START_TEST(test_blocking_call_while_a_request_is_in_flight_keeps_bits_and_ledger)
{
    size_t count = 90001; /* larger than before: the thread's window or staging grows */
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    for (int p = 0; p < PATH_COUNT; p++) {
        struct zero_device *d = devs[p];
        set_mode(d, ZERO_COLL_EXACT);
        float *send = xmalloc((size_t)nranks * count * sizeof(float));
        float *rs = xmalloc(count * sizeof(float));
        float *ar = xmalloc(1000 * sizeof(float));
        fill_inputs(send, ZERO_F32, me, 0, (size_t)nranks * count);
        fill_inputs(ar, ZERO_F32, me, 0, 1000);
        int64_t comm0 = d->ledger.current[ZERO_TAG_COMM];
        struct zero_request *req = NULL;
        int rc = d->be->reduce_scatter(d->self, send, ZERO_F32, rs, ZERO_F32, count, &req);
        int rc2 = d->be->all_reduce(d->self, ar, ar, ZERO_F32, 1000, NULL);
        int rc1 = wait_if(d, req);
        rc = rc ? rc : rc1 ? rc1 : rc2;
        ASSERT_ALL_OK(d, rc);
        int64_t now = d->ledger.current[ZERO_TAG_COMM], grown = now - comm0;
        long bad = count_tree_mismatches(rs, ZERO_F32, ZERO_F32, (size_t)me * count, count) +
                   count_tree_mismatches(ar, ZERO_F32, ZERO_F32, 0, 1000);
        free(send);
        free(rs);
        free(ar);
        ASSERT_NONE_WRONG(bad, "%s path, one in flight and one blocking", path_name[p]);
        if (nranks > 1 && level == MPI_THREAD_MULTIPLE)
            /* earlier tests' non-blocking calls may have grown the thread's buffers part
             * of the way: they grow now, and the ledger holds at least their new size */
            ck_assert_msg(
                mpi_check_all(grown > 0 && now >= (int64_t)((size_t)(nranks - 1) * count * 4)),
                "%s path: the ledger grew by %lld bytes to %lld, not the thread's "
                "buffers",
                path_name[p], (long long)grown, (long long)now);
    }
}
END_TEST

/* ---- comm stats and ledger ---- */

static struct zero_coll_counter delta(struct zero_device *d, const struct zero_comm_stats *before,
                                      enum zero_coll_kind k)
{
    struct zero_comm_stats diff;
    zero_comm_stats_diff(&diff, &d->comm_stats, before);
    return diff.kind[k];
}

START_TEST(test_comm_stats_count_payload_and_sent_bytes)
{
    int64_t n = nranks;
    for (int p = 0; p < PATH_COUNT; p++) {
        for (int mode = 0; mode < 2; mode++) {
            struct zero_device *d = devs[p];
            set_mode(d, (enum zero_coll_mode)mode);
            int ok = 1;
            struct zero_comm_stats before = d->comm_stats;

            /* reduce-scatter, 2-byte wire, non-blocking: counted at wait */
            int64_t count = 1001;
            free(run_reduce_scatter(d, ZERO_BF16, ZERO_F32, (size_t)count, 0, 1));
            struct zero_coll_counter c = delta(d, &before, ZERO_COLL_REDUCE_SCATTER);
            ok &= c.calls == 1 && c.payload_bytes == n * count * 2 &&
                  c.sent_bytes == (n - 1) * count * 2 && c.seconds >= 0.0;

            before = d->comm_stats;
            float *piece = xmalloc((size_t)count * sizeof(float));
            fill_inputs(piece, ZERO_F32, me, 0, (size_t)count);
            free(run_all_gather(d, piece, ZERO_F32, (size_t)count, 0, 0));
            free(piece);
            c = delta(d, &before, ZERO_COLL_ALL_GATHER);
            ok &= c.calls == 1 && c.payload_bytes == n * count * 4 &&
                  c.sent_bytes == (n - 1) * count * 4;

            /* all-reduce: our piece is count / N, one more on the first count % N ranks */
            before = d->comm_stats;
            free(run_all_reduce(d, ZERO_F16, (size_t)count, 0, 0));
            int64_t mine = count / n + (me < count % n);
            c = delta(d, &before, ZERO_COLL_ALL_REDUCE);
            ok &= c.calls == 1 && c.payload_bytes == count * 2 &&
                  c.sent_bytes == ((count - mine) + (n - 1) * mine) * 2;
            ok &= delta(d, &before, ZERO_COLL_REDUCE_SCATTER).calls == 0; /* not double counted */

            before = d->comm_stats;
            float *buf = xmalloc((size_t)count * sizeof(float));
            fill_inputs(buf, ZERO_F32, 0, 0, (size_t)count);
            int rc = d->be->broadcast(d->self, buf, ZERO_F32, (size_t)count, 0, NULL);
            free(buf);
            ASSERT_ALL_OK(d, rc);
            c = delta(d, &before, ZERO_COLL_BROADCAST);
            ok &= c.calls == 1 && c.payload_bytes == count * 4 &&
                  c.sent_bytes == (me == 0 && n > 1 ? count * 4 : 0);

            before = d->comm_stats;
            int64_t word = me, words[64];
            rc = d->be->host_all_gather(d->self, &word, words, sizeof(word));
            ASSERT_ALL_OK(d, rc);
            c = delta(d, &before, ZERO_COLL_CONTROL);
            ok &= c.calls == 1 && c.payload_bytes == n * 8 && c.sent_bytes == (n - 1) * 8;
            for (int r = 0; r < nranks; r++)
                ok &= words[r] == r;

            ck_assert_msg(mpi_check_all(ok), "%s path, mode %d: comm stats wrong on rank %d",
                          path_name[p], mode, me);
        }
    }
}
END_TEST

START_TEST(test_window_and_staging_are_in_the_ledger)
{
    size_t count = 40000;
    for (int p = 0; p < PATH_COUNT; p++) {
        set_mode(devs[p], ZERO_COLL_EXACT);
        free(run_reduce_scatter(devs[p], ZERO_F32, ZERO_F32, count, 0, 0));
        int64_t comm = devs[p]->ledger.current[ZERO_TAG_COMM];
        /* peers' pieces travel through (N - 1) * count floats of window or staging */
        int64_t least = (int64_t)((size_t)(nranks - 1) * count * sizeof(float));
        ck_assert_msg(mpi_check_all(comm >= least), "%s path: ledger comm %lld < %lld",
                      path_name[p], (long long)comm, (long long)least);
    }
}
END_TEST

/* ---- errors ---- */

START_TEST(test_bad_dtype_error_names_it)
{
    struct zero_device *d = devs[PATH_SHM];
    float buf[64] = {0};
    int rc = d->be->reduce_scatter(d->self, buf, ZERO_F64, buf + 32, ZERO_F32, 1, NULL);
    ck_assert_int_eq(rc, ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(d->be->last_error(d->self), "fp64"));

    rc = d->be->reduce_scatter(d->self, buf, ZERO_F32, buf + 32, ZERO_I32, 1, NULL);
    ck_assert_int_eq(rc, ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(d->be->last_error(d->self), "int32"));

    rc = d->be->all_reduce(d->self, buf, buf, (enum zero_dtype)99, 1, NULL);
    ck_assert_int_eq(rc, ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(d->be->last_error(d->self), "99"));

    rc = d->be->all_gather(d->self, buf, buf + 32, (enum zero_dtype) - 3, 1, NULL);
    ck_assert_int_eq(rc, ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(d->be->last_error(d->self), "-3"));
}
END_TEST

START_TEST(test_bad_root_and_overlapping_buffers_are_errors)
{
    struct zero_device *d = devs[PATH_SHM];
    float buf[64] = {0};
    int rc = d->be->broadcast(d->self, buf, ZERO_F32, 4, nranks, NULL);
    ck_assert_int_eq(rc, ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(d->be->last_error(d->self), "root"));

    /* recv inside send but not at send + rank * count */
    rc = d->be->reduce_scatter(d->self, buf, ZERO_F32, buf + (me + 1) * 4 - 1, ZERO_F32, 4, NULL);
    ck_assert_int_eq(rc, ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(d->be->last_error(d->self), "overlap"));
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("collectives");
    TCase *exact = tcase_create("exact");
    tcase_add_test(exact, test_inputs_make_the_sum_order_matter);
    tcase_add_test(exact, test_exact_reduce_scatter_matches_serial_tree_fp32);
    tcase_add_test(exact, test_exact_reduce_scatter_matches_serial_tree_fp16);
    tcase_add_test(exact, test_exact_reduce_scatter_matches_serial_tree_bf16);
    tcase_add_test(exact, test_exact_reduce_scatter_in_place_matches_serial_tree);
    tcase_add_test(exact, test_exact_all_reduce_equals_reduce_scatter_then_all_gather);
    tcase_add_test(exact, test_exact_all_reduce_matches_serial_tree_for_uneven_counts);
    suite_add_tcase(s, exact);

    TCase *copies = tcase_create("copies");
    tcase_add_test(copies, test_all_gather_concatenates_in_place_and_not);
    tcase_add_test(copies, test_large_all_gather_concatenates_on_both_paths);
    tcase_add_test(exact, test_large_exact_all_reduce_equals_the_tree_and_the_mpi_path);
    tcase_add_test(copies, test_broadcast_copies_from_every_root);
    tcase_add_test(copies, test_group_all_gather_concatenates_the_members_in_world_order);
    tcase_add_test(copies, test_group_reductions_sum_the_members_along_their_tree);
    tcase_add_test(copies, test_all_to_all_delivers_each_members_bytes_in_member_order);
    suite_add_tcase(s, copies);

    TCase *modes = tcase_create("native and non-blocking");
    tcase_add_test(modes, test_native_agrees_with_exact_within_tolerance);
    tcase_add_test(modes, test_nonblocking_gives_the_same_bits_as_blocking);
    tcase_add_test(modes, test_several_requests_in_flight_complete_in_any_order);
    tcase_add_test(modes, test_blocking_call_while_a_request_is_in_flight_keeps_bits_and_ledger);
    suite_add_tcase(s, modes);

    TCase *accounting = tcase_create("accounting and errors");
    tcase_add_test(accounting, test_comm_stats_count_payload_and_sent_bytes);
    tcase_add_test(accounting, test_window_and_staging_are_in_the_ledger);
    tcase_add_test(accounting, test_bad_dtype_error_names_it);
    tcase_add_test(accounting, test_bad_root_and_overlapping_buffers_are_errors);
    suite_add_tcase(s, accounting);
    return s;
}

/* One device per data path; ZERO_CPU_NO_SHM is read when a device opens. */
static struct zero_device *open_device(int no_shm)
{
    MPI_Comm world = MPI_COMM_WORLD;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    struct zero_error err = {0};
    struct zero_device *d = NULL;
    if (no_shm)
        setenv("ZERO_CPU_NO_SHM", "1", 1);
    else
        unsetenv("ZERO_CPU_NO_SHM");
    if (zero_device_open(&d, "cpu", &world, &opt, &err) != ZERO_OK) {
        fprintf(stderr, "rank %d: %s\n", me, err.msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    unsetenv("ZERO_CPU_NO_SHM");
    return d;
}

int main(int argc, char **argv)
{
    int provided; /* MULTIPLE: non-blocking exact collectives run on the communication thread */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    me = mpi_check_rank();
    nranks = mpi_check_size();
    devs[PATH_SHM] = open_device(0);
    devs[PATH_MPI] = open_device(1);
    int rc = mpi_check_run(make_suite);
    zero_device_close(devs[PATH_SHM]);
    zero_device_close(devs[PATH_MPI]);
    MPI_Finalize();
    return rc;
}

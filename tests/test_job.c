/* The job's communicators and exchanges (zero/job.h) at 1-4 ranks: every reduction's
 * op and width, a broadcast from the last rank, the gather of records of every length
 * (none included) at a root that is not rank 0, split (with ranks left out) and dup, and
 * all_arrive. Every assertion is on values all ranks agree on (mpi_check_all). */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"
#include "zero/job.h"
#include "zero/zero.h"

START_TEST(test_allreduce_gives_min_max_and_sum_of_every_width)
{
    struct zero_comm *w = zero_comm_world();
    const int rank = zero_comm_rank(w), size = zero_comm_size(w);
    int lo = rank + 10, hi = rank + 10, sum = rank + 1;
    ck_assert_int_eq(zero_comm_allreduce_int(w, &lo, ZERO_COMM_MIN), ZERO_OK);
    ck_assert_int_eq(zero_comm_allreduce_int(w, &hi, ZERO_COMM_MAX), ZERO_OK);
    ck_assert_int_eq(zero_comm_allreduce_int(w, &sum, ZERO_COMM_SUM), ZERO_OK);
    ck_assert(mpi_check_all(lo == 10 && hi == 9 + size && sum == size * (size + 1) / 2));
    /* past 32 bits, element by element */
    int64_t v[3] = {INT64_C(1) << 40, -(int64_t)rank, (int64_t)rank << 33};
    ck_assert_int_eq(zero_comm_allreduce_int64(w, v, 3, ZERO_COMM_SUM), ZERO_OK);
    const int64_t ranks = (int64_t)size * (size - 1) / 2;
    ck_assert(
        mpi_check_all(v[0] == ((int64_t)size << 40) && v[1] == -ranks && v[2] == ranks << 33));
    double d[2] = {0.5 * rank, -0.25 * rank};
    ck_assert_int_eq(zero_comm_allreduce_double(w, d, 2, ZERO_COMM_MAX), ZERO_OK);
    ck_assert(mpi_check_all(d[0] == 0.5 * (size - 1) && d[1] == 0.0));
}
END_TEST

START_TEST(test_bcast_hands_the_roots_bytes_to_every_rank)
{
    struct zero_comm *w = zero_comm_world();
    const int rank = zero_comm_rank(w), root = zero_comm_size(w) - 1;
    enum { n = 100003 }; /* not a multiple of anything the transport likes */
    unsigned char *buf = malloc(n);
    ck_assert(buf != NULL);
    for (int i = 0; i < n; i++)
        buf[i] = (unsigned char)(rank == root ? i * 7 + 3 : 0);
    ck_assert_int_eq(zero_comm_bcast(w, buf, n, root), ZERO_OK);
    int same = 1;
    for (int i = 0; i < n; i++)
        same &= buf[i] == (unsigned char)(i * 7 + 3);
    free(buf);
    ck_assert(mpi_check_all(same));
}
END_TEST

/* rank r sends r bytes of value 'a' + r: rank 0 sends nothing */
START_TEST(test_gather_collects_every_ranks_record_in_rank_order)
{
    struct zero_comm *w = zero_comm_world();
    const int rank = zero_comm_rank(w), size = zero_comm_size(w), root = size / 2;
    char *mine = malloc((size_t)rank + 1);
    ck_assert(mine != NULL);
    memset(mine, 'a' + rank, (size_t)rank + 1);
    void *all = (void *)1;
    size_t *counts = (size_t *)1;
    ck_assert_int_eq(zero_comm_gather(w, mine, (size_t)rank, root, &all, &counts), ZERO_OK);
    int ok = 1;
    if (rank == root) {
        const char *at = all;
        for (int r = 0; r < size; r++) {
            ok &= counts[r] == (size_t)r;
            for (int i = 0; i < r; i++)
                ok &= *at++ == 'a' + r;
        }
    } else
        ok = all == NULL && counts == NULL;
    free(all);
    free(counts);
    free(mine);
    ck_assert(mpi_check_all(ok));
}
END_TEST

START_TEST(test_split_leaves_out_negative_colors_and_orders_by_key)
{
    struct zero_comm *w = zero_comm_world();
    const int rank = zero_comm_rank(w), size = zero_comm_size(w);
    struct zero_error err = {0};
    /* the last rank in none; the others by parity, keys reversing their order */
    const int color = rank == size - 1 && size > 1 ? -1 : rank % 2;
    struct zero_comm *part = (struct zero_comm *)1;
    ck_assert_int_eq(zero_comm_split(w, color, -rank, &part, &err), ZERO_OK);
    int ok;
    if (color < 0)
        ok = part == NULL;
    else {
        int members = 0, before = 0; /* ranks of my color below the last, and above me */
        for (int r = 0; r < size - (size > 1); r++)
            if (r % 2 == color) {
                members++;
                before += r > rank;
            }
        int sum = rank;
        ok = part != NULL && zero_comm_size(part) == members && zero_comm_rank(part) == before &&
             zero_comm_allreduce_int(part, &sum, ZERO_COMM_SUM) == ZERO_OK;
        zero_comm_free(&part);
        ok &= part == NULL;
    }
    ck_assert(mpi_check_all(ok));
}
END_TEST

START_TEST(test_dup_is_a_communicator_of_its_own_and_every_rank_arrives)
{
    struct zero_comm *w = zero_comm_world(), *dup = NULL;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_comm_dup(w, &dup, &err), ZERO_OK);
    int ok = zero_comm_size(dup) == zero_comm_size(w) && zero_comm_rank(dup) == zero_comm_rank(w);
    ok &= zero_comm_all_arrive(dup, 30.0) == 1;
    zero_comm_free(&dup);
    struct zero_comm *world = w;
    zero_comm_free(&world); /* the world's handle is left alone */
    ok &= dup == NULL && world == w && zero_comm_size(w) >= 1;
    ck_assert(mpi_check_all(ok));
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("job");
    TCase *tc = tcase_create("exchanges");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_allreduce_gives_min_max_and_sum_of_every_width);
    tcase_add_test(tc, test_bcast_hands_the_roots_bytes_to_every_rank);
    tcase_add_test(tc, test_gather_collects_every_ranks_record_in_rank_order);
    tcase_add_test(tc, test_split_leaves_out_negative_colors_and_orders_by_key);
    tcase_add_test(tc, test_dup_is_a_communicator_of_its_own_and_every_rank_arrives);
    suite_add_tcase(s, tc);
    return s;
}

/* started and ended through the job's own calls */
int main(int argc, char **argv)
{
    struct zero_error err = {0};
    int owned = 0;
    if (zero_job_init(&argc, &argv, &owned, &err) != ZERO_OK || !owned || !zero_job_initialized()) {
        fprintf(stderr, "test_job: zero_job_init: %s\n", err.msg);
        return EXIT_FAILURE;
    }
    int again = 1;
    if (zero_job_init(&argc, &argv, &again, &err) != ZERO_OK || again) {
        fprintf(stderr, "test_job: a second zero_job_init must not start the job again\n");
        return EXIT_FAILURE;
    }
    int status = mpi_check_run(make_suite);
    return zero_job_finalize() == ZERO_OK ? status : EXIT_FAILURE;
}

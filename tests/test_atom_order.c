/* libzero.atom_order = rank_major in exact mode (src/engine/atom_order.c): each rank
 * sums its own micro-steps and the gradient is reduced once per step, and still
 *   - stages 0-3 give bit-identical losses and weights (accumulation 2, 3 and 4),
 *     in fp32 and bf16, with the optimizer offloaded too;
 *   - any world size, 3 included, gives the bits of one rank accumulating all the
 *     atoms when A is a power of two (the rank's atoms are a subtree of the
 *     canonical tree), where micro-step-major atoms at 3 ranks do not;
 *   - the step's comm counters equal the local-accumulation formula: 2Ψ(N-1)/N in
 *     stages 0-2, (A(2Ψ - 2Ψp - Ψr) + Ψp + Ψ)(N-1)/N in stage 3, against
 *     (A + 1)Ψ(N-1)/N for micro-step-major atoms;
 *   - native mode with rank-major atoms still reduces once (2Ψ(N-1)/N);
 *   - the accumulation counters' memory (tag accum, what the memory plan counts)
 *     is floor(log2(A)) + 1 fp32 slots per unit, of the whole unit where a rank
 *     accumulates locally (rank-major atoms, native fast mode), else of its shard. */
#include <stdlib.h>
#include <string.h>

#include "engine_harness.h"
#include "mpi_check.h"

static void rank_major(struct harness_run *r, int stage, int accum)
{
    harness_defaults(r, stage);
    r->cfg.gradient_accumulation_steps = accum;
    r->cfg.libzero.atom_order = ZERO_ATOM_RANK_MAJOR;
}

static void train_all(struct harness_run *r)
{
    struct zero_error err = {0};
    int rc = harness_train(r, MPI_COMM_WORLD, &err);
    if (rc)
        fprintf(stderr, "rank %d: %s\n", mpi_check_rank(), err.msg);
    ck_assert(mpi_check_all(rc == 0));
}

/* Elements this rank sent in the last step (fp32 runs: 4 bytes each). */
static int64_t sent_elements(const struct harness_run *r)
{
    const struct zero_comm_stats *c = &r->last_comm;
    return (c->kind[ZERO_COLL_REDUCE_SCATTER].sent_bytes +
            c->kind[ZERO_COLL_ALL_GATHER].sent_bytes + c->kind[ZERO_COLL_ALL_REDUCE].sent_bytes +
            c->kind[ZERO_COLL_BROADCAST].sent_bytes) /
           4;
}

/* Stages 1-3 against stage 0, rank-major, accumulation A (stages 1-3 offloaded if asked). */
static void check_stages(int accum, enum zero_dtype precision, int offload)
{
    struct harness_run base, r;
    rank_major(&base, 0, accum);
    base.precision = precision;
    train_all(&base);
    for (int stage = 1; stage <= 3; stage++) {
        rank_major(&r, stage, accum);
        r.precision = precision;
        if (offload)
            r.cfg.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
        train_all(&r);
        ck_assert_msg(mpi_check_all(r.theory.accumulates_locally),
                      "stage %d, A = %d: rank-major exact mode does not accumulate locally", stage,
                      accum);
        ck_assert_msg(mpi_check_all(harness_same_bits(&base, &r)),
                      "rank-major, A = %d, %s%s: stage %d differs from stage 0", accum,
                      zero_dtype_name(precision), offload ? ", offload" : "", stage);
        free(r.weights);
    }
    free(base.weights);
}

START_TEST(test_rank_major_stages_0_3_bit_identical_accumulation_2_3_4)
{
    check_stages(2, ZERO_F32, 0);
    check_stages(3, ZERO_F32, 0); /* not a power of two: the nested tree, the same in every stage */
    check_stages(4, ZERO_F32, 0);
}
END_TEST

START_TEST(test_rank_major_stages_bit_identical_bf16_and_offload)
{
    check_stages(2, ZERO_BF16, 0);
    check_stages(2, ZERO_F32, 1);
}
END_TEST

/* World N with A micro-steps against one rank with N x A: the same atoms. */
static int same_as_one_rank(int stage, int accum, enum zero_atom_order order,
                            enum zero_dtype precision)
{
    int world = mpi_check_size();
    struct harness_run one, r;
    rank_major(&one, stage, accum * world);
    one.precision = precision;
    harness_run_on_first(&one, 1);
    rank_major(&r, stage, accum);
    r.cfg.libzero.atom_order = order;
    r.precision = precision;
    train_all(&r);
    int same = mpi_check_rank() != 0 || harness_same_bits(&one, &r);
    same = mpi_check_all(same);
    if (mpi_check_rank() == 0)
        free(one.weights);
    free(r.weights);
    return same;
}

START_TEST(test_rank_major_any_world_size_equals_one_rank)
{
    for (int stage = 0; stage <= 3; stage += 3)
        for (int accum = 2; accum <= 4; accum *= 2)
            ck_assert_msg(same_as_one_rank(stage, accum, ZERO_ATOM_RANK_MAJOR, ZERO_F32),
                          "stage %d, A = %d: %d ranks differ from 1 rank with %d micro-steps",
                          stage, accum, mpi_check_size(), accum * mpi_check_size());
    ck_assert_msg(same_as_one_rank(2, 2, ZERO_ATOM_RANK_MAJOR, ZERO_BF16),
                  "bf16, stage 2, A = 2: %d ranks differ from 1 rank", mpi_check_size());
}
END_TEST

START_TEST(test_micro_step_major_at_3_ranks_differs_from_one_rank)
{
    if (mpi_check_size() != 3)
        return; /* at 1, 2 and 4 ranks both orders sum along the canonical tree */
    /* ((g0 + g1) + g2) + ((g3 + g4) + g5) is not tree(0, 6): the rank-major test
     * above would fail if the engine reduced this way */
    ck_assert(!same_as_one_rank(0, 2, ZERO_ATOM_MICRO_STEP_MAJOR, ZERO_F32));
}
END_TEST

START_TEST(test_rank_major_comm_equals_the_local_accumulation_formula)
{
    int64_t n = mpi_check_size();
    for (int stage = 0; stage <= 3; stage++)
        for (int accum = 2; accum <= 4; accum *= 2) {
            struct harness_run r, every;
            rank_major(&r, stage, accum);
            train_all(&r);
            rank_major(&every, stage, accum);
            every.cfg.libzero.atom_order = ZERO_ATOM_MICRO_STEP_MAJOR;
            train_all(&every);
            const struct zero_theory *t = &r.theory;
            int64_t P = t->psi_padded, Pp = t->psi_persistent, Pr = t->psi_reused, a = accum;
            /* written out independently of src/engine/engine_theory.c */
            int64_t local = (stage == 3 ? a * (2 * P - 2 * Pp - Pr) + Pp + P : 2 * P) / n * (n - 1);
            int64_t per_micro =
                (stage == 3 ? a * (3 * P - 2 * Pp - Pr) + Pp : (a + 1) * P) / n * (n - 1);
            int64_t sent = sent_elements(&r), sent_every = sent_elements(&every);
            ck_assert_msg(
                mpi_check_all(sent == local && t->sent_elements_local_accumulation == local &&
                              t->sent_elements_accumulated == local),
                "stage %d, A = %d, rank-major: sent %lld, formula %lld, theory %lld", stage, accum,
                (long long)sent, (long long)local, (long long)t->sent_elements_local_accumulation);
            ck_assert_msg(mpi_check_all(sent_every == per_micro &&
                                        t->sent_elements_every_micro_step == per_micro &&
                                        every.theory.sent_elements_accumulated == per_micro),
                          "stage %d, A = %d, micro-step-major: sent %lld, formula %lld", stage,
                          accum, (long long)sent_every, (long long)per_micro);
            if (n > 1) /* one reduction instead of A */
                ck_assert(mpi_check_all(sent < sent_every));
            free(r.weights);
            free(every.weights);
        }
}
END_TEST

START_TEST(test_native_mode_with_rank_major_atoms_still_reduces_once)
{
    int64_t n = mpi_check_size();
    struct harness_run exact, native;
    rank_major(&exact, 1, 2);
    train_all(&exact);
    rank_major(&native, 1, 2);
    native.cfg.libzero.coll_mode = ZERO_COLL_NATIVE;
    train_all(&native);
    int64_t P = native.theory.psi_padded;
    ck_assert_msg(mpi_check_all(sent_elements(&native) == 2 * P / n * (n - 1)),
                  "native, rank-major, A = 2: sent %lld, 2Ψ(N-1)/N = %lld",
                  (long long)sent_elements(&native), (long long)(2 * P / n * (n - 1)));
    double worst = 0.0;
    for (int64_t i = 0; i < exact.nweights; i++) {
        double d = exact.weights[i] - native.weights[i];
        worst = d > worst ? d : -d > worst ? -d : worst;
    }
    ck_assert_msg(mpi_check_all(worst < 1e-4), "native differs from exact by %g", worst);
    free(exact.weights);
    free(native.weights);
}
END_TEST

/* The ledger's peak of tag accum over a run equals the theory the memory plan adds
 * (zero_theory.accum_bytes), in both orders, both modes, A = 2, 3, 4. */
START_TEST(test_accumulation_counter_memory_equals_the_plan)
{
    for (int stage = 0; stage <= 3; stage += 3)
        for (int accum = 2; accum <= 4; accum++)
            for (int variant = 0; variant < 4; variant++) {
                struct harness_run r;
                rank_major(&r, stage, accum);
                r.steps = 2;
                if (!(variant & 1))
                    r.cfg.libzero.atom_order = ZERO_ATOM_MICRO_STEP_MAJOR;
                if (variant & 2)
                    r.cfg.libzero.coll_mode = ZERO_COLL_NATIVE;
                train_all(&r);
                int64_t slots = accum == 2 || accum == 3 ? 2 : 3; /* floor(log2(A)) + 1 */
                int64_t whole = r.theory.psi_padded, shard = whole / mpi_check_size();
                int64_t want = 4 * slots * (r.theory.accumulates_locally ? whole : shard);
                int64_t peak = r.ledger_end.peak[ZERO_TAG_ACCUM];
                ck_assert_msg(mpi_check_all(peak == r.theory.accum_bytes && peak == want),
                              "stage %d, A = %d, %s, %s: accum peak %lld, plan %lld, "
                              "floor(log2 A) + 1 slots %lld",
                              stage, accum, variant & 1 ? "rank_major" : "micro_step_major",
                              variant & 2 ? "native" : "exact", (long long)peak,
                              (long long)r.theory.accum_bytes, (long long)want);
                free(r.weights);
            }
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("atom_order");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_rank_major_stages_0_3_bit_identical_accumulation_2_3_4);
    tcase_add_test(tc, test_rank_major_stages_bit_identical_bf16_and_offload);
    tcase_add_test(tc, test_rank_major_any_world_size_equals_one_rank);
    tcase_add_test(tc, test_micro_step_major_at_3_ranks_differs_from_one_rank);
    tcase_add_test(tc, test_rank_major_comm_equals_the_local_accumulation_formula);
    tcase_add_test(tc, test_native_mode_with_rank_major_atoms_still_reduces_once);
    tcase_add_test(tc, test_accumulation_counter_memory_equals_the_plan);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_check_main(&argc, &argv, make_suite);
}

/* The attention's state sizes (attention_state_floats, include/zero/backend.h) as the
 * GPT units see them: the standalone attention unit and the block size their saved
 * and scratch buffers with the backend's answer (saved_bytes_for, scratch_bytes_for),
 * exactly the contract's (saved_bytes_as, scratch_bytes) less the T x T the backend
 * does not keep, and the contract's where the entry is NULL (the cpu backend). Single
 * process: the sizing entries need the table, not an instance. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "attention_state_backend.h"
#include "zero/gpt.h"
#include "zero/zero.h"

enum { C = 16, NH = 2, T = 8, B = 3, ROWS = B * T };

static struct zero_unit_ctx sizing_ctx(const struct zero_backend *be, enum zero_dtype act)
{
    struct zero_unit_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.be = be;
    ctx.rows = ROWS;
    ctx.matmul_type = ZERO_F32;
    ctx.act_type = act;
    return ctx;
}

/* saved and scratch of u for be equal the contract's less `fewer` floats each */
static void check_sizes(const struct zero_unit *u, const struct zero_backend *be, size_t fewer)
{
    const enum zero_dtype acts[] = {ZERO_F32, ZERO_BF16};
    ck_assert_ptr_nonnull(u->ops->saved_bytes_for);
    ck_assert_ptr_nonnull(u->ops->scratch_bytes_for);
    for (int a = 0; a < 2; a++) {
        struct zero_unit_ctx ctx = sizing_ctx(be, acts[a]);
        const size_t contract = u->ops->saved_bytes_as(u, ROWS, acts[a]);
        ck_assert_uint_eq(u->ops->saved_bytes_for(u, &ctx), contract - fewer * sizeof(float));
        ck_assert_uint_eq(u->ops->scratch_bytes_for(u, &ctx),
                          u->ops->scratch_bytes(u, ROWS) - fewer * sizeof(float));
    }
    ck_assert_uint_eq(u->ops->saved_bytes(u, ROWS), u->ops->saved_bytes_as(u, ROWS, ZERO_F32));
}

START_TEST(test_attention_units_size_their_state_by_the_backend)
{
    const struct zero_backend *cpu = zero_backend_find("cpu");
    ck_assert_ptr_nonnull(cpu);
    ck_assert_ptr_null(cpu->attention_state_floats);
    struct zero_error err = {0};
    struct zero_unit *attn = NULL, *block = NULL;
    ck_assert_int_eq(zero_nn_causal_self_attention(&attn, "attn", C, NH, T, &err), ZERO_OK);
    ck_assert_int_eq(zero_nn_gpt_block(&block, "h.0", C, NH, T, 2, &err), ZERO_OK);
    /* the contract: att (B, NH, T, T) saved and as scratch */
    const size_t tt = (size_t)B * NH * T * T, state = (size_t)B * NH * T;
    ck_assert_uint_eq(attn->ops->saved_bytes_as(attn, ROWS, ZERO_BF16),
                      tt * sizeof(float) + (size_t)ROWS * 4 * C * 2);
    ck_assert_uint_eq(attn->ops->scratch_bytes(attn, ROWS), (tt + (size_t)ROWS * 4 * C) * 4);
    check_sizes(attn, cpu, 0);
    check_sizes(block, cpu, 0);
    const struct zero_backend *flash = attention_state_backend(cpu, ATTN_STATE);
    check_sizes(attn, flash, tt - state);
    check_sizes(block, flash, tt - state);
    zero_unit_destroy(attn);
    zero_unit_destroy(block);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("attention_state");
    TCase *tc = tcase_create("sizes");
    tcase_add_test(tc, test_attention_units_size_their_state_by_the_backend);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

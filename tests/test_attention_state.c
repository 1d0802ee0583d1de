/* The attention's state sizes (attention_state_floats, include/zero/backend_attention.h)
 * as the GPT units see them: the standalone attention unit and the block size their
 * saved and scratch buffers with the backend's answer (saved_bytes, scratch_bytes of a
 * ctx with that backend), exactly the contract's (the same of a ctx with no backend)
 * less the T x T the backend does not keep, and the contract's where the backend has no
 * attention group (the cpu backend). Then
 * the standalone attention unit runs in buffers of just those sizes (a guard band
 * after each must stay untouched) on the test backend of attention_state_backend.h,
 * fp32 and with bf16 activations through the _stored entries, and gives the plain cpu
 * run's bits: y, dx and every parameter gradient. One rank (the rig's cpu device). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_state_backend.h"
#include "gradcheck_rig.h"
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
    ck_assert(u->ops->stored_activations);
    for (int a = 0; a < 2; a++) {
        struct zero_unit_ctx ctx = sizing_ctx(be, acts[a]), plain = sizing_ctx(NULL, acts[a]);
        const size_t contract = u->ops->saved_bytes(u, &plain);
        ck_assert_uint_eq(u->ops->saved_bytes(u, &ctx), contract - fewer * sizeof(float));
        ck_assert_uint_eq(u->ops->scratch_bytes(u, &ctx),
                          u->ops->scratch_bytes(u, &plain) - fewer * sizeof(float));
    }
}

START_TEST(test_attention_units_size_their_state_by_the_backend)
{
    const struct zero_backend *cpu = zero_backend_find("cpu");
    ck_assert_ptr_nonnull(cpu);
    ck_assert_ptr_null(cpu->attention);
    struct zero_error err = {0};
    struct zero_unit *attn = NULL, *block = NULL;
    ck_assert_int_eq(zero_nn_causal_self_attention(&attn, "attn", C, NH, T, &err), ZERO_OK);
    ck_assert_int_eq(zero_nn_gpt_block(&block, "h.0", C, NH, T, 2, &err), ZERO_OK);
    /* the contract: att (B, NH, T, T) saved and as scratch */
    const size_t tt = (size_t)B * NH * T * T, state = (size_t)B * NH * T;
    const struct zero_unit_ctx bf16 = sizing_ctx(NULL, ZERO_BF16);
    ck_assert_uint_eq(attn->ops->saved_bytes(attn, &bf16),
                      tt * sizeof(float) + (size_t)ROWS * 4 * C * 2);
    ck_assert_uint_eq(attn->ops->scratch_bytes(attn, &bf16), (tt + (size_t)ROWS * 4 * C) * 4);
    check_sizes(attn, cpu, 0);
    check_sizes(block, cpu, 0);
    const struct zero_backend *flash = attention_state_backend(cpu, ATTN_STATE);
    check_sizes(attn, flash, tt - state);
    check_sizes(block, flash, tt - state);
    zero_unit_destroy(attn);
    zero_unit_destroy(block);
}
END_TEST

/* What one run of the unit leaves: y, dx and the gradients, on the host */
struct unit_run {
    float *y, *dx, *grad[RIG_SLOTS];
    size_t ny, nx, len[RIG_SLOTS];
    int nslots;
};

#define GUARD 256 /* bytes after saved and scratch that nothing may write */

/* a buffer of bytes + GUARD on the rig's device, the guard filled with 0xA5 */
static void *guarded(size_t bytes, enum zero_tag tag)
{
    unsigned char *p = rig_dev_alloc(bytes + GUARD, tag);
    memset(p + bytes, 0xA5, GUARD); /* cpu device: host memory */
    return p;
}

static void check_guard(const void *p, size_t bytes, const char *what)
{
    const unsigned char *g = (const unsigned char *)p + bytes;
    for (size_t i = 0; i < GUARD; i++)
        ck_assert_msg(g[i] == 0xA5, "%s: byte %zu past its %zu written", what, i, bytes);
}

/* The standalone attention unit on be (the rig's device, its table swapped), its
 * saved and scratch buffers of exactly what saved_bytes and scratch_bytes answer */
static struct unit_run run_unit(const struct zero_backend *be, enum zero_dtype act)
{
    const struct zero_backend *own = rig_dev->be;
    struct zero_error err = {0};
    struct zero_unit *u = NULL;
    ck_assert_int_eq(zero_nn_causal_self_attention(&u, "attn", C, NH, T, &err), ZERO_OK);
    rig_seed(7);
    struct rig g;
    const struct rig_inputs in = {.x_range = 1.0};
    rig_dev->be = be;
    rig_open(&g, u, ROWS, &in);
    g.ctx.act_type = act;
    const size_t saved = u->ops->saved_bytes(u, &g.ctx), scratch = u->ops->scratch_bytes(u, &g.ctx);
    be->free(rig_dev->self, g.saved);
    be->free(rig_dev->self, g.scratch);
    g.saved = g.ctx.saved = guarded(saved, ZERO_TAG_ACTIVATIONS);
    g.scratch = g.ctx.scratch = guarded(scratch, ZERO_TAG_WORKSPACE);
    rig_forward(&g);
    rig_backward(&g, 0, 1);
    check_guard(g.saved, saved, "saved");
    check_guard(g.scratch, scratch, "scratch");
    struct unit_run r = {.ny = (size_t)(ROWS * C), .nx = (size_t)(ROWS * C), .nslots = g.nslots};
    r.y = rig_xmalloc(r.ny * sizeof(float));
    r.dx = rig_xmalloc(r.nx * sizeof(float));
    rig_download(r.y, g.y, r.ny * sizeof(float));
    rig_download(r.dx, g.dx, r.nx * sizeof(float));
    for (int p = 0; p < g.nslots; p++) {
        r.len[p] = g.len[p];
        r.grad[p] = rig_xmalloc(g.len[p] * sizeof(float));
        rig_download(r.grad[p], g.grad[p], g.len[p] * sizeof(float));
    }
    rig_close(&g);
    rig_dev->be = own;
    return r;
}

static void unit_run_free(struct unit_run *r)
{
    free(r->y);
    free(r->dx);
    for (int p = 0; p < r->nslots; p++)
        free(r->grad[p]);
}

static void check_same_run(const struct unit_run *a, const struct unit_run *b, const char *what)
{
    ck_assert_msg(memcmp(a->y, b->y, a->ny * sizeof(float)) == 0, "%s: y differs", what);
    ck_assert_msg(memcmp(a->dx, b->dx, a->nx * sizeof(float)) == 0, "%s: dx differs", what);
    ck_assert_int_eq(a->nslots, b->nslots);
    for (int p = 0; p < a->nslots; p++)
        ck_assert_msg(memcmp(a->grad[p], b->grad[p], a->len[p] * sizeof(float)) == 0,
                      "%s: gradient %d differs", what, p);
}

START_TEST(test_standalone_attention_in_state_sized_buffers_gives_the_plain_bits)
{
    const struct zero_backend *cpu = rig_dev->be;
    const enum zero_dtype acts[] = {ZERO_F32, ZERO_BF16};
    for (int a = 0; a < 2; a++) {
        struct unit_run plain = run_unit(cpu, acts[a]);
        const unsigned flags[] = {ATTN_STATE, ATTN_TYPED, ATTN_STATE | ATTN_TYPED};
        for (int f = 0; f < 3; f++) {
            struct unit_run r = run_unit(attention_state_backend(cpu, flags[f]), acts[a]);
            char what[64];
            snprintf(what, sizeof what, "entries %u, activations %s", flags[f],
                     zero_dtype_name(acts[a]));
            check_same_run(&plain, &r, what);
            unit_run_free(&r);
        }
        unit_run_free(&plain);
    }
}
END_TEST

static Suite *state_suite(void)
{
    Suite *s = suite_create("attention_state");
    TCase *tc = tcase_create("sizes");
    tcase_add_test(tc, test_attention_units_size_their_state_by_the_backend);
    tcase_add_test(tc, test_standalone_attention_in_state_sized_buffers_gives_the_plain_bits);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return rig_main(argc, argv, "test_attention_state", state_suite);
}

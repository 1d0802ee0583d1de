/* The backend registry, zero_device, the cpu backend's tagged memory and the
 * small core utilities it reports to (ledger, comm counters, error messages).
 * One rank: open() dups MPI_COMM_WORLD. */
#include <check.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zero/backend.h"
#include "zero/backend_groups.h"
#include "zero/backend_quant.h"
#include "zero/backend_classifier.h"
#include "zero/backend_fused.h"
#include "zero/error.h"

int openblas_get_num_threads(void);

static struct zero_device *open_cpu(enum zero_coll_mode mode, int blas_threads)
{
    struct zero_error err = {0};
    struct zero_backend_options opt = {
        .coll_mode = mode, .blas_threads = blas_threads, .device = -1};
    MPI_Comm world = MPI_COMM_WORLD;
    struct zero_device *dev = NULL;
    int rc = zero_device_open(&dev, "cpu", &world, &opt, &err);
    ck_assert_msg(rc == ZERO_OK, "open cpu: %s", err.msg);
    return dev;
}

/* ---------------------------------------------------------------- quant */

/* qwZ's int8 format (zero/backend_quant.h) on values whose codes are exact: scale =
 * max |x| / 127 (1 and 2 here), ties to even (-63.5 -> -64, 2.5 -> 2, -0.5 -> 0), a
 * short last block, an all-zero block, and the values the codes stand for */
START_TEST(test_cpu_quant_int8_scales_codes_and_values)
{
    struct zero_device *dev = open_cpu(ZERO_COLL_EXACT, 1);
    const struct zero_quant_ops *q = dev->be->quant;
    ck_assert_ptr_nonnull(q);
    const float x[] = {127.0f, -63.5f, 2.5f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 254.0f, -1.0f};
    const float want_scales[] = {1.0f, 0.0f, 2.0f};
    const int8_t want_codes[] = {127, -64, 2, 0, 0, 0, 0, 0, 127, 0};
    const float want_values[] = {127.0f, -64.0f, 2.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 254.0f, 0.0f};
    float scales[3], y[10];
    int8_t codes[10];
    ck_assert_int_eq(q->quantize_int8(dev->self, x, ZERO_F32, 10, 4, scales, codes), ZERO_OK);
    ck_assert_int_eq(memcmp(scales, want_scales, sizeof scales), 0);
    ck_assert_int_eq(memcmp(codes, want_codes, sizeof codes), 0);
    ck_assert_int_eq(q->dequantize_int8(dev->self, scales, codes, 10, 4, y, ZERO_F32), ZERO_OK);
    ck_assert_int_eq(memcmp(y, want_values, sizeof y), 0);
    ck_assert_int_eq(q->quantize_int8(dev->self, x, ZERO_F32, 10, 0, scales, codes), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(dev->be->last_error(dev->self), "quantize_int8: a block of 0"));
    ck_assert_int_eq(q->dequantize_int8(dev->self, scales, codes, 10, 4, y, ZERO_I32),
                     ZERO_ENOTSUP);
    zero_device_close(dev);
}
END_TEST

/* qgZ's int4 format: scale = max |x| / 7 (1 and 2 here), ties to even (3.5 -> 4,
 * 2.5 -> 2, -0.5 -> 0), clamped to [-7, 7], element 2i in the low nibble of byte i,
 * an odd count's last high nibble 0, and the values the codes stand for */
START_TEST(test_cpu_quant_int4_scales_nibbles_and_values)
{
    struct zero_device *dev = open_cpu(ZERO_COLL_EXACT, 1);
    const struct zero_quant_ops *q = dev->be->quant;
    const float x[] = {7.0f, -3.5f, 2.5f, -0.5f, 0.0f, 0.0f, 0.0f, 0.0f, -14.0f};
    const float want_scales[] = {1.0f, 0.0f, 2.0f};
    /* codes 7, -4 | 2, 0 | 0, 0 | 0, 0 | -7: -4 = 0xC, -7 = 0x9 */
    const uint8_t want_bytes[] = {0xC7, 0x02, 0x00, 0x00, 0x09};
    const float want_values[] = {7.0f, -4.0f, 2.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, -14.0f};
    float scales[3], y[9];
    uint8_t bytes[5];
    ck_assert_int_eq(q->quantize_int4(dev->self, x, ZERO_F32, 9, 4, scales, bytes), ZERO_OK);
    ck_assert_int_eq(memcmp(scales, want_scales, sizeof scales), 0);
    ck_assert_int_eq(memcmp(bytes, want_bytes, sizeof bytes), 0);
    ck_assert_int_eq(q->dequantize_int4(dev->self, scales, bytes, 9, 4, y, ZERO_F32), ZERO_OK);
    ck_assert_int_eq(memcmp(y, want_values, sizeof y), 0);
    ck_assert_int_eq(q->quantize_int4(dev->self, x, ZERO_F32, 9, 0, scales, bytes), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(dev->be->last_error(dev->self), "quantize_int4: a block of 0"));
    zero_device_close(dev);
}
END_TEST

/* ---------------------------------------------------------------- registry */

START_TEST(test_registry_lists_and_finds_the_cpu_backend)
{
    const char *const *names = zero_backend_names();
    int n = 0, has_cpu = 0;
    for (; names[n] != NULL; n++) {
        const struct zero_backend *be = zero_backend_find(names[n]);
        ck_assert_ptr_nonnull(be);
        ck_assert_str_eq(be->name, names[n]);
        ck_assert_int_eq(be->abi_version, ZERO_BACKEND_ABI);
        has_cpu |= strcmp(names[n], "cpu") == 0;
    }
    ck_assert(n >= 1 && has_cpu);
    ck_assert_ptr_null(zero_backend_find("nope"));
    ck_assert_ptr_null(zero_backend_find(NULL));
}
END_TEST

/* The table's shape: every built-in table passes; a NULL core entry, another ABI, a
 * present group with a NULL entry or another version are refused, naming what. */
START_TEST(test_backend_check_refuses_a_missing_core_entry_or_a_partial_group)
{
    char why[256];
    for (const char *const *n = zero_backend_names(); *n != NULL; n++)
        ck_assert_msg(zero_backend_check(zero_backend_find(*n), why, sizeof why) == ZERO_OK,
                      "%s: %s", *n, why);
    const struct zero_backend *cpu = zero_backend_find("cpu");
    ck_assert_ptr_nonnull(cpu->classifier); /* the cpu's one group */
    ck_assert_ptr_null(cpu->fused);

    struct zero_backend t = *cpu;
    t.wait_timed = NULL;
    ck_assert_int_eq(zero_backend_check(&t, why, sizeof why), ZERO_EINVAL);
    ck_assert_str_eq(why, "backend 'cpu' has no wait_timed (every core entry is required)");
    t = *cpu;
    t.probe = NULL; /* the first entry */
    ck_assert_int_eq(zero_backend_check(&t, why, sizeof why), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "has no probe"));
    t = *cpu;
    t.host_all_gather = NULL; /* the last core entry */
    ck_assert_int_eq(zero_backend_check(&t, why, sizeof why), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "has no host_all_gather"));
    t = *cpu;
    t.abi_version = ZERO_BACKEND_ABI - 1;
    ck_assert_int_eq(zero_backend_check(&t, why, sizeof why), ZERO_ENOTSUP);
    char version_why[64];
    snprintf(version_why, sizeof version_why, "interface version %d, need %d", ZERO_BACKEND_ABI - 1,
             ZERO_BACKEND_ABI);
    ck_assert_ptr_nonnull(strstr(why, version_why));
    t = *cpu;
    t.product_workspace_bytes = NULL; /* the memory plan's entry (ABI 4) */
    ck_assert_int_eq(zero_backend_check(&t, why, sizeof why), ZERO_EINVAL);
    ck_assert_str_eq(why,
                     "backend 'cpu' has no product_workspace_bytes (every core entry is required)");

    struct zero_classifier_ops old = *cpu->classifier;
    old.version = ZERO_CLASSIFIER_OPS_VERSION + 1;
    t = *cpu;
    t.classifier = &old;
    ck_assert_int_eq(zero_backend_check(&t, why, sizeof why), ZERO_ENOTSUP);
    ck_assert_str_eq(why, "backend 'cpu': group classifier has version 2, need 1");
    struct zero_groups_ops groups = *cpu->groups;
    groups.group_all_gather = NULL;
    t = *cpu;
    t.groups = &groups;
    ck_assert_int_eq(zero_backend_check(&t, why, sizeof why), ZERO_EINVAL);
    ck_assert_str_eq(why, "backend 'cpu': group groups has no group_all_gather (a present group "
                          "has every entry)");
    struct zero_quant_ops quant = *cpu->quant;
    quant.dequantize_int8 = NULL;
    t = *cpu;
    t.quant = &quant;
    ck_assert_int_eq(zero_backend_check(&t, why, sizeof why), ZERO_EINVAL);
    ck_assert_str_eq(why, "backend 'cpu': group quant has no dequantize_int8 (a present group "
                          "has every entry)");
    struct zero_fused_ops part = {.version = ZERO_FUSED_OPS_VERSION};
    t = *cpu;
    t.fused = &part; /* a group with none of its entries filled */
    ck_assert_int_eq(zero_backend_check(&t, why, sizeof why), ZERO_EINVAL);
    ck_assert_str_eq(
        why,
        "backend 'cpu': group fused has no residual_layernorm_forward (a present group has every "
        "entry)");
}
END_TEST

START_TEST(test_device_open_cpu_reports_rank_and_size)
{
    struct zero_device *dev = open_cpu(ZERO_COLL_EXACT, 0);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ck_assert_int_eq(dev->rank, rank);
    ck_assert_int_eq(dev->size, size);
    ck_assert_int_eq(dev->be->rank(dev->self), rank);
    ck_assert_int_eq(dev->be->size(dev->self), size);
    ck_assert_int_eq(dev->be->set_coll_mode(dev->self, ZERO_COLL_NATIVE), ZERO_OK);
    ck_assert_int_eq(dev->be->set_coll_mode(dev->self, (enum zero_coll_mode)9), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(dev->be->last_error(dev->self), "mode 9"));
    zero_device_close(dev);
}
END_TEST

START_TEST(test_device_open_unknown_backend_names_the_available_ones)
{
    struct zero_error err = {0};
    struct zero_device *dev = (struct zero_device *)1;
    MPI_Comm world = MPI_COMM_WORLD;
    ck_assert_int_eq(zero_device_open(&dev, "nope", &world, NULL, &err), ZERO_EINVAL);
    ck_assert_ptr_null(dev);
    ck_assert_int_eq(err.code, ZERO_EINVAL);
    ck_assert_msg(strstr(err.msg, "'nope'") && strstr(err.msg, "available: cpu"), "message: %s",
                  err.msg);
}
END_TEST

/* The bits of a GEMM may depend on OpenBLAS's thread count: a backend opened in
 * exact mode gives it one thread when native mode loads it (cpu_openblas.c), unless
 * the caller asked for more. */
START_TEST(test_exact_mode_runs_blas_on_one_thread_unless_asked)
{
    struct zero_device *dev = open_cpu(ZERO_COLL_EXACT, 2);
    ck_assert_int_eq(dev->be->set_coll_mode(dev->self, ZERO_COLL_NATIVE), ZERO_OK);
    ck_assert_int_eq(openblas_get_num_threads(), 2);
    zero_device_close(dev);
    dev = open_cpu(ZERO_COLL_EXACT, 0);
    ck_assert_int_eq(dev->be->set_coll_mode(dev->self, ZERO_COLL_NATIVE), ZERO_OK);
    ck_assert_int_eq(openblas_get_num_threads(), 1);
    zero_device_close(dev);
}
END_TEST

/* ---------------------------------------------------------------- memory and ledger */

START_TEST(test_alloc_and_free_move_current_and_peak_per_tag)
{
    struct zero_device *dev = open_cpu(ZERO_COLL_EXACT, 0);
    const struct zero_backend *be = dev->be;
    const struct zero_ledger *l = &dev->ledger;
    int64_t comm_bytes = l->current[ZERO_TAG_COMM]; /* the collectives may hold buffers */
    void *p = NULL, *g = NULL, *o = NULL;
    ck_assert_int_eq(be->alloc(dev->self, 1000, ZERO_TAG_PARAMS, &p), ZERO_OK);
    ck_assert_int_eq(be->alloc(dev->self, 300, ZERO_TAG_GRADS, &g), ZERO_OK);
    ck_assert_int_eq(be->alloc(dev->self, 2000, ZERO_TAG_OPTIM, &o), ZERO_OK);
    ck_assert_uint_eq((uintptr_t)p % 64, 0);
    ck_assert_uint_eq((uintptr_t)g % 64, 0);
    memset(p, 1, 1000); /* the whole block is usable */
    ck_assert_int_eq(l->current[ZERO_TAG_PARAMS], 1000);
    ck_assert_int_eq(l->current[ZERO_TAG_GRADS], 300);
    ck_assert_int_eq(l->current[ZERO_TAG_OPTIM], 2000);
    ck_assert_int_eq(zero_ledger_model_states(l), 3300);
    ck_assert_int_eq(l->current_total, 3300 + comm_bytes);

    ck_assert_int_eq(be->free(dev->self, p), ZERO_OK);
    ck_assert_int_eq(be->free(dev->self, o), ZERO_OK);
    ck_assert_int_eq(l->current[ZERO_TAG_PARAMS], 0);
    ck_assert_int_eq(l->peak[ZERO_TAG_PARAMS], 1000);
    ck_assert_int_eq(l->current[ZERO_TAG_OPTIM], 0);
    ck_assert_int_eq(l->peak[ZERO_TAG_OPTIM], 2000);
    ck_assert_int_eq(l->current_total, 300 + comm_bytes);
    ck_assert_int_ge(l->peak_total, 3300 + comm_bytes);

    zero_ledger_reset_peaks(&dev->ledger);
    ck_assert_int_eq(l->peak[ZERO_TAG_PARAMS], 0);
    ck_assert_int_eq(l->peak[ZERO_TAG_GRADS], 300);
    ck_assert_int_eq(be->free(dev->self, g), ZERO_OK);
    ck_assert_int_eq(l->current[ZERO_TAG_GRADS], 0);
    ck_assert_int_eq(l->peak[ZERO_TAG_GRADS], 300);
    ck_assert_int_eq(be->free(dev->self, NULL), ZERO_OK);
    zero_device_close(dev);
}
END_TEST

START_TEST(test_alloc_rejects_unknown_tag_and_free_rejects_foreign_pointer)
{
    struct zero_device *dev = open_cpu(ZERO_COLL_EXACT, 0);
    int64_t live = dev->ledger.allocations;
    void *p = (void *)1;
    ck_assert_int_eq(dev->be->alloc(dev->self, 8, ZERO_TAG_COUNT, &p), ZERO_EINVAL);
    ck_assert_ptr_null(p);
    ck_assert_ptr_nonnull(strstr(dev->be->last_error(dev->self), "tag"));
    ck_assert_int_eq(dev->be->alloc(dev->self, SIZE_MAX, ZERO_TAG_PARAMS, &p), ZERO_ENOMEM);
    ck_assert_ptr_nonnull(strstr(dev->be->last_error(dev->self), "params"));

    static _Alignas(64) unsigned char foreign[256];
    ck_assert_int_eq(dev->be->free(dev->self, foreign + 128), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(dev->be->last_error(dev->self), "not a live block"));
    ck_assert_int_eq(dev->ledger.allocations, live); /* failures leave no trace */
    zero_device_close(dev);
}
END_TEST

START_TEST(test_copy_fill_and_host_transfers)
{
    struct zero_device *dev = open_cpu(ZERO_COLL_EXACT, 0);
    const struct zero_backend *be = dev->be;
    float host[5] = {1, 2, 3, 4, 5}, back[5] = {0};
    void *a, *b;
    ck_assert_int_eq(be->alloc(dev->self, sizeof(host), ZERO_TAG_WORKSPACE, &a), ZERO_OK);
    ck_assert_int_eq(be->alloc(dev->self, sizeof(host), ZERO_TAG_WORKSPACE, &b), ZERO_OK);
    ck_assert_int_eq(be->from_host(dev->self, a, host, sizeof(host)), ZERO_OK);
    ck_assert_int_eq(be->copy(dev->self, b, a, sizeof(host)), ZERO_OK);
    ck_assert_int_eq(be->to_host(dev->self, back, b, sizeof(host)), ZERO_OK);
    ck_assert_mem_eq(back, host, sizeof(host));

    ck_assert_int_eq(be->fill(dev->self, a, ZERO_F32, 0.1, 5), ZERO_OK);
    ck_assert(((float *)a)[4] == 0.1f);
    ck_assert_int_eq(be->fill(dev->self, a, ZERO_F16, 1.0, 10), ZERO_OK);
    ck_assert_uint_eq(((uint16_t *)a)[9], 0x3c00);
    ck_assert_int_eq(be->fill(dev->self, a, ZERO_BF16, -2.0, 10), ZERO_OK);
    ck_assert_uint_eq(((uint16_t *)a)[0], 0xc000);
    ck_assert_int_eq(be->fill(dev->self, a, ZERO_I32, 7, 5), ZERO_OK);
    ck_assert_int_eq(((int32_t *)a)[2], 7);

    void *ev;
    ck_assert_int_eq(be->event_create(dev->self, &ev), ZERO_OK);
    ck_assert_int_eq(be->event_record(dev->self, ev, ZERO_STREAM_COMM), ZERO_OK);
    ck_assert_int_eq(be->stream_wait_event(dev->self, ZERO_STREAM_COMPUTE, ev), ZERO_OK);
    ck_assert_int_eq(be->event_synchronize(dev->self, ev), ZERO_OK);
    ck_assert_int_eq(be->event_destroy(dev->self, ev), ZERO_OK);
    ck_assert_int_eq(be->synchronize(dev->self), ZERO_OK);
    ck_assert_int_eq(be->event_record(dev->self, ev, (enum zero_stream)5), ZERO_EINVAL);

    be->free(dev->self, a);
    be->free(dev->self, b);
    ck_assert_int_eq(dev->ledger.current[ZERO_TAG_WORKSPACE], 0);
    ck_assert_int_eq(dev->ledger.peak[ZERO_TAG_WORKSPACE], 2 * (int64_t)sizeof(host));
    zero_device_close(dev);
}
END_TEST

START_TEST(test_ledger_counts_live_allocations_and_names_tags)
{
    struct zero_ledger l;
    zero_ledger_reset(&l);
    zero_ledger_add(&l, ZERO_TAG_MASTER, 64);
    zero_ledger_add(&l, ZERO_TAG_GATHER, 128);
    zero_ledger_add(&l, ZERO_TAG_GATHER, -128);
    ck_assert_int_eq(l.allocations, 1);
    ck_assert_int_eq(l.peak[ZERO_TAG_GATHER], 128);
    ck_assert_int_eq(l.peak_total, 192);
    ck_assert_int_eq(zero_ledger_model_states(&l), 64);
    ck_assert_str_eq(zero_tag_name(ZERO_TAG_OPTIM), "optim");
    ck_assert_str_eq(zero_tag_name(ZERO_TAG_ACTIVATIONS), "activations");
    for (int t = 0; t < ZERO_TAG_COUNT; t++)
        ck_assert_str_ne(zero_tag_name(t), "unknown");
    ck_assert_str_eq(zero_tag_name(ZERO_TAG_COUNT), "unknown");
}
END_TEST

/* ---------------------------------------------------------------- small utilities */

START_TEST(test_comm_stats_diff_and_names)
{
    struct zero_comm_stats a = {0}, b = {0}, d;
    a.kind[ZERO_COLL_ALL_GATHER] = (struct zero_coll_counter){5, 500, 400, 1.5};
    b.kind[ZERO_COLL_ALL_GATHER] = (struct zero_coll_counter){2, 200, 100, 0.5};
    zero_comm_stats_diff(&d, &a, &b);
    ck_assert_int_eq(d.kind[ZERO_COLL_ALL_GATHER].calls, 3);
    ck_assert_int_eq(d.kind[ZERO_COLL_ALL_GATHER].payload_bytes, 300);
    ck_assert_int_eq(d.kind[ZERO_COLL_ALL_GATHER].sent_bytes, 300);
    ck_assert(d.kind[ZERO_COLL_ALL_GATHER].seconds == 1.0);
    ck_assert_int_eq(d.kind[ZERO_COLL_BROADCAST].calls, 0);
    ck_assert_str_eq(zero_coll_kind_name(ZERO_COLL_REDUCE_SCATTER), "reduce_scatter");
    ck_assert_str_eq(zero_coll_kind_name(ZERO_COLL_CONTROL), "control");
}
END_TEST

START_TEST(test_error_fail_wrap_and_clear)
{
    struct zero_error err;
    zero_error_clear(&err);
    ck_assert_int_eq(err.code, ZERO_OK);
    ck_assert_int_eq(zero_fail(&err, ZERO_EFORMAT, "section %s: checksum mismatch", "optim"),
                     ZERO_EFORMAT);
    ck_assert_int_eq(zero_error_wrap(&err, "rank %d: ", 2), ZERO_EFORMAT);
    ck_assert_str_eq(err.msg, "rank 2: section optim: checksum mismatch");
    ck_assert_str_eq(zero_status_name(ZERO_EMISMATCH), "EMISMATCH");
    ck_assert_str_eq(zero_status_name(99), "EUNKNOWN");

    char long_text[2 * ZERO_ERRMSG_LEN];
    memset(long_text, 'x', sizeof(long_text) - 1);
    long_text[sizeof(long_text) - 1] = '\0';
    zero_fail(&err, ZERO_EIO, "%s", long_text);
    zero_error_wrap(&err, "file %s: ", "a.bin");
    ck_assert_uint_eq(strlen(err.msg), ZERO_ERRMSG_LEN - 1); /* truncated, terminated */
    ck_assert(strncmp(err.msg, "file a.bin: xxx", 15) == 0);
    ck_assert_int_eq(zero_fail(NULL, ZERO_EIO, "no message buffer"), ZERO_EIO);
}
END_TEST

static Suite *device_suite(void)
{
    Suite *s = suite_create("device");
    TCase *reg = tcase_create("registry");
    tcase_add_test(reg, test_registry_lists_and_finds_the_cpu_backend);
    tcase_add_test(reg, test_backend_check_refuses_a_missing_core_entry_or_a_partial_group);
    tcase_add_test(reg, test_device_open_cpu_reports_rank_and_size);
    tcase_add_test(reg, test_cpu_quant_int8_scales_codes_and_values);
    tcase_add_test(reg, test_cpu_quant_int4_scales_nibbles_and_values);
    tcase_add_test(reg, test_device_open_unknown_backend_names_the_available_ones);
    tcase_add_test(reg, test_exact_mode_runs_blas_on_one_thread_unless_asked);
    suite_add_tcase(s, reg);

    TCase *mem = tcase_create("memory");
    tcase_add_test(mem, test_alloc_and_free_move_current_and_peak_per_tag);
    tcase_add_test(mem, test_alloc_rejects_unknown_tag_and_free_rejects_foreign_pointer);
    tcase_add_test(mem, test_copy_fill_and_host_transfers);
    tcase_add_test(mem, test_ledger_counts_live_allocations_and_names_tags);
    suite_add_tcase(s, mem);

    TCase *util = tcase_create("utilities");
    tcase_add_test(util, test_comm_stats_diff_and_names);
    tcase_add_test(util, test_error_fail_wrap_and_clear);
    suite_add_tcase(s, util);
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    SRunner *sr = srunner_create(device_suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    MPI_Finalize();
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

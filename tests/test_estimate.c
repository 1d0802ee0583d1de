/* The memory estimator against the published numbers, digit for digit: the ZeRO
 * paper's Figure 1 and Table 1, the 7B / 4-rank table, DeepSpeed's memory page
 * (estimate_zero2/3_model_states_mem_needs, printed as bytes / 2^30 with "%.2f"),
 * GPT-2 parameter counts; and the SVG chart names what it draws. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zero/estimate.h"
#include "svg_chart.h"

/* Per-rank device bytes of stage s for Ψ, N, mixed precision, no offload. */
static double stage_bytes(double psi, int n, int s)
{
    struct zero_estimate_stage st[4];
    zero_estimate_stages(psi, n, ZERO_ESTIMATE_MIXED, 0, st);
    return st[s].device;
}

static void check_figure(double psi, int n, int s, const char *want)
{
    char got[32];
    zero_format_gb_figure(got, sizeof got, stage_bytes(psi, n, s));
    ck_assert_msg(strcmp(got, want) == 0, "Ψ %g N %d stage %d: got %s GB, want %s", psi, n, s, got,
                  want);
}

START_TEST(test_figure1_7_5b_on_64_ranks_is_120_31_4_16_6_1_9_gb)
{
    const char *want[4] = {"120", "31.4", "16.6", "1.9"};
    for (int s = 0; s < 4; s++)
        check_figure(7.5e9, 64, s, want[s]);
}
END_TEST

START_TEST(test_7b_on_4_ranks_is_112_49_38_5_28_gb)
{
    const char *want[4] = {"112", "49", "38.5", "28"};
    for (int s = 0; s < 4; s++)
        check_figure(7e9, 4, s, want[s]);
}
END_TEST

/* Table 1 of the ZeRO paper: rows Nd = 1, 4, 16, 64, 256, 1024; columns Pos, Pos+g,
 * Pos+g+p for 7.5B, 128B and 1T parameters. */
static const int table1_n[6] = {1, 4, 16, 64, 256, 1024};
static const double table1_psi[3] = {7.5e9, 128e9, 1e12};
static const char *const table1[6][9] = {
    {"120", "120", "120", "2048", "2048", "2048", "16000", "16000", "16000"},
    {"52.5", "41.3", "30", "896", "704", "512", "7000", "5500", "4000"},
    {"35.6", "21.6", "7.5", "608", "368", "128", "4750", "2875", "1000"},
    {"31.4", "16.6", "1.88", "536", "284", "32", "4187", "2218", "250"},
    {"30.4", "15.4", "0.47", "518", "263", "8", "4046", "2054", "62.5"},
    {"30.1", "15.1", "0.12", "513", "257", "2", "4011", "2013", "15.6"},
};

START_TEST(test_table1_every_row_for_7_5b_128b_and_1t)
{
    for (int row = 0; row < 6; row++)
        for (int m = 0; m < 3; m++)
            for (int s = 1; s <= 3; s++) {
                char got[32];
                zero_format_gb_table(got, sizeof got, stage_bytes(table1_psi[m], table1_n[row], s));
                const char *want = table1[row][3 * m + s - 1];
                ck_assert_msg(strcmp(got, want) == 0, "Ψ %g Nd %d stage %d: got %s, want %s",
                              table1_psi[m], table1_n[row], s, got, want);
            }
}
END_TEST

START_TEST(test_fp32_formulas_are_the_engine_ledger_16_8_8_4_12_16)
{
    struct zero_estimate_stage st[4];
    zero_estimate_stages(1000, 4, ZERO_ESTIMATE_FP32, 0, st);
    const double want[4] = {16000, 8000 + 2000, 4000 + 3000, 4000};
    const int whole[4] = {16, 8, 4, 0}, shard[4] = {0, 8, 12, 16};
    for (int s = 0; s < 4; s++) {
        ck_assert_double_eq(st[s].device, want[s]);
        ck_assert_int_eq(st[s].whole_coef, whole[s]);
        ck_assert_int_eq(st[s].shard_coef, shard[s]);
        ck_assert_double_eq(st[s].master, 0.0);
    }
    char f[48];
    ck_assert_str_eq(zero_estimate_formula(f, sizeof f, 4, 12), "4Ψ + 12Ψ/N");
    ck_assert_str_eq(zero_estimate_formula(f, sizeof f, 0, 16), "16Ψ/N");
}
END_TEST

START_TEST(test_offload_moves_master_and_optimizer_state_to_host)
{
    struct zero_estimate_stage st[4];
    zero_estimate_stages(7e9, 4, ZERO_ESTIMATE_MIXED, 1, st);
    /* device: fp16 params and grads only; host: 12 bytes per parameter, partitioned */
    ck_assert_double_eq(st[0].device, 28e9);
    ck_assert_double_eq(st[0].host, 84e9);
    ck_assert_double_eq(st[2].device, 14e9 + 3.5e9);
    ck_assert_double_eq(st[3].device, 7e9);
    ck_assert_double_eq(st[3].host, 21e9);
    ck_assert_int_eq(st[2].whole_coef, 2);
    ck_assert_int_eq(st[2].shard_coef, 2);
}
END_TEST

START_TEST(test_nvme_moves_the_fp32_side_and_stage3_params_to_disk)
{
    struct zero_estimate_stage st[4];
    zero_estimate_stages(7e9, 4, ZERO_ESTIMATE_MIXED, ZERO_ESTIMATE_OFFLOAD_NVME, st);
    /* stage 1: the device keeps 2 + 2 bytes whole, NVMe 12 bytes partitioned */
    ck_assert_double_eq(st[1].device, 28e9);
    ck_assert_double_eq(st[1].nvme, 21e9);
    ck_assert_double_eq(st[1].host, 0.0);
    ck_assert_int_eq(st[1].nvme_coef, 12);
    /* stage 3: the device keeps the gradient shard; NVMe 14Ψ/N, read again by the gathers */
    ck_assert_double_eq(st[3].device, 3.5e9);
    ck_assert_int_eq(st[3].shard_coef, 2);
    ck_assert_double_eq(st[3].nvme, 24.5e9);
    ck_assert_int_eq(st[3].nvme_coef, 14);
    ck_assert_double_eq(st[3].nvme_written, 24.5e9);
    ck_assert_double_eq(st[3].nvme_read, 24.5e9 + 7e9);
    /* DeepSpeed's cpu-offload rows, their CPU figure on NVMe */
    struct zero_ds_estimate cpu, nv;
    zero_ds_zero3(2851e6, 32e6, 8, 1, 1, 1, 1, 1.5, &cpu);
    zero_ds_zero3_nvme(2851e6, 32e6, 8, 1, 1, 1, 1.5, &nv);
    ck_assert_int_eq(nv.gpu_bytes, cpu.gpu_bytes);
    ck_assert_int_eq(nv.nvme_bytes, cpu.cpu_bytes);
    ck_assert_int_eq(nv.cpu_bytes, 0);
}
END_TEST

/* DeepSpeed prints f"{bytes/2**30:7.2f}GB" */
static void check_ds(const struct zero_ds_estimate *e, const char *cpu, const char *gpu)
{
    char c[32], g[32];
    snprintf(c, sizeof c, "%.2f", (double)e->cpu_bytes / 1073741824.0);
    snprintf(g, sizeof g, "%.2f", (double)e->gpu_bytes / 1073741824.0);
    ck_assert_msg(strcmp(c, cpu) == 0 && strcmp(g, gpu) == 0, "got %s/%s GB, want %s/%s", c, g, cpu,
                  gpu);
}

START_TEST(test_deepspeed_zero2_memory_page_2851m_on_8_gpus)
{
    struct zero_ds_estimate e;
    zero_ds_zero2(2851e6, 8, 1, 1, 1.5, 0, &e);
    check_ds(&e, "127.45", "5.31");
    zero_ds_zero2(2851e6, 8, 1, 0, 1.5, 1, &e); /* the page predates PR #5099 */
    check_ds(&e, "127.45", "15.93");
    zero_ds_zero2(2851e6, 8, 1, 0, 1.5, 0, &e); /* 2Ψ + 18Ψ/N since 0.14.3 */
    check_ds(&e, "127.45", "11.28");
    ck_assert_int_eq(e.gpu_bytes, 5702000000LL + 6414750000LL);
}
END_TEST

START_TEST(test_deepspeed_zero3_memory_page_2851m_32m_largest_on_8_gpus)
{
    /* offload_param, offload_optimizer, zero_init -> per CPU, per GPU */
    static const struct {
        int off, params, init;
        const char *cpu, *gpu;
    } rows[] = {
        {1, 1, 1, "71.69", "0.12"},  {1, 1, 0, "127.45", "0.12"}, {1, 0, 1, "63.72", "0.78"},
        {1, 0, 0, "127.45", "0.78"}, {0, 0, 1, "1.43", "6.09"},   {0, 0, 0, "127.45", "6.09"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct zero_ds_estimate e;
        zero_ds_zero3(2851e6, 32e6, 8, 1, rows[i].off, rows[i].params, rows[i].init, 1.5, &e);
        check_ds(&e, rows[i].cpu, rows[i].gpu);
    }
}
END_TEST

START_TEST(test_deepspeed_zero3_t5_small_on_one_gpu)
{
    /* t5-small: 60,506,624 parameters, largest layer the shared embedding 32128 x 512 */
    static const struct {
        int off, params, init;
        const char *cpu, *gpu;
    } rows[] = {
        {1, 1, 1, "1.52", "0.06"}, {1, 1, 0, "1.52", "0.06"}, {1, 0, 1, "1.35", "0.17"},
        {1, 0, 0, "1.35", "0.17"}, {0, 0, 1, "0.09", "1.08"}, {0, 0, 0, "0.34", "1.08"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct zero_ds_estimate e;
        zero_ds_zero3(60506624, 16449536, 1, 1, rows[i].off, rows[i].params, rows[i].init, 1.5, &e);
        check_ds(&e, rows[i].cpu, rows[i].gpu);
    }
}
END_TEST

START_TEST(test_deepspeed_host_memory_is_per_node)
{
    struct zero_ds_estimate one, two;
    zero_ds_zero3(1e9, 1e7, 4, 1, 1, 1, 1, 1.5, &one);
    zero_ds_zero3(1e9, 1e7, 4, 2, 1, 1, 1, 1.5, &two);
    ck_assert_int_eq(one.cpu_bytes, 27000000000LL);
    ck_assert_int_eq(two.cpu_bytes, 13500000000LL);
    ck_assert_int_eq(one.gpu_bytes, two.gpu_bytes);
}
END_TEST

START_TEST(test_gpt2_small_and_medium_parameter_counts)
{
    struct zero_gpt_shape small = {12, 12, 768, 1024, 50257}, medium = {24, 16, 1024, 1024, 50257};
    struct zero_gpt_count c;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_gpt_count_params(&small, &c, &err), 0);
    ck_assert_int_eq(c.total, 124439808);
    ck_assert_int_eq(c.per_layer, 12 * 768 * 768 + 13 * 768);
    ck_assert_int_eq(c.largest_layer, 50257 * 768); /* the (tied) token embedding */
    ck_assert_int_eq(zero_gpt_count_params(&medium, &c, &err), 0);
    ck_assert_int_eq(c.total, 354823168);
}
END_TEST

START_TEST(test_gpt_shape_with_n_embd_not_divisible_by_heads_is_refused)
{
    struct zero_gpt_shape g = {2, 5, 64, 16, 100};
    struct zero_gpt_count c;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_gpt_count_params(&g, &c, &err), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "n_head"));
}
END_TEST

START_TEST(test_svg_chart_labels_each_segment_and_bar)
{
    struct zero_chart c = {.nsegments = 2, .nbars = 2};
    snprintf(c.title, sizeof c.title, "t & <title>");
    snprintf(c.unit, sizeof c.unit, "GB");
    snprintf(c.segment[0], sizeof c.segment[0], "params");
    snprintf(c.segment[1], sizeof c.segment[1], "optimizer");
    snprintf(c.bar[0].label, sizeof c.bar[0].label, "stage 0");
    snprintf(c.bar[1].label, sizeof c.bar[1].label, "stage 3");
    c.bar[0].value[0] = 4;
    c.bar[0].value[1] = 8;
    c.bar[1].value[0] = 1;
    c.bar[1].value[1] = 2;
    c.bar[1].group = 1;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct zero_error err = {0};
    ck_assert_int_eq(zero_svg_chart_fprint(f, &c, &err), 0);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(text, "<svg"));
    ck_assert_ptr_nonnull(strstr(text, "</svg>"));
    ck_assert_ptr_nonnull(strstr(text, "t &amp; &lt;title&gt;"));
    ck_assert_ptr_nonnull(strstr(text, ">12 GB<")); /* totals on top */
    ck_assert_ptr_nonnull(strstr(text, ">3 GB<"));
    ck_assert_ptr_nonnull(strstr(text, ">stage 3<"));
    int named = 0; /* the category names stand beside the last bar */
    for (const char *p = text; (p = strstr(p, ">optimizer<")); p++)
        named++;
    ck_assert_int_ge(named, 1);
    int rects = 0;
    for (const char *p = text; (p = strstr(p, "<rect x=")); p++)
        rects++;
    ck_assert_int_eq(rects, 4);
    free(text);
}
END_TEST

/* Values read like the text beside the chart: rounded half up to the chart's
 * decimals (1.875 -> 1.9, not %.3g's 1.88), never an exponent (2090, not
 * 2.09e+03); a category no bar has (fp32's master) is not named. */
START_TEST(test_svg_chart_values_follow_the_text_and_absent_categories_are_not_named)
{
    struct zero_chart c = {.nsegments = 3, .nbars = 2, .decimals = 1};
    snprintf(c.unit, sizeof c.unit, "KiB");
    snprintf(c.segment[0], sizeof c.segment[0], "params");
    snprintf(c.segment[1], sizeof c.segment[1], "master");
    snprintf(c.segment[2], sizeof c.segment[2], "grads");
    c.bar[0].value[0] = 2090.0;
    c.bar[0].value[2] = 1.875;
    c.bar[1].value[0] = 1.875;
    c.bar[1].group = 1;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct zero_error err = {0};
    ck_assert_int_eq(zero_svg_chart_fprint(f, &c, &err), 0);
    fclose(f);
    ck_assert_ptr_null(strstr(text, "e+"));
    ck_assert_ptr_nonnull(strstr(text, ">2090<"));
    ck_assert_ptr_nonnull(strstr(text, ">1.9 KiB<"));
    ck_assert_ptr_null(strstr(text, "1.88"));
    ck_assert_ptr_null(strstr(text, ">master<"));
    ck_assert_ptr_nonnull(strstr(text, ">grads<")); /* in the key: the last bar lacks it */
    free(text);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("estimate");
    TCase *t = tcase_create("published numbers");
    tcase_add_test(t, test_figure1_7_5b_on_64_ranks_is_120_31_4_16_6_1_9_gb);
    tcase_add_test(t, test_7b_on_4_ranks_is_112_49_38_5_28_gb);
    tcase_add_test(t, test_table1_every_row_for_7_5b_128b_and_1t);
    tcase_add_test(t, test_fp32_formulas_are_the_engine_ledger_16_8_8_4_12_16);
    tcase_add_test(t, test_offload_moves_master_and_optimizer_state_to_host);
    tcase_add_test(t, test_nvme_moves_the_fp32_side_and_stage3_params_to_disk);
    tcase_add_test(t, test_deepspeed_zero2_memory_page_2851m_on_8_gpus);
    tcase_add_test(t, test_deepspeed_zero3_memory_page_2851m_32m_largest_on_8_gpus);
    tcase_add_test(t, test_deepspeed_zero3_t5_small_on_one_gpu);
    tcase_add_test(t, test_deepspeed_host_memory_is_per_node);
    tcase_add_test(t, test_gpt2_small_and_medium_parameter_counts);
    tcase_add_test(t, test_gpt_shape_with_n_embd_not_divisible_by_heads_is_refused);
    tcase_add_test(t, test_svg_chart_labels_each_segment_and_bar);
    tcase_add_test(t, test_svg_chart_values_follow_the_text_and_absent_categories_are_not_named);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

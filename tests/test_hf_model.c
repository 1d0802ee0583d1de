/* Hugging Face model directories (zero/hf_model.h): config.json read, refused and
 * written; weights read from one file or shards, checked against the config by name
 * and shape, and written back (sharded above a size) to the same bits. The model
 * directory read is tests/fixtures/hf/llama_gqa, as transformers' save_pretrained
 * wrote it (make_llama_fixtures.py). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zero/zero.h"

static void fixture_dir(char *out, size_t n, const char *name)
{
    const char *src = getenv("ZERO_TEST_SRCDIR");
    snprintf(out, n, "%s/fixtures/hf/%s", src ? src : "tests", name);
}

static char *scratch(void)
{
    char tmpl[] = "/tmp/zero-hf-XXXXXX";
    char *d = mkdtemp(tmpl);
    ck_assert(d != NULL);
    return strdup(d);
}

static void remove_tree(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* ---- config.json ---- */

START_TEST(test_hf_config_reads_the_fixture_and_lists_ignored_keys)
{
    char dir[256], path[300], ignored[512];
    fixture_dir(dir, sizeof dir, "llama_gqa");
    snprintf(path, sizeof path, "%s/config.json", dir);
    struct zero_llama_config c;
    struct zero_error err = {0};
    ck_assert_msg(zero_hf_config_read(&c, path, ignored, sizeof ignored, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(c.vocab_size, 64);
    ck_assert_int_eq(c.hidden_size, 32);
    ck_assert_int_eq(c.intermediate_size, 48);
    ck_assert_int_eq(c.num_hidden_layers, 2);
    ck_assert_int_eq(c.num_attention_heads, 4);
    ck_assert_int_eq(c.num_key_value_heads, 2);
    ck_assert_int_eq(c.head_dim, 8);
    ck_assert(c.rms_norm_eps == 1e-5 && c.rope_theta == 500000.0);
    ck_assert_int_eq(c.rope_scaling.type, ZERO_ROPE_SCALING_LLAMA3);
    ck_assert(c.rope_scaling.factor == 8.0 && c.rope_scaling.low_freq_factor == 1.0 &&
              c.rope_scaling.high_freq_factor == 4.0);
    ck_assert_int_eq(c.rope_scaling.original_max_position_embeddings, 16);
    ck_assert(!c.attention_bias && !c.mlp_bias && !c.tie_word_embeddings);
    ck_assert_msg(strstr(ignored, "bos_token_id") && strstr(ignored, "eos_token_id"), "ignored: %s",
                  ignored);
    ck_assert_msg(!strstr(ignored, "hidden_size") && !strstr(ignored, "rope_scaling"),
                  "ignored: %s", ignored);
}
END_TEST

static const char *const tiny =
    "\"vocab_size\": 64, \"hidden_size\": 32, \"intermediate_size\": 48, "
    "\"num_hidden_layers\": 2, \"num_attention_heads\": 4";

/* one member added to the tiny config, and the key the error must name */
static const struct {
    const char *member, *key;
} refused[] = {
    {"\"hidden_act\": \"gelu\"", "hidden_act"},
    {"\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}", "rope_scaling.rope_type"},
    {"\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}", "rope_scaling.rope_type"},
    {"\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0}", "rope_scaling"},
    {"\"rope_scaling\": {\"rope_type\": \"default\", \"factor\": 8.0}", "rope_scaling.factor"},
    {"\"attention_dropout\": 0.1", "attention_dropout"},
    {"\"pretraining_tp\": 2", "pretraining_tp"},
    {"\"partial_rotary_factor\": 0.5", "partial_rotary_factor"},
    {"\"architectures\": [\"MistralForCausalLM\"]", "architectures"},
    {"\"model_type\": \"mistral\"", "model_type"},
    {"\"num_key_value_heads\": 3", "num_key_value_heads"},
    {"\"max_position_embeddings\": \"64\"", "max_position_embeddings"},
    {"\"mlp_bias\": 1", "mlp_bias"},
    /* fuzz/fuzz_hf found it: the tensor count overflowed int64 */
    {"\"max_position_embeddings\": 64, \"head_dim\": 88888888888888848", "past 2^50"},
};

START_TEST(test_hf_config_refuses_math_it_does_not_compute_naming_the_key)
{
    char text[512];
    snprintf(text, sizeof text, "{%s, %s}", refused[_i].member, tiny);
    struct zero_llama_config c;
    struct zero_error err = {0};
    int rc = zero_hf_config_parse(&c, text, strlen(text), "cfg.json", NULL, 0, &err);
    ck_assert_msg(rc != 0, "%s accepted", refused[_i].member);
    ck_assert_msg(strstr(err.msg, "cfg.json") && strstr(err.msg, refused[_i].key), "%s: %s",
                  refused[_i].member, err.msg);
}
END_TEST

/* fuzz/fuzz_hf found it: 500 000 000 layers of 9 tensors overflowed the int tensor
 * count although the parameters stay below 2^50; and a config built in code (not read
 * from a file) whose heads x head_dim overflows int64 */
START_TEST(test_llama_sizes_whose_counts_overflow_are_refused)
{
    const char *text = "{\"vocab_size\": 64, \"hidden_size\": 32, \"intermediate_size\": 48, "
                       "\"num_hidden_layers\": 500000000, \"num_attention_heads\": 4}";
    struct zero_llama_config c;
    struct zero_error err = {0};
    ck_assert(zero_hf_config_parse(&c, text, strlen(text), "cfg.json", NULL, 0, &err) != 0);
    ck_assert_msg(strstr(err.msg, "cfg.json") && strstr(err.msg, "the parameter count overflows"),
                  "%s", err.msg);
    zero_llama_config_default(&c);
    c.num_attention_heads = c.num_key_value_heads = 1 << 20, c.head_dim = INT64_C(1) << 44;
    err = (struct zero_error){0};
    ck_assert(zero_llama_config_check(&c, &err) != 0);
    ck_assert_msg(strstr(err.msg, "the parameter count overflows"), "%s", err.msg);
}
END_TEST

/* A model's size is counted in closed form (walking 2e8 layers' 1.8e9 tensors took
 * minutes: fuzz_hf's timeout); a config naming more layers than a model's units hold is
 * refused at once, naming the key */
START_TEST(test_llama_with_two_hundred_million_layers_is_counted_at_once_and_refused)
{
    struct zero_llama_config c;
    zero_llama_config_default(&c);
    c.vocab_size = c.hidden_size = c.intermediate_size = 2;
    c.num_attention_heads = c.num_key_value_heads = 1, c.head_dim = 2;
    c.num_hidden_layers = 200000000;
    /* embed and lm_head 2 x 4, per layer 7 projections of 2 x 2 and two norms of 2 */
    ck_assert_int_eq(zero_llama_layer_num_parameters(&c), 32);
    ck_assert_int_eq(zero_llama_num_parameters(&c), INT64_C(8) + INT64_C(32) * 200000000 + 2);
    const char *text = "{\"vocab_size\": 2, \"hidden_size\": 2, \"intermediate_size\": 2, "
                       "\"num_hidden_layers\": 200000000, \"num_attention_heads\": 1}";
    struct zero_error err = {0};
    ck_assert(zero_hf_config_parse(&c, text, strlen(text), "cfg.json", NULL, 0, &err) != 0);
    ck_assert_msg(strstr(err.msg, "cfg.json") &&
                      strstr(err.msg, "num_hidden_layers 200000000: more than the 4093"),
                  "%s", err.msg);
    /* the most a model holds: the layers, the embedding, the norm and the head */
    zero_llama_config_default(&c);
    c.num_hidden_layers = ZERO_MAX_UNITS - 3;
    ck_assert_int_eq(zero_llama_config_check(&c, &err), ZERO_OK);
}
END_TEST

START_TEST(test_hf_config_missing_shape_key_is_named)
{
    const char *text = "{\"vocab_size\": 64, \"hidden_size\": 32, \"num_hidden_layers\": 2, "
                       "\"num_attention_heads\": 4}";
    struct zero_llama_config c;
    struct zero_error err = {0};
    ck_assert(zero_hf_config_parse(&c, text, strlen(text), "cfg.json", NULL, 0, &err) != 0);
    ck_assert_msg(strstr(err.msg, "intermediate_size: missing"), "%s", err.msg);
}
END_TEST

START_TEST(test_hf_config_defaults_kv_heads_and_head_dim_and_accepts_rope_parameters)
{
    char text[512];
    snprintf(text, sizeof text,
             "{%s, \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1000.0}, "
             "\"transformers.js_config\": {}, \"sliding_window\": null, \"hidden_act\": "
             "\"silu\"}",
             tiny);
    struct zero_llama_config c;
    struct zero_error err = {0};
    char ignored[256];
    ck_assert_msg(zero_hf_config_parse(&c, text, strlen(text), "cfg.json", ignored, sizeof ignored,
                                       &err) == 0,
                  "%s", err.msg);
    ck_assert_int_eq(c.num_key_value_heads, 4);
    ck_assert_int_eq(c.head_dim, 8);
    ck_assert(c.rope_theta == 1000.0 && c.rope_scaling.type == ZERO_ROPE_SCALING_NONE);
    ck_assert_str_eq(ignored, "transformers.js_config");
}
END_TEST

START_TEST(test_hf_config_written_reads_back_the_same)
{
    char dir[256], path[300];
    fixture_dir(dir, sizeof dir, "llama_gqa");
    snprintf(path, sizeof path, "%s/config.json", dir);
    struct zero_llama_config a, b;
    struct zero_error err = {0};
    ck_assert_msg(zero_hf_config_read(&a, path, NULL, 0, &err) == 0, "%s", err.msg);
    a.rms_norm_eps = 1.0 / 3e5; /* a double that needs all 17 digits */
    char *out = scratch();
    snprintf(path, sizeof path, "%s/config.json", out);
    ck_assert_msg(zero_hf_config_write(&a, ZERO_F32, path, &err) == 0, "%s", err.msg);
    char ignored[256];
    ck_assert_msg(zero_hf_config_read(&b, path, ignored, sizeof ignored, &err) == 0, "%s", err.msg);
    ck_assert(memcmp(&a, &b, sizeof a) == 0);
    ck_assert_msg(strstr(ignored, "torch_dtype") && strstr(ignored, "initializer_range"), "%s",
                  ignored);
    remove_tree(out);
    free(out);
}
END_TEST

/* ---- weights ---- */

struct weights {
    int n;
    char (*names)[ZERO_NAME_LEN];
    float **data;
    size_t *numel;
};

static void load_all(const char *dir, const struct zero_llama_config *c, struct weights *w)
{
    struct zero_hf_weights *f = NULL;
    struct zero_error err = {0};
    ck_assert_msg(zero_hf_weights_open(&f, dir, &err) == 0, "%s", err.msg);
    ck_assert_msg(zero_hf_weights_check_llama(f, c, &err) == 0, "%s", err.msg);
    w->n = zero_llama_tensor_count(c);
    w->names = calloc((size_t)w->n, sizeof *w->names);
    w->data = calloc((size_t)w->n, sizeof *w->data);
    w->numel = calloc((size_t)w->n, sizeof *w->numel);
    for (int k = 0; k < w->n; k++) {
        struct zero_llama_tensor t;
        ck_assert(zero_llama_tensor(c, k, &t, &err) == 0);
        strcpy(w->names[k], t.name);
        w->numel[k] = (size_t)(t.shape[0] * (t.ndim == 2 ? t.shape[1] : 1));
        w->data[k] = malloc(w->numel[k] * sizeof(float));
        int i = zero_hf_weights_find(f, t.name);
        ck_assert_msg(zero_hf_weights_read(f, i, w->data[k], ZERO_F32, w->numel[k], &err) == 0,
                      "%s", err.msg);
    }
    zero_hf_weights_close(f);
}

static void free_all(struct weights *w)
{
    for (int k = 0; k < w->n; k++)
        free(w->data[k]);
    free(w->names);
    free(w->data);
    free(w->numel);
}

static int save_all(const char *dir, const struct zero_llama_config *c, const struct weights *w,
                    enum zero_dtype dtype, int64_t shard_bytes)
{
    struct zero_hf_writer *hw = NULL;
    struct zero_error err = {0};
    ck_assert_msg(zero_hf_writer_begin(&hw, dir, c, dtype, shard_bytes, &err) == 0, "%s", err.msg);
    int shards = zero_hf_writer_shards(hw);
    for (int k = 0; k < w->n; k++)
        ck_assert_msg(zero_hf_writer_put(hw, k, w->data[k], w->numel[k], &err) == 0, "%s", err.msg);
    ck_assert_msg(zero_hf_writer_finish(hw, &err) == 0, "%s", err.msg);
    return shards;
}

static void fixture_config(struct zero_llama_config *c, char *dir, size_t n)
{
    char path[300];
    struct zero_error err = {0};
    fixture_dir(dir, n, "llama_gqa");
    snprintf(path, sizeof path, "%s/config.json", dir);
    ck_assert_msg(zero_hf_config_read(c, path, NULL, 0, &err) == 0, "%s", err.msg);
}

static int same_bits(const struct weights *a, const struct weights *b)
{
    if (a->n != b->n)
        return 0;
    for (int k = 0; k < a->n; k++)
        if (a->numel[k] != b->numel[k] ||
            memcmp(a->data[k], b->data[k], a->numel[k] * sizeof(float)))
            return 0;
    return 1;
}

START_TEST(test_hf_directory_round_trips_to_the_same_bits_one_file_and_sharded)
{
    char dir[256], path[512];
    struct zero_llama_config c;
    fixture_config(&c, dir, sizeof dir);
    struct weights hf, one, sharded;
    load_all(dir, &c, &hf);
    char *out = scratch();
    snprintf(path, sizeof path, "%s/one", out);
    ck_assert_int_eq(save_all(path, &c, &hf, ZERO_F32, 0), 1);
    snprintf(path, sizeof path, "%s/one/model.safetensors.index.json", out);
    ck_assert(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "%s/one", out);
    load_all(path, &c, &one);
    ck_assert(same_bits(&hf, &one));
    /* 20 KB shards: the 8 KB embedding and lm_head each with neighbours, layers split */
    snprintf(path, sizeof path, "%s/sharded", out);
    int shards = save_all(path, &c, &hf, ZERO_F32, 20000);
    ck_assert_msg(shards >= 3, "%d shards", shards);
    snprintf(path, sizeof path, "%s/sharded/model-00002-of-%05d.safetensors", out, shards);
    ck_assert_msg(access(path, F_OK) == 0, "%s missing", path);
    snprintf(path, sizeof path, "%s/sharded", out);
    load_all(path, &c, &sharded);
    ck_assert(same_bits(&hf, &sharded));
    free_all(&hf);
    free_all(&one);
    free_all(&sharded);
    remove_tree(out);
    free(out);
}
END_TEST

/* bf16 and fp16 files widen to fp32 exactly: what was rounded once reads back as is */
START_TEST(test_hf_half_precision_weights_widen_exactly)
{
    enum zero_dtype half = _i ? ZERO_F16 : ZERO_BF16;
    char dir[256], path[512];
    struct zero_llama_config c;
    fixture_config(&c, dir, sizeof dir);
    struct weights hf, first, second;
    load_all(dir, &c, &hf);
    char *out = scratch();
    snprintf(path, sizeof path, "%s/a", out);
    save_all(path, &c, &hf, half, 0);
    load_all(path, &c, &first); /* rounded to half, widened */
    snprintf(path, sizeof path, "%s/b", out);
    save_all(path, &c, &first, half, 30000);
    load_all(path, &c, &second);
    ck_assert(same_bits(&first, &second));
    ck_assert(!same_bits(&hf, &first)); /* it was rounded */
    free_all(&hf);
    free_all(&first);
    free_all(&second);
    remove_tree(out);
    free(out);
}
END_TEST

static void expect_refused(const char *dir, const struct zero_llama_config *c, const char *what)
{
    struct zero_hf_weights *f = NULL;
    struct zero_error err = {0};
    int rc = zero_hf_weights_open(&f, dir, &err);
    if (!rc)
        rc = zero_hf_weights_check_llama(f, c, &err);
    zero_hf_weights_close(f);
    ck_assert_msg(rc != 0, "accepted (wanted an error with %s)", what);
    ck_assert_msg(strstr(err.msg, what), "error \"%s\" does not name %s", err.msg, what);
}

START_TEST(test_hf_sharded_index_with_a_missing_shard_names_it_and_a_tensor)
{
    char dir[256], path[512];
    struct zero_llama_config c;
    fixture_config(&c, dir, sizeof dir);
    struct weights hf;
    load_all(dir, &c, &hf);
    char *out = scratch();
    int shards = save_all(out, &c, &hf, ZERO_F32, 20000);
    char shard[64];
    snprintf(shard, sizeof shard, "model-00002-of-%05d.safetensors", shards);
    snprintf(path, sizeof path, "%s/%s", out, shard);
    ck_assert_int_eq(unlink(path), 0);
    expect_refused(out, &c, shard);
    expect_refused(out, &c, "it holds tensor model.layers.");
    free_all(&hf);
    remove_tree(out);
    free(out);
}
END_TEST

START_TEST(test_hf_misshaped_missing_and_extra_tensors_are_named)
{
    char dir[256];
    struct zero_llama_config c;
    fixture_config(&c, dir, sizeof dir);
    struct weights hf;
    load_all(dir, &c, &hf);
    char *out = scratch();
    save_all(out, &c, &hf, ZERO_F32, 20000);
    struct zero_llama_config wide = c;
    wide.intermediate_size = 40; /* the MLP's shapes differ */
    expect_refused(out, &wide, "model.layers.0.mlp.gate_proj.weight has shape [48, 32]");
    struct zero_llama_config deeper = c;
    deeper.num_hidden_layers = 3;
    expect_refused(out, &deeper, "model.layers.2.self_attn.q_proj.weight [32, 32] is missing");
    struct zero_llama_config shallower = c;
    shallower.num_hidden_layers = 1;
    expect_refused(out, &shallower, "model.layers.1.self_attn.q_proj.weight [32, 32] is not a");
    struct zero_llama_config biased = c;
    biased.attention_bias = 1;
    expect_refused(out, &biased, "model.layers.0.self_attn.q_proj.bias [32] is missing");
    /* an index naming a tensor its shard lacks */
    write_text(out, "model.safetensors.index.json",
               "{\"weight_map\": {\"model.norm.weight\": \"model-00001-of-00009.safetensors\"}}");
    expect_refused(out, &c, "model-00001-of-00009.safetensors");
    free_all(&hf);
    remove_tree(out);
    free(out);
}
END_TEST

START_TEST(test_hf_index_must_be_a_weight_map_of_plain_shard_names)
{
    static const char *const bad[] = {
        "[]",
        "{\"weight_map\": []}",
        "{\"weight_map\": {\"a\": \"../model.safetensors\"}}",
        "{\"weight_map\": {\"a\": \"sub/model.safetensors\"}}",
        "{\"weight_map\": {\"a\": \"model.bin\"}}",
        "{\"weight_map\": {\"a\": 3}}",
        "{\"weight_map\": {}}",
    };
    char *out = scratch();
    struct zero_llama_config c;
    char dir[256];
    fixture_config(&c, dir, sizeof dir);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_text(out, "model.safetensors.index.json", bad[i]);
        expect_refused(out, &c, "model.safetensors.index.json");
    }
    remove_tree(out);
    free(out);
}
END_TEST

static Suite *hf_suite(void)
{
    Suite *s = suite_create("hf_model");
    TCase *cfg = tcase_create("config");
    tcase_add_test(cfg, test_hf_config_reads_the_fixture_and_lists_ignored_keys);
    tcase_add_loop_test(cfg, test_hf_config_refuses_math_it_does_not_compute_naming_the_key, 0,
                        (int)(sizeof refused / sizeof *refused));
    tcase_add_test(cfg, test_hf_config_missing_shape_key_is_named);
    tcase_add_test(cfg, test_llama_sizes_whose_counts_overflow_are_refused);
    tcase_add_test(cfg, test_llama_with_two_hundred_million_layers_is_counted_at_once_and_refused);
    tcase_add_test(cfg, test_hf_config_defaults_kv_heads_and_head_dim_and_accepts_rope_parameters);
    tcase_add_test(cfg, test_hf_config_written_reads_back_the_same);
    suite_add_tcase(s, cfg);
    TCase *w = tcase_create("weights");
    tcase_add_test(w, test_hf_directory_round_trips_to_the_same_bits_one_file_and_sharded);
    tcase_add_loop_test(w, test_hf_half_precision_weights_widen_exactly, 0, 2);
    tcase_add_test(w, test_hf_sharded_index_with_a_missing_shard_names_it_and_a_tensor);
    tcase_add_test(w, test_hf_misshaped_missing_and_extra_tensors_are_named);
    tcase_add_test(w, test_hf_index_must_be_a_weight_map_of_plain_shard_names);
    suite_add_tcase(s, w);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(hf_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* ds_config.json loading: DeepSpeed's keys, defaults and batch rule; every
 * mistake an error naming the key path, with the nearest valid key; "auto";
 * 5e8; duplicates; JSON syntax errors with line and column; the printer and
 * the cross-rank comparison. Good and bad configs are tables of exact
 * expectations. */
#define _GNU_SOURCE /* open_memstream */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zero/config.h"
#include "zero/config_json.h"
#include "zero/error.h"

/* ---- helpers ---- */

static int load(const char *json, int world, struct zero_config *c, struct zero_config_origins *o,
                struct zero_error *err)
{
    return zero_config_load_string(c, o, json, strlen(json), world, 0, err);
}

/* The printed config with every run of spaces squeezed to one: "key = value (origin)". */
static char *printed(const struct zero_config *c, const struct zero_config_origins *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    zero_config_print(f, c, o);
    fclose(f);
    char *w = buf;
    for (const char *r = buf; *r; r++)
        if (!(*r == ' ' && w > buf && w[-1] == ' '))
            *w++ = *r;
    *w = '\0';
    return buf;
}

/* expect is "key = value (origin)" (that whole line is printed) or "!key" (no line for key). */
static void expect_printed(const char *text, const char *expect, const char *name)
{
    char line[320];
    if (expect[0] == '!') {
        snprintf(line, sizeof line, "\n%s = ", expect + 1);
        ck_assert_msg(strstr(text, line) == NULL && strncmp(text, line + 1, strlen(line + 1)) != 0,
                      "%s: %s is printed:\n%s", name, expect + 1, text);
        return;
    }
    snprintf(line, sizeof line, "%s\n", expect);
    const char *at = strstr(text, line);
    ck_assert_msg(at && (at == text || at[-1] == '\n'), "%s: no line \"%s\" in:\n%s", name, expect,
                  text);
}

/* ---- good configs: resolved values and origins ---- */

struct good {
    const char *name, *json;
    int world;
    const char *expect[10];
};

static const struct good goods[] = {
    {"defaults fill every key; batch derived",
     "{\"train_batch_size\": 8}",
     2,
     {"train_batch_size = 8 (file)", "train_micro_batch_size_per_gpu = 4 (derived)",
      "gradient_accumulation_steps = 1 (derived)", "zero_optimization.stage = 0 (default)",
      "zero_optimization.overlap_comm = false (derived)", "optimizer.type = \"Adam\" (default)",
      "optimizer.params.betas = [0.9, 0.999] (default)", "steps_per_print = null (default)",
      "zero_optimization.reduce_bucket_size = 500000000 (default)",
      "!scheduler.params.warmup_min_lr"}},
    {"integral reals for integer keys; stage 3 turns overlap_comm on",
     "{\"train_batch_size\": 8, \"zero_optimization\": {\"stage\": 3, "
     "\"reduce_bucket_size\": 5e8, \"stage3_prefetch_bucket_size\": 1.5e7, "
     "\"stage3_max_live_parameters\": 1E9}}",
     1,
     {"zero_optimization.reduce_bucket_size = 500000000 (file)",
      "zero_optimization.stage3_prefetch_bucket_size = 15000000 (file)",
      "zero_optimization.stage3_max_live_parameters = 1000000000 (file)",
      "zero_optimization.overlap_comm = true (derived)",
      "gradient_accumulation_steps = 1 (derived)"}},
    {"auto, where Hugging Face fills it: DeepSpeed's default until a program resolves it",
     "{\"train_batch_size\": \"auto\", \"train_micro_batch_size_per_gpu\": 2, "
     "\"gradient_accumulation_steps\": \"auto\", \"gradient_clipping\": \"auto\", "
     "\"zero_optimization\": {\"stage\": 2, \"reduce_bucket_size\": \"auto\"}, "
     "\"optimizer\": {\"type\": \"AdamW\", \"params\": {\"lr\": "
     "\"auto\", \"weight_decay\": \"auto\", \"betas\": \"auto\"}}}",
     4,
     {"train_batch_size = 8 (auto, as Hugging Face fills it: world x "
      "per_device_train_batch_size x accumulation)",
      "train_micro_batch_size_per_gpu = 2 (file)",
      "gradient_accumulation_steps = 1 (auto, as Hugging Face fills it: "
      "gradient_accumulation_steps)",
      "gradient_clipping = 1 (auto, as Hugging Face fills it: max_grad_norm)",
      "zero_optimization.reduce_bucket_size = 500000000 (auto, as Hugging Face fills it: "
      "hidden_size^2)",
      "optimizer.params.lr = 0.001 (auto, as Hugging Face fills it: learning_rate)",
      "optimizer.params.betas = [0.9, 0.999] (auto, as Hugging Face fills it: adam_beta1, "
      "adam_beta2)",
      "optimizer.type = \"AdamW\" (file)"}},
    {"fp16 without dynamic keys: DeepSpeed's scaler starts at 2^32, hysteresis 1",
     "{\"train_batch_size\": 4, \"fp16\": {\"enabled\": false, \"loss_scale\": 0}}",
     1,
     {"fp16.initial_scale_power = 32 (derived)", "fp16.hysteresis = 1 (derived)",
      "fp16.loss_scale_window = 1000 (default)", "fp16.loss_scale = 0 (file)",
      "fp16.min_loss_scale = 1 (default)"}},
    {"fp16 with a dynamic key: the documented 16 and 2",
     "{\"train_batch_size\": 4, \"fp16\": {\"enabled\": false, \"loss_scale_window\": 500}}",
     1,
     {"fp16.initial_scale_power = 16 (default)", "fp16.hysteresis = 2 (default)",
      "fp16.loss_scale_window = 500 (file)", "fp16.consecutive_hysteresis = false (default)"}},
    {"fp16 enabled with a static scale; bfloat16 is bf16's old name",
     "{\"train_batch_size\": 4, \"fp16\": {\"enabled\": true, \"loss_scale\": 128}, "
     "\"bfloat16\": {\"enabled\": false}}",
     2,
     {"fp16.enabled = true (file)", "fp16.loss_scale = 128 (file)", "bf16.enabled = false (file)",
      "!bfloat16.enabled"}},
    {"DeepSpeed's field names are aliases of the stage3_ keys",
     "{\"train_micro_batch_size_per_gpu\": 1, \"zero_optimization\": {\"stage\": 3, "
     "\"prefetch_bucket_size\": 1000, \"max_live_parameters\": 2e6, "
     "\"stage3_gather_fp16_weights_on_model_save\": true}}",
     3,
     {"zero_optimization.stage3_prefetch_bucket_size = 1000 (file)",
      "zero_optimization.stage3_max_live_parameters = 2000000 (file)",
      "zero_optimization.stage3_gather_16bit_weights_on_model_save = true (file)",
      "train_batch_size = 3 (derived)", "!zero_optimization.prefetch_bucket_size"}},
    {"SGD by any case, with only SGD's parameters printed",
     "{\"train_batch_size\": 2, \"optimizer\": {\"type\": \"sgd\", \"params\": {\"lr\": 0.1, "
     "\"momentum\": 0.9, \"nesterov\": true}}}",
     2,
     {"optimizer.type = \"SGD\" (file)", "optimizer.params.lr = 0.1 (file)",
      "optimizer.params.momentum = 0.9 (file)", "optimizer.params.nesterov = true (file)",
      "optimizer.params.dampening = 0 (default)", "!optimizer.params.betas",
      "!optimizer.params.eps"}},
    {"WarmupDecayLR with its parameters; AdamW implies adam_w_mode",
     "{\"train_batch_size\": 2, \"optimizer\": {\"type\": \"AdamW\", \"params\": "
     "{\"adam_w_mode\": false}}, \"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": "
     "{\"total_num_steps\": 100, \"warmup_num_steps\": 10, \"warmup_max_lr\": 3e-4, "
     "\"warmup_type\": \"linear\"}}}",
     1,
     {"scheduler.type = \"WarmupDecayLR\" (file)", "scheduler.params.total_num_steps = 100 (file)",
      "scheduler.params.warmup_max_lr = 0.0003 (file)",
      "scheduler.params.warmup_type = \"linear\" (file)",
      "scheduler.params.warmup_min_lr = 0 (default)", "!scheduler.params.cos_min_ratio",
      "optimizer.params.adam_w_mode = true (derived)"}},
    {"libzero's own section",
     "{\"train_batch_size\": 2, \"libzero\": {\"backend\": \"cpu\", \"collectives\": "
     "\"native\", \"align\": 64, \"seed\": 42, \"atom_order\": \"rank_major\", "
     "\"activations\": \"compute\", \"matmul\": \"auto\"}}",
     2,
     {"libzero.backend = \"cpu\" (file)", "libzero.collectives = \"native\" (file)",
      "libzero.align = 64 (file)", "libzero.seed = 42 (file)",
      "libzero.atom_order = \"rank_major\" (file)", "libzero.activations = \"compute\" (file)",
      /* "auto" is matmul's own default value, not Hugging Face's placeholder */
      "libzero.matmul = \"auto\" (file)"}},
    {"null is DeepSpeed's None; DeepSpeed keys given with values that ask for nothing",
     "{\"train_batch_size\": 4, \"gradient_accumulation_steps\": null, \"steps_per_print\": "
     "null, \"scheduler\": null, \"activation_checkpointing\": {\"number_checkpoints\": null, "
     "\"partition_activations\": false}, \"zero_optimization\": {\"offload_optimizer\": "
     "{\"device\": \"none\", \"nvme_path\": null}, \"round_robin_gradients\": false}, "
     "\"prescale_gradients\": false, \"gradient_predivide_factor\": 1.0, "
     "\"zero_allow_untested_optimizer\": true, \"tensorboard\": {\"enabled\": false, "
     "\"output_path\": \"runs\"}, \"wandb\": {}}",
     2,
     {"steps_per_print = null (file)", "gradient_accumulation_steps = 1 (derived)",
      "activation_checkpointing.number_checkpoints = null (file)",
      "zero_optimization.offload_optimizer.device = \"none\" (file)",
      "zero_optimization.offload_optimizer.nvme_path = null (file)",
      "zero_optimization.offload_param.buffer_count = 5 (default)",
      "zero_optimization.offload_optimizer.buffer_count = 4 (default)",
      "!scheduler.params.warmup_num_steps"}},
    {"ZeRO++'s non-trainable weights: accepted either way, every parameter here trains",
     "{\"train_batch_size\": 2, \"zero_optimization\": {\"stage\": 3, "
     "\"zero_quantized_weights\": true, \"zero_quantized_nontrainable_weights\": true}}",
     2,
     {"zero_optimization.stage = 3 (file)",
      "zero_optimization.zero_quantized_weights = true (file)"}},
    {"world unknown: the batch sizes not given stay null",
     "{\"train_micro_batch_size_per_gpu\": 4}",
     0,
     {"train_batch_size = null (default)", "train_micro_batch_size_per_gpu = 4 (file)",
      "gradient_accumulation_steps = null (default)"}},
};

START_TEST(test_good_configs_resolve_to_the_table)
{
    const struct good *g = &goods[_i];
    struct zero_config c;
    struct zero_config_origins o;
    struct zero_error err = {0};
    int rc = load(g->json, g->world, &c, &o, &err);
    ck_assert_msg(rc == ZERO_OK, "%s: %s", g->name, err.msg);
    char *text = printed(&c, &o);
    for (int i = 0; i < 10 && g->expect[i]; i++)
        expect_printed(text, g->expect[i], g->name);
    free(text);
}
END_TEST

/* ---- bad configs: the exact message ---- */

struct bad {
    const char *json;
    int world, code;
    const char *msg;
};

static const struct bad bads[] = {
    /* names */
    {"{\"zero_optimization\": {\"stage3_prefetch_bucket_sise\": 5}}", 1, ZERO_EINVAL,
     "config: zero_optimization.stage3_prefetch_bucket_sise: unknown key; did you mean "
     "zero_optimization.stage3_prefetch_bucket_size?"},
    {"{\"train_batch_size\": 2, \"gradient_acumulation_steps\": 1}", 1, ZERO_EINVAL,
     "config: gradient_acumulation_steps: unknown key; did you mean gradient_accumulation_steps?"},
    {"{\"stage\": 2}", 1, ZERO_EINVAL,
     "config: stage: unknown key; did you mean zero_optimization.stage?"},
    {"{\"libzero\": {\"colectives\": \"exact\"}}", 1, ZERO_EINVAL,
     "config: libzero.colectives: unknown key; did you mean libzero.collectives?"},
    /* CUDA Graphs: only the cuda backend captures, and never around offload's host waits */
    {"{\"train_batch_size\": 2, \"libzero\": {\"cuda_graphs\": true}}", 1, ZERO_EINVAL,
     "config: libzero.cuda_graphs = true needs libzero.backend = \"cuda\" (backend is \"cpu\")"},
    {"{\"train_batch_size\": 2, \"libzero\": {\"backend\": \"cuda\", \"cuda_graphs\": true}, "
     "\"zero_optimization\": {\"stage\": 2, \"offload_optimizer\": {\"device\": \"cpu\"}}}",
     1, ZERO_EINVAL,
     "config: libzero.cuda_graphs = true cannot be combined with "
     "zero_optimization.offload_optimizer: "
     "the host waits for the offloaded states' copies, which a graph cannot hold"},
    {"{\"libzero\": {\"cuda_graphs\": 1}}", 1, ZERO_EINVAL,
     "config: libzero.cuda_graphs: expected true or false, got 1"},
    {"{\"train_batch_size\": 8, \"foo_bar_baz\": 1}", 1, ZERO_EINVAL,
     "config: foo_bar_baz: unknown key"},
    {"{\"zero_optimization.stage\": 3}", 1, ZERO_EINVAL,
     "config: \"zero_optimization.stage\": unknown key; sections are nested objects "
     "({\"zero_optimization\": {\"stage\": 3}}), not dotted names"},
    {"{\"zero_optimization\": {\"stage3_prefetch_bucket_size\": 1, \"prefetch_bucket_size\": "
     "2}}",
     1, ZERO_EINVAL,
     "config: zero_optimization.stage3_prefetch_bucket_size and "
     "zero_optimization.prefetch_bucket_size are the same key; give one"},
    /* types and ranges */
    {"{\"zero_optimization\": {\"reduce_bucket_size\": 5.5}}", 1, ZERO_EINVAL,
     "config: zero_optimization.reduce_bucket_size: expected an integer >= 1, got 5.5"},
    {"{\"zero_optimization\": {\"reduce_bucket_size\": 1e19}}", 1, ZERO_EINVAL,
     "config: zero_optimization.reduce_bucket_size: expected an integer >= 1, got 1e19"},
    {"{\"zero_optimization\": {\"stage\": \"3\"}}", 1, ZERO_EINVAL,
     "config: zero_optimization.stage: expected an integer from 0 to 3, got \"3\""},
    {"{\"zero_optimization\": {\"stage\": 4}}", 1, ZERO_EINVAL,
     "config: zero_optimization.stage: expected an integer from 0 to 3, got 4"},
    {"{\"zero_optimization\": {\"overlap_comm\": \"auto\"}}", 1, ZERO_EINVAL,
     "config: zero_optimization.overlap_comm: \"auto\" is resolved only for the keys DeepSpeed's "
     "Hugging Face integration fills, and it does not fill overlap_comm; give a value"},
    {"{\"zero_optimization\": {\"stage\": \"auto\"}}", 1, ZERO_EINVAL,
     "config: zero_optimization.stage: \"auto\" is resolved only for the keys DeepSpeed's "
     "Hugging Face integration fills, and it does not fill stage; give a value"},
    {"{\"optimizer\": {\"type\": \"auto\"}}", 1, ZERO_EINVAL,
     "config: optimizer.type: \"auto\" is resolved only for the keys DeepSpeed's "
     "Hugging Face integration fills, and it does not fill type; give a value"},
    {"{\"zero_optimization\": {\"overlap_comm\": 1}}", 1, ZERO_EINVAL,
     "config: zero_optimization.overlap_comm: expected true or false, got 1"},
    {"{\"zero_optimization\": 3}", 1, ZERO_EINVAL,
     "config: zero_optimization: expected an object, got 3"},
    {"{\"train_batch_size\": 0}", 1, ZERO_EINVAL,
     "config: train_batch_size: expected an integer >= 1, got 0"},
    {"{\"gradient_clipping\": -1}", 1, ZERO_EINVAL,
     "config: gradient_clipping: expected a number >= 0, got -1"},
    {"{\"optimizer\": {\"type\": \"Adam\", \"params\": {\"betas\": [0.9]}}}", 1, ZERO_EINVAL,
     "config: optimizer.params.betas: expected two numbers from 0 to 1, got [0.9]"},
    {"{\"optimizer\": {\"type\": \"Adamm\"}}", 1, ZERO_EINVAL,
     "config: optimizer.type: expected one of Adam, AdamW, SGD, got \"Adamm\""},
    {"{\"libzero\": {\"backend\": \"gpu\"}}", 1, ZERO_EINVAL,
     "config: libzero.backend: expected one of cpu, cuda, got \"gpu\""},
    {"{\"libzero\": {\"atom_order\": \"rank-major\"}}", 1, ZERO_EINVAL,
     "config: libzero.atom_order: expected one of micro_step_major, rank_major, got "
     "\"rank-major\""},
    {"{\"libzero\": {\"activations\": \"bf16\"}}", 1, ZERO_EINVAL,
     "config: libzero.activations: expected one of fp32, compute, got \"bf16\""},
    {"[1, 2]", 1, ZERO_EFORMAT, "config: expected a JSON object at the top, got [1,2]"},
    /* what belongs to what */
    {"{\"optimizer\": {\"type\": \"SGD\", \"params\": {\"lr\": 0.1, \"betas\": [0.9, 0.99]}}}", 1,
     ZERO_EINVAL,
     "config: optimizer.params.betas: not a parameter of SGD (it takes lr, weight_decay, "
     "momentum, dampening, nesterov)"},
    {"{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"total_num_steps\": 10}}}", 1,
     ZERO_EINVAL,
     "config: scheduler.params.total_num_steps: not a parameter of WarmupLR (it takes "
     "warmup_min_lr, warmup_max_lr, warmup_num_steps, warmup_type)"},
    {"{\"optimizer\": {\"params\": {\"lr\": 0.1}}}", 1, ZERO_EINVAL,
     "config: optimizer.params: given without optimizer.type"},
    {"{\"train_batch_size\": 2, \"scheduler\": {\"type\": \"WarmupCosineLR\"}}", 1, ZERO_EINVAL,
     "config: scheduler.params.total_num_steps: required by WarmupCosineLR"},
    {"{\"train_batch_size\": 2, \"optimizer\": {\"type\": \"SGD\", \"params\": {\"nesterov\": "
     "true}}}",
     1, ZERO_EINVAL,
     "config: optimizer.params.nesterov=true: needs momentum > 0 and dampening 0 (got momentum "
     "0, dampening 0)"},
    {"{\"train_batch_size\": 2, \"fp16\": {\"enabled\": true}, \"bfloat16\": {\"enabled\": "
     "true}}",
     1, ZERO_EINVAL, "config: fp16.enabled and bf16.enabled are both true; choose one"},
    {"{\"bf16\": {\"enabled\": true}, \"bfloat16\": {\"enabled\": true}}", 1, ZERO_EINVAL,
     "config: bf16.enabled and bfloat16.enabled are the same key; give one"},
    /* known to DeepSpeed, not implemented here */
    {"{\"optimizer\": {\"type\": \"Lamb\"}}", 1, ZERO_ENOTSUP,
     "config: optimizer.type=Lamb: DeepSpeed's Lamb is not implemented yet in this build "
     "(implemented: Adam, AdamW, SGD)"},
    {"{\"train_batch_size\": 2, \"aio\": {\"block_size\": 1048576, \"use_gds\": true}}", 1,
     ZERO_ENOTSUP,
     "config: aio.use_gds=true: GPUDirect Storage is not implemented yet in this build"},
    {"{\"train_batch_size\": 2, \"activation_checkpointing\": {\"partition_activations\": "
     "true}}",
     1, ZERO_ENOTSUP,
     "config: activation_checkpointing.partition_activations=true: activation partitioning is "
     "not implemented yet in this build"},
    {"{\"prescale_gradients\": true}", 1, ZERO_ENOTSUP,
     "config: prescale_gradients=true: gradient prescaling is not implemented yet in this build"},
    {"{\"tensorboard\": {\"enabled\": true, \"output_path\": \"runs\"}}", 1, ZERO_ENOTSUP,
     "config: tensorboard.enabled=true: TensorBoard monitoring is not implemented yet in this "
     "build"},
    {"{\"optimizer\": {\"type\": \"Adam\", \"params\": {\"amsgrad\": true}}}", 1, ZERO_ENOTSUP,
     "config: optimizer.params.amsgrad=true: AMSGrad is not implemented yet in this build"},
    /* JSON itself */
    {"{\"zero_optimization\": {\"stage\": 1,\n \"stage\": 2}}", 1, ZERO_EFORMAT,
     "config:2:8: invalid JSON: duplicate object key near '\"stage\"'"},
    {"{\n  \"train_batch_size\": 8,\n  \"zero_optimization\": {\"stage\": 2,}\n}", 1, ZERO_EFORMAT,
     "config:3:36: invalid JSON: string or '}' expected near '}'"},
    {"", 1, ZERO_EFORMAT, "config:1:0: invalid JSON: '[' or '{' expected near end of file"},
};

START_TEST(test_bad_configs_fail_with_the_exact_message)
{
    const struct bad *b = &bads[_i];
    struct zero_config c;
    zero_config_defaults(&c);
    c.zero_optimization.stage = 2; /* a failed load leaves the config as it was */
    struct zero_error err = {0};
    int rc = load(b->json, b->world, &c, NULL, &err);
    ck_assert_msg(rc == b->code, "%s: status %d (%s), expected %d", b->json, rc, err.msg, b->code);
    ck_assert_str_eq(err.msg, b->msg);
    ck_assert_int_eq(c.zero_optimization.stage, 2);
}
END_TEST

/* ---- DeepSpeed's batch rule through the loader, case by case ---- */

struct batch_case {
    const char *json;
    int world;
    long long train, micro, acc; /* expected; train < 0: the error below */
    const char *msg;
};

static const struct batch_case batch_cases[] = {
    {"{\"train_batch_size\": 32}", 4, 32, 8, 1, NULL},
    {"{\"train_micro_batch_size_per_gpu\": 3}", 2, 6, 3, 1, NULL},
    {"{\"train_micro_batch_size_per_gpu\": 3, \"gradient_accumulation_steps\": 5}", 2, 30, 3, 5,
     NULL},
    {"{\"train_batch_size\": 32, \"train_micro_batch_size_per_gpu\": 2}", 4, 32, 2, 4, NULL},
    {"{\"train_batch_size\": 32, \"gradient_accumulation_steps\": 2}", 4, 32, 4, 2, NULL},
    {"{\"train_batch_size\": 24, \"train_micro_batch_size_per_gpu\": 4, "
     "\"gradient_accumulation_steps\": 2}",
     3, 24, 4, 2, NULL},
    {"{\"train_batch_size\": 24, \"train_micro_batch_size_per_gpu\": 4, "
     "\"gradient_accumulation_steps\": 3}",
     3, -1, 0, 0,
     "config: train_batch_size 24 != train_micro_batch_size_per_gpu 4 * "
     "gradient_accumulation_steps 3 * world size 3 = 36"},
    {"{\"train_batch_size\": 10}", 4, -1, 0, 0,
     "config: train_batch_size 10 is not divisible by world size 4"},
    {"{\"train_batch_size\": 12, \"train_micro_batch_size_per_gpu\": 5}", 2, -1, 0, 0,
     "config: train_batch_size 12 is not divisible by train_micro_batch_size_per_gpu 5 * world "
     "size 2 = 10"},
    {"{\"train_batch_size\": 12, \"gradient_accumulation_steps\": 4}", 2, -1, 0, 0,
     "config: train_batch_size 12 is not divisible by gradient_accumulation_steps 4 * world "
     "size 2 = 8"},
    {"{\"gradient_accumulation_steps\": 2}", 2, -1, 0, 0,
     "config: either train_batch_size or train_micro_batch_size_per_gpu needs to be provided"},
    {"{\"gradient_accumulation_steps\": 2}", 0, -1, 0, 0,
     "config: either train_batch_size or train_micro_batch_size_per_gpu needs to be provided"},
    /* both "auto": the program fills them from its flags */
    {"{\"train_batch_size\": \"auto\", \"train_micro_batch_size_per_gpu\": \"auto\"}", 2, 0, 0, 0,
     NULL},
};

START_TEST(test_batch_rule_case_by_case)
{
    const struct batch_case *b = &batch_cases[_i];
    struct zero_config c;
    struct zero_error err = {0};
    int rc = load(b->json, b->world, &c, NULL, &err);
    if (b->train < 0) {
        ck_assert_int_eq(rc, ZERO_EINVAL);
        ck_assert_str_eq(err.msg, b->msg);
        return;
    }
    ck_assert_msg(rc == ZERO_OK, "%s: %s", b->json, err.msg);
    ck_assert_int_eq(c.train_batch_size, b->train);
    ck_assert_int_eq(c.train_micro_batch_size_per_gpu, b->micro);
    ck_assert_int_eq(c.gradient_accumulation_steps, b->acc);
}
END_TEST

/* ---- mixed precision: an error exactly while this build lacks it ---- */

START_TEST(test_mixed_precision_is_refused_exactly_while_unsupported)
{
    static const char *const files[][2] = {
        {"{\"train_batch_size\": 2, \"fp16\": {\"enabled\": true}}", "fp16"},
        {"{\"train_batch_size\": 2, \"bf16\": {\"enabled\": true}}", "bf16"},
    };
    for (int i = 0; i < 2; i++) {
        struct zero_config probe;
        zero_config_defaults(&probe);
        *(i ? &probe.bf16.enabled : &probe.fp16.enabled) = 1;
        char why[256];
        int lacking = zero_config_unsupported(&probe, why, sizeof why);
        struct zero_config c;
        struct zero_error err = {0};
        int rc = load(files[i][0], 1, &c, NULL, &err);
        if (lacking) {
            char want[300];
            snprintf(want, sizeof want,
                     "%s.enabled=true: mixed precision is not implemented "
                     "yet in this build",
                     files[i][1]);
            ck_assert_str_eq(why, want);
            ck_assert_int_eq(rc, ZERO_ENOTSUP);
            snprintf(want, sizeof want, "config: %s", why);
            ck_assert_str_eq(err.msg, want);
        } else {
            ck_assert_msg(rc == ZERO_OK, "%s", err.msg);
            ck_assert_int_eq(i ? c.bf16.enabled : c.fp16.enabled, 1);
        }
    }
}
END_TEST

START_TEST(test_defaults_ask_for_nothing_unsupported)
{
    struct zero_config c;
    zero_config_defaults(&c);
    char why[256] = "x";
    ck_assert_int_eq(zero_config_unsupported(&c, why, sizeof why), 0);
    ck_assert_str_eq(why, "");
    c.activation_checkpointing.cpu_checkpointing = 1;
    ck_assert_int_eq(zero_config_unsupported(&c, why, sizeof why), 1);
    ck_assert_str_eq(why, "activation_checkpointing.cpu_checkpointing=true: activation "
                          "checkpointing to the CPU is not implemented yet in this build");
}
END_TEST

/* ---- files ---- */

static void path_of(char *buf, size_t len, const char *rel)
{
    const char *src = getenv("ZERO_TEST_SRCDIR");
    snprintf(buf, len, "%s/%s", src ? src : "tests", rel);
}

START_TEST(test_example_configs_load_with_their_stage)
{
    for (int stage = 0; stage <= 3; stage++) {
        char rel[64], path[512];
        snprintf(rel, sizeof rel, "../examples/configs/stage%d.json", stage);
        path_of(path, sizeof path, rel);
        struct zero_config c;
        struct zero_config_origins o;
        struct zero_error err = {0};
        ck_assert_msg(zero_config_load_file(&c, &o, path, 2, 0, &err) == ZERO_OK, "%s", err.msg);
        ck_assert_int_eq(c.zero_optimization.stage, stage);
        ck_assert_int_eq(c.train_batch_size, 16);
        ck_assert_int_eq(c.gradient_accumulation_steps, 2);
        ck_assert_int_eq(zero_config_origin_of(&o, "gradient_accumulation_steps"),
                         ZERO_ORIGIN_DERIVED);
        ck_assert_int_eq(c.optimizer.type, ZERO_OPTIM_ADAMW);
        ck_assert_int_eq(c.scheduler.type, ZERO_SCHED_WARMUP_LR);
        ck_assert_int_eq(c.zero_optimization.overlap_comm, stage >= 2);
    }
}
END_TEST

/* fp16, bf16 and offload load exactly when zero_config_unsupported accepts them. */
START_TEST(test_feature_example_configs_agree_with_the_unsupported_table)
{
    static const char *const names[] = {"fp16", "bf16", "offload"};
    for (int i = 0; i < 3; i++) {
        char rel[64], path[512];
        snprintf(rel, sizeof rel, "../examples/configs/%s.json", names[i]);
        path_of(path, sizeof path, rel);
        struct zero_config c;
        zero_config_defaults(&c);
        c.fp16.enabled = i == 0;
        c.bf16.enabled = i == 1;
        c.zero_optimization.offload_optimizer.device = i == 2 ? ZERO_OFFLOAD_CPU : 0;
        char why[256];
        int lacking = zero_config_unsupported(&c, why, sizeof why);
        struct zero_error err = {0};
        int rc = zero_config_load_file(&c, NULL, path, 2, 0, &err);
        if (lacking) {
            ck_assert_int_eq(rc, ZERO_ENOTSUP);
            ck_assert_msg(strstr(err.msg, "not implemented") &&
                              strncmp(err.msg, path, strlen(path)) == 0,
                          "%s", err.msg);
        } else {
            ck_assert_msg(rc == ZERO_OK, "%s", err.msg);
        }
    }
}
END_TEST

START_TEST(test_syntax_error_in_a_file_names_file_line_and_column)
{
    char path[512], want[600];
    path_of(path, sizeof path, "configs/bad_syntax.json");
    struct zero_config c;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_config_load_file(&c, NULL, path, 1, 0, &err), ZERO_EFORMAT);
    snprintf(want, sizeof want, "%s:5:11: invalid JSON: '}' expected near '\"stage\"'", path);
    ck_assert_str_eq(err.msg, want);
}
END_TEST

START_TEST(test_missing_file_is_an_io_error_naming_it)
{
    struct zero_config c;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_config_load_file(&c, NULL, "no/such/ds.json", 1, 0, &err), ZERO_EIO);
    ck_assert_msg(strncmp(err.msg, "no/such/ds.json: ", 17) == 0 && strstr(err.msg, "No such file"),
                  "%s", err.msg);
}
END_TEST

/* ---- keep: a program's defaults under the file ---- */

START_TEST(test_keep_leaves_absent_keys_and_resets_a_given_optimizer)
{
    struct zero_config c;
    zero_config_defaults(&c);
    c.optimizer.type = ZERO_OPTIM_ADAMW;
    c.optimizer.weight_decay = 0.01;
    c.libzero.align = 64;
    const char *json = "{\"zero_optimization\": {\"stage\": 3}}";
    struct zero_config_origins o;
    struct zero_error err = {0};
    ck_assert_int_eq(zero_config_load_string(&c, &o, json, strlen(json), 0, ZERO_CONFIG_KEEP, &err),
                     ZERO_OK);
    ck_assert_int_eq(c.zero_optimization.stage, 3);
    ck_assert_int_eq(c.libzero.align, 64);
    ck_assert(c.optimizer.weight_decay == 0.01);
    ck_assert_int_eq(c.zero_optimization.overlap_comm, 1);
    json = "{\"optimizer\": {\"type\": \"Adam\", \"params\": {\"lr\": 0.01}}}";
    ck_assert_int_eq(zero_config_load_string(&c, &o, json, strlen(json), 0, ZERO_CONFIG_KEEP, &err),
                     ZERO_OK);
    ck_assert_int_eq(c.optimizer.type, ZERO_OPTIM_ADAM);
    ck_assert(c.optimizer.lr == 0.01);
    ck_assert(c.optimizer.weight_decay == 0.0); /* DeepSpeed's Adam default, not the program's */
}
END_TEST

/* ---- printer and comparison ---- */

START_TEST(test_printer_writes_each_key_once_in_order)
{
    struct zero_config c;
    struct zero_config_origins o;
    struct zero_error err = {0};
    ck_assert_int_eq(load("{\"train_batch_size\": 4}", 2, &c, &o, &err), ZERO_OK);
    char *text = printed(&c, &o);
    const char *order[] = {"train_batch_size = ",
                           "optimizer.type = ",
                           "fp16.enabled = ",
                           "bf16.enabled = ",
                           "gradient_clipping = ",
                           "zero_optimization.stage = ",
                           "activation_checkpointing.profile = ",
                           "steps_per_print = ",
                           "libzero.seed = "};
    const char *prev = text;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const char *at = strstr(text, order[i]);
        ck_assert_msg(at && at >= prev, "%s out of order", order[i]);
        ck_assert_msg(strstr(at + 1, order[i]) == NULL, "%s printed twice", order[i]);
        prev = at;
    }
    int lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    /* 3 batch + type + 6 Adam params + type + 7 fp16 + 1 bf16 + clipping + 15 zero
     * + 8 + 6 offload + 6 aio + 6 activation checkpointing + 2 logging + 9 libzero
     * + 2 MiCS (mics_shard_size, mics_hierarchical_params_gather) + 1 qwZ
     * (zero_quantized_weights) + 2 qgZ (zero_quantized_gradients, libzero.qgz_bits) */
    ck_assert_int_eq(lines, 78);
    free(text);
}
END_TEST

START_TEST(test_diff_names_the_first_differing_key)
{
    struct zero_config a, b;
    zero_config_defaults(&a);
    zero_config_defaults(&b);
    char key[128] = "x";
    ck_assert_int_eq(zero_config_diff(&a, &b, key, sizeof key), 0);
    ck_assert_str_eq(key, "");
    b.libzero.coll_mode = ZERO_COLL_NATIVE;
    b.zero_optimization.stage3_max_live_parameters = 7;
    ck_assert_int_eq(zero_config_diff(&a, &b, key, sizeof key), 1);
    ck_assert_str_eq(key, "zero_optimization.stage3_max_live_parameters");
    b = a;
    snprintf(b.libzero.backend, sizeof b.libzero.backend, "cuda");
    ck_assert_int_eq(zero_config_diff(&a, &b, key, sizeof key), 1);
    ck_assert_str_eq(key, "libzero.backend");
    b = a;
    b.optimizer.betas[1] = 0.99;
    ck_assert_int_eq(zero_config_diff(&a, &b, key, sizeof key), 1);
    ck_assert_str_eq(key, "optimizer.params.betas");
    b = a;
    b.zero_optimization.offload_param.buffer_size = 1;
    ck_assert_int_eq(zero_config_diff(&a, &b, key, sizeof key), 1);
    ck_assert_str_eq(key, "zero_optimization.offload_param.buffer_size");
}
END_TEST

START_TEST(test_origin_names_and_lookup)
{
    ck_assert_str_eq(zero_config_origin_name(ZERO_ORIGIN_FILE), "file");
    ck_assert_str_eq(zero_config_origin_name(ZERO_ORIGIN_DEFAULT), "default");
    ck_assert_str_eq(zero_config_origin_name(ZERO_ORIGIN_DERIVED), "derived");
    ck_assert_str_eq(zero_config_origin_name(ZERO_ORIGIN_AUTO), "auto");
    struct zero_config c;
    struct zero_config_origins o;
    struct zero_error err = {0};
    ck_assert_int_eq(load("{\"train_batch_size\": 4, \"zero_optimization\": {\"max_live_parameters"
                          "\": 5}}",
                          1, &c, &o, &err),
                     ZERO_OK);
    ck_assert_int_eq(zero_config_origin_of(&o, "zero_optimization.stage3_max_live_parameters"),
                     ZERO_ORIGIN_FILE);
    ck_assert_int_eq(zero_config_origin_of(&o, "zero_optimization.max_live_parameters"),
                     ZERO_ORIGIN_FILE);
    ck_assert_int_eq(zero_config_origin_of(&o, "no.such.key"), -1);
}
END_TEST

/* "auto" resolved as Hugging Face's integration would, from what the program
 * knows: the steps, the hidden size, its flags; nothing is left pending. */
START_TEST(test_auto_resolves_from_steps_hidden_size_and_the_program)
{
    const char *json =
        "{\"train_micro_batch_size_per_gpu\": 2, \"optimizer\": {\"type\": \"AdamW\", "
        "\"params\": {\"lr\": 3e-4}}, \"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": "
        "{\"warmup_min_lr\": \"auto\", \"warmup_max_lr\": \"auto\", \"warmup_num_steps\": "
        "\"auto\", \"total_num_steps\": \"auto\"}}, \"zero_optimization\": {\"stage\": 3, "
        "\"reduce_bucket_size\": \"auto\", \"stage3_prefetch_bucket_size\": \"auto\", "
        "\"stage3_param_persistence_threshold\": \"auto\", "
        "\"stage3_gather_16bit_weights_on_model_save\": \"auto\"}, \"gradient_clipping\": "
        "\"auto\"}";
    struct zero_config c;
    struct zero_error err = {0};
    ck_assert_msg(load(json, 1, &c, NULL, &err) == 0, "%s", err.msg);
    char key[128];
    ck_assert_int_eq(zero_config_auto_pending(&c, key, sizeof key), 1);
    ck_assert_str_eq(key, "scheduler.params.warmup_min_lr"); /* the first in the table order */
    static const struct zero_config_auto_flag flags[] = {{"gradient_clipping", "--clip"},
                                                         {NULL, NULL}};
    struct zero_config_auto_inputs in = {.flags = flags,
                                         .steps = 10,
                                         .steps_flag = "--steps",
                                         .warmup_steps = 3,
                                         .hidden = 16,
                                         .hidden_flag = "--hidden"};
    char *log = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&log, &len);
    ck_assert_int_eq(zero_config_resolve_auto(&c, &in, f, &err), 0);
    fclose(f);
    ck_assert_int_eq(zero_config_auto_pending(&c, NULL, 0), 0);
    ck_assert(c.scheduler.warmup_max_lr == 3e-4);
    ck_assert_int_eq(c.scheduler.total_num_steps, 10);
    ck_assert_int_eq(c.scheduler.warmup_num_steps, 3);
    ck_assert_int_eq(c.zero_optimization.reduce_bucket_size, 256);
    ck_assert_int_eq(c.zero_optimization.stage3_prefetch_bucket_size, 230);
    ck_assert_int_eq(c.zero_optimization.stage3_param_persistence_threshold, 160);
    ck_assert_int_eq(c.zero_optimization.stage3_gather_16bit_weights_on_model_save, 0);
    ck_assert(c.gradient_clipping == 1.0);
    ck_assert_ptr_nonnull(strstr(log, "config: gradient_clipping = auto -> 1 (from --clip)\n"));
    ck_assert_ptr_nonnull(
        strstr(log, "config: scheduler.params.total_num_steps = auto -> 10 (from --steps)\n"));
    free(log);

    /* a step count the run does not have is an error naming the key */
    ck_assert_int_eq(load(json, 1, &c, NULL, &err), 0);
    in.steps = 0;
    ck_assert_int_eq(zero_config_resolve_auto(&c, &in, NULL, &err), ZERO_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "scheduler.params.total_num_steps"));
}
END_TEST

static Suite *config_json_suite(void)
{
    Suite *s = suite_create("config_json");
    TCase *tc = tcase_create("tables");
    tcase_add_loop_test(tc, test_good_configs_resolve_to_the_table, 0,
                        (int)(sizeof goods / sizeof goods[0]));
    tcase_add_loop_test(tc, test_bad_configs_fail_with_the_exact_message, 0,
                        (int)(sizeof bads / sizeof bads[0]));
    tcase_add_loop_test(tc, test_batch_rule_case_by_case, 0,
                        (int)(sizeof batch_cases / sizeof batch_cases[0]));
    suite_add_tcase(s, tc);
    tc = tcase_create("features_files_printing");
    tcase_add_test(tc, test_mixed_precision_is_refused_exactly_while_unsupported);
    tcase_add_test(tc, test_defaults_ask_for_nothing_unsupported);
    tcase_add_test(tc, test_example_configs_load_with_their_stage);
    tcase_add_test(tc, test_feature_example_configs_agree_with_the_unsupported_table);
    tcase_add_test(tc, test_syntax_error_in_a_file_names_file_line_and_column);
    tcase_add_test(tc, test_missing_file_is_an_io_error_naming_it);
    tcase_add_test(tc, test_keep_leaves_absent_keys_and_resets_a_given_optimizer);
    tcase_add_test(tc, test_printer_writes_each_key_once_in_order);
    tcase_add_test(tc, test_diff_names_the_first_differing_key);
    tcase_add_test(tc, test_origin_names_and_lookup);
    tcase_add_test(tc, test_auto_resolves_from_steps_hidden_size_and_the_program);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_json_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

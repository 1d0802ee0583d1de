/* What DeepSpeed knows and this build does not implement yet: two tables.
 *
 * A field-backed entry names a key of the key table with values this build
 * cannot honour (true); zero_config_unsupported()
 * checks them on a struct, so the engine can call it too. A JSON-only entry names a DeepSpeed key
 * or section that has no field here: the loader accepts it only with a value that asks for nothing
 * (inert), so a DeepSpeed config that spells out the defaults still loads. When a feature lands,
 * delete its line. */
#include "config_unsupported.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_format.h"
#include "config_keys.h"
#include "zero/config_json.h"

#define NYI "is not implemented yet in this build"
#define ANY_BOOL "[false, true]", "expected true or false"
#define ZO "zero_optimization."
#define AC "activation_checkpointing."
#define OFF "{\"enabled\": false}"

/* Field-backed: a key of the key table whose value, from `from` up (1: any
 * non-zero, i.e. true or an enum other than the first), this build cannot
 * honour ("%s" in feature = the backend's name). */
static const struct {
    const char *path, *feature;
    int from;
} fields[] = {
    {"aio.use_gds", "GPUDirect Storage " NYI, 1},
    {AC "partition_activations", "activation partitioning " NYI, 1},
    {AC "contiguous_memory_optimization", "contiguous activation memory " NYI, 1},
    {AC "cpu_checkpointing", "activation checkpointing to the CPU " NYI, 1},
    {AC "synchronize_checkpoint_boundary", "checkpoint boundary synchronization " NYI, 1},
    {AC "profile", "activation checkpointing profiling " NYI, 1},
};

/* Field-backed keys this build reads only at DeepSpeed's default: any other
 * value asks for something it does not do. (The NVMe keys are honoured with
 * device nvme and refused without it: nvme_swap.c.) */
static const struct {
    const char *path, *feature;
} at_default[] = {
    {ZO "offload_optimizer.ratio", "partial optimizer offload (a ratio below 1) " NYI},
};

/* JSON-only: DeepSpeed keys and sections with no field here */
static const struct config_unsupported unsupported[] = {
    {"optimizer.legacy_fusion", "false", "legacy fusion " NYI},
    {"optimizer.params.amsgrad", "false", "AMSGrad " NYI},
    {"optimizer.params.torch_adam", ANY_BOOL},
    {"scheduler.params.last_batch_iteration", "-1", "resuming a schedule " NYI},
    {"fp16.auto_cast", "false", "fp16 auto-casting " NYI},
    {"fp16.fp16_master_weights_and_grads", "false", "fp16 master weights " NYI},
    /* Hugging Face fills amp.enabled with "fp16 through Apex", off here: "auto" asks nothing */
    {"amp", "{\"enabled\": [false, \"auto\"]}", "NVIDIA Apex AMP " NYI},
    {"prescale_gradients", "false", "gradient prescaling " NYI},
    {"gradient_predivide_factor", "1", "gradient predivision " NYI},
    {"sparse_gradients", "false", "sparse gradients " NYI},
    {"communication_data_type", "null", "a separate communication data type " NYI},
    {"data_types", "{\"grad_accum_dtype\": null}", "a gradient accumulation data type " NYI},
    {"zero_allow_untested_optimizer", ANY_BOOL},
    {"zero_force_ds_cpu_optimizer", ANY_BOOL},
    {"memory_breakdown", "false", "memory breakdown logging " NYI},
    {"dump_state", "false", "state dumping " NYI},
    {"disable_allgather", "false", "disabling the all-gather " NYI},
    {ZO "round_robin_gradients", "false", "round-robin gradients " NYI},
    {ZO "cpu_offload", "false", "optimizer offload " NYI},
    {ZO "cpu_offload_param", "false", "parameter offload " NYI},
    {ZO "cpu_offload_use_pin_memory", "false", "pinned offload memory " NYI},
    {ZO "elastic_checkpoint", "false", "elastic checkpoints " NYI},
    {ZO "load_from_fp32_weights", "true", "loading from 16-bit weights " NYI},
    {ZO "ignore_unused_parameters", "true", "failing on unused parameters " NYI},
    {ZO "legacy_stage1", "false", "the legacy stage 1 " NYI},
    /* DeepSpeed quantizes the frozen parameters it keeps; every parameter here trains */
    {ZO "zero_quantized_nontrainable_weights", ANY_BOOL},
    {ZO "memory_efficient_linear", "true", "the memory-inefficient linear " NYI},
    {ZO "pipeline_loading_checkpoint", "false", "pipelined checkpoint loading " NYI},
    {ZO "override_module_apply", "true", "not overriding module apply " NYI},
    {ZO "use_all_reduce_for_fetch_params", "false", "all-reduce parameter fetching " NYI},
    {ZO "use_multi_rank_bucket_allreduce", "true", "single-rank bucket all-reduce " NYI},
    {ZO "log_trace_cache_warnings", "false", "trace cache warnings " NYI},
    {ZO "stage3_model_persistence_threshold", "9223372036854775807",
     "a model persistence threshold " NYI},
    {ZO "model_persistence_threshold", "9223372036854775807", "a model persistence threshold " NYI},
    {"checkpoint", "{\"load_universal\": false, \"use_node_local_storage\": false}",
     "DeepSpeed's checkpoint options (see libzero.checkpoint) " NYI},
    {"tensorboard", OFF, "TensorBoard monitoring " NYI},
    {"wandb", OFF, "Weights & Biases monitoring " NYI},
    {"csv_monitor", OFF, "CSV monitoring " NYI},
    {"comet", OFF, "Comet monitoring " NYI},
    {"flops_profiler", OFF, "the flops profiler " NYI},
    {"comms_logger", OFF, "the communication logger " NYI},
    {"elasticity", OFF, "elastic training " NYI},
    {"autotuning", OFF, "autotuning " NYI},
    {"data_efficiency", OFF, "data efficiency " NYI},
    {"curriculum_learning", OFF, "curriculum learning " NYI},
    {"progressive_layer_drop", OFF, "progressive layer drop " NYI},
    {"eigenvalue", OFF, "eigenvalue computation " NYI},
    {"quantize_training", OFF, "quantized training " NYI},
    {"nebula", OFF, "Nebula checkpointing " NYI},
    {"compression_training", "null", "compression training " NYI},
    {"sparse_attention", "null", "sparse attention " NYI},
    {"pipeline", "null", "pipeline parallelism " NYI},
};

#define N_UNSUPPORTED (sizeof unsupported / sizeof unsupported[0])

const struct config_unsupported *config_unsupported_find(const char *path)
{
    for (size_t i = 0; i < N_UNSUPPORTED; i++)
        if (strcmp(unsupported[i].path, path) == 0)
            return &unsupported[i];
    return NULL;
}

/* JSON equality with 1 == 1.0, as Python compares. */
static int same_value(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal((json_t *)a, (json_t *)b);
}

/* what = "member=value" (member "" or ".enabled"). */
static void describe(const char *member, const json_t *v, char *what, size_t len)
{
    char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));
    snprintf(what, len, "%s=%.64s", member, text ? text : "?");
    free(text);
}

int config_unsupported_inert(const struct config_unsupported *u, const void *json, char *what,
                             size_t len)
{
    const json_t *v = json;
    json_t *inert = json_loads(u->inert, JSON_DECODE_ANY, NULL);
    int ok = 0;
    if (!inert) {
        snprintf(what, len, "=?");
        return 0;
    }
    if (json_is_array(inert)) { /* any of these */
        size_t i;
        json_t *x;
        json_array_foreach(inert, i, x) ok |= same_value(v, x);
        if (!ok)
            describe("", v, what, len);
    } else if (json_is_object(inert) && json_is_object(v)) { /* these members absent or equal */
        const char *name;
        json_t *x;
        ok = 1;
        json_object_foreach(inert, name, x)
        {
            json_t *given = json_object_get(v, name);
            int inert_given = !given || same_value(given, x);
            size_t j;
            json_t *alt;
            if (given && json_is_array(x)) /* a member with several inert values */
                json_array_foreach(x, j, alt) inert_given |= same_value(given, alt);
            if (!inert_given) {
                char member[128];
                snprintf(member, sizeof member, ".%s", name);
                describe(member, given, what, len);
                ok = 0;
                break;
            }
        }
    } else {
        ok = same_value(v, inert);
        if (!ok)
            describe("", v, what, len);
    }
    json_decref(inert);
    return ok;
}

int zero_config_unsupported(const struct zero_config *c, char *why, size_t len)
{
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const char *path = fields[i].path;
        int k = config_key_find(path);
        if (k < 0)
            continue;
        const struct config_key *key = &config_keys[k];
        int value = *(const int *)config_key_cfield(key, c); /* KEY_BOOL and KEY_ENUM are int */
        if (value < fields[i].from)
            continue;
        int nnames = 0;
        while (key->type == KEY_ENUM && key->names[nnames])
            nnames++;
        char shown[32];
        if (key->type == KEY_ENUM && (value < 0 || value >= nnames))
            snprintf(shown, sizeof shown, "%d", value);
        else if (key->type == KEY_ENUM)
            snprintf(shown, sizeof shown, "%s", key->names[value]);
        else
            snprintf(shown, sizeof shown, "true");
        char feature[160];
        snprintf(feature, sizeof feature, fields[i].feature, c->libzero.backend);
        snprintf(why, len, "%s=%s: %s", path, shown, feature);
        return 1;
    }
    struct zero_config ds;
    zero_config_defaults(&ds);
    for (size_t i = 0; i < sizeof at_default / sizeof at_default[0]; i++) {
        int k = config_key_find(at_default[i].path);
        if (k < 0)
            continue;
        const struct config_key *key = &config_keys[k];
        if (memcmp(config_key_cfield(key, c), config_key_cfield(key, &ds), key->size) == 0)
            continue;
        char value[64];
        config_format_value(key, c, value, sizeof value);
        snprintf(why, len, "%s=%s: %s", key->path, value, at_default[i].feature);
        return 1;
    }
    if (why && len)
        why[0] = '\0';
    return 0;
}

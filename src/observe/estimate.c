/* Model-state memory formulas: the ZeRO paper's, DeepSpeed's estimators and a GPT-2
 * parameter counter. See zero/estimate.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "zero/estimate.h"

#include "engine/stage.h"

void zero_estimate_state_sizes(enum zero_estimate_precision p, struct zero_state_sizes *s)
{
    if (p == ZERO_ESTIMATE_FP32)
        *s = (struct zero_state_sizes){.params = 4, .grads = 4, .master = 0, .optim = 8};
    else
        *s = (struct zero_state_sizes){.params = 2, .grads = 2, .master = 4, .optim = 8};
}

void zero_estimate_stages(double psi, int ranks, enum zero_estimate_precision p, int offload,
                          struct zero_estimate_stage out[4])
{
    struct zero_state_sizes s;
    zero_estimate_state_sizes(p, &s);
    double n = ranks > 0 ? ranks : 1;
    int off = offload != ZERO_ESTIMATE_OFFLOAD_NONE, nvme = offload == ZERO_ESTIMATE_OFFLOAD_NVME;
    for (int stage = 0; stage < ZERO_STAGE_COUNT; stage++) {
        struct zero_estimate_stage *o = &out[stage];
        const struct zero_stage *st = zero_stage_get(stage); /* what it shards: stage.c */
        int shard_p = st->shards_params, shard_g = st->shards_grads, shard_o = st->shards_optim;
        o->params = s.params * psi / (shard_p ? n : 1);
        o->grads = s.grads * psi / (shard_g ? n : 1);
        o->master = s.master * psi / (shard_o ? n : 1);
        o->optim = s.optim * psi / (shard_o ? n : 1);
        int fp32_side = s.master + s.optim;
        int params_on_nvme = nvme && shard_p; /* ZeRO-Infinity: stage 3's parameter shards */
        /* the ledger formula of the device: what stays on it, whole or divided by N */
        zero_stage_coefficients(st, params_on_nvme ? 0 : s.params, s.grads, off ? 0 : fp32_side,
                                &o->whole_coef, &o->shard_coef);
        o->host = off && !nvme ? o->master + o->optim : 0.0;
        o->nvme = nvme ? o->master + o->optim + (params_on_nvme ? o->params : 0.0) : 0.0;
        o->nvme_whole_coef = nvme && !shard_o ? fp32_side : 0;
        o->nvme_coef = nvme && shard_o ? fp32_side + (params_on_nvme ? s.params : 0) : 0;
        o->nvme_written = o->nvme;
        o->nvme_read = o->nvme + (params_on_nvme ? 2 * o->params : 0.0);
        o->device = o->params + o->grads + (off ? 0.0 : o->master + o->optim) -
                    (params_on_nvme ? o->params : 0.0);
    }
}

char *zero_estimate_formula(char *buf, size_t len, int whole_coef, int shard_coef)
{
    if (whole_coef && shard_coef)
        snprintf(buf, len, "%dΨ + %dΨ/N", whole_coef, shard_coef);
    else if (whole_coef)
        snprintf(buf, len, "%dΨ", whole_coef);
    else if (shard_coef)
        snprintf(buf, len, "%dΨ/N", shard_coef);
    else
        snprintf(buf, len, "0");
    return buf;
}

const char *zero_estimate_stage_name(int stage)
{
    const struct zero_stage *st = zero_stage_get(stage);
    return st ? st->name : "?";
}

/* ---- printing like the paper ---- */

/* value rounded half up to `decimals` places, trailing zeros (and the point) dropped.
 * The paper's numbers are dyadic fractions (Ψ/N with N a power of two), exact in a
 * double, so a tie such as 41.25 really is a tie. */
static char *format_decimals(char *buf, size_t len, double value, int decimals)
{
    double scale = decimals == 2 ? 100.0 : decimals == 1 ? 10.0 : 1.0;
    double r = floor(value * scale + 0.5) / scale;
    snprintf(buf, len, "%.*f", decimals, r);
    if (decimals > 0) {
        char *end = buf + strlen(buf) - 1;
        while (*end == '0')
            *end-- = '\0';
        if (*end == '.')
            *end = '\0';
    }
    return buf;
}

char *zero_format_gb_figure(char *buf, size_t len, double bytes)
{
    return format_decimals(buf, len, bytes / 1e9, 1);
}

char *zero_format_gb_table(char *buf, size_t len, double bytes)
{
    double gb = bytes / 1e9;
    if (gb >= 100.0) {
        snprintf(buf, len, "%.0f", floor(gb));
        return buf;
    }
    return format_decimals(buf, len, gb, gb >= 10.0 ? 1 : 2);
}

/* ---- DeepSpeed ---- */

/* Python's int() of a float: truncation toward zero. */
static int64_t py_int(double x)
{
    return (int64_t)x;
}

static double dmax(double a, double b)
{
    return a > b ? a : b;
}

void zero_ds_zero2(double total_params, int gpus_per_node, int nodes, int cpu_offload,
                   double buffer_factor, int legacy, struct zero_ds_estimate *out)
{
    double total_gpus = (double)nodes * gpus_per_node;
    double cpu, gpu;
    if (cpu_offload) {
        gpu = 2 * total_params;
        cpu = total_params * dmax(4 * total_gpus, 16) * buffer_factor;
    } else {
        if (legacy)
            gpu = 4 * total_params + (double)py_int(16 * total_params / total_gpus);
        else
            gpu = 2 * total_params + (double)py_int(18 * total_params / total_gpus);
        cpu = total_params * 4 * gpus_per_node * buffer_factor;
    }
    out->cpu_bytes = py_int(cpu);
    out->nvme_bytes = 0;
    out->gpu_bytes = py_int(gpu);
}

void zero_ds_zero3(double total_params, double largest_layer_params, int gpus_per_node, int nodes,
                   int cpu_offload, int offload_params, int zero_init, double buffer_factor,
                   struct zero_ds_estimate *out)
{
    double total_gpus = (double)nodes * gpus_per_node;
    double gpus_factor = 1.0 / nodes;
    double largest_layer_memory = 4 * largest_layer_params;
    double cpu, gpu;
    if (cpu_offload) {
        int k = offload_params ? 18 : 16; /* + fp16 params when they live on the host */
        gpu = offload_params ? largest_layer_memory
                             : largest_layer_memory + (double)py_int(2 * total_params / total_gpus);
        if (zero_init)
            cpu = total_params * k * gpus_factor * buffer_factor;
        else
            cpu = total_params * dmax(4.0 * gpus_per_node, k * gpus_factor) * buffer_factor;
    } else {
        gpu = largest_layer_memory + (double)py_int(18 * total_params / total_gpus);
        if (zero_init)
            cpu = largest_layer_params * 4 * gpus_per_node * buffer_factor;
        else
            cpu = total_params * 4 * gpus_per_node * buffer_factor;
    }
    out->cpu_bytes = py_int(cpu);
    out->nvme_bytes = 0;
    out->gpu_bytes = py_int(gpu);
}

void zero_ds_zero3_nvme(double total_params, double largest_layer_params, int gpus_per_node,
                        int nodes, int offload_params, int zero_init, double buffer_factor,
                        struct zero_ds_estimate *out)
{
    struct zero_ds_estimate cpu;
    zero_ds_zero3(total_params, largest_layer_params, gpus_per_node, nodes, 1, offload_params,
                  zero_init, buffer_factor, &cpu);
    out->gpu_bytes = cpu.gpu_bytes;
    out->nvme_bytes = cpu.cpu_bytes;
    out->cpu_bytes = 0;
}

/* ---- GPT-2 ---- */

int zero_gpt_count_params(const struct zero_gpt_shape *g, struct zero_gpt_count *out,
                          struct zero_error *err)
{
    if (g->n_layer < 1 || g->n_head < 1 || g->n_embd < 1 || g->block_size < 1 || g->vocab_size < 1)
        return zero_fail(err, ZERO_EINVAL,
                         "GPT shape: n_layer, n_head, n_embd, block_size and "
                         "vocab_size must all be >= 1");
    if (g->n_embd % g->n_head != 0)
        return zero_fail(err, ZERO_EINVAL,
                         "GPT shape: n_embd %lld is not a multiple of n_head "
                         "%lld",
                         (long long)g->n_embd, (long long)g->n_head);
    int64_t c = g->n_embd;
    if (c > 3000000 || g->n_layer > 100000 || g->vocab_size > 100000000 ||
        g->block_size > 100000000)
        return zero_fail(err, ZERO_EINVAL, "GPT shape: too large to count in 64 bits");
    int64_t ln = 2 * c, c_attn = c * 3 * c + 3 * c, attn_proj = c * c + c;
    int64_t c_fc = c * 4 * c + 4 * c, mlp_proj = 4 * c * c + c;
    out->wte = g->vocab_size * c;
    out->wpe = g->block_size * c;
    out->per_layer = ln + c_attn + attn_proj + ln + c_fc + mlp_proj; /* 12C^2 + 13C */
    out->layers = g->n_layer * out->per_layer;
    out->ln_f = ln;
    out->total = out->wte + out->wpe + out->layers + out->ln_f;
    int64_t largest = out->wte;
    const int64_t modules[] = {out->wpe, ln, c_attn, attn_proj, c_fc, mlp_proj};
    for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++)
        if (modules[i] > largest)
            largest = modules[i];
    out->largest_layer = largest;
    return ZERO_OK;
}

double zero_estimate_hpz_secondary(double psi, enum zero_estimate_precision p, int group)
{
    struct zero_state_sizes s;
    zero_estimate_state_sizes(p, &s);
    return group > 1 ? s.params * psi / group : 0.0;
}

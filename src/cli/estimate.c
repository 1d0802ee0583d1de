/* zero estimate: model-state memory per rank for ZeRO stages 0-3 from a parameter count
 * or a GPT-2 shape, by the ZeRO paper's formulas, optionally with DeepSpeed's own
 * estimators next to them and an SVG chart. No MPI, no backend: pure arithmetic
 * (zero/estimate.h) and printing. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "commands.h"
#include "program/flags.h"
#include "zero/estimate.h"
#include "zero/hf_model.h"
#include "zero/llama.h"
#include "svg_chart.h"

#define MAX_WORLDS 16

struct estimate_args {
    double psi;
    int have_psi;
    struct zero_gpt_shape gpt;
    int have_gpt;
    const char *hf_config; /* --hf-config: a Llama's config.json */
    struct zero_llama_config llama;
    int worlds[MAX_WORLDS];
    int nworlds;
    int nodes, gpus_per_node; /* 0 = not given */
    enum zero_estimate_precision precision;
    int offload_cpu;      /* enum zero_estimate_offload: 0 none, 1 cpu, 2 nvme */
    double nvme_bw;       /* --nvme-bandwidth: bytes/s one rank's swap files stream at (0: none) */
    double largest_layer; /* 0 = unknown */
    int deepspeed;
    int hpz;  /* --hpz: zero_hpz_partition_size (0: not given) */
    int mics; /* --mics: mics_shard_size (0: not given) */
    double buffer_factor;
    const char *svg;
};

static const char usage_text[] =
    "NAME\n"
    "    zero estimate - model-state memory per rank for ZeRO stages 0-3\n"
    "\n"
    "SYNOPSIS\n"
    "    zero estimate --params P [--ranks N[,N...] | --nodes M --gpus-per-node G]\n"
    "                  [--precision mixed|fp32] [--offload none|cpu|nvme] [--deepspeed]\n"
    "                  [--nvme-bandwidth GBPS]\n"
    "                  [--largest-layer L] [--buffer-factor F] [--svg FILE]\n"
    "    zero estimate --n-layer L --n-head H --n-embd C [--block-size T] [--vocab-size V] ...\n"
    "    zero estimate --hf-config config.json ...\n"
    "\n"
    "DESCRIPTION\n"
    "    Prints the bytes of parameters, gradients and optimizer states that one rank holds\n"
    "    under plain data parallel (stage 0) and ZeRO stages 1-3 (the paper's Pos, Pos+g,\n"
    "    Pos+g+p), with the formula of each row, in GB (1e9 bytes, rounded like the ZeRO\n"
    "    paper's Figure 1) and GiB (2^30 bytes). With Ψ parameters and N ranks, mixed\n"
    "    precision with Adam (2 + 2 + K bytes, K = 12): 16Ψ, 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N, 16Ψ/N.\n"
    "    fp32 with Adam (this library's engine): 16Ψ, 8Ψ + 8Ψ/N, 4Ψ + 12Ψ/N, 16Ψ/N.\n"
    "    Several world sizes print the paper's Table 1 layout with its rounding.\n"
    "    Activations, buffers and fragmentation are not model states and are not counted.\n"
    "\n"
    "OPTIONS\n"
    "    --params P           parameters, e.g. 7e9 or 124439808\n"
    "    --n-layer L, --n-head H, --n-embd C, --block-size T (1024), --vocab-size V (50257)\n"
    "    --hf-config FILE     a Hugging Face LlamaForCausalLM config.json: Ψ as transformers'\n"
    "                         model.num_parameters() counts it (a tied head once)\n"
    "                         count the parameters of a GPT-2 (tied head) instead\n"
    "    --ranks N[,N...]     data-parallel ranks (default 1); a list prints Table 1's layout\n"
    "    --nodes M            nodes, with --gpus-per-node G: N = M x G (DeepSpeed's HW setup)\n"
    "    --gpus-per-node G\n"
    "    --precision P        mixed (fp16/bf16 + fp32 master, default) or fp32\n"
    "    --offload none|cpu   cpu: the fp32 master and optimizer state live in host memory\n"
    "                         (ZeRO-Offload); the device keeps parameters and gradients\n"
    "    --offload nvme       ZeRO-Infinity: the master and optimizer state, and at stage 3\n"
    "                         the parameter shards, live in NVMe swap files; prints the\n"
    "                         disk space per rank and the bytes a step reads and writes\n"
    "    --nvme-bandwidth B   with --offload nvme: the GB/s (10^9 bytes) one rank's swap\n"
    "                         files read and write at; prints the step's disk-time bound\n"
    "    --deepspeed          also print DeepSpeed's estimate_zero2_model_states_mem_needs\n"
    "                         and estimate_zero3_model_states_mem_needs tables\n"
    "    --largest-layer L    parameters of the largest layer (ZeRO-3 gathers it whole);\n"
    "                         counted from a GPT shape\n"
    "    --buffer-factor F    DeepSpeed's additional_buffer_factor (default 1.5)\n"
    "    --hpz G              ZeRO++ hpZ with groups of G ranks (zero_hpz_partition_size, a\n"
    "                         divisor of N): stage 3 adds the secondary partition, the\n"
    "                         compute dtype's bytes x Ψ/G per rank\n"
    "    --mics M             MiCS / HSDP with shard groups of M ranks (mics_shard_size, a\n"
    "                         divisor of N): stages 1-3 shard their states 1/M per rank,\n"
    "                         replicated N/M times\n"
    "    --svg FILE           write the stages as a stacked bar chart (last N of a list)\n"
    "    --help               this text\n"
    "\n"
    "EXAMPLES\n"
    "    zero estimate --params 7.5e9 --ranks 64            the paper's Figure 1\n"
    "    zero estimate --params 7.5e9 --ranks 1,4,16,64,256,1024   Table 1's columns\n"
    "    zero estimate --params 2851e6 --nodes 1 --gpus-per-node 8 --largest-layer 32e6 \\\n"
    "                  --deepspeed                          DeepSpeed's memory page\n";

static const char *const precisions[] = {"mixed", "fp32", NULL};     /* zero_estimate_precision */
static const char *const offloads[] = {"none", "cpu", "nvme", NULL}; /* zero_estimate_offload */

#define POSITIVE "an integer >= 1"
#define COUNT "a parameter count >= 1"

/* Returns 0, or the exit status for a usage error (1 = --help shown). */
static int parse(struct estimate_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->buffer_factor = 1.5;
    a->gpt.block_size = 1024;
    a->gpt.vocab_size = 50257;
    int precision = 0;
    double gbps = 0.0;
    const struct flag t[] = {
        FLAG_NUM_WANT("params", "P", NULL, FLAG_REAL, &a->psi, 1, 1e18, COUNT),
        FLAG_LIST_WANT("ranks", "N[,N...]", NULL, a->worlds, &a->nworlds, MAX_WORLDS, 1, 1e8,
                       "a list of up to 16 rank counts >= 1"),
        FLAG_NUM_WANT("nodes", "M", NULL, FLAG_INT, &a->nodes, 1, 1e6, POSITIVE),
        FLAG_NUM_WANT("gpus-per-node", "G", NULL, FLAG_INT, &a->gpus_per_node, 1, 1e6, POSITIVE),
        FLAG_ONE_OF_WANT("precision", "P", NULL, &precision, precisions, "mixed or fp32"),
        FLAG_ONE_OF_WANT("offload", "O", NULL, &a->offload_cpu, offloads, "none, cpu or nvme"),
        FLAG_NUM_WANT("nvme-bandwidth", "B", NULL, FLAG_REAL, &gbps, DBL_TRUE_MIN, 1e6,
                      "a bandwidth in GB/s > 0"),
        FLAG_ANY("deepspeed", NULL, NULL, FLAG_SET, &a->deepspeed),
        FLAG_NUM_WANT("largest-layer", "L", NULL, FLAG_REAL, &a->largest_layer, 1, 1e18, COUNT),
        FLAG_NUM_WANT("buffer-factor", "F", NULL, FLAG_REAL, &a->buffer_factor, DBL_TRUE_MIN, 1e6,
                      "a number > 0"),
        FLAG_NUM_WANT("hpz", "G", NULL, FLAG_INT, &a->hpz, 1, 1e8, POSITIVE),
        FLAG_NUM_WANT("mics", "M", NULL, FLAG_INT, &a->mics, 1, 1e8, POSITIVE),
        FLAG_ANY("svg", "FILE", NULL, FLAG_STR, &a->svg),
        FLAG_ANY("hf-config", "FILE", NULL, FLAG_STR, &a->hf_config),
        /* a GPT-2's shape: from here on each flag given makes have_gpt */
        FLAG_NUM_WANT("n-layer", "L", NULL, FLAG_I64, &a->gpt.n_layer, 1, 1e9, POSITIVE),
        FLAG_NUM_WANT("n-head", "H", NULL, FLAG_I64, &a->gpt.n_head, 1, 1e9, POSITIVE),
        FLAG_NUM_WANT("n-embd", "C", NULL, FLAG_I64, &a->gpt.n_embd, 1, 1e9, POSITIVE),
        FLAG_NUM_WANT("block-size", "T", NULL, FLAG_I64, &a->gpt.block_size, 1, 1e9, POSITIVE),
        FLAG_NUM_WANT("vocab-size", "V", NULL, FLAG_I64, &a->gpt.vocab_size, 1, 1e9, POSITIVE),
    };
    const int n = (int)(sizeof t / sizeof t[0]), first_gpt = n - 5;
    char msg[256];
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (flags_is_help(f)) {
            fputs(usage_text, stdout);
            return -1;
        }
        const struct flag *taken = NULL;
        int took = flags_take(t, n, argc, argv, &i, &taken, msg, sizeof msg);
        if (took < 0) {
            fprintf(stderr, "zero estimate: %s (see --help)\n", msg);
            return 2;
        }
        if (took == 0) {
            fprintf(stderr, "zero estimate: %s '%s' (see --help)\n",
                    strncmp(f, "--", 2) ? "unexpected argument" : "unknown option", f);
            return 2;
        }
        a->have_psi |= taken->dst == &a->psi;
        a->have_gpt |= taken - t >= first_gpt;
    }
    a->precision = precision == 1 ? ZERO_ESTIMATE_FP32 : ZERO_ESTIMATE_MIXED;
    a->nvme_bw = gbps * 1e9;
    if (a->have_psi + a->have_gpt + (a->hf_config != NULL) != 1) {
        fprintf(stderr, "zero estimate: give one of --params, a GPT shape (--n-layer, --n-head, "
                        "--n-embd) or --hf-config (see --help)\n");
        return 2;
    }
    if (a->have_gpt && (!a->gpt.n_layer || !a->gpt.n_head || !a->gpt.n_embd)) {
        fprintf(stderr, "zero estimate: a GPT shape needs --n-layer, --n-head and --n-embd\n");
        return 2;
    }
    if ((a->nodes > 0) != (a->gpus_per_node > 0)) {
        fprintf(stderr, "zero estimate: --nodes and --gpus-per-node go together\n");
        return 2;
    }
    if (a->nodes > 0) {
        int64_t n = (int64_t)a->nodes * a->gpus_per_node;
        if (n > 100000000 || (a->nworlds && (a->nworlds > 1 || a->worlds[0] != n))) {
            fprintf(stderr, "zero estimate: --ranks disagrees with --nodes x --gpus-per-node\n");
            return 2;
        }
        a->worlds[0] = (int)n;
        a->nworlds = 1;
    }
    if (a->nworlds == 0) {
        a->worlds[0] = 1;
        a->nworlds = 1;
    }
    if (a->hpz > 1 && (a->nworlds > 1 || a->worlds[0] % a->hpz != 0)) {
        fprintf(stderr,
                "zero estimate: --hpz %d (zero_hpz_partition_size) must divide the one "
                "world size given (N = %d)\n",
                a->hpz, a->worlds[0]);
        return 2;
    }
    if (a->mics > 0 && (a->nworlds > 1 || a->worlds[0] % a->mics != 0)) {
        fprintf(stderr,
                "zero estimate: --mics %d (mics_shard_size) must divide the one world size "
                "given (N = %d)\n",
                a->mics, a->worlds[0]);
        return 2;
    }
    if (a->mics > 0 && (a->hpz > 1 || a->offload_cpu)) {
        fprintf(stderr, "zero estimate: --mics goes without --hpz and --offload (the engine "
                        "refuses those with mics_shard_size)\n");
        return 2;
    }
    if (a->deepspeed && a->nworlds > 1) {
        fprintf(stderr, "zero estimate: --deepspeed needs one world size\n");
        return 2;
    }
    return 0;
}

static const char *precision_text(enum zero_estimate_precision p)
{
    return p == ZERO_ESTIMATE_FP32
               ? "fp32 with Adam: 4 (params) + 4 (grads) + 8 (momentum, variance) bytes per "
                 "parameter, no separate master"
               : "mixed precision with Adam: 2 (fp16 params) + 2 (fp16 grads) + K = 12 (fp32 "
                 "master, momentum, variance) bytes per parameter";
}

static void print_model(const struct estimate_args *a, const struct zero_gpt_count *g)
{
    char buf[32];
    if (a->have_gpt) {
        printf("GPT-2: %lld layers, %lld heads, n_embd %lld, block %lld, vocab %lld (tied head)\n",
               (long long)a->gpt.n_layer, (long long)a->gpt.n_head, (long long)a->gpt.n_embd,
               (long long)a->gpt.block_size, (long long)a->gpt.vocab_size);
        printf("  wte %s + wpe ", cli_num(buf, g->wte));
        printf("%s + %lld layers x ", cli_num(buf, g->wpe), (long long)a->gpt.n_layer);
        printf("%s (12C^2 + 13C) + ln_f ", cli_num(buf, g->per_layer));
        printf("%s\n", cli_num(buf, g->ln_f));
        printf("  largest layer: %s parameters\n", cli_num(buf, g->largest_layer));
    }
    if (a->hf_config) {
        const struct zero_llama_config *c = &a->llama;
        printf("Llama (%s): %d layers, hidden %lld, %d heads / %d kv heads of %lld, "
               "intermediate %lld, vocab %lld (%s head)\n",
               a->hf_config, c->num_hidden_layers, (long long)c->hidden_size,
               c->num_attention_heads, c->num_key_value_heads, (long long)c->head_dim,
               (long long)c->intermediate_size, (long long)c->vocab_size,
               c->tie_word_embeddings ? "tied" : "untied");
        printf("  largest layer: %s parameters\n", cli_num(buf, llround(a->largest_layer)));
    }
    printf("Ψ = %s parameters", cli_num(buf, llround(a->psi)));
}

/* Terminal columns of UTF-8 text (Ψ is two bytes, one column). */
static int columns(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* MiCS: each stage's shards are the shard group's, 1/M instead of 1/N. */
static void print_mics(const struct estimate_args *a, int n)
{
    struct zero_estimate_stage st[4];
    zero_estimate_stages(a->psi, a->mics, a->precision, ZERO_ESTIMATE_OFFLOAD_NONE, st);
    printf("\nMiCS, shard groups of %d ranks (mics_shard_size), %d replicas: the states "
           "are sharded 1/M, M = %d\n",
           a->mics, n / a->mics, a->mics);
    for (int s = 1; s < 4; s++) {
        char formula[48], gb[32];
        zero_estimate_formula(formula, sizeof formula, st[s].whole_coef, st[s].shard_coef);
        size_t len = strlen(formula); /* "...Ψ/N": the divisor is the shard group's */
        if (len > 0 && formula[len - 1] == 'N')
            formula[len - 1] = 'M';
        printf("%-6d %-11s %s%*s %8s GB %9.2f GiB\n", s, zero_estimate_stage_name(s), formula,
               14 - columns(formula), "", zero_format_gb_figure(gb, sizeof gb, st[s].device),
               st[s].device / 1073741824.0);
    }
}

static void print_one_world(const struct estimate_args *a, int n)
{
    struct zero_estimate_stage st[4];
    zero_estimate_stages(a->psi, n, a->precision, a->offload_cpu, st);
    if (a->nodes > 0)
        printf(", N = %d ranks (%d node%s x %d GPU%s)\n", n, a->nodes, a->nodes > 1 ? "s" : "",
               a->gpus_per_node, a->gpus_per_node > 1 ? "s" : "");
    else
        printf(", N = %d rank%s\n", n, n > 1 ? "s" : "");
    printf("%s\n", precision_text(a->precision));
    int nvme = a->offload_cpu == ZERO_ESTIMATE_OFFLOAD_NVME;
    if (a->offload_cpu == ZERO_ESTIMATE_OFFLOAD_CPU)
        printf(
            "offload cpu: the fp32 master and optimizer state of each rank live in host memory\n");
    if (nvme)
        printf("offload nvme (ZeRO-Infinity): the fp32 master and optimizer state of each rank, "
               "and at stage 3 its parameter shard, live in NVMe swap files\n");
    printf("GB = 10^9 bytes (rounded like the ZeRO paper's Figure 1), GiB = 2^30 bytes\n\n");
    printf("stage  ZeRO paper  %-14s %19s %8s %9s", a->offload_cpu ? "device" : "per rank", "bytes",
           "GB", "GiB");
    if (a->offload_cpu == ZERO_ESTIMATE_OFFLOAD_CPU)
        printf(" %10s %9s", "host GB", "host GiB");
    if (nvme)
        printf("  %-8s %9s %9s %9s", "nvme", "nvme GB", "read GB", "write GB");
    printf("\n");
    for (int s = 0; s < 4; s++) {
        char formula[48], bytes[32], gb[32];
        zero_estimate_formula(formula, sizeof formula, st[s].whole_coef, st[s].shard_coef);
        printf("%-6d %-11s %s%*s %19s %8s %9.2f", s, zero_estimate_stage_name(s), formula,
               14 - columns(formula), "", cli_num(bytes, llround(st[s].device)),
               zero_format_gb_figure(gb, sizeof gb, st[s].device), st[s].device / 1073741824.0);
        if (a->offload_cpu == ZERO_ESTIMATE_OFFLOAD_CPU) {
            zero_format_gb_figure(gb, sizeof gb, st[s].host);
            printf(" %10s %9.2f", gb, st[s].host / 1073741824.0);
        }
        if (nvme) {
            char nf[32], r[32], w[32];
            zero_estimate_formula(nf, sizeof nf, st[s].nvme_whole_coef, st[s].nvme_coef);
            printf("  %s%*s %9s", nf, 8 - columns(nf), "",
                   zero_format_gb_figure(gb, sizeof gb, st[s].nvme));
            printf(" %9s %9s", zero_format_gb_figure(r, sizeof r, st[s].nvme_read),
                   zero_format_gb_figure(w, sizeof w, st[s].nvme_written));
        }
        printf("\n");
    }
    if (a->hpz > 1) {
        double sec = zero_estimate_hpz_secondary(a->psi, a->precision, a->hpz), gb3 = 0;
        char f[48], gb[32], tot[32];
        snprintf(f, sizeof f, "%dΨ/%d", a->precision == ZERO_ESTIMATE_FP32 ? 4 : 2, a->hpz);
        gb3 = st[3].device + sec;
        printf("\nhpZ, groups of %d ranks (stage 3): + secondary partition %s = %s GB "
               "(%.2f GiB) per rank; stage 3 with it: %s GB (%.2f GiB)\n",
               a->hpz, f, zero_format_gb_figure(gb, sizeof gb, sec), sec / 1073741824.0,
               zero_format_gb_figure(tot, sizeof tot, gb3), gb3 / 1073741824.0);
    }
    if (a->mics > 0)
        print_mics(a, n);
    if (nvme) {
        char gb[32];
        printf("\nNVMe needs, per rank: the nvme column of disk space; per step, the read and "
               "write columns\n(stage 3 reads each parameter shard again for the forward and "
               "the backward gathers).\n");
        if (a->nvme_bw > 0)
            printf("At %s GB/s per rank a stage-3 step spends at least %.2f s on the disk "
                   "((read + write) / bandwidth).\n",
                   zero_format_gb_figure(gb, sizeof gb, a->nvme_bw),
                   (st[3].nvme_read + st[3].nvme_written) / a->nvme_bw);
    }
}

static void print_table1(const struct estimate_args *a)
{
    struct zero_estimate_stage st[4];
    zero_estimate_stages(a->psi, 1, a->precision, a->offload_cpu, st);
    char gb[32];
    printf(", N = ");
    for (int i = 0; i < a->nworlds; i++)
        printf("%s%d", i ? ", " : "", a->worlds[i]);
    printf("\n%s\n", precision_text(a->precision));
    printf("%s per rank in GB (10^9 bytes), rounded like the ZeRO paper's Table 1;\n"
           "DP (stage 0) holds %s GB at every N\n\n",
           a->offload_cpu ? "device bytes" : "model states",
           zero_format_gb_table(gb, sizeof gb, st[0].device));
    printf("%8s %10s %10s %10s\n", "N", "Pos", "Pos+g", "Pos+g+p");
    for (int i = 0; i < a->nworlds; i++) {
        zero_estimate_stages(a->psi, a->worlds[i], a->precision, a->offload_cpu, st);
        printf("%8d", a->worlds[i]);
        for (int s = 1; s < 4; s++)
            printf(" %10s", zero_format_gb_table(gb, sizeof gb, st[s].device));
        printf("\n");
    }
}

/* DeepSpeed's own lines: f" {cpu_mem/2**30:7.2f}GB | {gpu_mem/2**30:6.2f}GB | {options}" */
static void ds_line(const struct zero_ds_estimate *e, const char *options)
{
    printf("   %7.2fGB | %6.2fGB | %s\n", (double)e->cpu_bytes / 1073741824.0,
           (double)e->gpu_bytes / 1073741824.0, options);
}

static void print_deepspeed(const struct estimate_args *a)
{
    int nodes = a->nodes ? a->nodes : 1, gpn = a->nodes ? a->gpus_per_node : a->worlds[0];
    struct zero_ds_estimate e;
    printf("\nDeepSpeed's estimators (deepspeed.runtime.zero), additional_buffer_factor %g;\n"
           "GB as DeepSpeed prints it: bytes / 2^30\n",
           a->buffer_factor);
    printf("HW: %d node%s, %d GPU%s per node. SW: %lldM total params", nodes, nodes > 1 ? "s" : "",
           gpn, gpn > 1 ? "s" : "", (long long)(a->psi / 1e6));
    if (a->largest_layer > 0)
        printf(", %lldM largest layer params", (long long)(a->largest_layer / 1e6));
    printf(".\n\nestimate_zero2_model_states_mem_needs\n     per CPU  |  per GPU |   Options\n");
    for (int off = 1; off >= 0; off--) {
        zero_ds_zero2(a->psi, gpn, nodes, off, a->buffer_factor, 0, &e);
        ds_line(&e, off ? "offload_optimizer=cpu" : "offload_optimizer=none");
    }
    printf("\nestimate_zero3_model_states_mem_needs\n");
    if (a->largest_layer <= 0) {
        printf("   (needs --largest-layer, or a GPT shape)\n");
        return;
    }
    printf("     per CPU  |  per GPU |   Options\n");
    for (int off = 1; off >= 0; off--)
        for (int params = 1; params >= 0; params--) {
            if (!off && params)
                continue;
            for (int init = 1; init >= 0; init--) {
                char options[96];
                zero_ds_zero3(a->psi, a->largest_layer, gpn, nodes, off, params, init,
                              a->buffer_factor, &e);
                snprintf(options, sizeof options,
                         "offload_param=%s, offload_optimizer=%s, zero_init=%d",
                         params ? "cpu " : "none", off ? "cpu " : "none", init);
                ds_line(&e, options);
            }
        }
    if (a->offload_cpu != ZERO_ESTIMATE_OFFLOAD_NVME)
        return;
    printf("\nthe same with NVMe (DeepSpeed's estimator has no NVMe case: the per CPU figure of "
           "its\ncpu-offload rows goes to the node's NVMe; CPU memory keeps only swap buffers)\n"
           "     per NVMe |  per GPU |   Options\n");
    for (int params = 1; params >= 0; params--)
        for (int init = 1; init >= 0; init--) {
            char options[96];
            zero_ds_zero3_nvme(a->psi, a->largest_layer, gpn, nodes, params, init, a->buffer_factor,
                               &e);
            snprintf(options, sizeof options,
                     "offload_param=%s, offload_optimizer=nvme, zero_init=%d",
                     params ? "nvme" : "none", init);
            printf("   %7.2fGB | %6.2fGB | %s\n", (double)e.nvme_bytes / 1073741824.0,
                   (double)e.gpu_bytes / 1073741824.0, options);
        }
}

/* The stages as bars of the numbers the table prints: per-rank model states,
 * or with --offload cpu a device bar (what the table's device column says)
 * beside an outlined host bar per stage. */
static int write_svg(const struct estimate_args *a)
{
    int n = a->worlds[a->nworlds - 1];
    struct zero_estimate_stage st[4];
    zero_estimate_stages(a->psi, n, a->precision, a->offload_cpu, st);
    double scale = st[0].params + st[0].grads + st[0].master + st[0].optim >= 1e9 ? 1e9 : 1e6;
    int per_stage = a->offload_cpu ? 2 : 1;
    struct zero_chart c = {.nsegments = 4, .nbars = 4 * per_stage, .decimals = 1};
    snprintf(c.unit, sizeof c.unit, "%s", scale == 1e9 ? "GB" : "MB");
    char psi[32];
    snprintf(c.title, sizeof c.title, "Model states per rank, theory: Ψ = %s parameters, N = %d",
             cli_num(psi, llround(a->psi)), n);
    snprintf(c.subtitle, sizeof c.subtitle, "%s; stage 0 = plain data parallel%s",
             a->precision == ZERO_ESTIMATE_FP32 ? "fp32 with Adam (4 + 4 + 8 bytes per parameter)"
                                                : "mixed precision with Adam (2 + 2 + 12 bytes per "
                                                  "parameter)",
             a->offload_cpu == ZERO_ESTIMATE_OFFLOAD_NVME
                 ? "; --offload nvme: solid = device, outlined = NVMe"
             : a->offload_cpu ? "; --offload cpu: solid = device, outlined = host memory"
                              : "");
    const char *names[4] = {"params", "grads", "master", "optimizer"};
    for (int s = 0; s < 4; s++)
        snprintf(c.segment[s], sizeof c.segment[s], "%s", names[s]);
    for (int s = 0; s < 4; s++)
        for (int k = 0; k < per_stage; k++) {
            struct zero_chart_bar *b = &c.bar[per_stage * s + k];
            char formula[48];
            snprintf(b->label, sizeof b->label, "stage %d (%s)", s, zero_estimate_stage_name(s));
            zero_estimate_formula(formula, sizeof formula, st[s].whole_coef, st[s].shard_coef);
            if (a->offload_cpu)
                snprintf(b->sublabel, sizeof b->sublabel, "%s",
                         k ? (a->offload_cpu == ZERO_ESTIMATE_OFFLOAD_NVME ? "nvme" : "host")
                           : formula);
            else
                snprintf(b->sublabel, sizeof b->sublabel, "%s", formula);
            b->group = s;
            b->hollow = k;
            int host = a->offload_cpu && k == 1, fp32_side_on_device = !a->offload_cpu;
            b->value[0] = host ? 0.0 : st[s].params / scale;
            b->value[1] = host ? 0.0 : st[s].grads / scale;
            b->value[2] = host || fp32_side_on_device ? st[s].master / scale : 0.0;
            b->value[3] = host || fp32_side_on_device ? st[s].optim / scale : 0.0;
        }
    struct zero_error err = {0};
    if (zero_svg_chart_write(a->svg, &c, &err)) {
        fprintf(stderr, "zero estimate: --svg: %s\n", err.msg);
        return 1;
    }
    printf("\nwrote %s\n", a->svg);
    return 0;
}

/* The parameters of the largest unit ZeRO-3 gathers whole: a decoder layer, the
 * embedding or the untied head (the final norm's C is never the largest). */
static int64_t llama_largest_unit(const struct zero_llama_config *c)
{
    const int64_t layer = zero_llama_layer_num_parameters(c);
    const int64_t embed = c->vocab_size * c->hidden_size;
    return layer > embed ? layer : embed;
}

int zero_cmd_estimate(int argc, char **argv)
{
    struct estimate_args a;
    int rc = parse(&a, argc, argv);
    if (rc)
        return rc < 0 ? 0 : rc;
    struct zero_gpt_count g = {0};
    if (a.have_gpt) {
        struct zero_error err = {0};
        if (zero_gpt_count_params(&a.gpt, &g, &err)) {
            fprintf(stderr, "zero estimate: %s\n", err.msg);
            return 2;
        }
        a.psi = (double)g.total;
        if (a.largest_layer <= 0)
            a.largest_layer = (double)g.largest_layer;
    }
    if (a.hf_config) {
        struct zero_error err = {0};
        char ignored[512];
        if (zero_hf_config_read(&a.llama, a.hf_config, ignored, sizeof ignored, &err)) {
            fprintf(stderr, "zero estimate: --hf-config: %s\n", err.msg);
            return 2;
        }
        a.psi = (double)zero_llama_num_parameters(&a.llama);
        if (a.largest_layer <= 0)
            a.largest_layer = (double)llama_largest_unit(&a.llama);
    }
    print_model(&a, &g);
    if (a.nworlds == 1)
        print_one_world(&a, a.worlds[0]);
    else
        print_table1(&a);
    if (a.deepspeed)
        print_deepspeed(&a);
    return a.svg ? write_svg(&a) : 0;
}

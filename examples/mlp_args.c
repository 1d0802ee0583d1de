/* Command-line options of examples/train_mlp: getopt_long, every value checked
 * and every error naming its flag. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program/flag_number.h"
#include "mlp_args.h"
#include "program/program.h"
#include "zero/config_json.h"

static const char usage_text[] =
    "NAME\n"
    "    train_mlp - train a residual MLP with ZeRO stages 0-3 on synthetic or given data\n"
    "\n"
    "SYNOPSIS\n"
    "    mpirun -np N train_mlp [--stage S] [--hidden H] [--layers L] [--batch B] [--steps K]\n"
    "                           [--init-weights FILE] [--save-weights FILE] [--data FILE] ...\n"
    "    train_mlp --write-synthetic-data FILE [--samples S] [--hidden H] [--classes C]\n"
    "\n"
    "DESCRIPTION\n"
    "    The model is L residual blocks x = x + Linear(4H, H)(gelu(Linear(H, 4H)(x))) and a\n"
    "    Linear(H, C) classifier with cross-entropy, trained with AdamW (betas 0.9, 0.999,\n"
    "    eps 1e-8, weight decay 0.01). Each step prints its loss; the run ends with the\n"
    "    per-rank memory ledger next to the ZeRO paper's formula and the last step's\n"
    "    communication next to theory. Global batch b is samples b*B .. b*B+B-1; rank r's\n"
    "    micro-batch at micro-step i is atom i*N + r of it (r*A + i with --atom-order\n"
    "    rank_major; see zero_atom_first_sample_in).\n"
    "\n"
    "OPTIONS\n"
    "    --config FILE        a DeepSpeed ds_config.json (examples/configs/): batch sizes,\n"
    "                         optimizer, scheduler, zero_optimization and libzero sections\n"
    "                         (libzero.trace {\"path\", \"steps\": \"2,3\"} acts as --trace).\n"
    "                         Precedence: the defaults below < FILE < the flags given here,\n"
    "                         wherever they stand (--stage 1 overrides the file's stage).\n"
    "                         --batch sets train_batch_size, --micro-batch\n"
    "                         train_micro_batch_size_per_gpu; the file's other batch keys\n"
    "                         stay and DeepSpeed's batch rule must hold. Keys the file does\n"
    "                         not give keep the defaults below, but a given optimizer.type\n"
    "                         or scheduler.type starts from DeepSpeed's defaults, and an\n"
    "                         absent overlap_comm is on for stage 3 (DeepSpeed's rule).\n"
    "                         An unknown or unsupported key is a usage error naming it\n"
    "    --stage S            ZeRO stage 0 (plain data parallel), 1, 2 or 3 (default 0)\n"
    "    --hidden H           width of the residual stream (default 1024)\n"
    "    --layers L           residual MLP blocks (default 12)\n"
    "    --classes C          classifier outputs (default 10)\n"
    "    --batch B            global batch size (default 32)\n"
    "    --micro-batch m      samples per rank per micro-step (default B / N); gradient\n"
    "                         accumulation is B / (m * N), DeepSpeed's batch rule\n"
    "    --steps K            optimizer steps (default 10; 0 only loads, reports and saves)\n"
    "    --lr X               learning rate (default 1e-4)\n"
    "    --precision P        compute dtype fp32 (default), fp16 (DeepSpeed's dynamic loss\n"
    "                         scaling; with no fp16 keys in --config it starts at 2^32 with\n"
    "                         hysteresis 1, as DeepSpeed does) or bf16\n"
    "    --clip X             gradient clipping: max global norm, 0 = off (default 0)\n"
    "    --seed N             parameter initialization seed (default 1234)\n"
    "    --data-seed N        synthetic data seed (default 1)\n"
    "    --mode exact|native  exact: bit-reproducible collectives (default); native: MPI's own\n"
    "    --atom-order O       libzero.atom_order: micro_step_major (default: micro-step i\n"
    "                         of rank r is atom i*N + r) or rank_major (atom r*A + i: a\n"
    "                         rank's micro-batches consecutive, exact mode reduces once)\n"
    "    --prefetch N         stage3_prefetch_bucket_size, elements\n"
    "    --persistence N      stage3_param_persistence_threshold, elements\n"
    "    --max-live N         stage3_max_live_parameters, elements\n"
    "    --reuse-distance N   stage3_max_reuse_distance, elements (0: keep only what is reused at "
    "once)\n"
    "    --bucket N           reduce_bucket_size, elements\n"
    "    --overlap 0|1        overlap_comm\n"
    "    --align N            unit shards are multiples of N elements (default 2048)\n"
    "    --init-weights FILE  load all parameters from a .safetensors file with PyTorch's\n"
    "                         state_dict names (layers.0.0.weight [4H, H], layers.0.0.bias,\n"
    "                         layers.0.2.weight [H, 4H], layers.0.2.bias, ...,\n"
    "                         classifier.weight [C, H], classifier.bias [C]); every\n"
    "                         parameter must be there with its shape, and nothing else\n"
    "    --save-weights FILE  write the trained parameters, whole, under the same names\n"
    "    --save-dtype D       dtype of --save-weights: fp32 (default), fp16 or bf16\n"
    "    --data FILE          train on a .safetensors file: inputs F32 [S, H], all finite,\n"
    "                         labels I64 [S] in 0..C-1; sample indices wrap modulo S\n"
    "                         (epochs)\n"
    "    --write-synthetic-data FILE\n"
    "                         write the synthetic data set (--data-seed) in the --data\n"
    "                         format and exit; --samples S sets its size (default B * K)\n"
    "    --samples S          see --write-synthetic-data\n"
    "    --trace FILE         write the engine's events as Chrome trace-event JSON (opens in\n"
    "                         Perfetto or chrome://tracing): one process per rank, compute\n"
    "                         and communication on separate threads, elements and bytes in\n"
    "                         each slice's args\n"
    "    --trace-steps LIST   steps to trace, e.g. 2,3 or 2-4 (default: all)\n"
    "    --save-checkpoint DIR\n"
    "                         save a sharded checkpoint DIR/step_N at the end (and every\n"
    "                         --checkpoint-every K steps); DIR/latest names the newest\n"
    "    --checkpoint-every K also save after every K steps\n"
    "    --keep-last M        keep only the newest M checkpoints (default: all)\n"
    "    --resume DIR         continue from DIR's latest checkpoint (any world size and\n"
    "                         stage) up to --steps steps in all; the data position comes\n"
    "                         from the checkpoint\n"
    "    --quiet              print only the final loss (and errors)\n"
    "    --verbose            also print the units and each loss in full precision\n"
    "    --help               print this text\n"
    "\n"
    "EXIT STATUS\n"
    "    0 success, 1 runtime error, 2 usage error\n";

const char *mlp_args_usage(void)
{
    return usage_text;
}

enum {
    OPT_STAGE = 256,
    OPT_HIDDEN,
    OPT_LAYERS,
    OPT_CLASSES,
    OPT_BATCH,
    OPT_MICRO,
    OPT_STEPS,
    OPT_LR,
    OPT_CLIP,
    OPT_SEED,
    OPT_DATA_SEED,
    OPT_MODE,
    OPT_ATOM_ORDER,
    OPT_PREFETCH,
    OPT_PERSISTENCE,
    OPT_REUSE,
    OPT_MAX_LIVE,
    OPT_BUCKET,
    OPT_OVERLAP,
    OPT_ALIGN,
    OPT_INIT,
    OPT_SAVE,
    OPT_DATA,
    OPT_WRITE_DATA,
    OPT_SAMPLES,
    OPT_QUIET,
    OPT_VERBOSE,
    OPT_HELP,
    OPT_CONFIG,
    OPT_PRECISION,
    OPT_SAVE_DTYPE,
    OPT_TRACE,
    OPT_TRACE_STEPS,
    OPT_SAVE_CKPT,
    OPT_CKPT_EVERY,
    OPT_KEEP_LAST,
    OPT_RESUME
};

static const struct option options[] = {
    {"stage", required_argument, NULL, OPT_STAGE},
    {"hidden", required_argument, NULL, OPT_HIDDEN},
    {"layers", required_argument, NULL, OPT_LAYERS},
    {"classes", required_argument, NULL, OPT_CLASSES},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"micro-batch", required_argument, NULL, OPT_MICRO},
    {"steps", required_argument, NULL, OPT_STEPS},
    {"lr", required_argument, NULL, OPT_LR},
    {"clip", required_argument, NULL, OPT_CLIP},
    {"seed", required_argument, NULL, OPT_SEED},
    {"data-seed", required_argument, NULL, OPT_DATA_SEED},
    {"mode", required_argument, NULL, OPT_MODE},
    {"atom-order", required_argument, NULL, OPT_ATOM_ORDER},
    {"prefetch", required_argument, NULL, OPT_PREFETCH},
    {"persistence", required_argument, NULL, OPT_PERSISTENCE},
    {"reuse-distance", required_argument, NULL, OPT_REUSE},
    {"max-live", required_argument, NULL, OPT_MAX_LIVE},
    {"bucket", required_argument, NULL, OPT_BUCKET},
    {"overlap", required_argument, NULL, OPT_OVERLAP},
    {"align", required_argument, NULL, OPT_ALIGN},
    {"init-weights", required_argument, NULL, OPT_INIT},
    {"save-weights", required_argument, NULL, OPT_SAVE},
    {"data", required_argument, NULL, OPT_DATA},
    {"write-synthetic-data", required_argument, NULL, OPT_WRITE_DATA},
    {"samples", required_argument, NULL, OPT_SAMPLES},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"verbose", no_argument, NULL, OPT_VERBOSE},
    {"help", no_argument, NULL, OPT_HELP},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"precision", required_argument, NULL, OPT_PRECISION},
    {"save-dtype", required_argument, NULL, OPT_SAVE_DTYPE},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"trace-steps", required_argument, NULL, OPT_TRACE_STEPS},
    {"save-checkpoint", required_argument, NULL, OPT_SAVE_CKPT},
    {"checkpoint-every", required_argument, NULL, OPT_CKPT_EVERY},
    {"keep-last", required_argument, NULL, OPT_KEEP_LAST},
    {"resume", required_argument, NULL, OPT_RESUME},
    {NULL, 0, NULL, 0},
};

/* An integer in [min, max], the whole text consumed ("5e5" too, as the config takes). */
static int parse_int(const char *text, int64_t min, int64_t max, int64_t *out)
{
    return flag_integer(text, (double)min, (double)max, out);
}

static int parse_u64(const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    if (text[0] == '-')
        return -1;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

/* A finite number >= min (> min when strict). */
static int parse_real(const char *text, double min, int strict, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end != '\0' || !isfinite(v) || v < min || (strict && v == min))
        return -1;
    *out = v;
    return 0;
}

static void set_defaults(struct mlp_args *a)
{
    memset(a, 0, sizeof *a);
    a->hidden = 1024;
    a->layers = 12;
    a->classes = 10;
    a->batch = 32;
    a->steps = 10;
    a->data_seed = 1;
    /* --clip's default: off (DeepSpeed's is 1.0) */
    program_config_adamw(&a->cfg, 1e-4, 0.999, 0.01, 0.0);
}

/* Applies one integer-valued option; -1 if out of range. */
static int set_int_option(struct mlp_args *a, int opt, const char *v)
{
    struct zero_optimization_config *z = &a->cfg.zero_optimization;
    int64_t n;
    switch (opt) {
    case OPT_STAGE:
        if (parse_int(v, 0, 3, &n))
            return -1;
        z->stage = (int)n;
        return 0;
    case OPT_LAYERS:
        if (parse_int(v, 0, 1000000, &n))
            return -1;
        a->layers = (int)n;
        return 0;
    case OPT_OVERLAP:
        if (parse_int(v, 0, 1, &n))
            return -1;
        z->overlap_comm = (int)n;
        return 0;
    case OPT_STEPS:
    case OPT_PREFETCH:
    case OPT_PERSISTENCE:
    case OPT_REUSE:
        if (parse_int(v, 0, INT64_MAX, &n))
            return -1;
        break;
    default:
        if (parse_int(v, 1, INT64_MAX, &n))
            return -1;
        break;
    }
    switch (opt) {
    case OPT_HIDDEN:
        a->hidden = n;
        break;
    case OPT_CLASSES:
        a->classes = n;
        break;
    case OPT_BATCH:
        a->batch = n;
        break;
    case OPT_MICRO:
        a->micro_batch = n;
        break;
    case OPT_STEPS:
        a->steps = n;
        break;
    case OPT_SAMPLES:
        a->samples = n;
        break;
    case OPT_PREFETCH:
        z->stage3_prefetch_bucket_size = n;
        break;
    case OPT_PERSISTENCE:
        z->stage3_param_persistence_threshold = n;
        break;
    case OPT_REUSE:
        z->stage3_max_reuse_distance = n;
        break;
    case OPT_MAX_LIVE:
        z->stage3_max_live_parameters = n;
        break;
    case OPT_BUCKET:
        z->reduce_bucket_size = n;
        break;
    case OPT_ALIGN:
        a->cfg.libzero.align = n;
        break;
    case OPT_CKPT_EVERY:
        a->checkpoint_every = n;
        break;
    case OPT_KEEP_LAST:
        a->keep_last = n;
        break;
    default:
        return -1;
    }
    return 0;
}

/* What an integer option accepts, for its error message. */
static const char *int_range(int opt)
{
    switch (opt) {
    case OPT_STAGE:
        return "0, 1, 2 or 3";
    case OPT_OVERLAP:
        return "0 or 1";
    case OPT_LAYERS:
    case OPT_STEPS:
    case OPT_PREFETCH:
    case OPT_PERSISTENCE:
    case OPT_REUSE:
        return "an integer >= 0";
    default:
        return "an integer >= 1";
    }
}

/* Applies option opt with value v; -1 with msg filled on a bad value. */
static int apply(struct mlp_args *a, int opt, const char *name, const char *v, char *msg,
                 size_t len)
{
    double x;
    switch (opt) {
    case OPT_LR:
        if (parse_real(v, 0.0, 1, &x))
            goto bad_real;
        a->cfg.optimizer.lr = x;
        return 0;
    case OPT_CLIP:
        if (parse_real(v, 0.0, 0, &x))
            goto bad_real;
        a->cfg.gradient_clipping = x;
        return 0;
    case OPT_SEED:
    case OPT_DATA_SEED: {
        uint64_t s;
        if (parse_u64(v, &s)) {
            snprintf(msg, len, "train_mlp: --%s: '%s' is not an unsigned integer", name, v);
            return -1;
        }
        *(opt == OPT_SEED ? &a->cfg.libzero.seed : &a->data_seed) = s;
        return 0;
    }
    case OPT_MODE:
        if (strcmp(v, "exact") == 0)
            a->cfg.libzero.coll_mode = ZERO_COLL_EXACT;
        else if (strcmp(v, "native") == 0)
            a->cfg.libzero.coll_mode = ZERO_COLL_NATIVE;
        else {
            snprintf(msg, len, "train_mlp: --mode: '%s' is not exact or native", v);
            return -1;
        }
        return 0;
    case OPT_ATOM_ORDER:
        if (strcmp(v, "micro_step_major") == 0)
            a->cfg.libzero.atom_order = ZERO_ATOM_MICRO_STEP_MAJOR;
        else if (strcmp(v, "rank_major") == 0)
            a->cfg.libzero.atom_order = ZERO_ATOM_RANK_MAJOR;
        else {
            snprintf(msg, len,
                     "train_mlp: --atom-order: '%s' is not micro_step_major or rank_major", v);
            return -1;
        }
        return 0;
    case OPT_PRECISION: {
        int t = zero_dtype_parse(v);
        if (t != ZERO_F32 && t != ZERO_F16 && t != ZERO_BF16) {
            snprintf(msg, len, "train_mlp: --precision: '%s' is not fp32, fp16 or bf16", v);
            return -1;
        }
        a->cfg.fp16.enabled = t == ZERO_F16;
        a->cfg.bf16.enabled = t == ZERO_BF16;
        return 0;
    }
    case OPT_SAVE_DTYPE: {
        int t = zero_dtype_parse(v);
        if (t != ZERO_F32 && t != ZERO_F16 && t != ZERO_BF16) {
            snprintf(msg, len, "train_mlp: --save-dtype: '%s' is not fp32, fp16 or bf16", v);
            return -1;
        }
        a->save_dtype = (enum zero_dtype)t;
        return 0;
    }
    case OPT_INIT:
        a->init_weights = v;
        return 0;
    case OPT_SAVE:
        a->save_weights = v;
        return 0;
    case OPT_DATA:
        a->data = v;
        return 0;
    case OPT_WRITE_DATA:
        a->write_data = v;
        return 0;
    case OPT_TRACE:
        a->trace = v;
        return 0;
    case OPT_TRACE_STEPS:
        a->trace_steps = v;
        return 0;
    case OPT_SAVE_CKPT:
        a->save_checkpoint = v;
        return 0;
    case OPT_RESUME:
        a->resume = v;
        return 0;
    case OPT_CONFIG:
        return 0; /* loaded before the other flags */
    case OPT_QUIET:
        a->quiet = 1;
        return 0;
    case OPT_VERBOSE:
        a->verbose = 1;
        return 0;
    default:
        if (set_int_option(a, opt, v) == 0)
            return 0;
        snprintf(msg, len, "train_mlp: --%s: '%s' is not %s", name, v, int_range(opt));
        return -1;
    }
bad_real:
    snprintf(msg, len, "train_mlp: --%s: '%s' is not a finite number %s 0", name, v,
             opt == OPT_LR ? ">" : ">=");
    return -1;
}

/* --config FILE under the flags: the file overrides the defaults where it
 * speaks; the flags, applied afterwards, override both. */
static int load_config(struct mlp_args *a, int *overlap_derived, char *msg, size_t len)
{
    struct zero_config_origins from;
    struct zero_error err = {0};
    if (zero_config_load_file(&a->cfg, &from, a->config, 0, ZERO_CONFIG_KEEP, &err)) {
        snprintf(msg, len, "train_mlp: --config: %s", err.msg);
        return -1;
    }
    /* accepted means honoured: only the GPT's blocks keep activations in the compute
     * dtype, so the key would change nothing here */
    if (a->cfg.libzero.activations != ZERO_ACTIVATIONS_FP32) {
        snprintf(msg, len,
                 "train_mlp: --config: %s: libzero.activations = \"compute\" applies to the "
                 "GPT's blocks (train_gpt); the residual MLP keeps its activations in fp32: "
                 "give \"fp32\" or leave the key out",
                 a->config);
        return -1;
    }
    /* a file that speaks of batch sizes replaces --batch's default */
    /* ("auto" batch sizes are the flags', as Hugging Face fills them from its arguments) */
    if (zero_config_origin_of(&from, "train_batch_size") == ZERO_ORIGIN_FILE ||
        zero_config_origin_of(&from, "train_micro_batch_size_per_gpu") == ZERO_ORIGIN_FILE ||
        zero_config_origin_of(&from, "gradient_accumulation_steps") == ZERO_ORIGIN_FILE) {
        a->batch = a->cfg.train_batch_size;
        a->micro_batch = a->cfg.train_micro_batch_size_per_gpu;
    }
    int o = zero_config_origin_of(&from, "zero_optimization.overlap_comm");
    *overlap_derived = o == ZERO_ORIGIN_DERIVED || o == ZERO_ORIGIN_AUTO;
    return 0;
}

/* The value of --config, and whether --overlap or --help is given; parsing
 * errors wait for the second pass. */
static void prescan(struct mlp_args *a, int argc, char **argv, int *overlap_given, int *help)
{
    opterr = 0; /* we name the flag ourselves */
    optind = 0; /* glibc: 0 resets getopt fully (1 keeps the last parse's position in a word) */
    int opt, index;
    while ((opt = getopt_long(argc, argv, ":", options, &index)) != -1) {
        if (opt == OPT_CONFIG)
            a->config = optarg;
        *overlap_given |= opt == OPT_OVERLAP;
        *help |= opt == OPT_HELP;
    }
}

enum mlp_args_result mlp_args_parse(struct mlp_args *a, int argc, char **argv, char *msg,
                                    size_t msg_len)
{
    set_defaults(a);
    msg[0] = '\0';
    int overlap_given = 0, help = 0, overlap_derived = 0;
    prescan(a, argc, argv, &overlap_given, &help);
    if (help)
        return MLP_ARGS_HELP;
    if (a->config && load_config(a, &overlap_derived, msg, msg_len))
        return MLP_ARGS_USAGE;
    optind = 0; /* glibc: 0 resets getopt fully (1 keeps the last parse's position in a word) */
    int opt, index;
    while ((opt = getopt_long(argc, argv, ":", options, &index)) != -1) {
        if (opt == '?') {
            snprintf(msg, msg_len, "train_mlp: unknown option '%s' (see --help)", argv[optind - 1]);
            return MLP_ARGS_USAGE;
        }
        if (opt == ':') {
            snprintf(msg, msg_len, "train_mlp: option '%s' needs a value", argv[optind - 1]);
            return MLP_ARGS_USAGE;
        }
        if (opt == OPT_HELP)
            return MLP_ARGS_HELP;
        if (apply(a, opt, options[index].name, optarg, msg, msg_len))
            return MLP_ARGS_USAGE;
    }
    if (optind < argc) {
        snprintf(msg, msg_len, "train_mlp: unexpected argument '%s' (see --help)", argv[optind]);
        return MLP_ARGS_USAGE;
    }
    /* an overlap_comm the file left to DeepSpeed's rule follows --stage too */
    struct zero_optimization_config *z = &a->cfg.zero_optimization;
    if (overlap_derived && !overlap_given)
        z->overlap_comm = z->stage == 3;
    /* the config's libzero.trace section, unless the flags say otherwise */
    if (!a->trace && a->cfg.libzero.trace_path[0])
        a->trace = a->cfg.libzero.trace_path;
    if (!a->trace_steps && a->cfg.libzero.trace_steps[0])
        a->trace_steps = a->cfg.libzero.trace_steps;
    if (a->quiet && a->verbose) {
        snprintf(msg, msg_len, "train_mlp: --quiet and --verbose exclude each other");
        return MLP_ARGS_USAGE;
    }
    if (a->data && a->write_data) {
        snprintf(msg, msg_len, "train_mlp: --data and --write-synthetic-data exclude each other");
        return MLP_ARGS_USAGE;
    }
    if ((a->checkpoint_every || a->keep_last) && !a->save_checkpoint) {
        snprintf(msg, msg_len,
                 "train_mlp: --checkpoint-every and --keep-last need "
                 "--save-checkpoint");
        return MLP_ARGS_USAGE;
    }
    if (a->samples && !a->write_data) {
        snprintf(msg, msg_len, "train_mlp: --samples: only used with --write-synthetic-data");
        return MLP_ARGS_USAGE;
    }
    return MLP_ARGS_OK;
}

static const char *given(const char *path)
{
    return path ? path : "(not given)";
}

void mlp_args_fields(const struct mlp_args *a, struct program_startup *s)
{
    /* the config's keys (stage, lr, seed, knobs) come with the resolved config */
    program_field(s, "--hidden", "%lld", (long long)a->hidden);
    program_field(s, "--layers", "%d", a->layers);
    program_field(s, "--classes", "%lld", (long long)a->classes);
    program_field(s, "--batch", "%lld", (long long)a->batch);
    program_field(s, "--micro-batch", "%lld", (long long)a->micro_batch);
    program_field(s, "--steps", "%lld", (long long)a->steps);
    program_field(s, "--data-seed", "%llu", (unsigned long long)a->data_seed);
    program_field(s, "--init-weights", "%s", given(a->init_weights));
    program_field(s, "--save-weights", "%s", given(a->save_weights));
    program_field(s, "--save-dtype", "%s", zero_dtype_name(a->save_dtype));
    program_field(s, "--data", "%s", given(a->data));
    program_field(s, "--write-synthetic-data", "%s", given(a->write_data));
    program_field(s, "--samples", "%lld", (long long)a->samples);
    program_field(s, "--quiet", "%d", a->quiet);
    program_field(s, "--verbose", "%d", a->verbose);
    program_field(s, "--trace", "%s", given(a->trace));
    program_field(s, "--trace-steps", "%s", given(a->trace_steps));
    program_field(s, "--save-checkpoint", "%s", given(a->save_checkpoint));
    program_field(s, "--checkpoint-every", "%lld", (long long)a->checkpoint_every);
    program_field(s, "--keep-last", "%lld", (long long)a->keep_last);
    program_field(s, "--resume", "%s", given(a->resume));
}

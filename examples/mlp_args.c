/* Command-line options of examples/train_mlp: one flag table (src/program/flags.h),
 * every value checked and every error naming its flag. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program/flags.h"
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

/* What the table's choice flags hold until the parse maps them (-1: not given, the
 * defaults or --config stand). */
struct choices {
    int mode, atom_order, precision, save_dtype;
};

static const char *const modes[] = {"exact", "native", NULL};
static const char *const atom_orders[] = {"micro_step_major", "rank_major", NULL};
/* zero_dtype_parse's names of the three dtypes, and which each is */
static const char *const dtypes[] = {"fp32", "float32", "float",    "fp16", "float16",
                                     "half", "bf16",    "bfloat16", NULL};
static const enum zero_dtype dtype_of[] = {ZERO_F32, ZERO_F32, ZERO_F32,  ZERO_F16,
                                           ZERO_F16, ZERO_F16, ZERO_BF16, ZERO_BF16};

#define NFLAGS 40
#define I64MAX ((double)INT64_MAX)
/* what a bad value is not */
#define DTYPES "fp32, fp16 or bf16"
#define POSITIVE "an integer >= 1"
#define COUNT "an integer >= 0"

/* The table, pointing into a and c (train_mlp --help's text is its own, usage_text). */
static int table(struct mlp_args *a, struct choices *c, struct flag *t)
{
    struct zero_optimization_config *z = &a->cfg.zero_optimization;
    const struct flag all[] = {
        FLAG_NUM_WANT("stage", "S", NULL, FLAG_INT, &z->stage, 0, 3, "0, 1, 2 or 3"),
        FLAG_NUM_WANT("hidden", "H", NULL, FLAG_I64, &a->hidden, 1, I64MAX, POSITIVE),
        FLAG_NUM("layers", "L", NULL, FLAG_INT, &a->layers, 0, ZERO_MAX_UNITS - 1),
        FLAG_NUM_WANT("classes", "C", NULL, FLAG_I64, &a->classes, 1, I64MAX, POSITIVE),
        FLAG_NUM_WANT("batch", "B", NULL, FLAG_I64, &a->batch, 1, I64MAX, POSITIVE),
        FLAG_NUM_WANT("micro-batch", "m", NULL, FLAG_I64, &a->micro_batch, 1, I64MAX, POSITIVE),
        FLAG_NUM_WANT("steps", "K", NULL, FLAG_I64, &a->steps, 0, I64MAX, COUNT),
        FLAG_NUM_WANT("lr", "X", NULL, FLAG_REAL, &a->cfg.optimizer.lr, DBL_TRUE_MIN, DBL_MAX,
                      "a finite number > 0"),
        FLAG_NUM_WANT("clip", "X", NULL, FLAG_REAL, &a->cfg.gradient_clipping, 0, DBL_MAX,
                      "a finite number >= 0"),
        FLAG_ANY("seed", "N", NULL, FLAG_U64, &a->cfg.libzero.seed),
        FLAG_ANY("data-seed", "N", NULL, FLAG_U64, &a->data_seed),
        FLAG_ONE_OF_WANT("mode", "M", NULL, &c->mode, modes, "exact or native"),
        FLAG_ONE_OF_WANT("atom-order", "O", NULL, &c->atom_order, atom_orders,
                         "micro_step_major or rank_major"),
        FLAG_NUM_WANT("prefetch", "N", NULL, FLAG_I64, &z->stage3_prefetch_bucket_size, 0, I64MAX,
                      COUNT),
        FLAG_NUM_WANT("persistence", "N", NULL, FLAG_I64, &z->stage3_param_persistence_threshold, 0,
                      I64MAX, COUNT),
        FLAG_NUM_WANT("reuse-distance", "N", NULL, FLAG_I64, &z->stage3_max_reuse_distance, 0,
                      I64MAX, COUNT),
        FLAG_NUM_WANT("max-live", "N", NULL, FLAG_I64, &z->stage3_max_live_parameters, 1, I64MAX,
                      POSITIVE),
        FLAG_NUM_WANT("bucket", "N", NULL, FLAG_I64, &z->reduce_bucket_size, 1, I64MAX, POSITIVE),
        FLAG_NUM_WANT("overlap", "0|1", NULL, FLAG_INT, &z->overlap_comm, 0, 1, "0 or 1"),
        FLAG_NUM_WANT("align", "N", NULL, FLAG_I64, &a->cfg.libzero.align, 1, I64MAX, POSITIVE),
        FLAG_ANY("init-weights", "FILE", NULL, FLAG_STR, &a->init_weights),
        FLAG_ANY("save-weights", "FILE", NULL, FLAG_STR, &a->save_weights),
        FLAG_ANY("data", "FILE", NULL, FLAG_STR, &a->data),
        FLAG_ANY("write-synthetic-data", "FILE", NULL, FLAG_STR, &a->write_data),
        FLAG_NUM_WANT("samples", "S", NULL, FLAG_I64, &a->samples, 1, I64MAX, POSITIVE),
        FLAG_ANY("quiet", NULL, NULL, FLAG_SET, &a->quiet),
        FLAG_ANY("verbose", NULL, NULL, FLAG_SET, &a->verbose),
        FLAG_ANY("config", "FILE", NULL, FLAG_STR, &a->config),
        FLAG_ONE_OF_WANT("precision", "P", NULL, &c->precision, dtypes, DTYPES),
        FLAG_ONE_OF_WANT("save-dtype", "D", NULL, &c->save_dtype, dtypes, DTYPES),
        FLAG_ANY("trace", "FILE", NULL, FLAG_STR, &a->trace),
        FLAG_ANY("trace-steps", "LIST", NULL, FLAG_STR, &a->trace_steps),
        FLAG_ANY("save-checkpoint", "DIR", NULL, FLAG_STR, &a->save_checkpoint),
        FLAG_NUM_WANT("checkpoint-every", "K", NULL, FLAG_I64, &a->checkpoint_every, 1, I64MAX,
                      POSITIVE),
        FLAG_NUM_WANT("keep-last", "M", NULL, FLAG_I64, &a->keep_last, 1, I64MAX, POSITIVE),
        FLAG_ANY("resume", "DIR", NULL, FLAG_STR, &a->resume),
    };
    _Static_assert(sizeof all / sizeof all[0] <= NFLAGS, "NFLAGS is too small for the table");
    const int n = (int)(sizeof all / sizeof all[0]);
    for (int i = 0; i < n; i++)
        t[i] = all[i];
    return n;
}

static int given_flag(const struct flag *t, const int *given, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0)
            return given[i];
    return 0;
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

enum mlp_args_result mlp_args_parse(struct mlp_args *a, int argc, char **argv, char *msg,
                                    size_t msg_len)
{
    set_defaults(a);
    msg[0] = '\0';
    struct choices c = {-1, -1, -1, -1};
    struct flag t[NFLAGS];
    int given[NFLAGS], overlap_derived = 0;
    int n = table(a, &c, t);
    /* --help and --config's path first; parsing errors wait for the second pass */
    if (flags_scan(t, n, argc, argv, given) == FLAGS_HELP)
        return MLP_ARGS_HELP;
    int overlap_given = given_flag(t, given, n, "overlap");
    if (a->config && load_config(a, &overlap_derived, msg, msg_len))
        return MLP_ARGS_USAGE;
    enum flags_result r = flags_parse("train_mlp", t, n, argc, argv, NULL, msg, msg_len);
    if (r != FLAGS_OK)
        return r == FLAGS_HELP ? MLP_ARGS_HELP : MLP_ARGS_USAGE;
    if (c.mode >= 0)
        a->cfg.libzero.coll_mode = c.mode == 0 ? ZERO_COLL_EXACT : ZERO_COLL_NATIVE;
    if (c.atom_order >= 0)
        a->cfg.libzero.atom_order =
            c.atom_order == 0 ? ZERO_ATOM_MICRO_STEP_MAJOR : ZERO_ATOM_RANK_MAJOR;
    if (c.precision >= 0) {
        a->cfg.fp16.enabled = dtype_of[c.precision] == ZERO_F16;
        a->cfg.bf16.enabled = dtype_of[c.precision] == ZERO_BF16;
    }
    if (c.save_dtype >= 0)
        a->save_dtype = dtype_of[c.save_dtype];
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

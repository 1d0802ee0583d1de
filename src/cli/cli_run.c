/* The toy model, its flags and one training step for the zero subcommands. See cli_run.h. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "program/flags.h"

void cli_model_defaults(struct cli_model *m)
{
    memset(m, 0, sizeof *m);
    m->hidden = 64;
    m->layers = 4;
    m->classes = 10;
    m->block = 8, m->vocab = 64, m->heads = 4, m->kv_heads = 2;
    m->micro_batch = 4;
    m->data_seed = 1;
    /* clipping as train_mlp: off (DeepSpeed's default is 1.0) */
    program_config_adamw(&m->cfg, 1e-3, 0.999, 0.01, 0.0);
}

static const char help_stage[] =
    "  --stage S            ZeRO stage 0 (plain data parallel), 1, 2 or 3 (default 0)\n";
static const char help_rest[] =
    "  --model NAME         mlp (default: the residual MLP), gpt2 or llama (a transformer on\n"
    "                       a synthetic token stream; llama: GQA, SwiGLU, tied head)\n"
    "  --hidden H           width of the residual MLP blocks (default 64; inner 4H), or the\n"
    "                       transformer's C\n"
    "  --layers L           residual blocks (default 4), then a classifier; or transformer\n"
    "                       blocks\n"
    "  --classes C          classifier outputs (default 10)\n"
    "  --block-size T       transformers: tokens per sequence (default 8)\n"
    "  --vocab-size V       transformers: vocabulary (default 64)\n"
    "  --heads H            transformers: attention heads (default 4)\n"
    "  --kv-heads K         llama: key/value heads, dividing --heads (default 2)\n"
    "  --hf-config FILE     --model llama of a Hugging Face config.json's shape (its hidden,\n"
    "                       layers, heads, kv heads, vocab, rope, biases, tied or not)\n"
    "  --micro-batch m      rows (mlp) or sequences per rank per micro-step (default 4)\n"
    "  --batch B            global batch; accumulation = B / (m x N) (default m x N)\n"
    "  --lr X               AdamW learning rate (default 1e-3)\n"
    "  --seed N             parameter initialization seed (default 1234)\n"
    "  --data-seed N        synthetic data seed (default 1)\n"
    "  --mode exact|native  exact: bit-reproducible collectives (default)\n"
    "  --atom-order O       libzero.atom_order: micro_step_major (default) or rank_major\n"
    "                       (a rank's micro-batches consecutive: exact mode reduces once)\n"
    "  --precision P        fp32 (default), bf16 or fp16 (mixed precision: bf16.enabled or\n"
    "                       fp16.enabled)\n"
    "  --align N            unit shards are multiples of N elements (default 2048)\n"
    "  --bucket N           reduce_bucket_size, elements\n"
    "  --overlap 0|1        overlap_comm\n"
    "  --prefetch N         stage3_prefetch_bucket_size, elements\n"
    "  --persistence N      stage3_param_persistence_threshold, elements\n"
    "  --max-live N         stage3_max_live_parameters, elements\n"
    "  --reuse-distance N   stage3_max_reuse_distance, elements (0: keep only what is reused at "
    "once)\n"
    "  --hpz G              zero_hpz_partition_size: stage 3's backward gathers inside groups of\n"
    "                       G consecutive ranks (ZeRO++ hpZ; 1: off)\n"
    "  --mics M             mics_shard_size: the states sharded in groups of M consecutive ranks\n"
    "                       and replicated across the N/M groups (MiCS / HSDP, stages 1-3)\n"
    "  --qgz BITS           zero_quantized_gradients with libzero.qgz_bits BITS (4 or 8): stage\n"
    "                       3's gradient reduce-scatter as quantized all-to-alls (ZeRO++ qgZ)\n";

const char *cli_model_flags_help(int stage_flag)
{
    static char both[sizeof help_stage + sizeof help_rest];
    snprintf(both, sizeof both, "%s%s", help_stage, help_rest);
    return stage_flag ? both : help_rest;
}

#define NFLAGS 32
#define I64MAX ((double)INT64_MAX)
#define POSITIVE "an integer >= 1"
#define COUNT "an integer >= 0"

static const char *const kinds[] = {"mlp", "gpt2", "llama", NULL}; /* enum cli_model_kind */
static const char *const modes[] = {"exact", "native", NULL};
static const char *const atom_orders[] = {"micro_step_major", "rank_major", NULL};
static const char *const precisions[] = {"fp32", "bf16", "fp16", NULL};
static const char *const qgz_widths[] = {"4", "8", NULL}; /* libzero.qgz_bits */

/* What the choice flags and --hf-config hold until cli_model_flag applies them. */
struct taken_values {
    int mode, atom_order, precision, qgz_bits;
    const char *hf_config;
};

/* The flags of cli_model_flags_help, pointing into m and v. */
static int model_flags(struct cli_model *m, struct taken_values *v, struct flag *t)
{
    struct zero_optimization_config *z = &m->cfg.zero_optimization;
    const struct flag all[] = {
        FLAG_NUM_WANT("stage", "S", NULL, FLAG_INT, &z->stage, 0, 3, "0, 1, 2 or 3"),
        FLAG_NUM_WANT("hidden", "H", NULL, FLAG_I64, &m->hidden, 1, I64MAX, POSITIVE),
        FLAG_NUM("layers", "L", NULL, FLAG_INT, &m->layers, 1, ZERO_MAX_UNITS - 1),
        FLAG_NUM_WANT("classes", "C", NULL, FLAG_I64, &m->classes, 1, I64MAX, POSITIVE),
        FLAG_NUM_WANT("micro-batch", "m", NULL, FLAG_I64, &m->micro_batch, 1, I64MAX, POSITIVE),
        FLAG_NUM_WANT("batch", "B", NULL, FLAG_I64, &m->batch, 1, I64MAX, POSITIVE),
        FLAG_NUM_WANT("lr", "X", NULL, FLAG_REAL, &m->cfg.optimizer.lr, DBL_TRUE_MIN, DBL_MAX,
                      "a number > 0"),
        FLAG_NUM_WANT("seed", "N", NULL, FLAG_U64, &m->cfg.libzero.seed, 0, 0, COUNT),
        FLAG_NUM_WANT("data-seed", "N", NULL, FLAG_U64, &m->data_seed, 0, 0, COUNT),
        FLAG_ONE_OF_WANT("mode", "M", NULL, &v->mode, modes, "exact or native"),
        FLAG_NUM_WANT("align", "N", NULL, FLAG_I64, &m->cfg.libzero.align, 1, I64MAX, POSITIVE),
        FLAG_NUM_WANT("bucket", "N", NULL, FLAG_I64, &z->reduce_bucket_size, 1, I64MAX, POSITIVE),
        FLAG_NUM_WANT("overlap", "0|1", NULL, FLAG_INT, &z->overlap_comm, 0, 1, "0 or 1"),
        FLAG_NUM_WANT("prefetch", "N", NULL, FLAG_I64, &z->stage3_prefetch_bucket_size, 0, I64MAX,
                      COUNT),
        FLAG_NUM_WANT("persistence", "N", NULL, FLAG_I64, &z->stage3_param_persistence_threshold, 0,
                      I64MAX, COUNT),
        FLAG_NUM_WANT("max-live", "N", NULL, FLAG_I64, &z->stage3_max_live_parameters, 1, I64MAX,
                      POSITIVE),
        FLAG_NUM_WANT("reuse-distance", "N", NULL, FLAG_I64, &z->stage3_max_reuse_distance, 0,
                      I64MAX, COUNT),
        FLAG_ONE_OF_WANT("precision", "P", NULL, &v->precision, precisions, "fp32, bf16 or fp16"),
        FLAG_ONE_OF_WANT("atom-order", "O", NULL, &v->atom_order, atom_orders,
                         "micro_step_major or rank_major"),
        FLAG_NUM_WANT("hpz", "G", NULL, FLAG_INT, &z->zero_hpz_partition_size, 1, 1 << 20,
                      POSITIVE),
        FLAG_NUM_WANT("mics", "M", NULL, FLAG_INT, &z->mics_shard_size, 1, 1 << 20, POSITIVE),
        FLAG_ONE_OF_WANT("qgz", "BITS", NULL, &v->qgz_bits, qgz_widths, "4 or 8"),
        FLAG_ONE_OF_WANT("model", "NAME", NULL, &m->kind, kinds, "mlp, gpt2 or llama"),
        FLAG_NUM_WANT("block-size", "T", NULL, FLAG_I64, &m->block, 1, 1000000, POSITIVE),
        FLAG_NUM_WANT("vocab-size", "V", NULL, FLAG_I64, &m->vocab, 1, 1000000, POSITIVE),
        FLAG_NUM_WANT("heads", "H", NULL, FLAG_INT, &m->heads, 1, 1000000, POSITIVE),
        FLAG_NUM_WANT("kv-heads", "K", NULL, FLAG_INT, &m->kv_heads, 1, 1000000, POSITIVE),
        FLAG_ANY("hf-config", "FILE", NULL, FLAG_STR, &v->hf_config),
    };
    _Static_assert(sizeof all / sizeof all[0] <= NFLAGS, "NFLAGS is too small for the table");
    const int n = (int)(sizeof all / sizeof all[0]);
    for (int i = 0; i < n; i++)
        t[i] = all[i];
    return n;
}

/* --hf-config FILE: the Llama of a Hugging Face config.json, its shape over the flags
 * before it */
static int take_hf_config(struct cli_model *m, const char *path, char *msg, size_t len)
{
    struct zero_error err = {0};
    if (zero_hf_config_read(&m->hf, path, NULL, 0, &err)) {
        snprintf(msg, len, "--hf-config: %s", err.msg);
        return -1;
    }
    m->hf_config = path, m->kind = CLI_MODEL_LLAMA;
    m->hidden = m->hf.hidden_size, m->layers = m->hf.num_hidden_layers;
    m->heads = m->hf.num_attention_heads, m->kv_heads = m->hf.num_key_value_heads;
    m->vocab = m->hf.vocab_size;
    return 1;
}

int cli_model_flag(struct cli_model *m, int argc, char **argv, int *i, char *msg, size_t len)
{
    struct taken_values v = {0};
    struct flag t[NFLAGS];
    const struct flag *f = NULL;
    int n = model_flags(m, &v, t);
    int took = flags_take(t, n, argc, argv, i, &f, msg, len);
    if (took <= 0)
        return took;
    if (f->dst == &v.hf_config)
        return take_hf_config(m, v.hf_config, msg, len);
    if (f->dst == &v.mode)
        m->cfg.libzero.coll_mode = v.mode == 1 ? ZERO_COLL_NATIVE : ZERO_COLL_EXACT;
    else if (f->dst == &v.atom_order)
        m->cfg.libzero.atom_order =
            v.atom_order == 1 ? ZERO_ATOM_RANK_MAJOR : ZERO_ATOM_MICRO_STEP_MAJOR;
    else if (f->dst == &v.qgz_bits) {
        m->cfg.zero_optimization.zero_quantized_gradients = 1;
        m->cfg.libzero.qgz_bits = v.qgz_bits == 1 ? 8 : 4;
    } else if (f->dst == &v.precision) {
        m->cfg.bf16.enabled = v.precision == 1;
        m->cfg.fp16.enabled = v.precision == 2;
    }
    return 1;
}

void cli_model_fields(const struct cli_model *m, struct program_startup *su)
{
    program_field(su, "--model", "%s", cli_model_name(m));
    program_field(su, "--block-size", "%lld", (long long)m->block);
    program_field(su, "--vocab-size", "%lld", (long long)m->vocab);
    program_field(su, "--heads", "%d", m->heads);
    program_field(su, "--kv-heads", "%d", m->kv_heads);
    program_field(su, "--hf-config", "%s", m->hf_config ? m->hf_config : "");
    program_field(su, "--hidden", "%lld", (long long)m->hidden);
    program_field(su, "--layers", "%d", m->layers);
    program_field(su, "--classes", "%lld", (long long)m->classes);
    program_field(su, "--micro-batch", "%lld", (long long)m->micro_batch);
    program_field(su, "--batch", "%lld", (long long)m->batch);
    program_field(su, "--data-seed", "%llu", (unsigned long long)m->data_seed);
    program_fields_config(su, &m->cfg); /* --stage, --lr, --seed and the knobs */
}

int cli_startup(struct program_startup *su, int *owned)
{
    struct zero_error err = {0};
    zero_job_init(NULL, NULL, owned, &err);
    int status = program_startup_agree(su, zero_comm_world());
    program_startup_free(su);
    return status;
}

char *cli_num(char *buf, int64_t v)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%lld", (long long)(v < 0 ? -v : v));
    char *p = buf;
    if (v < 0)
        *p++ = '-';
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            *p++ = ',';
        *p++ = digits[i];
    }
    *p = '\0';
    return buf;
}

/* DeepSpeed's batch rule with a fixed micro-batch: accumulation = B / (m x N). */
static int resolve_batch(struct cli_run *r, struct zero_error *err)
{
    struct zero_config *c = &r->m.cfg;
    c->train_micro_batch_size_per_gpu = r->m.micro_batch;
    c->train_batch_size = r->m.batch ? r->m.batch : r->m.micro_batch * r->world;
    c->gradient_accumulation_steps = 0;
    if (zero_config_resolve_batch(c, r->world, err))
        return zero_error_wrap(err, "--batch %lld with --micro-batch %lld on %d ranks: ",
                               (long long)c->train_batch_size, (long long)r->m.micro_batch,
                               r->world);
    return ZERO_OK;
}

const char *cli_model_name(const struct cli_model *m)
{
    return m->kind == CLI_MODEL_GPT2 ? "gpt2" : m->kind == CLI_MODEL_LLAMA ? "llama" : "mlp";
}

const char *cli_model_describe(const struct cli_model *m, char *buf, size_t len)
{
    if (m->kind == CLI_MODEL_MLP)
        snprintf(buf, len, "%d residual MLP blocks of width %lld", m->layers, (long long)m->hidden);
    else if (m->kind == CLI_MODEL_GPT2)
        snprintf(buf, len, "a GPT-2 of %d blocks (n_embd %lld, %d heads, T %lld, V %lld)",
                 m->layers, (long long)m->hidden, m->heads, (long long)m->block,
                 (long long)m->vocab);
    else if (m->hf_config)
        snprintf(buf, len,
                 "the Llama of %s (%d layers, hidden %lld, %d heads, %d kv heads, T %lld, V %lld)",
                 m->hf_config, m->layers, (long long)m->hidden, m->heads, m->kv_heads,
                 (long long)m->block, (long long)m->vocab);
    else
        snprintf(buf, len,
                 "a Llama of %d layers (hidden %lld, %d heads, %d kv heads, T %lld, V %lld)",
                 m->layers, (long long)m->hidden, m->heads, m->kv_heads, (long long)m->block,
                 (long long)m->vocab);
    return buf;
}

int cli_model_build(const struct cli_model *m, struct zero_model **model, struct zero_error *err)
{
    if (m->kind == CLI_MODEL_GPT2) {
        const struct zero_gpt_config g = {.n_layer = m->layers,
                                          .n_head = m->heads,
                                          .n_embd = m->hidden,
                                          .block_size = m->block,
                                          .vocab_size = m->vocab};
        return zero_nn_build_gpt(model, &g, err);
    }
    if (m->kind == CLI_MODEL_LLAMA && m->hf_config) {
        const struct zero_llama_config *c = &m->hf;
        if (m->hidden != c->hidden_size || m->layers != c->num_hidden_layers ||
            m->heads != c->num_attention_heads || m->kv_heads != c->num_key_value_heads ||
            m->vocab != c->vocab_size)
            return zero_fail(err, ZERO_EINVAL,
                             "--hf-config %s: a shape flag after it (--hidden, --layers, --heads, "
                             "--kv-heads, --vocab-size) disagrees with the file",
                             m->hf_config);
        return zero_nn_build_llama(model, c, &(struct zero_llama_build){.block_size = m->block},
                                   err);
    }
    if (m->kind == CLI_MODEL_LLAMA) {
        struct zero_llama_config c;
        zero_llama_config_default(&c);
        c.vocab_size = m->vocab, c.hidden_size = m->hidden;
        c.intermediate_size = (8 * m->hidden / 3 + 15) / 16 * 16;
        c.num_hidden_layers = m->layers, c.num_attention_heads = m->heads;
        c.num_key_value_heads = m->kv_heads;
        c.head_dim = m->heads > 0 ? m->hidden / m->heads : 0;
        c.max_position_embeddings = m->block, c.rms_norm_eps = 1e-5;
        c.tie_word_embeddings = 1;
        if (m->heads < 1 || m->hidden % m->heads != 0)
            return zero_fail(err, ZERO_EINVAL,
                             "--model llama: --heads %d does not divide --hidden %lld", m->heads,
                             (long long)m->hidden);
        return zero_nn_build_llama(model, &c, &(struct zero_llama_build){.block_size = m->block},
                                   err);
    }
    return zero_nn_build_mlp(model, m->hidden, m->layers, m->classes, err);
}

int cli_run_open(struct cli_run *r, const struct cli_model *m, int stage, struct zero_comm *comm,
                 struct zero_error *err)
{
    memset(r, 0, sizeof *r);
    r->m = *m;
    r->m.cfg.zero_optimization.stage = stage;
    r->rank = zero_comm_rank(comm);
    r->world = zero_comm_size(comm);
    int rc = resolve_batch(r, err);
    if (!rc)
        rc = program_device_open(&r->dev, &r->m.cfg, comm, err);
    if (!rc)
        rc = cli_model_build(m, &r->model, err);
    if (!rc && m->kind == CLI_MODEL_MLP) {
        size_t rows = (size_t)m->micro_batch;
        r->x = malloc(rows * (size_t)m->hidden * sizeof *r->x);
        r->y = malloc(rows * sizeof *r->y);
        if (!r->x || !r->y)
            rc = zero_fail(err, ZERO_ENOMEM, "micro-batch buffers");
    } else if (!rc) {
        size_t rows = (size_t)(m->micro_batch * m->block);
        r->tokens = malloc(rows * sizeof *r->tokens);
        r->y = malloc(rows * sizeof *r->y);
        if (!r->tokens || !r->y)
            rc = zero_fail(err, ZERO_ENOMEM, "micro-batch buffers");
    }
    if ((rc = example_agree_naming_ranks(rc, err, comm)) == 0)
        rc = example_agree_naming_ranks(
            zero_engine_create(&r->engine, &r->m.cfg, r->model, r->dev, err), err, comm);
    if (rc)
        cli_run_close(r);
    else
        r->atoms =
            (struct program_atoms){.order = zero_engine_config(r->engine)->libzero.atom_order,
                                   .rank = r->rank,
                                   .world = r->world,
                                   .accum = r->m.cfg.gradient_accumulation_steps,
                                   .micro = r->m.cfg.train_micro_batch_size_per_gpu};
    return rc;
}

/* x (at + rows, hidden), y (at + rows): rows at.. hold the synthetic samples first ..
 * first + rows - 1 */
/* Token t of synthetic sequence s: a pseudo-random stream with structure (each token
 * mostly follows from the one before), so a transformer's loss moves. */
static int32_t token_at(uint64_t seed, int64_t s, int64_t t, int64_t vocab)
{
    uint64_t z =
        ((uint64_t)(s * 1000003 + t) + seed * 0x632be59bd9b4e019ULL) * 0x9e3779b97f4a7c15ULL;
    z ^= z >> 29;
    return (int32_t)(((uint64_t)s + 3 * (uint64_t)t + z % 3) % (uint64_t)vocab);
}

static void fill(void *ctx, int64_t first, int64_t rows, int64_t at, struct zero_batch *b)
{
    struct cli_run *r = ctx;
    if (r->m.kind != CLI_MODEL_MLP) { /* rows here are sequences of T tokens */
        const int64_t T = r->m.block;
        for (int64_t i = 0; i < rows * T; i++) {
            r->tokens[at * T + i] = token_at(r->m.data_seed, first + i / T, i % T, r->m.vocab);
            r->y[at * T + i] = token_at(r->m.data_seed, first + i / T, i % T + 1, r->m.vocab);
        }
        *b = (struct zero_batch){.rows = (at + rows) * T, .tokens = r->tokens, .labels = r->y};
        return;
    }
    zero_synthetic_samples(r->m.data_seed, r->m.hidden, r->m.classes, first, rows,
                           r->x + at * r->m.hidden, r->y + at);
    *b = (struct zero_batch){.rows = at + rows, .inputs = r->x, .labels = r->y};
}

int cli_run_step(struct cli_run *r, int64_t step, struct zero_error *err)
{
    for (int64_t i = 0; i < r->atoms.accum; i++) { /* the engine updates at the last */
        struct zero_batch b;
        program_fill(&r->atoms, step, i, fill, r, &b);
        int rc = zero_engine_forward(r->engine, &b, NULL, err);
        if (rc == ZERO_OK)
            rc = zero_engine_backward(r->engine, err);
        if (rc == ZERO_OK)
            rc = zero_engine_step(r->engine, NULL, err);
        if (rc != ZERO_OK)
            return rc;
    }
    return ZERO_OK;
}

void cli_run_close(struct cli_run *r)
{
    zero_engine_destroy(r->engine);
    zero_model_destroy(r->model);
    zero_device_close(r->dev);
    free(r->x);
    free(r->y);
    free(r->tokens);
    memset(r, 0, sizeof *r);
}

/* The toy model, its flags and one training step for the zero subcommands. See cli_run.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"

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
    "  --qgz BITS           zero_quantized_gradients with libzero.qgz_bits BITS (4 or 8): stage\n"
    "                       3's gradient reduce-scatter as quantized all-to-alls (ZeRO++ qgZ)\n";

const char *cli_model_flags_help(int stage_flag)
{
    static char both[sizeof help_stage + sizeof help_rest];
    snprintf(both, sizeof both, "%s%s", help_stage, help_rest);
    return stage_flag ? both : help_rest;
}

static int parse_i64(const char *s, int64_t min, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min)
        return -1;
    *out = v;
    return 0;
}

int cli_model_flag(struct cli_model *m, int argc, char **argv, int *i, char *msg, size_t len)
{
    static const char *const names[] = {
        "--stage",          "--hidden",     "--layers",      "--classes",
        "--micro-batch",    "--batch",      "--lr",          "--seed",
        "--data-seed",      "--mode",       "--align",       "--bucket",
        "--overlap",        "--prefetch",   "--persistence", "--max-live",
        "--reuse-distance", "--precision",  "--atom-order",  "--hpz",
        "--model",          "--block-size", "--vocab-size",  "--heads",
        "--kv-heads",       "--hf-config",  "--qgz",
    };
    const char *flag = argv[*i];
    size_t k = 0, n = sizeof names / sizeof names[0];
    while (k < n && strcmp(flag, names[k]) != 0)
        k++;
    if (k == n)
        return 0;
    if (*i + 1 >= argc) {
        snprintf(msg, len, "%s needs a value", flag);
        return -1;
    }
    const char *v = argv[++*i];
    struct zero_optimization_config *z = &m->cfg.zero_optimization;
    int64_t x = 0;
    int bad = 0;
    const char *want = "an integer >= 1";
    if (strcmp(flag, "--hf-config") == 0) {
        struct zero_error err = {0};
        if (zero_hf_config_read(&m->hf, v, NULL, 0, &err)) {
            snprintf(msg, len, "--hf-config: %s", err.msg);
            return -1;
        }
        m->hf_config = v, m->kind = CLI_MODEL_LLAMA;
        m->hidden = m->hf.hidden_size, m->layers = m->hf.num_hidden_layers;
        m->heads = m->hf.num_attention_heads, m->kv_heads = m->hf.num_key_value_heads;
        m->vocab = m->hf.vocab_size;
    } else if (strcmp(flag, "--model") == 0) {
        static const char *const kinds[] = {"mlp", "gpt2", "llama"};
        m->kind = -1;
        for (int j = 0; j < 3; j++)
            if (strcmp(v, kinds[j]) == 0)
                m->kind = j;
        bad = m->kind < 0;
        want = "mlp, gpt2 or llama";
    } else if (strcmp(flag, "--block-size") == 0 || strcmp(flag, "--vocab-size") == 0 ||
               strcmp(flag, "--heads") == 0 || strcmp(flag, "--kv-heads") == 0) {
        bad = parse_i64(v, 1, &x) || x > 1000000;
        if (strcmp(flag, "--block-size") == 0)
            m->block = x;
        else if (strcmp(flag, "--vocab-size") == 0)
            m->vocab = x;
        else if (strcmp(flag, "--heads") == 0)
            m->heads = (int)x;
        else
            m->kv_heads = (int)x;
    } else if (strcmp(flag, "--lr") == 0) {
        char *end;
        double lr = strtod(v, &end);
        bad = end == v || *end || !(lr > 0.0);
        m->cfg.optimizer.lr = lr;
        want = "a number > 0";
    } else if (strcmp(flag, "--mode") == 0) {
        bad = strcmp(v, "exact") != 0 && strcmp(v, "native") != 0;
        m->cfg.libzero.coll_mode = strcmp(v, "native") == 0 ? ZERO_COLL_NATIVE : ZERO_COLL_EXACT;
        want = "exact or native";
    } else if (strcmp(flag, "--atom-order") == 0) {
        bad = strcmp(v, "micro_step_major") != 0 && strcmp(v, "rank_major") != 0;
        m->cfg.libzero.atom_order =
            strcmp(v, "rank_major") == 0 ? ZERO_ATOM_RANK_MAJOR : ZERO_ATOM_MICRO_STEP_MAJOR;
        want = "micro_step_major or rank_major";
    } else if (strcmp(flag, "--precision") == 0) {
        bad = strcmp(v, "fp32") != 0 && strcmp(v, "bf16") != 0 && strcmp(v, "fp16") != 0;
        m->cfg.bf16.enabled = strcmp(v, "bf16") == 0;
        m->cfg.fp16.enabled = strcmp(v, "fp16") == 0;
        want = "fp32, bf16 or fp16";
    } else if (strcmp(flag, "--qgz") == 0) {
        bad = parse_i64(v, 0, &x) || (x != 4 && x != 8);
        z->zero_quantized_gradients = 1;
        m->cfg.libzero.qgz_bits = (int)x;
        want = "4 or 8";
    } else if (strcmp(flag, "--stage") == 0 || strcmp(flag, "--overlap") == 0) {
        int stage = strcmp(flag, "--stage") == 0;
        bad = parse_i64(v, 0, &x) || x > (stage ? 3 : 1);
        want = stage ? "0, 1, 2 or 3" : "0 or 1";
        *(stage ? &z->stage : &z->overlap_comm) = (int)x;
    } else {
        int zero_ok = strcmp(flag, "--prefetch") == 0 || strcmp(flag, "--persistence") == 0 ||
                      strcmp(flag, "--seed") == 0 || strcmp(flag, "--data-seed") == 0 ||
                      strcmp(flag, "--reuse-distance") == 0;
        bad = parse_i64(v, zero_ok ? 0 : 1, &x);
        if (zero_ok)
            want = "an integer >= 0";
        if (strcmp(flag, "--hidden") == 0)
            m->hidden = x;
        else if (strcmp(flag, "--layers") == 0) {
            bad |= x > 100000;
            m->layers = (int)x;
        } else if (strcmp(flag, "--classes") == 0)
            m->classes = x;
        else if (strcmp(flag, "--micro-batch") == 0)
            m->micro_batch = x;
        else if (strcmp(flag, "--batch") == 0)
            m->batch = x;
        else if (strcmp(flag, "--seed") == 0)
            m->cfg.libzero.seed = (uint64_t)x;
        else if (strcmp(flag, "--data-seed") == 0)
            m->data_seed = (uint64_t)x;
        else if (strcmp(flag, "--align") == 0)
            m->cfg.libzero.align = x;
        else if (strcmp(flag, "--bucket") == 0)
            z->reduce_bucket_size = x;
        else if (strcmp(flag, "--prefetch") == 0)
            z->stage3_prefetch_bucket_size = x;
        else if (strcmp(flag, "--persistence") == 0)
            z->stage3_param_persistence_threshold = x;
        else if (strcmp(flag, "--reuse-distance") == 0)
            z->stage3_max_reuse_distance = x;
        else if (strcmp(flag, "--hpz") == 0) {
            bad |= x > 1 << 20;
            z->zero_hpz_partition_size = (int)x;
        } else
            z->stage3_max_live_parameters = x;
    }
    if (bad) {
        snprintf(msg, len, "%s: '%s' is not %s", flag, v, want);
        return -1;
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
    *owned = cli_mpi_init();
    int status = program_startup_agree(su, MPI_COMM_WORLD);
    program_startup_free(su);
    return status;
}

int cli_mpi_init(void)
{
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
        int provided; /* MULTIPLE: the cpu backend's communication thread (overlap) */
        MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    }
    return !initialized;
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

int cli_run_open(struct cli_run *r, const struct cli_model *m, int stage, MPI_Comm comm,
                 struct zero_error *err)
{
    memset(r, 0, sizeof *r);
    r->m = *m;
    r->m.cfg.zero_optimization.stage = stage;
    MPI_Comm_rank(comm, &r->rank);
    MPI_Comm_size(comm, &r->world);
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
    return program_micro_steps(r->engine, step, r->rank, r->world,
                               r->m.cfg.gradient_accumulation_steps,
                               r->m.cfg.train_micro_batch_size_per_gpu, fill, r, NULL, NULL, err);
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

/* train_gpt: trains a GPT-2-shaped language model with any ZeRO stage.
 *
 *     mpirun -np 2 train_gpt --stage 3                 # the addition task, ~1 minute
 *     mpirun -np 2 train_gpt --data book.txt --block-size 128 --n-embd 192 --n-layer 4
 *     mpirun -np 4 train_gpt --data fineweb_train_000001.bin --vocab-size 50257 ...
 *
 * Each step prints its loss, learning rate, tokens/s, step time and rank 0's
 * memory by ledger tag; every --val-every steps the validation loss. At the end:
 * sampled text, on the addition task the exact-match accuracy on held-out
 * problems, and the memory and communication tables next to ZeRO's formulas.
 *
 * The loop is DeepSpeed's: forward, backward, step for every micro-batch. A
 * rank's micro-batch is the atom's sequences (zero_atom_first_sample), so every
 * stage and world size trains on the same tokens in the same order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program/checkpointing.h"
#include "program/example_agree.h"
#include "gpt_args.h"
#include "gpt_generate.h"
#include "gpt_source.h"
#include "hf_io.h"
#include "program/program_run.h"
#include "program/report.h"
#include "stage_memory.h"
#include "program/weights_io.h"
#include "zero/gpt.h"
#include "zero/zero.h"

#define MIB (1024.0 * 1024.0)

struct trainer {
    struct gpt_args a;
    struct zero_config cfg; /* batch sizes and schedule resolved */
    int rank, world;
    int64_t T, V, m, accum; /* sequence length, vocabulary, micro-batch, accumulation */
    struct zero_device *dev;
    struct zero_model *model;
    struct zero_engine *engine;
    struct gpt_source src;
    struct zero_tokenizer *tok; /* --tokenizer: text in, text out; NULL: bytes or ids */
    int32_t *tokens, *labels;   /* (m, T) each */
    double val_loss;            /* the last validation, or -1 */
};

/* ---- setup ---- */

/* DeepSpeed's batch rule in sequences, and the learning-rate schedule. */
static int resolve_config(struct trainer *t, char *msg, size_t len)
{
    const struct gpt_args *a = &t->a;
    struct zero_config *c = &t->cfg;
    *c = a->cfg;
    c->train_batch_size = a->batch;
    c->train_micro_batch_size_per_gpu = a->micro_batch;
    struct zero_error err = {0};
    if (zero_config_resolve_batch(c, t->world, &err)) {
        snprintf(msg, len, "train_gpt: --batch %lld%s on %d ranks: %s", (long long)a->batch,
                 a->micro_batch ? " / --micro-batch" : "", t->world, err.msg);
        return -1;
    }
    t->T = a->model.block_size;
    t->V = a->model.vocab_size;
    t->m = c->train_micro_batch_size_per_gpu;
    t->accum = c->gradient_accumulation_steps;
    t->val_loss = -1.0;
    /* "auto" keys of --config: from the flags, as Hugging Face fills them from its arguments */
    static const struct zero_config_auto_flag flags[] = {
        {"train_batch_size", "--batch"},
        {"train_micro_batch_size_per_gpu", "--micro-batch"},
        {"gradient_accumulation_steps", "--batch / (--micro-batch x N)"},
        {"gradient_clipping", "--clip"},
        {"optimizer.params.lr", "--lr"},
        {"optimizer.params.weight_decay", "--weight-decay"},
        {"bf16.enabled", "--bf16"},
        {"zero_optimization.stage3_prefetch_bucket_size", "--prefetch"},
        {"zero_optimization.stage3_param_persistence_threshold", "--persistence"},
        {NULL, NULL}};
    struct zero_config_auto_inputs in = {.flags = flags,
                                         .steps = a->steps,
                                         .steps_flag = "--steps",
                                         .warmup_steps = a->warmup,
                                         .warmup_flag = "--warmup",
                                         .hidden = a->model.n_embd,
                                         .hidden_flag = "--n-embd"};
    if (zero_config_resolve_auto(c, &in, t->rank == 0 && !a->quiet ? stdout : NULL, &err)) {
        snprintf(msg, len, "train_gpt: --config: %s", err.msg);
        return -1;
    }
    if (a->schedule == GPT_SCHEDULE_CONFIG)
        return 0; /* --config's scheduler section, as it is */
    struct zero_scheduler_config *s = &c->scheduler;
    s->warmup_type = ZERO_WARMUP_LINEAR;
    s->warmup_num_steps = a->warmup;
    s->total_num_steps = a->steps > a->warmup ? a->steps : a->warmup + 1;
    s->warmup_min_lr = 0.0;
    s->warmup_max_lr = c->optimizer.lr;
    s->warmup_min_ratio = 0.0;
    s->cos_min_ratio = 0.1;
    s->type = a->schedule == GPT_SCHEDULE_COSINE  ? ZERO_SCHED_WARMUP_COSINE_LR
              : a->schedule == GPT_SCHEDULE_DECAY ? ZERO_SCHED_WARMUP_DECAY_LR
              : a->warmup > 0                     ? ZERO_SCHED_WARMUP_LR
                                                  : ZERO_SCHED_NONE;
    return 0;
}

static int setup(struct trainer *t, struct zero_error *err)
{
    const struct gpt_args *a = &t->a;
    struct zero_comm *comm = zero_comm_world();
    int rc = program_device_open(&t->dev, &t->cfg, comm, err);
    if (!rc && a->arch == GPT_ARCH_LLAMA) {
        struct zero_llama_config lc;
        gpt_args_llama(a, &lc);
        const struct zero_llama_build b = {.block_size = a->model.block_size,
                                           .checkpoint = a->model.checkpoint};
        rc = zero_nn_build_llama(&t->model, &lc, &b, err);
    } else if (!rc) {
        rc = zero_nn_build_gpt(&t->model, &a->model, err);
    }
    if (!rc && a->tokenizer && (rc = zero_tokenizer_load(&t->tok, a->tokenizer, err)))
        zero_error_wrap(err, "--tokenizer: ");
    if (!rc && (rc = gpt_source_open(&t->src, a, t->tok, err)))
        zero_error_wrap(err, "--data: ");
    if ((rc = example_agree(rc, err, comm)))
        return rc;
    /* the batch before the engine: a size that overflows or cannot be had is named by
     * its flags, not by the engine's memory plan */
    char what[200]; /* the batch comes from --batch, --micro-batch or the config's keys */
    snprintf(what, sizeof what,
             "micro-batch of %lld sequences (train_micro_batch_size_per_gpu) x --block-size %lld",
             (long long)t->m, (long long)t->T);
    void *tok, *lab;
    rc = program_batch_buffers(t->m, t->T, sizeof *t->tokens, &tok, t->T, sizeof *t->labels, &lab,
                               what, err);
    t->tokens = tok; /* (m, T) */
    t->labels = lab; /* (m, T) */
    if (rc)
        return rc;
    t->cfg.quiet = a->quiet; /* the engine's own informational lines too */
    if ((rc = program_engine_create(&t->engine, &t->cfg, t->model, t->dev, err)))
        return rc;
    /* Hugging Face GPT-2 files: GPT2LMHeadModel prefixes "transformer.", and
     * older ones carry the causal-mask buffers and the tied head */
    static const char *const hf_buffers[] = {".attn.bias", ".attn.masked_bias", "lm_head.weight",
                                             NULL};
    static const struct weights_map hf = {.prefix = "transformer.", .ignore = hf_buffers};
    /* a Llama's names are already Hugging Face's; its rope table is a buffer, and a tied
     * head's lm_head.weight a copy of the embedding */
    static const char *const llama_buffers[] = {"rotary_emb.inv_freq", NULL};
    static const char *const llama_tied[] = {"rotary_emb.inv_freq", "lm_head.weight", NULL};
    const struct weights_map llama = {.ignore = a->untied_head ? llama_buffers : llama_tied};
    if (a->init_weights &&
        (rc = weights_load_mapped(t->engine, t->model, a->init_weights,
                                  a->arch == GPT_ARCH_LLAMA ? &llama : &hf, comm, err)))
        return zero_error_wrap(err, "--init-weights: ");
    if (a->hf_model) {
        struct zero_llama_config lc;
        gpt_args_llama(a, &lc);
        if ((rc = hf_load_llama(t->engine, &lc, a->hf_model, comm, err)))
            return zero_error_wrap(err, "--hf-model: ");
    }
    return 0;
}

static void teardown(struct trainer *t)
{
    free(t->tokens);
    free(t->labels);
    gpt_source_close(&t->src);
    zero_tokenizer_free(t->tok);
    zero_engine_destroy(t->engine);
    zero_model_destroy(t->model);
    zero_device_close(t->dev);
}

/* ---- what rank 0 prints ---- */

static const char *const schedule_names[] = {"cosine to 0.1 lr", "linear decay to 0", "constant"};

static const char *const optimizer_names[] = {"Adam", "AdamW", "SGD"};

/* "warmup 20, cosine to 0.1 lr", or the --config file's scheduler section */
static void print_schedule(const struct gpt_args *a, const struct zero_config *c)
{
    static const char *const types[] = {"none", "WarmupLR", "WarmupDecayLR", "WarmupCosineLR"};
    if (a->schedule == GPT_SCHEDULE_CONFIG) {
        printf("%s from --config (warmup %lld", types[c->scheduler.type],
               (long long)c->scheduler.warmup_num_steps);
        if (c->scheduler.type == ZERO_SCHED_WARMUP_DECAY_LR ||
            c->scheduler.type == ZERO_SCHED_WARMUP_COSINE_LR)
            printf(", total %lld", (long long)c->scheduler.total_num_steps);
        printf(")");
    } else
        printf("warmup %lld, %s", (long long)a->warmup, schedule_names[a->schedule]);
}

static void print_header(const struct trainer *t)
{
    const struct gpt_args *a = &t->a;
    const struct zero_config *c = &t->cfg;
    struct zero_theory th;
    zero_engine_theory(t->engine, &th);
    if (a->arch == GPT_ARCH_LLAMA) {
        struct zero_llama_config lc;
        gpt_args_llama(a, &lc);
        printf("train_gpt: Llama with %d layers, %d heads (%d kv), hidden %lld, intermediate "
               "%lld, block %lld, vocab %lld, %s head%s\n",
               lc.num_hidden_layers, lc.num_attention_heads, lc.num_key_value_heads,
               (long long)lc.hidden_size, (long long)lc.intermediate_size, (long long)t->T,
               (long long)t->V, lc.tie_word_embeddings ? "tied" : "untied",
               a->model.checkpoint ? ", activation checkpointing" : "");
    } else {
        printf("train_gpt: GPT-2 with %d layers, %d heads, n_embd %lld, block %lld, vocab "
               "%lld%s\n",
               a->model.n_layer, a->model.n_head, (long long)a->model.n_embd, (long long)t->T,
               (long long)t->V, a->model.checkpoint ? ", activation checkpointing" : "");
    }
    printf("model: Ψ = %lld parameters (%lld padded) in %d units | world size %d | stage %d | "
           "%s | mode %s\n",
           (long long)th.psi, (long long)th.psi_padded, t->model->nunits, t->world,
           c->zero_optimization.stage,
           c->bf16.enabled   ? "bf16"
           : c->fp16.enabled ? "fp16"
                             : "fp32",
           c->libzero.coll_mode == ZERO_COLL_EXACT ? "exact" : "native");
    printf("batch: %lld sequences of %lld tokens = micro-batch %lld x accumulation %lld x "
           "world %d\n",
           (long long)c->train_batch_size, (long long)t->T, (long long)t->m, (long long)t->accum,
           t->world);
    printf("optimizer: %s lr %.2e betas (%g, %g) weight decay %g | ",
           optimizer_names[c->optimizer.type], c->optimizer.lr, c->optimizer.betas[0],
           c->optimizer.betas[1], c->optimizer.weight_decay);
    print_schedule(a, c);
    printf(" | clipping ");
    if (c->gradient_clipping > 0)
        printf("%g\n", c->gradient_clipping);
    else
        printf("off\n");
    printf("data: %s\n", t->src.what);
    if (t->tok)
        printf("tokenizer: %s (%lld tokens)\n", a->tokenizer,
               (long long)zero_tokenizer_vocab_size(t->tok));
    if (a->config)
        printf("config: %s (under the flags)\n", a->config);
    printf("init: %s\n", a->hf_model       ? a->hf_model
                         : a->init_weights ? a->init_weights
                                           : "GPT-2's, seeded (--seed)");
    if (a->verbose)
        for (int u = 0; u < t->model->nunits; u++) {
            const struct zero_unit *unit = t->model->units[u];
            int64_t n = 0;
            for (int p = 0; p < unit->nparams; p++)
                n += zero_param_numel(&unit->params[p]);
            printf("  unit %-8s %-20s %10lld parameters%s%s\n", unit->name, unit->ops->kind,
                   (long long)n, unit->nexternal ? " + tied wte" : "",
                   zero_engine_unit_persistent(t->engine, u) ? " (persistent)" : "");
        }
}

/* Rank 0's memory, short: model states now (the ZeRO quantity), the peaks of
 * stage-3 gather buffers and saved activations, and the peak of everything. */
static void print_memory_short(const struct zero_ledger *l)
{
    printf(" | r0 MiB: states %.2f gather %.2f act %.2f peak %.2f",
           (double)zero_ledger_model_states(l) / MIB, (double)l->peak[ZERO_TAG_GATHER] / MIB,
           (double)l->peak[ZERO_TAG_ACTIVATIONS] / MIB, (double)l->peak_total / MIB);
}

static void print_step(const struct trainer *t)
{
    const struct zero_step_info *s = zero_engine_last_step(t->engine);
    const double tokens = (double)(t->cfg.train_batch_size * t->T);
    printf("step %4lld/%lld | loss %.4f | lr %.2e | %8.0f tok/s | %6.1f ms", (long long)s->step,
           (long long)t->a.steps, s->loss, s->lr, s->seconds > 0 ? tokens / s->seconds : 0.0,
           s->seconds * 1e3);
    print_memory_short(zero_engine_ledger(t->engine));
    printf("\n");
    fflush(stdout);
}

/* ---- training ---- */

static _Noreturn void die(const struct trainer *t, const struct zero_error *err)
{
    program_die("train_gpt", t->rank, err);
}

/* The mean loss over --val-batches global batches of validation sequences,
 * split into atoms exactly as training batches are. Each atom's loss goes to
 * its own slot and the slots are summed in atom order, so the result is the
 * same bits at any world size. */
static double validate(struct trainer *t)
{
    struct zero_error err = {0};
    const int64_t atoms = t->a.val_batches * t->accum * t->world;
    double *loss = calloc((size_t)atoms, sizeof *loss);
    if (!loss)
        die(t, &(struct zero_error){.msg = "validation buffers: out of memory"});
    for (int64_t i = 0; i < t->a.val_batches; i++)
        for (int64_t micro = 0; micro < t->accum; micro++) {
            const int64_t first = zero_atom_first_sample_in(t->cfg.libzero.atom_order, i, micro,
                                                            t->rank, t->world, t->accum, t->m);
            gpt_source_fill(&t->src, 1, t->T, first, t->m, t->tokens, t->labels);
            struct zero_batch b = {.rows = t->m * t->T, .tokens = t->tokens, .labels = t->labels};
            float l;
            if (zero_engine_eval(t->engine, &b, &l, &err))
                die(t, &err);
            loss[first / t->m] = l; /* the atom's index, in either atom order */
        }
    zero_comm_allreduce_double(zero_comm_world(), loss, (size_t)atoms, ZERO_COMM_SUM);
    double sum = 0.0;
    for (int64_t a = 0; a < atoms; a++)
        sum += loss[a];
    free(loss);
    return sum / (double)atoms;
}

/* tokens (at + rows, T), labels (at + rows, T): rows at.. hold training sequences first ..
 * first + rows - 1 */
static void fill(void *ctx, int64_t first, int64_t rows, int64_t at, struct zero_batch *b)
{
    struct trainer *t = ctx;
    gpt_source_fill(&t->src, 0, t->T, first, rows, t->tokens + at * t->T, t->labels + at * t->T);
    *b = (struct zero_batch){.rows = (at + rows) * t->T, .tokens = t->tokens, .labels = t->labels};
}

/* every --val-every steps and after the last: the validation loss */
static void validate_due(struct trainer *t, int64_t done)
{
    if (done == t->a.steps || (t->a.val_every > 0 && done % t->a.val_every == 0)) {
        t->val_loss = validate(t);
        if (t->rank == 0 && !t->a.quiet)
            printf("step %4lld/%lld | val loss %.4f\n", (long long)done, (long long)t->a.steps,
                   t->val_loss);
    }
}

/* ---- after training ---- */

/* Tokens as text: decoded by the tokenizer, as bytes for a byte vocabulary, else as
 * ids; ends the line. */
static void print_tokens(const struct trainer *t, const int32_t *ids, int64_t n)
{
    char *text = NULL;
    size_t len = 0;
    struct zero_error err = {0};
    if (t->tok && zero_tokenizer_decode(t->tok, ids, n, 0, &text, &len, &err) == ZERO_OK) {
        fwrite(text, 1, len, stdout);
        if (len == 0 || text[len - 1] != '\n')
            printf("\n");
        free(text);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        if (t->V <= 256)
            putchar((unsigned char)ids[i]);
        else
            printf("%s%d", i ? " " : "", (int)ids[i]);
    }
    if (n == 0 || t->V > 256 || ids[n - 1] != '\n')
        printf("\n");
}

/* The prompt: --prompt encoded by the tokenizer or as bytes; without one, the
 * tokenizer's document boundary, GPT-2's <|endoftext|> for its vocabulary, or a
 * newline. */
static int64_t make_prompt(const struct trainer *t, int32_t *out, int64_t cap)
{
    const char *p = t->a.prompt;
    if (t->tok) {
        struct zero_token_buf ids = {0};
        struct zero_error err = {0};
        int64_t n = 0;
        if (p && *p && zero_tokenizer_encode(t->tok, p, strlen(p), 0, &ids, NULL, &err) == 0)
            for (; n < cap && n < ids.n; n++)
                out[n] = ids.ids[n] < t->V ? ids.ids[n] : 0;
        zero_token_buf_free(&ids);
        if (n > 0)
            return n;
        const int32_t eot = zero_tokenizer_eot(t->tok);
        if (eot >= 0 && eot < t->V) {
            out[0] = eot;
            return 1;
        }
    }
    if (!p || !*p) {
        out[0] = t->V > 50256 ? 50256 : '\n' < t->V ? '\n' : 0;
        return 1;
    }
    int64_t n = 0;
    for (; n < cap && p[n]; n++)
        out[n] = (unsigned char)p[n] < t->V ? (unsigned char)p[n] : 0;
    return n;
}

/* The addition task: held-out prompts "41+68=" completed by sampling (D + 2
 * tokens: the sum and the newline), as many as --sample tokens allow. */
static void sample_answers(struct trainer *t)
{
    const struct zero_addition *task = &t->src.task;
    const int plen = zero_addition_prompt_len(task->digits), n = task->digits + 2;
    const int64_t lines = t->a.sample_tokens / n > 0 ? t->a.sample_tokens / n : 1;
    char text[3 * ZERO_ADDITION_MAX_DIGITS + 4];
    int32_t prompt[3 * ZERO_ADDITION_MAX_DIGITS + 4], out[3 * ZERO_ADDITION_MAX_DIGITS + 8];
    struct zero_error err = {0};
    for (int64_t i = 0; i < lines; i++) {
        int64_t a, b;
        zero_addition_operands(task, 1, i, &a, &b);
        zero_addition_format(task->digits, a, b, text);
        for (int k = 0; k < plen; k++)
            prompt[k] = (unsigned char)text[k];
        if (gpt_generate(t->engine, t->T, t->V, prompt, plen, n, t->a.temperature, t->a.top_k,
                         t->a.sample_seed + (uint64_t)i, out, zero_comm_world(), &err))
            die(t, &err);
        if (t->rank == 0 && !t->a.quiet)
            print_tokens(t, out, plen + n);
    }
}

static void sample(struct trainer *t)
{
    const struct gpt_args *a = &t->a;
    if (t->rank == 0 && !a->quiet)
        printf("\nsample (temperature %g, top-k %lld, seed %llu):\n", a->temperature,
               (long long)a->top_k, (unsigned long long)a->sample_seed);
    if (t->src.addition && !a->prompt) {
        sample_answers(t);
        return;
    }
    const int64_t cap = 256, total = cap + a->sample_tokens;
    int32_t *ids = malloc((size_t)total * sizeof *ids), prompt[256];
    struct zero_error err = {0};
    if (!ids)
        die(t, &(struct zero_error){.msg = "sample buffer: out of memory"});
    int64_t plen = make_prompt(t, prompt, cap);
    if (gpt_generate(t->engine, t->T, t->V, prompt, plen, a->sample_tokens, a->temperature,
                     a->top_k, a->sample_seed, ids, zero_comm_world(), &err))
        die(t, &err);
    if (t->rank == 0 && !a->quiet)
        print_tokens(t, ids, plen + a->sample_tokens);
    free(ids);
}

/* Returns the accuracy, or -1 when not measured. */
static double addition_accuracy(struct trainer *t)
{
    if (!t->src.addition || t->a.eval_problems == 0)
        return -1.0;
    struct gpt_accuracy acc;
    struct zero_error err = {0};
    if (gpt_addition_accuracy(t->engine, &t->src.task, t->T, t->V, t->m, t->a.eval_problems,
                              zero_comm_world(), &acc, &err))
        die(t, &err);
    const double rate = (double)acc.correct / (double)acc.total;
    if (t->rank == 0 && !t->a.quiet) {
        printf("\nheld-out problems, greedy answers (rank 0's first %d):\n", acc.nshown);
        for (int i = 0; i < acc.nshown; i++)
            printf("  %s\n", acc.shown[i]);
        printf("accuracy: %lld/%lld = %.1f%% exact match on held-out problems\n",
               (long long)acc.correct, (long long)acc.total, 100.0 * rate);
    }
    return rate;
}

/* --memory-table: the training engine makes way (its weights are saved
 * first when asked), then the same model runs one step per stage. */
static int memory_table(struct trainer *t, struct zero_error *err)
{
    if (t->a.save_weights &&
        weights_save(t->engine, t->model, t->a.save_weights, zero_comm_world(), err))
        return zero_error_wrap(err, "--save-weights: ");
    t->a.save_weights = NULL;
    zero_engine_destroy(t->engine);
    t->engine = NULL;
    int64_t first = zero_atom_first_sample(0, 0, t->rank, t->world, 1, t->m);
    gpt_source_fill(&t->src, 0, t->T, first, t->m, t->tokens, t->labels);
    struct zero_batch b = {.rows = t->m * t->T, .tokens = t->tokens, .labels = t->labels};
    return stage_memory_table(stdout, &t->cfg, t->model, t->dev, &b, zero_comm_world(), err);
}

/* The model's tokenizer.json (--tokenizer; a model directory's own tokenizer.json goes
 * the same way) is read twice: here at start-up, where the vocabulary grows to hold
 * its ids before the ranks compare flags, and again in setup for the run (start-up
 * keeps nothing that a failed start would have to free). */
static int tokenizer_vocab(struct trainer *t, const char *path, char *msg, size_t len)
{
    struct zero_tokenizer *tok;
    struct zero_error err = {0};
    if (zero_tokenizer_load(&tok, path, &err)) {
        snprintf(msg, len, "train_gpt: --tokenizer: %s", err.msg);
        return -1;
    }
    const int64_t V = zero_tokenizer_vocab_size(tok);
    if (t->a.model.vocab_size < V)
        t->a.model.vocab_size = V;
    zero_tokenizer_free(tok);
    return 0;
}

/* Flags, config and input files, this rank's view: its status and the fields
 * every rank must agree on (program.h). */
static void startup(struct trainer *t, int argc, char **argv, struct program_startup *su, int *help)
{
    char msg[1024 + 256];
    enum gpt_args_result parsed = gpt_args_parse(&t->a, argc, argv, msg, sizeof msg);
    if (!program_startup_parsed(su, parsed == GPT_ARGS_HELP, parsed == GPT_ARGS_USAGE, msg, help))
        return;
    if (t->a.hf_model && gpt_args_read_hf(&t->a, msg, sizeof msg)) {
        program_fail_text(su, 2, msg);
        return;
    }
    if (t->a.tokenizer) {
        program_input_file(su, "--tokenizer", t->a.tokenizer);
        if (tokenizer_vocab(t, t->a.tokenizer, msg, sizeof msg)) {
            program_fail_text(su, 1, msg);
            return;
        }
    }
    gpt_args_fields(&t->a, su);
    if (resolve_config(t, msg, sizeof msg)) {
        program_fail_text(su, 2, msg);
        return;
    }
    program_fields_config(su, &t->cfg);
    if (t->a.val_data)
        program_input_file(su, "--val-data", t->a.val_data);
    program_startup_files(su, t->a.data, t->a.init_weights, t->a.save_checkpoint);
    const char *const flags[] = {"--save-weights"};
    const char *const paths[] = {t->a.save_weights};
    program_outputs_distinct(su, t->a.save_checkpoint, 1, flags, paths);
}

static void usage(FILE *out)
{
    gpt_args_usage(out);
}

/* samples, the accuracy, the reports, --memory-table, --save-weights and the final line */
static int finish(struct trainer *t, const struct program *p)
{
    struct zero_error err = {0};
    if (t->a.sample_tokens > 0)
        sample(t);
    double accuracy = addition_accuracy(t);
    program_reports(p, t->a.steps > 0);
    double last_loss = t->a.steps > p->first_step ? zero_engine_last_step(t->engine)->loss : 0.0;
    if (t->a.memory_table && memory_table(t, &err)) {
        program_error(p, "--memory-table: ", &err);
        return 1;
    }
    if (t->a.save_weights &&
        weights_save(t->engine, t->model, t->a.save_weights, zero_comm_world(), &err)) {
        program_error(p, "--save-weights: ", &err);
        return 1;
    }
    if (t->a.save_hf) {
        struct zero_llama_config lc;
        gpt_args_llama(&t->a, &lc);
        if (hf_save_llama(t->engine, &lc, t->a.save_hf, ZERO_F32, t->a.save_hf_shard,
                          zero_comm_world(), &err)) {
            program_error(p, "--save-hf: ", &err);
            return 1;
        }
    }
    if (p->rank == 0) {
        if (t->a.save_weights && !t->a.quiet)
            printf("saved %s\n", t->a.save_weights);
        if (t->a.save_hf && !t->a.quiet)
            printf("saved %s (Hugging Face LlamaForCausalLM)\n", t->a.save_hf);
        printf("final: step %lld", (long long)t->a.steps);
        if (t->a.steps > 0)
            printf(", loss %.6f", last_loss);
        if (t->val_loss >= 0)
            printf(", val loss %.6f", t->val_loss);
        if (accuracy >= 0)
            printf(", accuracy %.4f", accuracy);
        printf("\n");
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct trainer t = {0};
    struct program p;
    program_init(&p, "train_gpt", &argc, &argv);
    t.rank = p.rank, t.world = p.world;

    /* flags, config and input files: every rank agrees before anything collective */
    struct program_startup su;
    int help = 0;
    if (program_startup_begin(&p, &su))
        startup(&t, argc, argv, &su, &help);
    int status = program_agree(&p, &su);
    if (status == 0 && help)
        return program_end(program_usage(&p, usage));
    if (status != 0)
        return program_end(status);
    p.quiet = t.a.quiet;

    /* device, model, tokenizer, data, engine, initial weights */
    struct zero_error err = {0};
    if (setup(&t, &err)) {
        program_error(&p, "", &err);
        status = 1;
        goto out;
    }
    program_attach(&p, t.engine, t.model, &t.cfg, t.a.steps);
    program_checkpoints(&p, t.a.save_checkpoint, t.a.resume, t.a.checkpoint_every, t.a.keep_last);
    p.ck.arch = gpt_arch_name(t.a.arch); /* recorded, and checked on --resume */
    if (p.rank == 0 && !p.quiet)
        print_header(&t);
    if ((status = program_resume(&p)) || (status = program_reference(&p)))
        goto out;

    /* DeepSpeed's loop: forward, backward and step for every micro-batch, the engine
     * updating at the last one of the step */
    for (int64_t step = p.first_step; step < p.steps; step++) {
        if ((status = program_stopped(&p, step)))
            goto out;
        for (int64_t i = 0; i < p.atoms.accum; i++) {
            struct zero_batch b;
            program_fill(&p.atoms, step, i, fill, &t, &b);
            program_lap(&p, NULL);
            int rc = zero_engine_forward(t.engine, &b, NULL, &err);
            program_lap(&p, &p.clock.forward);
            if (rc == ZERO_OK)
                rc = zero_engine_backward(t.engine, &err);
            program_lap(&p, &p.clock.backward);
            if (rc == ZERO_OK)
                rc = zero_engine_step(t.engine, NULL, &err);
            program_lap(&p, &p.clock.step);
            if (rc != ZERO_OK)
                program_die(p.prog, p.rank, &err);
        }
        if (program_step_due(&p, step))
            print_step(&t);
        if ((status = program_step_done(&p, step)))
            goto out;
        validate_due(&t, step + 1);
    }
    if ((status = program_stopped(&p, p.steps))) /* during the last step: nothing saved */
        goto out;

    /* samples, the accuracy, the reports, --memory-table, --save-weights, the final line */
    status = finish(&t, &p);
out:
    status = program_close(&p, status);
    teardown(&t);
    return program_end(status);
}

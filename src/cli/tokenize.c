/* zero tokenize: text files to token shards with a model's own tokenizer.json, and a
 * shard back to text (include/zero/tokenizer.h, include/zero/tokens.h). One process,
 * no MPI world needed. */
#include <errno.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "commands.h"
#include "program/flags.h"
#include "zero/tokenizer.h"
#include "zero/tokens.h"

static const char usage_text[] =
    "usage: zero tokenize --tokenizer tokenizer.json [--eot] [--add-special]\n"
    "                     [--val-fraction F] FILE... --out DIR\n"
    "       zero tokenize --tokenizer tokenizer.json --decode SHARD.bin\n"
    "\n"
    "Encodes each FILE (UTF-8 text, one document each) with the tokenizer, exactly as\n"
    "Hugging Face tokenizers encodes the file's text, and writes the token stream as\n"
    "DIR/train.bin and DIR/val.bin: the last --val-fraction of the tokens (default 0.1;\n"
    "0 writes no val.bin) is the validation part. The shards are llm.c's (uint16 ids)\n"
    "when the vocabulary has at most 65,536 tokens, else libzero's 32-bit variant\n"
    "(include/zero/tokens.h); train_gpt --data reads both.\n"
    "\n"
    "  --eot           the document boundary token (<|endoftext|>, <|end_of_text|>, </s>)\n"
    "                  before each file, as llm.c's scripts put it before each document\n"
    "  --add-special   the tokenizer's template around each file (Llama's <s> ...)\n"
    "  --decode SHARD  print a shard's tokens as text on stdout\n"
    "\n"
    "A line per file on stderr says its bytes, tokens and bytes/s. Invalid UTF-8 is\n"
    "encoded as U+FFFD (what Python's errors=\"replace\" hands HF) and counted.\n"
    "\n"
    "exit status: 0 ok, 1 a problem with a file, 2 usage error\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "zero tokenize: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n\n%s", usage_text);
    return 2;
}

struct tokenize_args {
    const char *tokenizer, *out, *decode;
    int eot, add_special;
    double val_fraction;
    char **files;
    int n_files;
};

static int parse(int argc, char **argv, struct tokenize_args *a)
{
    *a = (struct tokenize_args){.val_fraction = 0.1};
    a->files = calloc((size_t)argc + 1, sizeof *a->files);
    if (!a->files)
        return usage_error("%s", "out of memory");
    const struct flag t[] = {
        FLAG_ANY("tokenizer", "FILE", NULL, FLAG_STR, &a->tokenizer),
        FLAG_ANY("out", "DIR", NULL, FLAG_STR, &a->out),
        FLAG_ANY("decode", "SHARD", NULL, FLAG_STR, &a->decode),
        FLAG_NUM("val-fraction", "F", NULL, FLAG_REAL, &a->val_fraction, 0, 1 - DBL_EPSILON / 2),
        FLAG_ANY("eot", NULL, NULL, FLAG_SET, &a->eot),
        FLAG_ANY("add-special", NULL, NULL, FLAG_SET, &a->add_special),
    };
    const struct flag *f;
    char msg[256];
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int took =
            flags_take(t, (int)(sizeof t / sizeof t[0]), argc, argv, &i, &f, msg, sizeof msg);
        if (took < 0 && f->dst == &a->val_fraction && argv[i] != s) /* a bad value: as of old */
            return usage_error("--val-fraction %s: expected a number in [0, 1)", argv[i]);
        if (took < 0)
            return usage_error("%s", msg);
        if (took)
            continue;
        if (s[0] == '-' && s[1] == '-')
            return usage_error("unknown option %s", s);
        a->files[a->n_files++] = argv[i];
    }
    if (!a->tokenizer)
        return usage_error("%s", "--tokenizer tokenizer.json is required");
    if (a->decode && (a->n_files || a->out))
        return usage_error("%s", "--decode SHARD takes no FILEs and no --out");
    if (!a->decode && (!a->n_files || !a->out))
        return usage_error("%s", "FILE... and --out DIR are required");
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int decode_shard(const struct zero_tokenizer *tok, const char *path)
{
    struct zero_tokens t;
    struct zero_error err = {0};
    char *text = NULL;
    size_t len = 0;
    int rc = zero_tokens_read_llmc(&t, path, zero_tokenizer_vocab_size(tok), &err);
    if (!rc)
        rc = zero_tokenizer_decode(tok, t.ids, t.n, 0, &text, &len, &err);
    if (rc) {
        fprintf(stderr, "zero tokenize --decode: %s\n", err.msg);
    } else if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
        fprintf(stderr, "zero tokenize --decode: writing the text failed: %s\n", strerror(errno));
        rc = 1;
    }
    free(text);
    zero_tokens_free(&t);
    return rc ? 1 : 0;
}

/* Every file's tokens, one after the other, into *ids; a line per file on stderr. */
static int encode_files(const struct zero_tokenizer *tok, const struct tokenize_args *a,
                        struct zero_token_buf *ids)
{
    struct zero_error err = {0};
    const int32_t eot = zero_tokenizer_eot(tok);
    if (a->eot && eot < 0) {
        fprintf(stderr,
                "zero tokenize: %s has no document boundary token (<|endoftext|>, "
                "<|end_of_text|>, </s> or <eos>): leave out --eot\n",
                a->tokenizer);
        return 1;
    }
    const unsigned flags = a->add_special ? ZERO_ENCODE_ADD_SPECIAL : 0;
    double total_bytes = 0;
    const double t0 = now();
    for (int f = 0; f < a->n_files; f++) {
        char *text;
        size_t len;
        int64_t replaced = 0;
        const int64_t before = ids->n;
        const double t = now();
        if (zero_text_file_read(a->files[f], &text, &len, &err)) {
            fprintf(stderr, "zero tokenize: %s\n", err.msg);
            return 1;
        }
        int rc = a->eot && zero_token_buf_push(ids, eot)
                     ? zero_fail(&err, ZERO_ENOMEM, "%s: out of memory", a->files[f])
                     : zero_tokenizer_encode(tok, text, len, flags, ids, &replaced, &err);
        free(text);
        if (rc) {
            fprintf(stderr, "zero tokenize: %s: %s\n", a->files[f], err.msg);
            return 1;
        }
        const double secs = now() - t;
        total_bytes += (double)len;
        fprintf(stderr, "[%d/%d] %s: %zu bytes -> %lld tokens, %.2f MB/s\n", f + 1, a->n_files,
                a->files[f], len, (long long)(ids->n - before),
                secs > 0 ? (double)len / secs / 1e6 : 0.0);
        if (replaced)
            fprintf(stderr, "  %s: %lld invalid UTF-8 sequences encoded as U+FFFD\n", a->files[f],
                    (long long)replaced);
    }
    const double secs = now() - t0;
    fprintf(stderr, "%d files, %.0f bytes -> %lld tokens in %.2f s (%.2f MB/s)\n", a->n_files,
            total_bytes, (long long)ids->n, secs, secs > 0 ? total_bytes / secs / 1e6 : 0.0);
    return 0;
}

/* DIR/NAME, written as the vocabulary's shard kind. */
static int write_part(const struct tokenize_args *a, const char *name, const int32_t *ids,
                      int64_t n, int64_t vocab)
{
    char path[4096];
    struct zero_error err = {0};
    snprintf(path, sizeof path, "%s/%s", a->out, name);
    if (zero_tokens_write(path, ids, n, vocab, &err)) {
        fprintf(stderr, "zero tokenize: %s\n", err.msg);
        return 1;
    }
    printf("wrote %s: %lld tokens (%s)\n", path, (long long)n,
           vocab <= 65536 ? "llm.c shard, uint16" : "32-bit token shard");
    return 0;
}

static int tokenize(const struct zero_tokenizer *tok, const struct tokenize_args *a)
{
    if (mkdir(a->out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "zero tokenize: %s: cannot make the directory: %s\n", a->out,
                strerror(errno));
        return 1;
    }
    struct zero_token_buf ids = {0};
    int rc = encode_files(tok, a, &ids);
    const int64_t vocab = zero_tokenizer_vocab_size(tok);
    const int64_t val = (int64_t)((double)ids.n * a->val_fraction), train = ids.n - val;
    if (!rc && (train == 0 || (a->val_fraction > 0 && val == 0))) {
        fprintf(stderr,
                "zero tokenize: %lld tokens are too few to split with --val-fraction %g "
                "(each part needs one)\n",
                (long long)ids.n, a->val_fraction);
        rc = 1;
    }
    if (!rc)
        rc = write_part(a, "train.bin", ids.ids, train, vocab);
    if (!rc && val)
        rc = write_part(a, "val.bin", ids.ids + train, val, vocab);
    zero_token_buf_free(&ids);
    return rc;
}

int zero_cmd_tokenize(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (flags_is_help(argv[i])) {
            fputs(usage_text, stdout);
            return 0;
        }
    struct tokenize_args a;
    int rc = parse(argc, argv, &a);
    struct zero_tokenizer *tok = NULL;
    struct zero_error err = {0};
    if (!rc && zero_tokenizer_load(&tok, a.tokenizer, &err)) {
        fprintf(stderr, "zero tokenize: %s\n", err.msg);
        rc = 1;
    }
    if (!rc)
        rc = a.decode ? decode_shard(tok, a.decode) : tokenize(tok, &a);
    zero_tokenizer_free(tok);
    free(a.files);
    return rc;
}

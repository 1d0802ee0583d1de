/* Encode speed of src/text/ on a multi-megabyte text, next to Hugging Face tokenizers
 * (Rust, one thread) in the same run:
 *
 *     bench/tokenize --tokenizer tests/fixtures/tokenizer/gpt2.json --text docs/[a-z]*.md \
 *         [--mb 8] [--rounds 3] [--hf /work/venv-tok/bin/python]
 *
 * The files are joined and repeated up to --mb megabytes and encoded --rounds times
 * (the best round counts) two ways: as one string, and as its paragraphs (split at
 * blank lines, one encode each, as a corpus of documents is encoded). With --hf the
 * same bytes go to bench/tokenize_hf.py under that Python (RAYON_RS_NUM_CPUS=1,
 * TOKENIZERS_PARALLELISM=false, encode of one string at a time), which must give the
 * same number of tokens; the ratios are printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "zero/tokenizer.h"

static void die(const char *what, const struct zero_error *err)
{
    fprintf(stderr, "bench/tokenize: %s%s\n", what, err ? err->msg : "");
    exit(1);
}

int main(int argc, char **argv)
{
    const char *tok_path = NULL, *python = NULL;
    double mb = 8;
    int rounds = 3;
    char *files[64];
    int n_files = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tokenizer") == 0 && i + 1 < argc)
            tok_path = argv[++i];
        else if (strcmp(argv[i], "--hf") == 0 && i + 1 < argc)
            python = argv[++i];
        else if (strcmp(argv[i], "--mb") == 0 && i + 1 < argc)
            mb = atof(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--text") == 0)
            while (i + 1 < argc && argv[i + 1][0] != '-' && n_files < 64)
                files[n_files++] = argv[++i];
        else
            die("usage: --tokenizer FILE --text FILE... [--mb M] [--rounds R] [--hf PYTHON]", NULL);
    }
    if (!tok_path || !n_files || mb <= 0 || rounds < 1)
        die("usage: --tokenizer FILE --text FILE... [--mb M] [--rounds R] [--hf PYTHON]", NULL);
    struct zero_error err = {0};
    struct zero_tokenizer *tok;
    if (zero_tokenizer_load(&tok, tok_path, &err))
        die("", &err);
    /* the text: the files joined, repeated up to mb megabytes */
    size_t want = (size_t)(mb * 1e6), len = 0, cap = want + (1 << 20);
    char *text = malloc(cap);
    if (!text)
        die("out of memory", NULL);
    while (len < want)
        for (int f = 0; f < n_files && len < want; f++) {
            char *b;
            size_t n;
            if (zero_text_file_read(files[f], &b, &n, &err))
                die("", &err);
            if (len + n > cap && !(text = realloc(text, cap = 2 * (len + n))))
                die("out of memory", NULL);
            memcpy(text + len, b, n);
            len += n;
            free(b);
        }
    printf("tokenizer %s, text %.2f MB (%d file%s), best of %d\n", tok_path, (double)len / 1e6,
           n_files, n_files > 1 ? "s" : "", rounds);
    static const char *const modes[2] = {"one", "paragraphs"};
    double best[2] = {1e30, 1e30};
    int64_t tokens[2] = {0, 0};
    for (int m = 0; m < 2; m++)
        for (int r = 0; r < rounds; r++) {
            struct zero_token_buf ids = {0};
            const double t = bench_now();
            for (size_t at = 0; at <= len;) { /* paragraphs: the text between "\n\n" */
                const char *end = m ? strstr(text + at, "\n\n") : NULL;
                const size_t n = end ? (size_t)(end - (text + at)) : len - at;
                if (zero_tokenizer_encode(tok, text + at, n, 0, &ids, NULL, &err))
                    die("", &err);
                at += n + 2;
            }
            const double s = bench_now() - t;
            best[m] = s < best[m] ? s : best[m];
            tokens[m] = ids.n;
            zero_token_buf_free(&ids);
        }
    for (int m = 0; m < 2; m++)
        printf("libzero %-10s %10lld tokens %8.3f s %10.0f tokens/s %6.2f MB/s\n", modes[m],
               (long long)tokens[m], best[m], (double)tokens[m] / best[m],
               (double)len / best[m] / 1e6);
    int rc = 0;
    if (python) {
        char path[] = "/tmp/bench_tokenize.XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0 || write(fd, text, len) != (ssize_t)len)
            die("cannot write the text for Python", NULL);
        close(fd);
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "'%s' '%s/tokenize_hf.py' '%s' '%s' %d", python, BENCH_SRCDIR,
                 tok_path, path, rounds);
        FILE *p = popen(cmd, "r");
        for (int m = 0; m < 2; m++) {
            char mode[32];
            long long hf_tokens = -1;
            double hf_best = 0;
            if (!p || fscanf(p, " hf %31s tokens %lld best_s %lf", mode, &hf_tokens, &hf_best) != 3)
                die("the Python side gave no result (its error is above)", NULL);
            printf("HF      %-10s %10lld tokens %8.3f s %10.0f tokens/s %6.2f MB/s   libzero / HF: "
                   "%.2fx%s\n",
                   mode, hf_tokens, hf_best, (double)hf_tokens / hf_best,
                   (double)len / hf_best / 1e6, hf_best / best[m],
                   hf_tokens == tokens[m] ? "" : "   (TOKEN COUNTS DIFFER)");
            rc |= hf_tokens != tokens[m];
        }
        pclose(p);
        unlink(path);
    }
    free(text);
    zero_tokenizer_free(tok);
    return rc;
}

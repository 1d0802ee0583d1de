/* libFuzzer harness for the trainers' flag parsers, mlp_args_parse
 * (examples/mlp_args.c) and gpt_args_parse (examples/gpt_args.c), through
 * their parse functions (make fuzz-args). The first byte picks the parser
 * (even: train_mlp, odd: train_gpt); the rest, split at NUL bytes, is argv[1..].
 * A parse returns OK, HELP or USAGE; USAGE comes with a message naming the
 * program; nothing may crash or read out of bounds, and one parse leaves no
 * state that disturbs the next. Seeds: fuzz/corpus/args/ (with fuzz/args.dict). */
#include "fuzz_util.h"
#include "gpt_args.h"
#include "mlp_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096)
        return 0;
    const int gpt = data[0] & 1;
    char *text = malloc(size); /* argv[1..] as NUL-terminated strings */
    FUZZ_CHECK(text != NULL);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    char prog[16];
    snprintf(prog, sizeof prog, "%s", gpt ? "train_gpt" : "train_mlp");
    char *argv[MAX_ARGS + 2] = {prog};
    int argc = 1;
    for (size_t at = 0; at < size - 1 && argc <= MAX_ARGS; at += strlen(text + at) + 1)
        argv[argc++] = text + at;
    argv[argc] = NULL;
    char msg[1024];
    memset(msg, 0x5a, sizeof msg);
    int rc;
    if (gpt) {
        static struct gpt_args a;
        rc = gpt_args_parse(&a, argc, argv, msg, sizeof msg);
        FUZZ_CHECK(rc == GPT_ARGS_OK || rc == GPT_ARGS_HELP || rc == GPT_ARGS_USAGE);
        rc = rc == GPT_ARGS_USAGE;
    } else {
        static struct mlp_args a;
        rc = mlp_args_parse(&a, argc, argv, msg, sizeof msg);
        FUZZ_CHECK(rc == MLP_ARGS_OK || rc == MLP_ARGS_HELP || rc == MLP_ARGS_USAGE);
        if (rc == MLP_ARGS_OK)
            FUZZ_CHECK(a.hidden >= 1 && a.layers >= 0 && a.classes >= 1);
        rc = rc == MLP_ARGS_USAGE;
    }
    FUZZ_CHECK(memchr(msg, '\0', sizeof msg) != NULL);
    if (rc)
        FUZZ_CHECK(strncmp(msg, prog, strlen(prog)) == 0 && msg[strlen(prog)] == ':');
    free(text);
    return 0;
}

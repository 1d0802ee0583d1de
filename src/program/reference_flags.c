/* See reference_flags.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file_replace.h"
#include "program.h"
#include "reference_flags.h"

const char *reference_flags_usage(void)
{
    return "\nreference run (docs/verify-your-run.md):\n"
           "    --trajectory FILE    JSON lines: per step the loss, the grad norm before\n"
           "                         clipping, the lr, the loss scale and a hash per tensor\n"
           "    --trajectory-weights-every K\n"
           "                         with --trajectory: the whole fp32 weights as\n"
           "                         FILE.stepNNNNNN.safetensors every K steps (and at the start)\n"
           "    --order-seed S       sum every reduction over samples in another fixed order:\n"
           "                         each global batch's samples permuted by (S, step); the\n"
           "                         stages and world sizes still agree to the bit (0: default)\n";
}

/* "--flag V" or "--flag=V": the value, or NULL when argv[*i] is not flag */
static const char *value_of(const char *flag, int argc, char **argv, int *i, int *missing)
{
    size_t n = strlen(flag);
    if (strncmp(argv[*i], flag, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

static int parse_count(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    if (*v == '\0' || *v == '-')
        return -1;
    unsigned long long x = strtoull(v, &end, 10);
    if (*end != '\0' || errno == ERANGE || x > INT64_MAX)
        return -1;
    *out = x;
    return 0;
}

int reference_flags_take(struct reference_flags *f, const char *prog, int *argc, char **argv,
                         char *msg, size_t len)
{
    *f = (struct reference_flags){.weights_every = -1};
    int kept = 1;
    for (int i = 1; i < *argc; i++) {
        static const char *const flags[] = {"--trajectory", "--trajectory-weights-every",
                                            "--order-seed"};
        const char *v = NULL, *flag = NULL;
        int missing = 0;
        for (int k = 0; k < 3 && !v && !missing; k++)
            if ((v = value_of(flags[k], *argc, argv, &i, &missing)) || missing)
                flag = flags[k];
        if (missing) {
            snprintf(msg, len, "%s: %s needs a value", prog, flag);
            return 2;
        }
        if (!v) {
            argv[kept++] = argv[i];
            continue;
        }
        uint64_t x = 0;
        if (strcmp(flag, "--trajectory") == 0) {
            if (*v == '\0') {
                snprintf(msg, len, "%s: --trajectory needs a file name", prog);
                return 2;
            }
            f->trajectory = v;
        } else if (parse_count(v, &x)) {
            snprintf(msg, len, "%s: %s: '%s' is not a non-negative integer", prog, flag, v);
            return 2;
        } else if (strcmp(flag, "--trajectory-weights-every") == 0) {
            f->weights_every = (int64_t)x;
        } else {
            f->order_seed = x;
        }
    }
    argv[kept] = NULL;
    *argc = kept;
    if (f->weights_every >= 0 && !f->trajectory) {
        snprintf(msg, len, "%s: --trajectory-weights-every needs --trajectory FILE", prog);
        return 2;
    }
    return 0;
}

void reference_flags_startup(const struct reference_flags *f, struct program_startup *s)
{
    program_field(s, "--trajectory", "%s", f->trajectory ? f->trajectory : "(none)");
    program_field(s, "--trajectory-weights-every", "%" PRId64, f->weights_every);
    program_field(s, "--order-seed", "%" PRIu64, f->order_seed);
    struct zero_error err = {0};
    if (f->trajectory && zero_replace_check(f->trajectory, &err))
        program_fail(s, 1, "--trajectory: %s", err.msg);
}

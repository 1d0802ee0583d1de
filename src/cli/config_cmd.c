/* zero config FILE [--world N]: loads a ds_config.json as the engine would and
 * prints every key with its resolved value and where the value came from.
 * zero config --env: the environment knobs (zero/knobs.h) and their values here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "program/flags.h"
#include "zero/config_json.h"
#include "zero/knobs.h"

static const char usage_text[] =
    "usage: zero config FILE [--world N]\n"
    "       zero config --env\n"
    "\n"
    "Loads the DeepSpeed configuration FILE (ds_config.json) as libzero does and prints\n"
    "every key, defaults filled, in DeepSpeed's documentation order:\n"
    "\n"
    "    zero_optimization.stage = 3                                      (file)\n"
    "\n"
    "The origin says where each value came from: file (given), default (DeepSpeed's\n"
    "default), derived (computed from other keys: the batch sizes, overlap_comm, the\n"
    "fp16 scaler's start) or auto (\"auto\" in the file where DeepSpeed's Hugging Face\n"
    "integration fills the key: a program fills it from its flags and model).\n"
    "Unknown keys, wrong types and features this build lacks are errors that name the key.\n"
    "\n"
    "options:\n"
    "  --world N   the number of ranks, for DeepSpeed's batch rule\n"
    "              (train_batch_size = micro-batch x accumulation x N); without it the\n"
    "              batch sizes not given print as null (derived when the engine starts)\n"
    "  --env       instead: every ZERO_* environment knob the library reads, its value\n"
    "              in this environment, what it takes and what it changes\n"
    "  --help      print this text\n"
    "\n"
    "exit status: 0 valid, 1 invalid configuration, 2 usage error\n";

/* The knob table, one knob per paragraph: its name and value here, then what it is. */
static int print_knobs(void)
{
    for (int i = 0; i < ZERO_KNOB_COUNT; i++) {
        const struct zero_knob *k = zero_knob_info((enum zero_knob_id)i);
        const char *v = zero_knob((enum zero_knob_id)i);
        if (v)
            printf("%s=%s\n", k->name, v);
        else
            printf("%s (unset: %s)\n", k->name, k->unset);
        printf("    takes %s; read by the %s%s\n    %s\n", k->values, k->read_by,
               k->agreed ? "; alike on every rank (the engine refuses a run where it differs)" : "",
               k->what);
    }
    return 0;
}

int zero_cmd_config(int argc, char **argv)
{
    const char *file = NULL;
    int world = 0, env = 0;
    const struct flag t[] = {
        FLAG_NUM("world", "N", NULL, FLAG_INT, &world, 1, 1 << 24),
        FLAG_ANY("env", NULL, NULL, FLAG_SET, &env),
    };
    const struct flag *f;
    char msg[256];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (flags_is_help(a)) {
            fputs(usage_text, stdout);
            return 0;
        }
        int took = flags_take(t, 2, argc, argv, &i, &f, msg, sizeof msg);
        if (took < 0) { /* --world, bad or without a value: the words scripts match */
            fprintf(stderr, "zero config: --world: expected a rank count >= 1\n");
            return 2;
        }
        if (took && env)
            return argc == 2 ? print_knobs()
                             : (fprintf(stderr, "zero config: --env takes no other argument\n"), 2);
        if (took)
            continue;
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "zero config: unknown option '%s'\n\n%s", a, usage_text);
            return 2;
        } else if (file) {
            fprintf(stderr, "zero config: one FILE only ('%s' and '%s')\n", file, a);
            return 2;
        } else {
            file = a;
        }
    }
    if (!file) {
        fputs(usage_text, stderr);
        return 2;
    }
    struct zero_config cfg;
    struct zero_config_origins origins;
    struct zero_error err = {0};
    if (zero_config_load_file(&cfg, &origins, file, world, 0, &err)) {
        fprintf(stderr, "zero config: %s\n", err.msg);
        return 1;
    }
    if (world)
        printf("# %s resolved for a world of %d ranks\n", file, world);
    else
        printf("# %s (batch sizes not given are derived for the world size: --world N)\n", file);
    printf("# defaults are DeepSpeed's (gradient_clipping 1.0); train_mlp and train_gpt start "
           "from their own (--help; train_mlp: no clipping)\n");
    zero_config_print(stdout, &cfg, &origins);
    return 0;
}

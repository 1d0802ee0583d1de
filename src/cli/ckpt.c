/* zero ckpt inspect DIR | zero ckpt export DIR -o FILE [--dtype D]: a sharded
 * checkpoint read in one process, no MPI world needed (include/zero/checkpoint.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "program/flags.h"
#include "zero/checkpoint.h"

static const char usage_text[] =
    "usage: zero ckpt inspect DIR\n"
    "       zero ckpt export DIR -o FILE.safetensors [--dtype fp32|bf16|fp16]\n"
    "\n"
    "DIR is a checkpoint directory (its `latest` step is used) or one step directory\n"
    "(DIR/step_000300), as written by zero_checkpoint_save or train_mlp --save-checkpoint.\n"
    "\n"
    "inspect  prints the metadata (step, world size, stage, precision, optimizer, loss\n"
    "         scaler, the user's metadata, every unit and tensor) and verifies every rank\n"
    "         file completely: headers, sections and the CRC32C of every chunk. Each\n"
    "         problem is printed naming the file, section and tensor.\n"
    "export   writes every parameter whole (the fp32 master, converted to --dtype,\n"
    "         default fp32) to a .safetensors file under the model's parameter names,\n"
    "         one tensor at a time: memory stays near the largest tensor.\n"
    "\n"
    "exit status: 0 ok, 1 a problem with the checkpoint or the output, 2 usage error\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "zero ckpt: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n\n%s", usage_text);
    return 2;
}

static int inspect(const char *dir)
{
    struct zero_checkpoint *c = NULL;
    struct zero_error err = {0};
    if (zero_checkpoint_open(&c, dir, &err)) {
        fprintf(stderr, "zero ckpt inspect: %s\n", err.msg);
        return 1;
    }
    zero_checkpoint_print(c, stdout);
    struct zero_checkpoint_info info;
    zero_checkpoint_get_info(c, &info);
    int bad = 0;
    for (int r = 0; r < info.world_size; r++) {
        zero_error_clear(&err);
        if (zero_checkpoint_verify_rank(c, r, &err)) {
            fprintf(stderr, "zero ckpt inspect: %s\n", err.msg);
            bad++;
        }
    }
    if (bad)
        printf("verify: %d of %d rank files FAILED\n", bad, info.world_size);
    else
        printf("verify: all %d rank files ok (every chunk's CRC32C checked)\n", info.world_size);
    fflush(stdout);
    zero_checkpoint_close(c);
    return bad ? 1 : 0;
}

static int export(const char *dir, const char *out, enum zero_dtype dtype)
{
    struct zero_checkpoint *c = NULL;
    struct zero_error err = {0};
    int rc = zero_checkpoint_open(&c, dir, &err);
    if (!rc)
        rc = zero_checkpoint_export(c, out, dtype, &err);
    if (rc) {
        fprintf(stderr, "zero ckpt export: %s\n", err.msg);
    } else {
        struct zero_checkpoint_info info;
        zero_checkpoint_get_info(c, &info);
        printf("wrote %s: %d tensors, %lld parameters as %s, from %s (step %lld)\n", out,
               info.ntensors, (long long)info.numel, zero_dtype_name(dtype), info.step_dir,
               (long long)info.global_steps);
    }
    zero_checkpoint_close(c);
    return rc ? 1 : 0;
}

int zero_cmd_ckpt(int argc, char **argv)
{
    if (argc < 2 || flags_is_help(argv[1])) {
        fputs(usage_text, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *action = argv[1], *dir = NULL, *out = NULL;
    enum zero_dtype dtype = ZERO_F32;
    int is_export = strcmp(action, "export") == 0;
    if (!is_export && strcmp(action, "inspect") != 0)
        return usage_error("unknown action '%s' (inspect or export)", action);
    const char *dtype_name = NULL; /* checked by zero_dtype_parse, which knows its aliases */
    const struct flag export_flags[] = {
        FLAG_ALIAS("output", "-o", "FILE", NULL, FLAG_STR, &out),
        FLAG_ANY("dtype", "T", NULL, FLAG_STR, &dtype_name),
    };
    const struct flag *f;
    char msg[256];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (flags_is_help(a)) {
            fputs(usage_text, stdout);
            return 0;
        }
        int took = is_export ? flags_take(export_flags, 2, argc, argv, &i, &f, msg, sizeof msg) : 0;
        if (took < 0)
            return usage_error("%s", msg);
        if (took && f->dst == &dtype_name) {
            int t = zero_dtype_parse(dtype_name);
            if (t != ZERO_F32 && t != ZERO_BF16 && t != ZERO_F16)
                return usage_error("--dtype: '%s' is not fp32, bf16 or fp16", dtype_name);
            dtype = (enum zero_dtype)t;
        } else if (took) {
            continue;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s'", a);
        } else if (dir) {
            return usage_error("one DIR only (also got '%s')", a);
        } else {
            dir = a;
        }
    }
    if (!dir)
        return usage_error("%s: no checkpoint directory given", action);
    if (is_export && !out)
        return usage_error("%s: -o FILE is required", action);
    return is_export ? export(dir, out, dtype) : inspect(dir);
}

/* zero diff A B: two runs' weights compared tensor by tensor, with a verdict: equal, inside
 * a rounding envelope (a reordering of the sums), or outside it (a bug, another formula,
 * another data order). No MPI world needed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "diff_trajectory.h"
#include "diff_weights.h"
#include "envelope.h"
#include "program/flags.h"
#include "trajectory_read.h"

static const char usage_text[] =
    "usage: zero diff A B [--envelope FILE [--step S] [--factor F]] [--ulps K] [--brief]\n"
    "\n"
    "A and B are two .safetensors files (e.g. libzero's --save-weights and another\n"
    "trainer's state_dict), or two trajectory files (a trainer's --trajectory FILE).\n"
    "\n"
    "Trajectories are compared step by step: the loss, the grad norm before clipping, the\n"
    "lr, the loss scale, the fp16 skip and every tensor's hash; where hashes differ and\n"
    "both runs wrote that step's weights (--trajectory-weights-every), the weights as\n"
    "below. With an envelope the loss and grad norm are inside when |A - B| is at most\n"
    "F times the envelope's at that step, the lr and loss scale when within 1e-12 of\n"
    "each other (formulas in double); differing hashes without weights are not measured.\n"
    "\n"
    "Weights: tensors are matched by name with the wrappers' prefixes\n"
    "stripped (module., _orig_mod., transformer., model.); a tensor in one file only is\n"
    "skipped when it is a buffer (.attn.bias, .attn.masked_bias, rotary_emb.inv_freq) or a\n"
    "tied copy (lm_head.weight equal to its own file's embedding), else reported missing.\n"
    "Shapes must match (a 2-D tensor stored transposed is named as such). Values are\n"
    "widened exactly (fp16, bf16 -> fp32 -> double) and compared: per tensor the elements\n"
    "whose bits differ, the max abs and relative L2 difference (||A - B|| / ||A||), the\n"
    "histogram of distances in ulps of the tensors' dtype (fp32 ulps when the dtypes\n"
    "differ), and the first differing element with its coordinates and both values' bits.\n"
    "\n"
    "  --envelope FILE  judge each difference by the rounding envelope of `zero envelope`:\n"
    "                   inside when its max abs is at most F times the envelope's for that\n"
    "                   tensor at step S; a NaN against a number is always outside\n"
    "  --step S         the envelope's step (default: the files' \"step\" metadata)\n"
    "  --factor F       default 8: the envelope is the largest of K(K-1)/2 pairs of\n"
    "                   sampled orders, and orders it did not sample (another GEMM, MPI's\n"
    "                   own reduction) reach a few times it (docs/verify-your-run.md)\n"
    "  --ulps K         also inside: a tensor whose every element is within K ulps of A's\n"
    "                   (an optimizer formula grouped otherwise, where the envelope's\n"
    "                   orders leave a tensor bit-identical: torch's AdamW against\n"
    "                   libzero's moves LayerNorm weights by 1-2 ulps in 4 steps)\n"
    "  --brief          print only the tensors that are not equal (or, with an envelope,\n"
    "                   outside it)\n"
    "\n"
    "exit status: 0 equal (or every difference inside the envelope), 1 a difference outside\n"
    "it, a missing tensor or a shape mismatch, 2 bad input (a file, a flag)\n";

#define NONNEGATIVE "a non-negative number"
#define COUNT "a non-negative integer"

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "zero diff: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n\n%s", usage_text);
    return 2;
}

static void print_verdict(const struct diff_summary *s, int judged)
{
    int total = s->compared + s->missing;
    if (s->outside == 0 && s->missing == 0 && s->inside == 0)
        printf("verdict: equal: %d of %d tensors bit-identical%s\n", s->equal, s->compared,
               s->skipped ? " (buffers and tied copies skipped)" : "");
    else if (s->outside == 0 && s->missing == 0)
        printf("verdict: inside the %s: %d of %d tensors differ, none beyond it\n",
               judged ? "envelope" : "--ulps allowance", s->inside, total);
    else
        printf("verdict: OUTSIDE%s: %d of %d tensors (%s)\n", judged ? " the envelope" : "",
               s->outside + s->missing, total, s->first_outside);
}

static void print_trajectory_verdict(const struct traj_summary *t)
{
    int total = t->steps + t->only_one;
    if (t->outside || t->only_one)
        printf("verdict: OUTSIDE: %d of %d steps (first: %s)\n", t->outside + t->only_one, total,
               t->first_outside);
    else if (t->inside || t->unmeasured)
        printf("verdict: inside the envelope: %d of %d steps differ, none beyond it%s\n",
               t->inside + t->unmeasured, total,
               t->unmeasured ? " (some tensors not measured: no weights there)" : "");
    else
        printf("verdict: equal: %d of %d steps bit-identical\n", t->equal, total);
}

int zero_cmd_diff(int argc, char **argv)
{
    const char *files[2] = {NULL, NULL}, *envelope_path = NULL;
    struct diff_options o = {.step = -1, .factor = 8.0, .indent = ""};
    const struct flag t[] = {
        FLAG_ANY("envelope", "FILE", NULL, FLAG_STR, &envelope_path),
        FLAG_NUM_WANT("step", "S", NULL, FLAG_I64, &o.step, 0, (double)INT64_MAX, COUNT),
        FLAG_NUM_WANT("factor", "F", NULL, FLAG_REAL, &o.factor, 0, 1e300, NONNEGATIVE),
        FLAG_NUM_WANT("ulps", "K", NULL, FLAG_I64, &o.ulps, 0, (double)INT64_MAX, COUNT),
        FLAG_ANY("brief", NULL, NULL, FLAG_SET, &o.brief),
    };
    const struct flag *f;
    char msg[1024];
    int nfiles = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int took = 0;
        if (flags_is_help(a)) {
            fputs(usage_text, stdout);
            return 0;
        } else if ((took = flags_take(t, (int)(sizeof t / sizeof t[0]), argc, argv, &i, &f, msg,
                                      sizeof msg)) < 0) {
            return usage_error("%s", msg);
        } else if (took) {
            continue;
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error("unknown option '%s'", a);
        } else if (nfiles == 2) {
            return usage_error("one file too many: '%s' (give two)", a);
        } else {
            files[nfiles++] = a;
        }
    }
    if (nfiles != 2)
        return usage_error("%s", "give two files, A and B");
    struct envelope env;
    if (envelope_path) {
        if (envelope_load(&env, envelope_path, msg, sizeof msg)) {
            fprintf(stderr, "zero diff: --envelope %s\n", msg);
            return 2;
        }
        o.envelope = &env;
    }
    int traj[2] = {trajectory_sniff(files[0]), trajectory_sniff(files[1])}, rc;
    if (traj[0] != traj[1]) {
        fprintf(stderr, "zero diff: %s is a trajectory file, %s is not: give two of a kind\n",
                files[traj[0] ? 0 : 1], files[traj[0] ? 1 : 0]);
        rc = 2;
    } else if (traj[0]) {
        struct traj_summary t;
        rc = diff_trajectories(files[0], files[1], &o, stdout, &t, msg, sizeof msg);
        if (rc == 0) {
            print_trajectory_verdict(&t);
            rc = t.outside || t.only_one ? 1 : 0;
        }
    } else {
        struct diff_summary s;
        printf("A: %s\nB: %s\n", files[0], files[1]);
        rc = diff_weights(files[0], files[1], &o, stdout, &s, msg, sizeof msg);
        if (rc == 0) {
            print_verdict(&s, o.envelope != NULL);
            rc = s.outside || s.missing ? 1 : 0;
        }
    }
    if (rc == 2 && !(traj[0] != traj[1])) {
        fflush(stdout);
        fprintf(stderr, "zero diff: %s\n", msg);
    }
    if (envelope_path)
        envelope_free(&env);
    return rc;
}

/* zero envelope -o FILE RUN1 RUN2 ...: the rounding envelope of K trajectories of one
 * training summed in K orders (the trainers' --order-seed): per step the largest
 * difference of the loss and the grad norm among the runs, and per tensor, where every
 * run wrote that step's weights, the largest element difference and relative L2
 * distance among them (envelope.h has the format). No MPI world needed. */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file_replace.h"
#include "commands.h"
#include "program/flags.h"
#include "trajectory_read.h"
#include "weight_names.h"
#include "zero/safetensors.h"

#define MAX_RUNS 64

static const char usage_text[] =
    "usage: zero envelope -o ENVELOPE.jsonl RUN1.jsonl RUN2.jsonl [RUN3.jsonl ...]\n"
    "\n"
    "RUNk are trajectory files (a trainer's --trajectory) of one training, same model,\n"
    "data, config and steps, each summed in its own order (--order-seed k). Writes, per\n"
    "step, the largest |difference| among the runs of the loss and of the grad norm, and\n"
    "per tensor, at the steps where every run wrote its weights\n"
    "(--trajectory-weights-every), the largest element difference (max abs) and the\n"
    "largest ||w_i - w_j|| / ||w_i|| (rel L2) over every pair of runs. zero diff\n"
    "--envelope ENVELOPE.jsonl then judges another run's difference against it.\n"
    "\n"
    "exit status: 0 written, 1 the output could not be written, 2 bad input (the runs\n"
    "are not of one training, a file is unreadable)\n";

struct runs {
    int k;
    struct trajectory_file t[MAX_RUNS];
};

static int same_training(const struct runs *r, char *msg, size_t len)
{
    const struct trajectory_file *a = &r->t[0];
    for (int i = 1; i < r->k; i++) {
        const struct trajectory_file *b = &r->t[i];
        if (strcmp(a->program, b->program) || a->global_batch != b->global_batch ||
            strcmp(a->compute_dtype, b->compute_dtype) || a->nsteps != b->nsteps) {
            snprintf(msg, len,
                     "%s and %s are not one training: program, global batch, compute dtype or "
                     "number of steps differ",
                     a->path, b->path);
            return 2;
        }
        for (int s = 0; s < a->nsteps; s++) {
            const struct traj_step *sb = trajectory_step_at(b, a->steps[s].step);
            if (!sb || sb->nhashes != a->steps[s].nhashes) {
                snprintf(msg, len, "%s: step %" PRId64 " is not in %s with the same tensors",
                         a->path, a->steps[s].step, b->path);
                return 2;
            }
        }
        for (int j = 0; j < i; j++)
            if (r->t[j].order_seed == b->order_seed) {
                snprintf(msg, len,
                         "%s and %s have the same order seed %" PRId64
                         ": their difference is 0, not an envelope",
                         r->t[j].path, b->path, b->order_seed);
                return 2;
            }
    }
    return 0;
}

static double spread(const double *x, int k)
{
    double lo = x[0], hi = x[0];
    for (int i = 1; i < k; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    return hi - lo;
}

/* One tensor across the runs' weights files: its max abs and rel L2 spread */
static int tensor_spread(struct zero_st_file **f, int k, const char *canonical, double *max_abs,
                         double *rel_l2, char *msg, size_t len)
{
    float *v[MAX_RUNS] = {0};
    size_t n = 0;
    int rc = 0;
    for (int i = 0; i < k && !rc; i++) {
        int idx = -1;
        for (int j = 0; j < zero_st_count(f[i]) && idx < 0; j++)
            if (strcmp(weight_name_canonical(zero_st_tensor(f[i], j)->name), canonical) == 0)
                idx = j;
        const struct zero_st_tensor_desc *d = idx >= 0 ? zero_st_tensor(f[i], idx) : NULL;
        struct zero_error err = {0};
        if (d == NULL || (i > 0 && zero_st_numel(d) != n)) {
            snprintf(msg, len, "tensor %s: missing from a weights file, or of another size",
                     canonical);
            rc = 2;
        } else if ((v[i] = malloc((n = zero_st_numel(d)) * sizeof(float) + 1)) == NULL) {
            snprintf(msg, len, "tensor %s: out of memory", canonical);
            rc = 2;
        } else if (zero_st_read(f[i], idx, v[i], ZERO_F32, n, &err)) {
            snprintf(msg, len, "%s", err.msg);
            rc = 2;
        }
    }
    *max_abs = *rel_l2 = 0.0;
    for (size_t e = 0; e < n && !rc; e++) {
        float lo = v[0][e], hi = v[0][e];
        for (int i = 1; i < k; i++) {
            lo = v[i][e] < lo ? v[i][e] : lo;
            hi = v[i][e] > hi ? v[i][e] : hi;
        }
        double d = (double)hi - (double)lo;
        *max_abs = d > *max_abs ? d : *max_abs;
    }
    for (int i = 0; i < k && !rc; i++)
        for (int j = 0; j < k; j++) {
            if (i == j)
                continue;
            double num = 0.0, den = 0.0;
            for (size_t e = 0; e < n; e++) {
                double d = (double)v[i][e] - (double)v[j][e];
                num += d * d;
                den += (double)v[i][e] * (double)v[i][e];
            }
            double r = num == 0.0 ? 0.0 : den == 0.0 ? INFINITY : sqrt(num / den);
            *rel_l2 = r > *rel_l2 ? r : *rel_l2;
        }
    for (int i = 0; i < k; i++)
        free(v[i]);
    return rc;
}

static int step_tensors(const struct runs *r, int s, json_t *line, char *msg, size_t len)
{
    const struct traj_step *a = &r->t[0].steps[s];
    struct zero_st_file *f[MAX_RUNS] = {0};
    int rc = 0, k = r->k;
    for (int i = 0; i < k; i++)
        if (!trajectory_step_at(&r->t[i], a->step)->weights)
            return 0; /* a run without weights here: loss and grad norm only */
    for (int i = 0; i < k && !rc; i++) {
        struct zero_error err = {0};
        if (zero_st_open(&f[i], trajectory_step_at(&r->t[i], a->step)->weights, &err)) {
            snprintf(msg, len, "%s", err.msg);
            rc = 2;
        }
    }
    json_t *tensors = json_object();
    for (int h = 0; h < a->nhashes && !rc; h++) {
        double max_abs, rel_l2;
        rc = tensor_spread(f, k, a->hash[h].name, &max_abs, &rel_l2, msg, len);
        json_t *t = json_object();
        json_object_set_new(t, "max_abs", json_real(max_abs));
        json_object_set_new(t, "rel_l2", isfinite(rel_l2) ? json_real(rel_l2) : json_real(1e300));
        json_object_set_new(tensors, a->hash[h].name, t);
    }
    json_object_set_new(line, "tensors", tensors);
    for (int i = 0; i < k; i++)
        zero_st_close(f[i]);
    return rc;
}

static int write_envelope(const struct runs *r, const char *out, char *msg, size_t len)
{
    struct zero_replace rep;
    struct zero_error err = {0};
    FILE *f = NULL;
    if (zero_replace_begin(&rep, out, &err) || !(f = zero_replace_stream(&rep, &err))) {
        snprintf(msg, len, "-o: %.900s", err.msg);
        return 1;
    }
    const int flags = JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17);
    json_t *head = json_object(), *from = json_array(), *seeds = json_array();
    for (int i = 0; i < r->k; i++) {
        json_array_append_new(from, json_string(r->t[i].path));
        json_array_append_new(seeds, json_integer(r->t[i].order_seed));
    }
    json_object_set_new(head, "envelope", json_integer(1));
    json_object_set_new(head, "runs", json_integer(r->k));
    json_object_set_new(head, "from", from);
    json_object_set_new(head, "order_seeds", seeds);
    int rc = json_dumpf(head, f, flags) || fputc('\n', f) == EOF ? 1 : 0;
    json_decref(head);
    for (int s = 0; s < r->t[0].nsteps && !rc; s++) {
        const struct traj_step *a = &r->t[0].steps[s];
        double loss[MAX_RUNS] = {0}, norm[MAX_RUNS] = {0}; /* k >= 2 runs fill them */
        for (int i = 0; i < r->k; i++) {
            const struct traj_step *b = trajectory_step_at(&r->t[i], a->step);
            loss[i] = a->start ? 0.0 : b->loss;
            norm[i] = a->start ? 0.0 : b->grad_norm;
        }
        double dl = spread(loss, r->k), dn = spread(norm, r->k);
        if (!isfinite(dl) || !isfinite(dn)) {
            snprintf(msg, len, "step %" PRId64 ": a run's loss or grad norm is not finite",
                     a->step);
            rc = 2;
            break;
        }
        json_t *line = json_object();
        json_object_set_new(line, "step", json_integer(a->step));
        json_object_set_new(line, "loss", json_real(dl));
        json_object_set_new(line, "grad_norm", json_real(dn));
        rc = step_tensors(r, s, line, msg, len);
        if (!rc && (json_dumpf(line, f, flags) || fputc('\n', f) == EOF))
            rc = 1;
        json_decref(line);
    }
    if (rc == 1)
        snprintf(msg, len, "-o %s: cannot write", out);
    if (rc) {
        zero_replace_abort(&rep);
        return rc;
    }
    if (zero_replace_commit(&rep, &err)) {
        snprintf(msg, len, "-o: %.900s", err.msg);
        return 1;
    }
    return 0;
}

int zero_cmd_envelope(int argc, char **argv)
{
    const char *out = NULL;
    static struct runs r;
    r.k = 0;
    const char *paths[MAX_RUNS];
    int n = 0;
    const struct flag t[] = {FLAG_ALIAS("output", "-o", "FILE", NULL, FLAG_STR, &out)};
    const struct flag *f;
    char msg[1024];
    for (int i = 1; i < argc; i++) {
        int took = 0;
        if (flags_is_help(argv[i])) {
            fputs(usage_text, stdout);
            return 0;
        } else if ((took = flags_take(t, 1, argc, argv, &i, &f, msg, sizeof msg)) < 0) {
            fprintf(stderr, "zero envelope: %s\n\n%s", msg, usage_text);
            return 2;
        } else if (took) {
            continue;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "zero envelope: unknown option '%s'\n\n%s", argv[i], usage_text);
            return 2;
        } else if (n == MAX_RUNS) {
            fprintf(stderr, "zero envelope: more than %d runs\n", MAX_RUNS);
            return 2;
        } else {
            paths[n++] = argv[i];
        }
    }
    if (!out || n < 2) {
        fprintf(stderr, "zero envelope: give -o FILE and at least two trajectories\n\n%s",
                usage_text);
        return 2;
    }
    int rc = 0;
    for (; r.k < n && !rc; r.k++)
        rc = trajectory_load(&r.t[r.k], paths[r.k], msg, sizeof msg);
    if (rc)
        r.k--; /* the one that failed freed itself */
    if (!rc)
        rc = same_training(&r, msg, sizeof msg);
    if (!rc)
        rc = write_envelope(&r, out, msg, sizeof msg);
    if (rc)
        fprintf(stderr, "zero envelope: %s\n", msg);
    else
        printf("wrote %s: %d steps of %d runs\n", out, r.t[0].nsteps, r.k);
    for (int i = 0; i < r.k; i++)
        trajectory_free_file(&r.t[i]);
    return rc;
}

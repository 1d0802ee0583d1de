/* See diff_trajectory.h. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_trajectory.h"
#include "trajectory_read.h"

/* in order of severity: worse() keeps the larger */
enum judged { EQUAL, UNMEASURED, INSIDE, OUTSIDE };

/* A scalar's verdict: equal bits (or both null); inside when |a - b| <= limit (limit < 0:
 * none) */
static enum judged judge(double a, double b, double limit)
{
    if (a == b || (isnan(a) && isnan(b)))
        return EQUAL;
    if (isnan(a) || isnan(b)) /* null: one run did not record it (DeepSpeed's stage-0 norm) */
        return UNMEASURED;
    if (limit >= 0 && !isnan(a) && !isnan(b) && fabs(a - b) <= limit)
        return INSIDE;
    return OUTSIDE;
}

static enum judged worse(enum judged x, enum judged y)
{
    return x > y ? x : y;
}

static void print_scalar(FILE *out, const char *name, double a, double b, enum judged j,
                         double limit)
{
    if (j == EQUAL) {
        fprintf(out, " | %s equal", name);
        return;
    }
    if (j == UNMEASURED) {
        fprintf(out, " | %s not recorded in %s", name, isnan(a) ? "A" : "B");
        return;
    }
    fprintf(out, " | %s %.17g vs %.17g: %s", name, a, b, j == INSIDE ? "inside" : "OUTSIDE");
    if (limit > 0)
        fprintf(out, " (%.3g of %.3g)", fabs(a - b) / limit, limit);
}

/* The tensors of one step: hashes, then the weights where they differ */
static int compare_tensors(const struct traj_step *a, const struct traj_step *b,
                           const struct diff_options *o, FILE *out, enum judged *verdict, char *why,
                           size_t why_len, char *msg, size_t len)
{
    int differ = 0, missing = 0;
    const char *first = NULL;
    for (int i = 0; i < a->nhashes; i++) {
        const char *hb = trajectory_hash(b, a->hash[i].name);
        if (hb == NULL)
            missing++;
        else if (strcmp(hb, a->hash[i].hex) != 0 && differ++ == 0)
            first = a->hash[i].name;
    }
    missing += b->nhashes - (a->nhashes - missing);
    fprintf(out, " | tensors %d of %d equal", a->nhashes - differ - missing, a->nhashes);
    if (missing) {
        fprintf(out, ", %d in one run only: OUTSIDE\n", missing);
        *verdict = OUTSIDE;
        snprintf(why, why_len, "%d tensors in one run only", missing);
        return 0;
    }
    if (differ == 0) {
        fputc('\n', out);
        *verdict = EQUAL;
        return 0;
    }
    if (!a->weights || !b->weights) {
        *verdict = o->envelope ? UNMEASURED : OUTSIDE;
        fprintf(out, ", %d differ (first %s)%s\n", differ, first,
                o->envelope ? ": not measured (no weights at this step: --trajectory-weights-every)"
                            : ": OUTSIDE");
        snprintf(why, why_len, "%s: the hashes differ", first);
        return 0;
    }
    fprintf(out, ", %d differ: their weights\n", differ);
    struct diff_options wo = *o;
    wo.step = a->step;
    wo.brief = 1;
    wo.indent = "    ";
    struct diff_summary ws;
    int rc = diff_weights(a->weights, b->weights, &wo, out, &ws, msg, len);
    if (rc)
        return rc;
    *verdict = ws.outside || ws.missing ? OUTSIDE : ws.inside ? INSIDE : EQUAL;
    snprintf(why, why_len, "%s", ws.first_outside);
    return 0;
}

static int compare_step(const struct traj_step *a, const struct traj_step *b,
                        const struct diff_options *o, FILE *out, enum judged *verdict, char *why,
                        size_t why_len, char *msg, size_t len)
{
    const struct envelope_step *env = o->envelope ? envelope_step_at(o->envelope, a->step) : NULL;
    if (o->envelope && env == NULL && !a->start) {
        snprintf(msg, len, "the envelope has no step %" PRId64, a->step);
        return 2;
    }
    fprintf(out, "step %" PRId64 "%s", a->step, a->start ? " (start)" : "");
    *verdict = EQUAL;
    why[0] = '\0';
    if (!a->start && !b->start) {
        double lim_loss = env ? o->factor * env->loss : -1,
               lim_norm = env ? o->factor * env->grad_norm : -1;
        /* a schedule and a scaler are formulas in double: another system's may round differently */
        double lim_lr = env ? 1e-12 * fabs(a->lr) : -1,
               lim_scale = env ? 1e-12 * fabs(a->loss_scale) : -1;
        enum judged j[4] = {
            judge(a->loss, b->loss, lim_loss), judge(a->grad_norm, b->grad_norm, lim_norm),
            judge(a->lr, b->lr, lim_lr), judge(a->loss_scale, b->loss_scale, lim_scale)};
        print_scalar(out, "loss", a->loss, b->loss, j[0], lim_loss);
        print_scalar(out, "grad_norm", a->grad_norm, b->grad_norm, j[1], lim_norm);
        print_scalar(out, "lr", a->lr, b->lr, j[2], lim_lr);
        print_scalar(out, "loss_scale", a->loss_scale, b->loss_scale, j[3], lim_scale);
        static const char *const names[] = {"loss", "grad_norm", "lr", "loss_scale"};
        for (int k = 0; k < 4; k++) {
            if (j[k] == OUTSIDE && why[0] == '\0')
                snprintf(why, why_len, "%s %.17g vs %.17g", names[k],
                         k == 0   ? a->loss
                         : k == 1 ? a->grad_norm
                         : k == 2 ? a->lr
                                  : a->loss_scale,
                         k == 0   ? b->loss
                         : k == 1 ? b->grad_norm
                         : k == 2 ? b->lr
                                  : b->loss_scale);
            *verdict = worse(*verdict, j[k]);
        }
        if (a->skipped != b->skipped) {
            fprintf(out, " | skipped %s vs %s: OUTSIDE", a->skipped ? "yes" : "no",
                    b->skipped ? "yes" : "no");
            if (why[0] == '\0')
                snprintf(why, why_len, "one run skipped the step (fp16 overflow), the other not");
            *verdict = OUTSIDE;
        }
    } else if (a->start != b->start) {
        fprintf(out, " | one run's start, the other's step: OUTSIDE");
        snprintf(why, why_len, "the runs start at different steps");
        *verdict = OUTSIDE;
    }
    enum judged t;
    char twhy[256];
    int rc = compare_tensors(a, b, o, out, &t, twhy, sizeof twhy, msg, len);
    if (rc)
        return rc;
    if (t == OUTSIDE && why[0] == '\0')
        snprintf(why, why_len, "%s", twhy);
    *verdict = worse(*verdict, t);
    return 0;
}

int diff_trajectories(const char *pa, const char *pb, const struct diff_options *o, FILE *out,
                      struct traj_summary *s, char *msg, size_t len)
{
    struct trajectory_file a, b;
    memset(s, 0, sizeof *s);
    int rc = trajectory_load(&a, pa, msg, len);
    if (rc)
        return rc;
    if ((rc = trajectory_load(&b, pb, msg, len))) {
        trajectory_free_file(&a);
        return rc;
    }
    fprintf(out,
            "A: %s world %" PRId64 ", stage %" PRId64 ", %s, order seed %" PRId64
            ", global batch %" PRId64 "\nB: %s world %" PRId64 ", stage %" PRId64
            ", %s, order seed %" PRId64 ", global batch %" PRId64 "\n",
            a.program, a.world, a.stage, a.compute_dtype, a.order_seed, a.global_batch, b.program,
            b.world, b.stage, b.compute_dtype, b.order_seed, b.global_batch);
    for (int i = 0; rc == 0 && i < a.nsteps; i++) {
        const struct traj_step *sa = &a.steps[i], *sb = trajectory_step_at(&b, sa->step);
        if (sb == NULL) {
            s->only_one++;
            fprintf(out, "step %" PRId64 ": only in A: OUTSIDE\n", sa->step);
            if (s->first_outside[0] == '\0')
                snprintf(s->first_outside, sizeof s->first_outside, "step %" PRId64 ": only in A",
                         sa->step);
            continue;
        }
        enum judged v;
        char why[400];
        rc = compare_step(sa, sb, o, out, &v, why, sizeof why, msg, len);
        if (rc)
            break;
        s->steps++;
        s->equal += v == EQUAL;
        s->inside += v == INSIDE;
        s->unmeasured += v == UNMEASURED;
        s->outside += v == OUTSIDE;
        if (v == OUTSIDE && s->first_outside[0] == '\0')
            snprintf(s->first_outside, sizeof s->first_outside, "step %" PRId64 ": %s", sa->step,
                     why);
    }
    for (int j = 0; rc == 0 && j < b.nsteps; j++)
        if (!trajectory_step_at(&a, b.steps[j].step)) {
            s->only_one++;
            fprintf(out, "step %" PRId64 ": only in B: OUTSIDE\n", b.steps[j].step);
            if (s->first_outside[0] == '\0')
                snprintf(s->first_outside, sizeof s->first_outside, "step %" PRId64 ": only in B",
                         b.steps[j].step);
        }
    trajectory_free_file(&a);
    trajectory_free_file(&b);
    return rc;
}

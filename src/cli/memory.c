/* zero memory: the measured per-rank memory ledger of stages 0-3 next to the ZeRO
 * formula, one training step of the toy MLP per stage inside one mpirun job, as a
 * table and (--svg) as a stacked bar chart, measured bar beside theory bar. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "commands.h"
#include "program/flags.h"
#include "svg_chart.h"

static const enum zero_tag state_tags[4] = {ZERO_TAG_PARAMS, ZERO_TAG_GRADS, ZERO_TAG_MASTER,
                                            ZERO_TAG_OPTIM};

struct stage_memory {
    struct zero_ledger ledger; /* rank 0's, after the step */
    struct zero_theory theory;
    int64_t min_states, max_states; /* model-state bytes over ranks */
};

static void usage(FILE *out)
{
    fprintf(out,
            "NAME\n"
            "    zero memory - measured per-rank memory of stages 0-3 next to the ZeRO formula\n"
            "\n"
            "SYNOPSIS\n"
            "    mpirun -np N zero memory [--svg FILE] [model and engine flags]\n"
            "\n"
            "DESCRIPTION\n"
            "    Builds the toy residual MLP of examples/train_mlp at stages 0, 1, 2 and 3 in\n"
            "    turn, trains one step each on the same data, and prints rank 0's ledger: the\n"
            "    bytes of parameters, gradients, fp32 master and optimizer state it holds, the\n"
            "    ZeRO paper's formula for them (fp32 with Adam: 16Ψ, 8Ψ + 8Ψ/N, 4Ψ + 12Ψ/N,\n"
            "    16Ψ/N, Ψ counting the units' padded elements) and the peaks of the transient\n"
            "    tags (stage-3 gathers, reduce buckets, activations). Exit status 1 if any\n"
            "    model-state tag differs from its formula.\n"
            "\n"
            "OPTIONS\n"
            "    --svg FILE           write the model states as a stacked bar chart: per\n"
            "                         stage a measured bar and a theory bar\n"
            "%s"
            "    --help               this text\n",
            cli_model_flags_help(0));
}

static int64_t tag_theory(const struct zero_theory *t, int i)
{
    const int64_t v[4] = {t->params_bytes, t->grads_bytes, t->master_bytes, t->optim_bytes};
    return v[i];
}

static int measure(struct stage_memory *out, const struct cli_model *m, int stage,
                   struct zero_error *err)
{
    struct cli_run run;
    int rc = cli_run_open(&run, m, stage, zero_comm_world(), err);
    if (rc)
        return rc;
    zero_ledger_reset_peaks(&run.dev->ledger);
    rc = example_agree_naming_ranks(cli_run_step(&run, 0, err), err, zero_comm_world());
    if (!rc) {
        out->ledger = run.dev->ledger;
        zero_engine_theory(run.engine, &out->theory);
        int64_t lo = zero_ledger_model_states(&run.dev->ledger), hi = lo;
        zero_comm_allreduce_int64(zero_comm_world(), &lo, 1, ZERO_COMM_MIN);
        zero_comm_allreduce_int64(zero_comm_world(), &hi, 1, ZERO_COMM_MAX);
        out->min_states = lo;
        out->max_states = hi;
    }
    cli_run_close(&run);
    return rc;
}

/* Prints the table; returns the number of model-state cells that differ from theory. */
static int print_table(const struct stage_memory *sm, const struct cli_model *m, int world)
{
    char a[32], b[32], what[160];
    const struct zero_theory *t0 = &sm[0].theory;
    printf("zero memory: %d rank%s, %s, fp32 with Adam\n", world, world > 1 ? "s" : "",
           cli_model_describe(m, what, sizeof what));
    printf("Ψ = %s parameters, %s elements padded; bytes per rank after one step "
           "(rank 0's ledger)\n\n",
           cli_num(a, t0->psi), cli_num(b, t0->psi_padded));
    static const char *const formula[4] = {"16Ψ", "8Ψ + 8Ψ/N", "4Ψ + 12Ψ/N", "16Ψ/N"};
    printf("%-11s %12s %12s %12s %12s\n", "", "stage 0", "stage 1", "stage 2", "stage 3");
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        printf("%-11s", zero_tag_name(state_tags[i]));
        for (int s = 0; s < 4; s++)
            printf(" %12s", cli_num(a, sm[s].ledger.current[state_tags[i]]));
        printf("\n");
    }
    printf("%-11s", "= measured");
    for (int s = 0; s < 4; s++)
        printf(" %12s", cli_num(a, zero_ledger_model_states(&sm[s].ledger)));
    printf("\n%-11s", "  theory");
    for (int s = 0; s < 4; s++)
        printf(" %12s", cli_num(a, sm[s].theory.model_state_bytes));
    printf("\n%-11s", "  formula");
    for (int s = 0; s < 4; s++) /* Ψ is two bytes wide in UTF-8, one column on screen */
        printf(" %*s%s", 12 - (int)strlen(formula[s]) + (strstr(formula[s], "+") ? 2 : 1), "",
               formula[s]);
    printf("\n%-11s", "  check");
    for (int s = 0; s < 4; s++) {
        int ok = 1;
        for (int i = 0; i < 4; i++)
            ok &= sm[s].ledger.current[state_tags[i]] == tag_theory(&sm[s].theory, i);
        ok &= sm[s].min_states == sm[s].max_states;
        bad += !ok;
        printf(" %12s", ok ? "ok" : "MISMATCH");
    }
    printf("\n\npeaks during the step (transient, not model states)\n");
    const enum zero_tag peaks[] = {ZERO_TAG_GATHER, ZERO_TAG_BUCKETS, ZERO_TAG_ACTIVATIONS,
                                   ZERO_TAG_WORKSPACE};
    for (size_t i = 0; i < sizeof peaks / sizeof peaks[0]; i++) {
        printf("%-11s", zero_tag_name(peaks[i]));
        for (int s = 0; s < 4; s++)
            printf(" %12s", cli_num(a, sm[s].ledger.peak[peaks[i]]));
        printf("\n");
    }
    printf("%-11s", "all tags");
    for (int s = 0; s < 4; s++)
        printf(" %12s", cli_num(a, sm[s].ledger.peak_total));
    printf("\n");
    return bad;
}

static int write_svg(const char *path, const struct stage_memory *sm, int world)
{
    struct zero_chart c = {.nsegments = 4, .nbars = 8, .decimals = 1};
    double scale = 1024.0;
    snprintf(c.unit, sizeof c.unit, "KiB");
    if (sm[0].theory.model_state_bytes >= 100 * 1024 * 1024) {
        scale = 1024.0 * 1024.0;
        snprintf(c.unit, sizeof c.unit, "MiB");
    }
    snprintf(c.title, sizeof c.title, "Model states per rank, measured and theory (N = %d)", world);
    snprintf(c.subtitle, sizeof c.subtitle,
             "ledger of rank 0 after one step, fp32 with Adam; Ψ = %lld padded elements; "
             "solid = measured, outlined = formula",
             (long long)sm[0].theory.psi_padded);
    const char *names[4] = {"params", "grads", "master", "optimizer"};
    for (int i = 0; i < 4; i++)
        snprintf(c.segment[i], sizeof c.segment[i], "%s", names[i]);
    for (int s = 0; s < 4; s++)
        for (int k = 0; k < 2; k++) {
            struct zero_chart_bar *b = &c.bar[2 * s + k];
            snprintf(b->label, sizeof b->label, "stage %d", s);
            snprintf(b->sublabel, sizeof b->sublabel, "%s", k ? "theory" : "measured");
            b->group = s;
            b->hollow = k;
            for (int i = 0; i < 4; i++)
                b->value[i] = (double)(k ? tag_theory(&sm[s].theory, i)
                                         : sm[s].ledger.current[state_tags[i]]) /
                              scale;
        }
    struct zero_error err = {0};
    if (zero_svg_chart_write(path, &c, &err)) {
        fprintf(stderr, "zero memory: --svg: %s\n", err.msg);
        return 1;
    }
    printf("\nwrote %s\n", path);
    return 0;
}

int zero_cmd_memory(int argc, char **argv)
{
    struct cli_model m;
    cli_model_defaults(&m);
    const char *svg = NULL;
    char msg[256];
    struct program_startup su;
    program_startup_init(&su, "zero memory");
    const struct flag t[] = {FLAG_ANY("svg", "FILE", NULL, FLAG_STR, &svg)};
    const struct flag *f;
    int help = 0;
    for (int i = 1; i < argc && !su.status && !help; i++) {
        int took = cli_model_flag(&m, argc, argv, &i, msg, sizeof msg);
        if (took < 0 || (took == 1 && strcmp(argv[i - 1], "--stage") == 0)) {
            program_fail(&su, 2, "%s", took < 0 ? msg : "runs every stage: no --stage");
            break;
        }
        if (took)
            continue;
        if (flags_is_help(argv[i]))
            help = 1;
        else if ((took = flags_take(t, 1, argc, argv, &i, &f, msg, sizeof msg)) < 0)
            program_fail(&su, 2, "%s", msg);
        else if (took == 0)
            program_fail(&su, 2, "unknown argument '%s' (see --help)", argv[i]);
    }
    if (help)
        program_field(&su, "--help", "given");
    else if (!su.status) {
        cli_model_fields(&m, &su);
        program_field(&su, "--svg", "%s", svg ? svg : "(not given)");
    }
    int owned;
    int agreed = cli_startup(&su, &owned);
    struct zero_comm *job = zero_comm_world();
    int rank = zero_comm_rank(job), world = zero_comm_size(job), status = 0;
    if (agreed || help) {
        if (!agreed && rank == 0)
            usage(stdout);
        if (owned)
            zero_job_finalize();
        return agreed;
    }
    struct stage_memory sm[4];
    struct zero_error err = {0};
    int rc = 0;
    for (int s = 0; s < 4 && !rc; s++)
        rc = measure(&sm[s], &m, s, &err);
    if (rc) {
        if (rank == 0)
            fprintf(stderr, "zero memory: %s\n", err.msg);
        status = 1;
    } else if (rank == 0) {
        status = print_table(sm, &m, world) ? 1 : 0;
        if (svg && write_svg(svg, sm, world))
            status = 1;
        fflush(stdout);
    }
    zero_comm_allreduce_int(job, &status, ZERO_COMM_MAX);
    if (owned)
        zero_job_finalize();
    return status;
}

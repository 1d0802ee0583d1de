/* zero verify: the exactness contract, checked. Trains the toy MLP with the same model,
 * data and seed in every listed configuration (stages 0-3, and world sizes carved out
 * of the mpirun job with zero_comm_split), hashes all weights after every step, and
 * compares every weight with the first configuration's: on a difference it names the
 * first step, unit, tensor and element and prints both values. --perturb adds one ulp
 * to one weight of one configuration, to show that a single bit is found. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "commands.h"
#include "program/flags.h"

#define MAX_CONFIGS 32
#define MAX_STEPS 64
#define MAX_LIST 8

struct perturb {
    int on, stage, step;
    char tensor[ZERO_NAME_LEN * 2];
    int64_t index;
};

struct verify_args {
    struct cli_model m;
    int steps;
    int stages[MAX_LIST], nstages;
    int worlds[MAX_LIST], nworlds;
    struct perturb perturb;
};

struct config {
    int stage, world;
    uint64_t hash[MAX_STEPS];
    int differs; /* a difference from configuration 0 was found */
    int64_t step, flat, index;
    int unit, param;
    float want, got;
};

static void usage(FILE *out)
{
    fprintf(out,
            "NAME\n"
            "    zero verify - check that stages 0-3 (and world sizes) give bit-identical weights\n"
            "\n"
            "SYNOPSIS\n"
            "    mpirun -np N zero verify [--steps K] [--stages 0,1,2,3] [--worlds N1,N2,...]\n"
            "                             [--perturb STAGE:STEP[:TENSOR[:INDEX]]] [model flags]\n"
            "\n"
            "DESCRIPTION\n"
            "    Trains the toy residual MLP of examples/train_mlp for K steps (default 3) in\n"
            "    each configuration: every listed stage at every listed world size (default:\n"
            "    all N ranks), a world of W ranks being the first W ranks of the job. The\n"
            "    global batch and the micro-batch are the same everywhere (accumulation =\n"
            "    B / (m x W)), so every configuration sees the same samples in the same atoms.\n"
            "    After every step it hashes all weights (FNV-1a 64 over their bits, model\n"
            "    order) and prints one row per configuration. Every weight is compared with\n"
            "    the first configuration's; for each configuration that differs it names the\n"
            "    first step, unit, tensor and element (flat index and coordinates) and both\n"
            "    values with their bits. Exit status 0 if all are bit-identical, 1 if not.\n"
            "\n"
            "OPTIONS\n"
            "    --steps K            steps per configuration (default 3, at most %d)\n"
            "    --stages LIST        stages to run, e.g. 0,3 (default 0,1,2,3)\n"
            "    --worlds LIST        world sizes, each <= N, e.g. 1,2,4 (default N)\n"
            "    --perturb S:K[:T[:I]]  after step K of the stage-S configuration at the first\n"
            "                         world size, add one ulp to element I (default 0) of\n"
            "                         tensor T (default: the first tensor of the model)\n"
            "%s"
            "    --help               this text\n",
            MAX_STEPS, cli_model_flags_help(0));
}

static int parse_perturb(const char *v, struct perturb *p)
{
    char copy[256];
    snprintf(copy, sizeof copy, "%s", v);
    char *stage = strtok(copy, ":"), *step = strtok(NULL, ":"), *tensor = strtok(NULL, ":"),
         *index = strtok(NULL, ":");
    char *end;
    if (!stage || !step || strtok(NULL, ":"))
        return -1;
    p->stage = (int)strtol(stage, &end, 10);
    if (*end || p->stage < 0 || p->stage > 3)
        return -1;
    p->step = (int)strtol(step, &end, 10);
    if (*end || p->step < 1)
        return -1;
    snprintf(p->tensor, sizeof p->tensor, "%s", tensor ? tensor : "");
    p->index = index ? strtoll(index, &end, 10) : 0;
    if (index && (*end || p->index < 0))
        return -1;
    p->on = 1;
    return 0;
}

#define INVALID "valid (see --help)"

/* 0, -1 for --help, or 2 with the error recorded in su. */
static int parse(struct verify_args *a, int argc, char **argv, struct program_startup *su)
{
    memset(a, 0, sizeof *a);
    cli_model_defaults(&a->m);
    a->m.micro_batch = 2;
    a->steps = 3;
    a->nstages = 4;
    for (int s = 0; s < 4; s++)
        a->stages[s] = s;
    const char *perturb = NULL; /* parsed into a->perturb when taken */
    const struct flag t[] = {
        FLAG_NUM_WANT("steps", "K", NULL, FLAG_INT, &a->steps, 1, MAX_STEPS, INVALID),
        FLAG_LIST_WANT("stages", "LIST", NULL, a->stages, &a->nstages, MAX_LIST, 0, 3, INVALID),
        FLAG_LIST_WANT("worlds", "LIST", NULL, a->worlds, &a->nworlds, MAX_LIST, 1, 1 << 20,
                       INVALID),
        FLAG_ANY("perturb", "S:K[:T[:I]]", NULL, FLAG_STR, &perturb),
    };
    const int n = (int)(sizeof t / sizeof t[0]);
    char msg[256];
    for (int i = 1; i < argc; i++) {
        int took = cli_model_flag(&a->m, argc, argv, &i, msg, sizeof msg);
        if (took < 0 || (took && strcmp(argv[i - 1], "--stage") == 0))
            return program_fail(su, 2, "%s", took < 0 ? msg : "use --stages LIST");
        if (took)
            continue;
        if (flags_is_help(argv[i])) {
            program_field(su, "--help", "given");
            return -1;
        }
        const struct flag *f = NULL;
        took = flags_take(t, n, argc, argv, &i, &f, msg, sizeof msg);
        if (took == 0)
            return program_fail(su, 2, "unknown argument '%s' (see --help)", argv[i]);
        if (took < 0)
            return program_fail(su, 2, "%s", msg);
        if (f->dst == &perturb && parse_perturb(perturb, &a->perturb))
            return program_fail(su, 2, "--perturb: '%s' is not " INVALID, perturb);
    }
    cli_model_fields(&a->m, su);
    program_field(su, "--steps", "%d", a->steps);
    program_field(su, "--perturb", "%d stage %d step %d %s[%lld]", a->perturb.on, a->perturb.stage,
                  a->perturb.step, a->perturb.tensor, (long long)a->perturb.index);
    char list[MAX_LIST * 12] = "";
    for (int k = 0; k < a->nstages; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", k ? "," : "",
                 a->stages[k]);
    program_field(su, "--stages", "%s", list);
    list[0] = '\0';
    for (int k = 0; k < a->nworlds; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", k ? "," : "",
                 a->worlds[k]);
    program_field(su, "--worlds", "%s", list[0] ? list : "(the job's size)");
    return 0;
}

static int64_t gcd(int64_t a, int64_t b)
{
    return b ? gcd(b, a % b) : a;
}

/* ---- weights ---- */

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* All parameters, whole, in model order into w (collective on the run's comm). */
static int read_weights(struct cli_run *r, float *w, struct zero_error *err)
{
    int64_t at = 0;
    for (int u = 0; u < r->model->nunits; u++)
        for (int p = 0; p < r->model->units[u]->nparams; p++) {
            int rc = zero_engine_read_param(r->engine, u, p, w + at, err);
            if (rc)
                return rc;
            at += zero_param_numel(&r->model->units[u]->params[p]);
        }
    return ZERO_OK;
}

/* Adds one ulp to the chosen element (collective). */
static int perturb(struct cli_run *r, const struct perturb *p, struct zero_error *err)
{
    int u = 0, k = 0;
    if (p->tensor[0]) {
        if (zero_model_find_param(r->model, p->tensor, &u, &k))
            return zero_fail(err, ZERO_EINVAL, "--perturb: no tensor '%s' in the model", p->tensor);
    } else {
        while (u < r->model->nunits && r->model->units[u]->nparams == 0)
            u++;
        if (u == r->model->nunits)
            return zero_fail(err, ZERO_EINVAL, "--perturb: the model has no parameters");
    }
    int64_t n = zero_param_numel(&r->model->units[u]->params[k]);
    if (p->index >= n)
        return zero_fail(err, ZERO_EINVAL, "--perturb: element %lld of a tensor of %lld",
                         (long long)p->index, (long long)n);
    float *t = malloc((size_t)n * sizeof *t);
    if (!t)
        return zero_fail(err, ZERO_ENOMEM, "--perturb");
    int rc = zero_engine_read_param(r->engine, u, k, t, err);
    if (!rc) {
        t[p->index] = nextafterf(t[p->index], INFINITY);
        rc = zero_engine_write_param(r->engine, u, k, t, err);
    }
    free(t);
    return rc;
}

/* The first element where got differs from want, located in the model. */
static void locate(struct config *c, const struct zero_model *m, const float *want,
                   const float *got, int64_t n, int64_t step)
{
    int64_t i = 0;
    while (i < n && memcmp(&want[i], &got[i], sizeof(float)) == 0)
        i++;
    if (i == n)
        return;
    c->differs = 1;
    c->step = step;
    c->flat = i;
    c->want = want[i];
    c->got = got[i];
    int64_t at = 0;
    for (int u = 0; u < m->nunits; u++)
        for (int p = 0; p < m->units[u]->nparams; p++) {
            int64_t len = zero_param_numel(&m->units[u]->params[p]);
            if (i < at + len) {
                c->unit = u;
                c->param = p;
                c->index = i - at;
                return;
            }
            at += len;
        }
}

struct reference {
    float *w[MAX_STEPS]; /* rank 0: configuration 0's weights after each step */
    int64_t n;
};

/* Runs one configuration on comm (ranks outside it pass NULL). */
static int run_config(const struct verify_args *a, struct config *c, int index,
                      struct zero_comm *comm, struct reference *ref, struct zero_error *err)
{
    if (comm == NULL)
        return ZERO_OK;
    struct cli_run r;
    int rc = cli_run_open(&r, &a->m, c->stage, comm, err);
    if (rc)
        return rc;
    int64_t n = zero_model_numel(r.model);
    float *w = malloc((size_t)n * sizeof *w);
    rc = example_agree_naming_ranks(w ? 0 : zero_fail(err, ZERO_ENOMEM, "weights"), err, comm);
    int perturbed = a->perturb.on && a->perturb.stage == c->stage && c->world == a->worlds[0];
    for (int s = 0; s < a->steps && !rc; s++) {
        rc = cli_run_step(&r, s, err);
        if (!rc && perturbed && s + 1 == a->perturb.step)
            rc = perturb(&r, &a->perturb, err);
        if (!rc)
            rc = read_weights(&r, w, err);
        if ((rc = example_agree_naming_ranks(rc, err, comm)) || r.rank != 0)
            continue;
        c->hash[s] = fnv1a(0xcbf29ce484222325ull, w, (size_t)n * sizeof *w);
        if (index == 0) {
            ref->n = n;
            ref->w[s] = malloc((size_t)n * sizeof *w);
            if (ref->w[s])
                memcpy(ref->w[s], w, (size_t)n * sizeof *w);
        } else if (!c->differs && ref->w[s]) {
            locate(c, r.model, ref->w[s], w, n, s + 1);
        }
    }
    free(w);
    cli_run_close(&r);
    return rc;
}

static uint32_t bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static void print_coords(const struct zero_param_spec *p, int64_t index)
{
    int64_t c[ZERO_MAX_DIMS];
    for (int d = p->ndim - 1; d >= 0; d--) {
        c[d] = index % p->shape[d];
        index /= p->shape[d];
    }
    printf("[");
    for (int d = 0; d < p->ndim; d++)
        printf("%s%lld", d ? ", " : "", (long long)c[d]);
    printf("]");
}

static int power_of_two(int64_t x)
{
    return x > 0 && (x & (x - 1)) == 0;
}

/* A world size that differs where the contract says it may: micro-step-major atoms
 * reduce each micro-step's N atoms together, which is the tree over one rank's N x A
 * atoms only when N is a power of two or A = 1 (docs/exactness.md). */
static void explain_world_difference(const struct verify_args *a, const struct config *cf, int ncf,
                                     int64_t batch)
{
    if (a->m.cfg.libzero.atom_order == ZERO_ATOM_RANK_MAJOR)
        return;
    for (int i = 1; i < ncf; i++) {
        if (!cf[i].differs || cf[i].world == cf[0].world)
            continue;
        int n = power_of_two(cf[i].world) ? cf[0].world : cf[i].world;
        int64_t steps = batch / ((int64_t)n * a->m.micro_batch);
        if (!power_of_two(n) && steps > 1) {
            printf("note: with micro-step-major atoms (the default) N = %d reduces the %d atoms "
                   "of each of its %lld micro-steps together, which is not the order of one "
                   "rank's sum of all %lld atoms; --atom-order rank_major gives every N one "
                   "rank's bits when the micro-steps per rank are a power of two "
                   "(docs/exactness.md)\n",
                   n, n, (long long)steps, (long long)(steps * n));
            return;
        }
    }
}

/* Rank 0's report; returns the number of configurations that differ. */
static int report(const struct verify_args *a, const struct config *cf, int ncf,
                  const struct zero_model *m, int64_t nweights, int64_t batch)
{
    char buf[32], what[160];
    printf("zero verify: %d steps of %s, %s weights\n", a->steps,
           cli_model_describe(&a->m, what, sizeof what), cli_num(buf, nweights));
    printf("same seed and data everywhere: global batch %lld, micro-batch %lld; hash = FNV-1a 64 "
           "of all weight bits after the step\n",
           (long long)batch, (long long)a->m.micro_batch);
    if (a->m.cfg.libzero.atom_order == ZERO_ATOM_RANK_MAJOR)
        printf("rank-major atoms (libzero.atom_order): rank r's micro-step i is atom r x A + i\n");
    if (a->perturb.on)
        printf("perturbed: stage %d, N = %d after step %d: +1 ulp at element %lld of %s\n",
               a->perturb.stage, a->worlds[0], a->perturb.step, (long long)a->perturb.index,
               a->perturb.tensor[0] ? a->perturb.tensor : "the first tensor");
    for (int first = 0; first < a->steps; first += 4) {
        int last = first + 4 < a->steps ? first + 4 : a->steps;
        printf("\n%-15s", "configuration");
        for (int s = first; s < last; s++)
            printf(s + 1 < last ? "  step %-11d" : "  step %d", s + 1);
        printf("\n");
        for (int i = 0; i < ncf; i++) {
            char name[32];
            snprintf(name, sizeof name, "stage %d, N = %d", cf[i].stage, cf[i].world);
            printf("%-15s", name);
            for (int s = first; s < last; s++)
                printf("  %016" PRIx64, cf[i].hash[s]);
            printf("\n");
        }
    }
    int differ = 0;
    printf("\n");
    for (int i = 1; i < ncf; i++) {
        const struct config *c = &cf[i];
        if (!c->differs)
            continue;
        differ++;
        const struct zero_unit *u = m->units[c->unit];
        printf("stage %d, N = %d differs from stage %d, N = %d: first at step %lld, unit %s, "
               "tensor %s.%s, element %lld ",
               c->stage, c->world, cf[0].stage, cf[0].world, (long long)c->step, u->name, u->name,
               u->params[c->param].name, (long long)c->index);
        print_coords(&u->params[c->param], c->index);
        printf(": %.9g (0x%08" PRIx32 ") vs %.9g (0x%08" PRIx32 ")\n", c->want, bits(c->want),
               c->got, bits(c->got));
    }
    if (differ == 0)
        printf("all %d configurations bit-identical after every one of %d steps\n", ncf, a->steps);
    else
        printf("%d of %d configurations differ\n", differ, ncf - 1);
    explain_world_difference(a, cf, ncf, batch);
    return differ;
}

int zero_cmd_verify(int argc, char **argv)
{
    static struct verify_args a;
    struct program_startup su;
    program_startup_init(&su, "zero verify");
    int help = parse(&a, argc, argv, &su) < 0, owned;
    int rc = cli_startup(&su, &owned);
    struct zero_comm *world = zero_comm_world();
    int rank = zero_comm_rank(world), size = zero_comm_size(world), status = 0;
    if (rc || help) {
        if (!rc && rank == 0)
            usage(stdout);
        status = rc;
        goto out;
    }
    if (a.nworlds == 0) {
        a.worlds[0] = size;
        a.nworlds = 1;
    }
    int64_t lcm = 1;
    for (int i = 0; i < a.nworlds; i++) {
        if (a.worlds[i] > size) {
            if (rank == 0)
                fprintf(stderr, "zero verify: --worlds: %d ranks, but the job has %d\n",
                        a.worlds[i], size);
            status = 2;
            goto out;
        }
        lcm = lcm / gcd(lcm, a.worlds[i]) * a.worlds[i];
    }
    if (a.m.batch == 0)
        a.m.batch = a.m.micro_batch * lcm;

    static struct config cf[MAX_CONFIGS];
    int ncf = 0;
    for (int w = 0; w < a.nworlds; w++)
        for (int s = 0; s < a.nstages && ncf < MAX_CONFIGS; s++)
            cf[ncf++] = (struct config){.stage = a.stages[s], .world = a.worlds[w]};
    struct reference ref = {0};
    struct zero_error err = {0};
    for (int i = 0; i < ncf && !rc; i++) {
        struct zero_comm *comm = NULL; /* the first cf[i].world ranks; NULL on the others */
        rc = zero_comm_split(world, rank < cf[i].world ? 0 : -1, rank, &comm, &err);
        if (!rc)
            rc = run_config(&a, &cf[i], i, comm, &ref, &err);
        zero_comm_free(&comm);
        /* rank 0 is in every configuration */
        rc = example_agree_naming_ranks(rc, &err, world);
    }
    if (rc) {
        if (rank == 0)
            fprintf(stderr, "zero verify: %s\n", err.msg);
        status = rc == ZERO_EINVAL ? 2 : 1;
    } else if (rank == 0) {
        struct zero_model *m = NULL;
        if (cli_model_build(&a.m, &m, &err) == 0) {
            status = report(&a, cf, ncf, m, ref.n, a.m.batch) ? 1 : 0;
            zero_model_destroy(m);
        } else {
            fprintf(stderr, "zero verify: %s\n", err.msg);
            status = 1;
        }
        fflush(stdout);
    }
    for (int s = 0; s < MAX_STEPS; s++)
        free(ref.w[s]);
    zero_comm_allreduce_int(world, &status, ZERO_COMM_MAX);
out:
    if (owned)
        zero_job_finalize();
    return status;
}

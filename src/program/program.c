/* See program.h. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "zero/fault.h"
#include "program.h"
#include "program_signal.h"
#include "sample_order.h"
#include "trajectory.h"
#include "zero/config_json.h"
#include "zero/safetensors.h"

/* program_die's own communicator (a duplicate of the world made by every rank in
 * program_startup_begin): its one exchange never matches another collective */
static struct zero_comm *die_comm;
static struct zero_engine *live_engine;
/* ---- fields ---- */

void program_startup_init(struct program_startup *s, const char *prog)
{
    memset(s, 0, sizeof *s);
    s->prog = prog;
}

void program_startup_free(struct program_startup *s)
{
    free(s->fields);
    s->fields = NULL;
    s->len = s->cap = 0;
}

static void append(struct program_startup *s, const char *text)
{
    size_t n = strlen(text) + 1;
    if (s->nomem)
        return;
    if (s->len + n > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 4096;
        while (cap < s->len + n)
            cap *= 2;
        char *grown = realloc(s->fields, cap);
        if (!grown) {
            s->nomem = 1;
            return;
        }
        s->fields = grown;
        s->cap = cap;
    }
    memcpy(s->fields + s->len, text, n);
    s->len += n;
}

void program_field(struct program_startup *s, const char *name, const char *fmt, ...)
{
    char value[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    append(s, name);
    append(s, value);
}

int program_fail(struct program_startup *s, int status, const char *fmt, ...)
{
    if (s->status)
        return s->status;
    int at = snprintf(s->msg, sizeof s->msg, "%s: ", s->prog);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->msg + at, sizeof s->msg - (size_t)at, fmt, ap);
    va_end(ap);
    s->status = status ? status : 1;
    return s->status;
}

int program_fail_text(struct program_startup *s, int status, const char *msg)
{
    size_t n = strlen(s->prog);
    if (strncmp(msg, s->prog, n) == 0 && strncmp(msg + n, ": ", 2) == 0)
        msg += n + 2;
    return program_fail(s, status, "%s", msg);
}

void program_fields_config(struct program_startup *s, const struct zero_config *c)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (!out) {
        s->nomem = 1;
        return;
    }
    zero_config_print(out, c, NULL);
    fclose(out);
    /* "key = value" lines: the key is the first word, the value the rest */
    for (char *line = text; line && *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = '\0';
        char *eq = strstr(line, " = ");
        if (eq) {
            *eq = '\0';
            program_field(s, line, "%s", eq + 3);
        }
        line = end ? end + 1 : NULL;
    }
    free(text);
}

/* ---- input files ---- */

static const char *file_kind(mode_t mode)
{
    return S_ISREG(mode)    ? "a regular file"
           : S_ISDIR(mode)  ? "a directory"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

/* A 64-bit hash of fd's whole content: FNV-1a's step on 8-byte words in four
 * independent lanes (so the loop runs at memory speed, not one multiply per
 * byte), the lanes and the length mixed at the end. Every byte counts: two
 * copies that differ anywhere differ here (the start-up agreement compares it). */
static uint64_t hash_file(int fd, uint64_t size)
{
    static unsigned char buf[1 << 20];
    const uint64_t prime = 0x100000001b3ULL;
    uint64_t lane[4] = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL, 0x9ce484222325cbf2ULL,
                        0x2325cbf29ce48422ULL};
    uint64_t at = 0;
    while (at < size) {
        ssize_t got = pread(fd, buf, sizeof buf, (off_t)at);
        if (got <= 0)
            break;
        size_t n = (size_t)got, i = 0;
        for (; i + 32 <= n; i += 32)
            for (int l = 0; l < 4; l++) {
                uint64_t w;
                memcpy(&w, buf + i + 8 * l, 8);
                lane[l] = (lane[l] ^ w) * prime;
            }
        for (; i < n; i++) /* the tail, byte by byte */
            lane[0] = (lane[0] ^ buf[i]) * prime;
        at += (uint64_t)got;
    }
    uint64_t h = (lane[0] ^ at) * prime;
    for (int l = 1; l < 4; l++)
        h = (h ^ lane[l]) * prime;
    return h;
}

int program_input_file(struct program_startup *s, const char *flag, const char *path)
{
    char name[128];
    snprintf(name, sizeof name, "%s contents", flag);
    struct stat st;
    if (stat(path, &st) != 0) {
        program_field(s, name, "missing"); /* the reader says why */
        return 0;
    }
    if (!S_ISREG(st.st_mode))
        return program_fail(s, 2, "%s: %s: is %s, not a regular file", flag, path,
                            file_kind(st.st_mode));
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) {
        program_field(s, name, "unreadable"); /* the reader says why */
        return 0;
    }
    uint64_t h = hash_file(fd, (uint64_t)st.st_size);
    close(fd);
    program_field(s, name, "%lld bytes, content %016llx", (long long)st.st_size,
                  (unsigned long long)h);
    return 0;
}

/* The first non-finite element of tensor i, or -1. */
static int64_t first_non_finite(struct zero_st_file *f, int i, size_t numel, float *buf,
                                struct zero_error *err)
{
    if (zero_st_read(f, i, buf, ZERO_F32, numel, err))
        return -2;
    for (size_t k = 0; k < numel; k++)
        if (!isfinite(buf[k]))
            return (int64_t)k;
    return -1;
}

int program_input_weights(struct program_startup *s, const char *flag, const char *path)
{
    if (program_input_file(s, flag, path))
        return s->status;
    struct zero_st_file *f = NULL;
    struct zero_error err = {0};
    if (zero_st_open(&f, path, &err))
        return 0; /* the loader reports the file's own errors */
    int rc = 0;
    for (int i = 0; i < zero_st_count(f) && !rc; i++) {
        const struct zero_st_tensor_desc *d = zero_st_tensor(f, i);
        if (d->dtype != ZERO_F32 && d->dtype != ZERO_F16 && d->dtype != ZERO_BF16)
            continue;
        size_t numel = zero_st_numel(d);
        float *buf = numel ? malloc(numel * sizeof *buf) : NULL;
        if (numel && !buf) {
            rc = program_fail(s, 1, "%s: %s: no memory to check tensor %s", flag, path, d->name);
            break;
        }
        int64_t bad = numel ? first_non_finite(f, i, numel, buf, &err) : -1;
        if (bad >= 0)
            rc = program_fail(s, 1, "%s: %s: tensor %s holds %s at element %lld", flag, path,
                              d->name, isnan(buf[bad]) ? "NaN" : "an infinity", (long long)bad);
        free(buf);
        if (bad == -2)
            break; /* the loader reports it */
    }
    zero_st_close(f);
    return rc;
}

/* Creates and removes a probe directory in dir: whether files can be made there. */
static int can_create_in(const char *dir, int rank, int *why)
{
    char probe[PATH_MAX];
    if (snprintf(probe, sizeof probe, "%s/.zero-probe-r%d-XXXXXX", dir, rank) >=
        (int)sizeof probe) {
        *why = ENAMETOOLONG;
        return 0;
    }
    if (!mkdtemp(probe)) {
        *why = errno;
        return 0;
    }
    rmdir(probe);
    return 1;
}

/* The save would fail only after training on what DIR already holds: a `latest`
 * that is not a regular file (a FIFO, a directory, a link to /dev/null) or a
 * step_* entry that is not a directory. */
static int check_checkpoint_dir(struct program_startup *s, const char *flag, const char *dir)
{
    char path[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/latest", dir);
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return program_fail(s, 2, "%s: %s is %s, not a regular file (a save would replace it)",
                            flag, path, file_kind(st.st_mode));
    DIR *d = opendir(dir);
    for (struct dirent *ent; d && (ent = readdir(d));) {
        if (strncmp(ent->d_name, "step_", 5) != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
            closedir(d);
            return program_fail(s, 2, "%s: %s is %s, not a checkpoint directory", flag, path,
                                file_kind(st.st_mode));
        }
    }
    if (d)
        closedir(d);
    return 0;
}

int program_output_dir(struct program_startup *s, const char *flag, const char *dir)
{
    int rank = zero_comm_rank(zero_comm_world()), why = 0;
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return program_fail(s, 2, "%s: %s is %s, not a directory", flag, dir,
                                file_kind(st.st_mode));
        if (!can_create_in(dir, rank, &why))
            return program_fail(s, 1, "%s: cannot write into %s: %s", flag, dir, strerror(why));
        return check_checkpoint_dir(s, flag, dir);
    }
    if (errno != ENOENT && errno != ENOTDIR)
        return program_fail(s, 1, "%s: %s: %s", flag, dir, strerror(errno));
    /* absent: the save creates it (one level), so its parent must take it */
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", dir);
    size_t n = strlen(parent);
    while (n > 1 && parent[n - 1] == '/')
        parent[--n] = '\0';
    char *slash = strrchr(parent, '/');
    if (!slash)
        snprintf(parent, sizeof parent, ".");
    else if (slash == parent)
        parent[1] = '\0';
    else
        *slash = '\0';
    if (stat(parent, &st) != 0)
        return program_fail(s, 1, "%s: cannot create %s: %s: %s", flag, dir, parent,
                            strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return program_fail(s, 1, "%s: cannot create %s: %s is %s, not a directory", flag, dir,
                            parent, file_kind(st.st_mode));
    if (!can_create_in(parent, rank, &why))
        return program_fail(s, 1, "%s: cannot create %s in %s: %s", flag, dir, parent,
                            strerror(why));
    return 0;
}

/* ---- the exchange ---- */

/* One rank's record: "<status>\0<msg>\0" then the fields. */
struct record {
    int status;
    const char *msg;
    const char *fields, *end;
};

static struct record parse_record(const char *p, size_t n)
{
    struct record r = {.status = atoi(p)};
    const char *end = p + n;
    p += strlen(p) + 1;
    r.msg = p < end ? p : "";
    p += p < end ? strlen(p) + 1 : 0;
    r.fields = p < end ? p : end;
    r.end = end;
    return r;
}

/* The value of field name in r, or NULL. */
static const char *find_field(const struct record *r, const char *name)
{
    for (const char *p = r->fields; p < r->end;) {
        const char *v = p + strlen(p) + 1;
        if (v >= r->end)
            break;
        if (strcmp(p, name) == 0)
            return v;
        p = v + strlen(v) + 1;
    }
    return NULL;
}

/* The first field where r and base differ: 1 and the line in out, else 0. */
static int first_difference(const struct record *base, const struct record *r, int rank, char *out,
                            size_t len)
{
    for (int pass = 0; pass < 2; pass++) {
        const struct record *a = pass ? r : base, *b = pass ? base : r;
        for (const char *p = a->fields; p < a->end;) {
            const char *v = p + strlen(p) + 1;
            if (v >= a->end)
                break;
            const char *w = find_field(b, p);
            if (!w || strcmp(v, w) != 0) {
                const char *mine = pass ? v : w, *zero = pass ? w : v;
                snprintf(out, len, "rank %d: %s = %s, rank 0: %s = %s", rank, p,
                         mine ? mine : "(not given)", p, zero ? zero : "(not given)");
                return 1;
            }
            p = v + strlen(v) + 1;
        }
    }
    return 0;
}

/* "prog: rank R: rest" from "prog: rest". */
static void print_ranked(const char *prog, int rank, const char *msg)
{
    size_t n = strlen(prog);
    if (strncmp(msg, prog, n) == 0 && strncmp(msg + n, ": ", 2) == 0)
        fprintf(stderr, "%s: rank %d: %s\n", prog, rank, msg + n + 2);
    else
        fprintf(stderr, "%s: rank %d: %s\n", prog, rank, msg);
}

/* Rank 0's verdict over every rank's record; prints and returns the exit status. */
static int judge(const char *prog, const struct record *rec, int world)
{
    int first = -1, same = 1;
    for (int r = 0; r < world; r++)
        if (rec[r].status) {
            if (first < 0)
                first = r;
            else
                same &= strcmp(rec[r].msg, rec[first].msg) == 0;
        }
    if (first >= 0) {
        int failing = 0;
        for (int r = 0; r < world; r++)
            failing += rec[r].status != 0;
        if (same && failing == world) { /* everyone says the same: as one process does */
            fprintf(stderr, "%s\n", rec[first].msg);
            return rec[first].status;
        }
        int shown = 0;
        for (int r = first; r < world && shown < 4; r++)
            if (rec[r].status && (r == first || strcmp(rec[r].msg, rec[first].msg) != 0)) {
                print_ranked(prog, r, rec[r].msg);
                shown++;
            }
        if (failing > shown)
            fprintf(stderr, "%s: %d rank%s failed at start-up in all\n", prog, failing,
                    failing > 1 ? "s" : "");
        return rec[first].status;
    }
    int differ = 0;
    char line[2600];
    for (int r = 1; r < world; r++)
        if (first_difference(&rec[0], &rec[r], r, line, sizeof line)) {
            if (differ++ < 4)
                fprintf(stderr, "%s: the ranks disagree on the run: %s\n", prog, line);
        }
    if (differ > 4)
        fprintf(stderr, "%s: %d ranks differ from rank 0 in all\n", prog, differ);
    return differ ? 2 : 0;
}

int program_startup_agree(struct program_startup *s, struct zero_comm *comm)
{
    int rank = zero_comm_rank(comm), world = zero_comm_size(comm);
    if (s->nomem)
        program_fail(s, 1, "out of memory for the start-up record");
    char head[16];
    int hn = snprintf(head, sizeof head, "%d", s->status) + 1;
    size_t mn = strlen(s->msg) + 1, total = (size_t)hn + mn + s->len;
    if (total > INT_MAX / 4) {
        program_fail(s, 1, "start-up record too large");
        s->len = 0;
        hn = snprintf(head, sizeof head, "%d", s->status) + 1;
        mn = strlen(s->msg) + 1;
        total = (size_t)hn + mn;
    }
    char *mine = malloc(total);
    int n = mine ? (int)total : 0;
    if (mine) {
        memcpy(mine, head, (size_t)hn);
        memcpy(mine + hn, s->msg, mn);
        if (s->len)
            memcpy(mine + (size_t)hn + mn, s->fields, s->len);
    }
    size_t *counts = NULL;
    void *got = NULL;
    int status = 0;
    /* ranks that could not build a record send nothing and are failures */
    int gathered = zero_comm_gather(comm, mine, (size_t)n, 0, &got, &counts);
    if (rank == 0) {
        const char *all = got;
        struct record *rec = calloc((size_t)world, sizeof *rec);
        if (gathered || !all || !rec) {
            fprintf(stderr, "%s: out of memory for the start-up records\n", s->prog);
            status = 1;
        } else {
            size_t at = 0;
            for (int r = 0; r < world; r++) {
                rec[r] = counts[r] ? parse_record(all + at, counts[r])
                                   : (struct record){.status = 1, .msg = "out of memory"};
                at += counts[r];
            }
            status = judge(s->prog, rec, world);
        }
        free(rec);
        fflush(stderr);
    }
    zero_comm_bcast(comm, &status, sizeof status, 0);
    free(got);
    free(counts);
    free(mine);
    return status;
}

int program_startup_begin(struct program *p, struct program_startup *su)
{
    program_startup_init(su, p->prog);
    zero_fault_set_rank(p->rank, p->world); /* ZERO_FAULT's RANKS from the first site on */
    if (die_comm == NULL) {
        struct zero_error err = {0}; /* none: program_die aborts the job as a rank alone would */
        zero_comm_dup(zero_comm_world(), &die_comm, &err);
    }
    program_signals_install();
    if (p->flags_status) /* argv may still hold the bad flag: the trainer's parser would object */
        program_fail_text(su, p->flags_status, p->flags_msg);
    return p->flags_status == 0;
}

/* ---- the run loop ---- */

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void program_fill(const struct program_atoms *a, int64_t step, int64_t i, program_fill_fn fill,
                  void *ctx, struct zero_batch *b)
{
    int64_t first =
        zero_atom_first_sample_in(a->order, step, i, a->rank, a->world, a->accum, a->micro);
    *b = (struct zero_batch){.rows = a->micro};
    if (a->perm == NULL || a->perm->seed == 0)
        fill(ctx, first, a->micro, 0, b);
    else /* row j of the atom holds the sample the step's permutation puts there */
        for (int64_t j = 0; j < a->micro; j++)
            fill(ctx, sample_order_at(a->perm, first + j), 1, j, b);
}

void program_attach(struct program *p, struct zero_engine *e, const struct zero_model *model,
                    const struct zero_config *cfg, int64_t steps)
{
    p->engine = e;
    p->model = model;
    p->cfg = cfg;
    p->first_step = 0;
    p->steps = steps;
    p->atoms = (struct program_atoms){.order = zero_engine_config(e)->libzero.atom_order,
                                      .rank = p->rank,
                                      .world = p->world,
                                      .accum = cfg->gradient_accumulation_steps,
                                      .micro = cfg->train_micro_batch_size_per_gpu};
}

void program_lap(struct program *p, double *slot)
{
    double now = seconds_now();
    if (slot)
        *slot += now - p->clock.lap;
    p->clock.lap = now;
}

/* steps_per_print: whether optimizer step `step` (1-based) of `total` prints its
 * progress line: every step when the key is null (DeepSpeed's None), else every
 * steps_per_print-th step and the last one. */
static int progress_due(const struct zero_config *c, int64_t step, int64_t total)
{
    return c == NULL || c->steps_per_print <= 0 || step % c->steps_per_print == 0 || step == total;
}

/* "time: forward 1.20 ms | backward 2.31 ms | step 0.40 ms | communication 0.91 ms" per
 * optimizer step, averaged over the steps since the last line (the communication is
 * the last step's, inside the three). */
static void print_wall_clock(const struct zero_engine *e, const struct program_clock *clock,
                             int64_t steps)
{
    const struct zero_comm_stats *s = &zero_engine_last_step(e)->comm;
    double comm = 0.0;
    for (int k = 0; k < ZERO_COLL_KIND_COUNT; k++)
        comm += s->kind[k].seconds;
    double n = steps > 0 ? (double)steps : 1.0;
    printf("time: forward %.2f ms | backward %.2f ms | step %.2f ms | communication %.2f ms "
           "(per optimizer step, over %" PRId64 " step%s)\n",
           clock->forward / n * 1e3, clock->backward / n * 1e3, clock->step / n * 1e3, comm * 1e3,
           steps, steps == 1 ? "" : "s");
}

void program_live_engine(struct zero_engine *e)
{
    live_engine = e;
    program_signals_own_files(e);
}

/* 1 when every rank of die_comm arrives within `seconds` */
static int all_die_together(double seconds)
{
    return die_comm != NULL && zero_comm_all_arrive(die_comm, seconds);
}

_Noreturn void program_die(const char *prog, int rank, const struct zero_error *err)
{
    if (strncmp(err->msg, "rank ", 5) == 0)
        fprintf(stderr, "%s: %s\n", prog, err->msg);
    else
        fprintf(stderr, "%s: rank %d: %s\n", prog, rank, err->msg);
    fflush(stderr);
    /* first: the wait below may end this process (a peer's death seen by MPI) */
    zero_engine_remove_swap_files(live_engine);
    if (all_die_together(5.0)) {
        struct zero_engine *e = live_engine;
        program_live_engine(NULL); /* the handler forgets the paths before they are freed */
        zero_engine_destroy(e);
        zero_job_finalize();
        exit(1);
    }
    zero_job_abort(1);
}

/* The signal the ranks agree one of them received, after `done` steps: rank 0 says
 * so, and the run ends there on every rank, saving nothing. */
int program_stopped(const struct program *p, int64_t done)
{
    int sig = program_signals_agree();
    if (sig && p->rank == 0)
        fprintf(stderr, "%s: stopped by signal %d (%s) at step %lld of %lld; nothing saved\n",
                p->prog, sig, sig == SIGINT ? "SIGINT" : "SIGTERM", (long long)done,
                (long long)p->steps);
    return sig ? 128 + sig : 0;
}

int program_step_due(struct program *p, int64_t step)
{
    struct zero_error err = {0};
    if (p->trajectory &&
        trajectory_step(p->trajectory, p->engine, p->model, zero_comm_world(), &err))
        program_die(p->prog, p->rank, &err);
    p->timed++;
    p->due = progress_due(p->cfg, step + 1, p->steps);
    return p->due && p->rank == 0 && !p->quiet;
}

int program_step_done(struct program *p, int64_t step)
{
    struct zero_error err = {0};
    if (p->due) {
        if (p->rank == 0 && !p->quiet && p->cfg && p->cfg->wall_clock_breakdown)
            print_wall_clock(p->engine, &p->clock, p->timed);
        p->clock.forward = p->clock.backward = p->clock.step = 0.0;
        p->timed = 0;
    }
    const struct zero_step_info *s = zero_engine_last_step(p->engine);
    if (!isfinite(s->loss) && !s->skipped) {
        if (p->rank == 0)
            fprintf(stderr,
                    "%s: step %lld: the loss is %g: the training diverged or started from "
                    "non-finite weights; stopping\n",
                    p->prog, (long long)step + 1, s->loss);
        return 1;
    }
    if (example_checkpoint_after(p->engine, &p->ck, step + 1, &err))
        program_die(p->prog, p->rank, &err);
    return 0;
}

int program_resume(struct program *p)
{
    struct zero_error err = {0};
    if (!p->ck.resume_dir)
        return 0;
    if (example_resume(p->engine, &p->ck, &p->first_step, &err) == 0)
        return 0;
    program_error(p, "", &err);
    return 1;
}

void program_error(const struct program *p, const char *what, const struct zero_error *err)
{
    if (p->rank == 0)
        fprintf(stderr, "%s: %s%s\n", p->prog, what, err->msg);
}

int program_startup_parsed(struct program_startup *s, int help_given, int usage_error,
                           const char *msg, int *help)
{
    if (help_given) {
        *help = 1;
        program_field(s, "--help", "given");
        return 0;
    }
    if (usage_error) {
        program_fail_text(s, 2, msg);
        return 0;
    }
    return 1;
}

/* path with its directory resolved (the file itself may not exist yet) */
static void canonical(const char *path, char *out, size_t len)
{
    char dir[PATH_MAX], real[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        dir[--n] = '\0';
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : dir;
    if (slash == dir)
        snprintf(real, sizeof real, "/");
    else if (slash) {
        *slash = '\0';
        if (!realpath(dir, real)) /* absent too: its own parent resolved */
            canonical(dir, real, sizeof real);
    } else if (!realpath(".", real))
        snprintf(real, sizeof real, ".");
    snprintf(out, len, "%s/%s", real, base);
}

int program_outputs_distinct(struct program_startup *s, const char *ckdir, int n,
                             const char *const flag[], const char *const path[])
{
    char a[2 * PATH_MAX], b[2 * PATH_MAX], ck[2 * PATH_MAX];
    for (int i = 0; i < n; i++) {
        if (!path[i])
            continue;
        canonical(path[i], a, sizeof a);
        for (int j = i + 1; j < n; j++) {
            if (!path[j])
                continue;
            canonical(path[j], b, sizeof b);
            if (strcmp(a, b) == 0)
                return program_fail(s, 2,
                                    "%s %s and %s %s name the same file: one output "
                                    "would replace the other",
                                    flag[i], path[i], flag[j], path[j]);
        }
        if (!ckdir)
            continue;
        canonical(ckdir, ck, sizeof ck);
        size_t k = strlen(ck);
        const char *base = a + k + 1;
        if (strcmp(a, ck) == 0 || (strncmp(a, ck, k) == 0 && a[k] == '/' &&
                                   (strcmp(base, "latest") == 0 || strncmp(base, "step_", 5) == 0 ||
                                    strncmp(base, ".tmp-", 5) == 0)))
            return program_fail(s, 2,
                                "%s %s is --save-checkpoint %s's own entry: the checkpoints "
                                "would replace it or it them",
                                flag[i], path[i], ckdir);
    }
    return 0;
}

void program_startup_files(struct program_startup *s, const char *data, const char *init_weights,
                           const char *save_checkpoint)
{
    if (data)
        program_input_file(s, "--data", data);
    if (init_weights)
        program_input_weights(s, "--init-weights", init_weights);
    if (save_checkpoint)
        program_output_dir(s, "--save-checkpoint", save_checkpoint);
}

int program_device_open(struct zero_device **dev, const struct zero_config *cfg,
                        struct zero_comm *comm, struct zero_error *err)
{
    struct zero_backend_options opt = {.coll_mode = cfg->libzero.coll_mode, .device = -1};
    return zero_device_open(dev, cfg->libzero.backend, zero_comm_device_handle(comm), &opt, err);
}

void program_config_adamw(struct zero_config *c, double lr, double beta2, double weight_decay,
                          double clip)
{
    zero_config_defaults(c);
    c->optimizer.type = ZERO_OPTIM_ADAMW;
    c->optimizer.lr = lr;
    c->optimizer.betas[0] = 0.9;
    c->optimizer.betas[1] = beta2;
    c->optimizer.eps = 1e-8;
    c->optimizer.weight_decay = weight_decay;
    c->gradient_clipping = clip;
}

/* Chrome trace-event JSON from the engine's event stream. See zero/trace.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file_replace.h"
#include "zero/trace.h"

struct record {
    enum zero_event_kind kind;
    int unit, bucket;
    char collective[24]; /* "group_reduce_scatter" */
    int64_t elements, step, micro_step;
    int element_bytes; /* the event's: 2 in fp16/bf16 */
    double t_begin, t_end;
    enum zero_event_group group; /* the ranks a collective spans */
    int group_index, group_size;
};

struct zero_trace {
    const struct zero_model *model;
    int rank, world;
    int64_t steps[ZERO_TRACE_MAX_STEPS];
    int nsteps;
    struct record *rec;
    int64_t n, cap;
    int64_t dropped; /* events lost to a failed allocation */
};

int zero_trace_create(struct zero_trace **out, const struct zero_model *model, int rank, int world,
                      const int64_t *steps, int nsteps, struct zero_error *err)
{
    *out = NULL;
    if (nsteps < 0 || nsteps > ZERO_TRACE_MAX_STEPS)
        return zero_fail(err, ZERO_EINVAL, "trace: %d steps listed (at most %d)", nsteps,
                         ZERO_TRACE_MAX_STEPS);
    if (world < 1)
        return zero_fail(err, ZERO_EINVAL, "trace: world size %d", world);
    struct zero_trace *t = calloc(1, sizeof *t);
    if (!t)
        return zero_fail(err, ZERO_ENOMEM, "trace");
    t->model = model;
    t->rank = rank;
    t->world = world;
    t->nsteps = nsteps;
    for (int i = 0; i < nsteps; i++)
        t->steps[i] = steps[i];
    *out = t;
    return ZERO_OK;
}

void zero_trace_destroy(struct zero_trace *t)
{
    if (!t)
        return;
    free(t->rec);
    free(t);
}

int64_t zero_trace_count(const struct zero_trace *t)
{
    return t->n;
}

static int wanted(const struct zero_trace *t, int64_t step)
{
    if (t->nsteps == 0)
        return 1;
    for (int i = 0; i < t->nsteps; i++)
        if (t->steps[i] == step)
            return 1;
    return 0;
}

void zero_trace_observe(void *trace, const struct zero_event *ev)
{
    struct zero_trace *t = trace;
    /* events before update k have ev->step == k - 1: step k counts from 1 */
    if (!wanted(t, ev->step + 1))
        return;
    if (t->n == t->cap) {
        int64_t cap = t->cap ? 2 * t->cap : 1024;
        struct record *r = realloc(t->rec, (size_t)cap * sizeof *r);
        if (!r) {
            t->dropped++;
            return;
        }
        t->rec = r;
        t->cap = cap;
    }
    struct record *r = &t->rec[t->n++];
    r->kind = ev->kind;
    r->unit = ev->unit;
    r->bucket = ev->bucket;
    snprintf(r->collective, sizeof r->collective, "%s", ev->collective ? ev->collective : "");
    r->elements = ev->elements;
    r->element_bytes = ev->element_bytes;
    r->step = ev->step + 1;
    r->micro_step = ev->micro_step;
    r->t_begin = ev->t_begin;
    r->t_end = ev->t_end;
    r->group = ev->group;
    r->group_index = ev->group_index;
    r->group_size = ev->group_size;
}

/* ---- JSON text ---- */

struct text {
    char *s;
    size_t len, cap;
    int failed;
};

static void add(struct text *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct text *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? 2 * b->cap : 4096;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->failed = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

/* A JSON string body: quotes, backslashes and control characters escaped. */
static void add_escaped(struct text *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            add(b, "\\%c", c);
        else if (c < 0x20)
            add(b, "\\u%04x", c);
        else
            add(b, "%c", c);
    }
}

static int on_compute_track(enum zero_event_kind k)
{
    return k == ZERO_EV_FORWARD || k == ZERO_EV_BACKWARD || k == ZERO_EV_RECOMPUTE ||
           k == ZERO_EV_OPTIMIZER;
}

/* Elements this rank puts on the wire for the collective (ring-equivalent volumes) over
 * the ranks it spans: the world's, or its group's ("group_all_gather" is an all_gather).
 * qgZ's all_to_all of E elements over S ranks sends S-1 of its S parts, as codes. */
static int64_t sent_elements(const struct record *r, int world)
{
    const char *c = strncmp(r->collective, "group_", 6) == 0 ? r->collective + 6 : r->collective;
    int n = r->group == ZERO_EVG_WORLD ? world : r->group_size;
    if (n < 2)
        return 0;
    if (strcmp(c, "reduce_scatter") == 0 || strcmp(c, "all_gather") == 0 ||
        strcmp(c, "all_to_all") == 0)
        return r->elements / n * (n - 1);
    if (strcmp(c, "all_reduce") == 0)
        return 2 * (r->elements / n * (n - 1));
    return 0;
}

/* A collective's group in its args: "group":"mics shard group 1","group_ranks":2 (the
 * world: "world" and N). */
static void add_group(struct text *b, const struct record *r, int world)
{
    if (!r->collective[0] || strcmp(r->collective, "control") == 0)
        return;
    if (r->group == ZERO_EVG_WORLD)
        add(b, ",\"group\":\"world\",\"group_ranks\":%d", world);
    else
        add(b, ",\"group\":\"%s %d\",\"group_ranks\":%d", zero_event_group_name(r->group),
            r->group_index, r->group_size);
}

static void add_metadata(struct text *b, int rank)
{
    add(b, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d\"}},\n",
        rank, rank);
    add(b,
        "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"sort_index\":%d}},"
        "\n",
        rank, rank);
    add(b,
        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":"
        "\"compute\"}},\n",
        rank, ZERO_TRACE_TID_COMPUTE);
    add(b,
        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":"
        "\"communication\"}}",
        rank, ZERO_TRACE_TID_COMM);
}

/* A collective's flight, issue to completion, as a pair of async events ("b", "e"): Perfetto
 * draws them on tracks of their own under the rank, where they can overlap each other and
 * the compute slices (X slices on one thread must nest, flights do not). id: the record's
 * index, unique over ranks with the rank in the high part. */
static void add_flight(struct text *b, const struct zero_trace *t, const struct record *r,
                       int64_t index)
{
    const char *unit = r->unit >= 0 && t->model && r->unit < t->model->nunits
                           ? t->model->units[r->unit]->name
                           : "";
    long long id = (long long)t->rank * 1000000000LL + (long long)index;
    for (int end = 0; end < 2; end++) {
        add(b, ",\n{\"name\":\"%s%s", r->collective[0] ? r->collective : "collective",
            unit[0] ? " " : "");
        add_escaped(b, unit);
        add(b,
            "\",\"cat\":\"in_flight\",\"ph\":\"%s\",\"id\":%lld,\"ts\":%.3f,\"pid\":%d,\"tid\":%d",
            end ? "e" : "b", id, (end ? r->t_end : r->t_begin) * 1e6, t->rank, ZERO_TRACE_TID_COMM);
        if (!end)
            add(b,
                ",\"args\":{\"step\":%lld,\"micro_step\":%lld,"
                "\"elements\":%lld,\"bytes\":%lld%s%s%s",
                (long long)r->step, (long long)r->micro_step, (long long)r->elements,
                (long long)(r->element_bytes * r->elements),
                r->collective[0] ? ",\"collective\":\"" : "", r->collective,
                r->collective[0] ? "\"" : "");
        if (!end && r->bucket >= 0)
            add(b, ",\"bucket\":%d", r->bucket);
        if (!end)
            add_group(b, r, t->world);
        add(b, end ? "}" : "}}");
    }
}

static void add_record(struct text *b, const struct zero_trace *t, const struct record *r)
{
    const char *unit = r->unit >= 0 && t->model && r->unit < t->model->nunits
                           ? t->model->units[r->unit]->name
                           : "";
    /* a reduction is named by its collective: "reduce_scatter layers.3" */
    const char *what =
        r->kind == ZERO_EV_REDUCE && r->collective[0] ? r->collective : zero_event_name(r->kind);
    int compute = on_compute_track(r->kind);
    add(b, ",\n{\"name\":\"%s%s", what, unit[0] ? " " : "");
    add_escaped(b, unit);
    add(b,
        "\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d,"
        "\"args\":{\"step\":%lld,\"micro_step\":%lld",
        compute ? "compute" : "communication", r->t_begin * 1e6, (r->t_end - r->t_begin) * 1e6,
        t->rank, compute ? ZERO_TRACE_TID_COMPUTE : ZERO_TRACE_TID_COMM, (long long)r->step,
        (long long)r->micro_step);
    if (unit[0]) {
        add(b, ",\"unit\":\"");
        add_escaped(b, unit);
        add(b, "\"");
    }
    if (r->kind == ZERO_EV_FORWARD || r->kind == ZERO_EV_BACKWARD || r->kind == ZERO_EV_RECOMPUTE)
        add(b, ",\"rows\":%lld", (long long)r->elements);
    else if (r->elements > 0)
        add(b, ",\"elements\":%lld,\"bytes\":%lld", (long long)r->elements,
            (long long)(r->element_bytes * r->elements));
    if (r->collective[0])
        add(b, ",\"collective\":\"%s\"", r->collective);
    if (r->bucket >= 0)
        add(b, ",\"bucket\":%d", r->bucket);
    add_group(b, r, t->world);
    int64_t sent = sent_elements(r, t->world);
    if (sent > 0)
        add(b, ",\"sent_elements\":%lld", (long long)sent);
    /* qgZ's codes are not elements x their size: the comm report counts their bytes */
    if (sent > 0 && strcmp(r->collective, "all_to_all") != 0)
        add(b, ",\"sent_bytes\":%lld", (long long)(r->element_bytes * sent));
    /* the shard's place in the unit: this rank's among the ranks that share the unit
     * out (MiCS: its shard group's, whose members r = k M + j hold piece j) */
    int share = r->group == ZERO_EVG_WORLD ? t->world : r->group_size;
    int place = r->group == ZERO_EVG_WORLD ? t->rank : t->rank - r->group_index * share;
    if (r->kind == ZERO_EV_OPTIMIZER && share > 1)
        add(b, ",\"shard_first_element\":%lld", (long long)(r->elements * place));
    add(b, "}}");
}

int zero_trace_events_json(const struct zero_trace *t, char **json, size_t *len,
                           struct zero_error *err)
{
    struct text b = {0};
    add_metadata(&b, t->rank);
    for (int64_t i = 0; i < t->n; i++) {
        if (t->rec[i].kind == ZERO_EV_INFLIGHT)
            add_flight(&b, t, &t->rec[i], i);
        else
            add_record(&b, t, &t->rec[i]);
    }
    if (b.failed) {
        free(b.s);
        return zero_fail(err, ZERO_ENOMEM, "trace: rank %d: JSON text", t->rank);
    }
    *json = b.s;
    *len = b.len;
    return ZERO_OK;
}

/* ---- gathering and writing ---- */

static int gather_failed(struct zero_device *dev, int rc, struct zero_error *err)
{
    return zero_fail(err, rc, "trace: rank %d: gathering the events: %s", dev->rank,
                     dev->be->last_error(dev->self));
}

static int write_file(const char *path, const char *all, const int64_t *lens, int64_t stride,
                      int world, struct zero_error *err)
{
    struct zero_replace out;
    FILE *f = NULL;
    int rc = zero_replace_begin(&out, path, err);
    if (!rc && !(f = zero_replace_stream(&out, err)))
        zero_replace_abort(&out);
    if (!f)
        return zero_error_wrap(err, "trace: ");
    fputs("{\"traceEvents\":[\n", f);
    for (int r = 0; r < world; r++) {
        if (r > 0)
            fputs(",\n", f);
        fwrite(all + (size_t)r * (size_t)stride, 1, (size_t)lens[r], f);
    }
    fputs("\n],\"displayTimeUnit\":\"ms\"}\n", f);
    if (zero_replace_commit(&out, err))
        return zero_error_wrap(err, "trace: ");
    return ZERO_OK;
}

int zero_trace_write(const struct zero_trace *t, struct zero_device *dev, const char *path,
                     struct zero_error *err)
{
    char *mine = NULL;
    size_t len = 0;
    int rc = zero_trace_events_json(t, &mine, &len, err);
    int64_t my_len = rc ? -1 : (int64_t)len; /* -1 tells every rank to stop */
    int world = dev->size;
    int64_t *lens = calloc((size_t)world, sizeof *lens);
    if (!lens) {
        free(mine);
        return zero_fail(err, ZERO_ENOMEM, "trace: lengths");
    }
    int grc = dev->be->host_all_gather(dev->self, &my_len, lens, sizeof my_len);
    if (grc) {
        free(mine);
        free(lens);
        return gather_failed(dev, grc, err);
    }
    int64_t stride = 1;
    for (int r = 0; r < world; r++) {
        if (lens[r] < 0 && !rc)
            rc = zero_fail(err, ZERO_ENOMEM, "trace: rank %d could not format its events", r);
        if (lens[r] > stride)
            stride = lens[r];
    }
    char *send = NULL, *all = NULL;
    if (!rc) {
        send = malloc((size_t)stride);
        all = malloc((size_t)stride * (size_t)world);
        /* every rank decides alike: stop only if some allocation failed anywhere */
        int64_t ok = send && all, oks = 0;
        int64_t *vote = calloc((size_t)world, sizeof *vote);
        if (!vote || (grc = dev->be->host_all_gather(dev->self, &ok, vote, sizeof ok)))
            rc = vote ? gather_failed(dev, grc, err) : zero_fail(err, ZERO_ENOMEM, "trace");
        for (int r = 0; !rc && r < world; r++)
            oks += vote[r];
        free(vote);
        if (!rc && oks != world)
            rc = zero_fail(err, ZERO_ENOMEM, "trace: gather buffers of %lld bytes per rank",
                           (long long)stride);
    }
    if (!rc) {
        memset(send, ' ', (size_t)stride);
        memcpy(send, mine, len);
        if ((grc = dev->be->host_all_gather(dev->self, send, all, (size_t)stride)))
            rc = gather_failed(dev, grc, err);
    }
    if (!rc && dev->rank == 0)
        rc = write_file(path, all, lens, stride, world, err);
    if (!rc && t->dropped > 0)
        rc = zero_fail(err, ZERO_ENOMEM, "trace: rank %d: %lld events lost (out of memory)",
                       t->rank, (long long)t->dropped);
    free(send);
    free(all);
    free(lens);
    free(mine);
    return rc;
}

/* See diff_weights.h. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_weights.h"
#include "tensor_diff.h"
#include "weight_names.h"
#include "zero/safetensors.h"

/* A file's tensors under their canonical names. */
struct side {
    const char *path;
    struct zero_st_file *f;
    int n;
    const char **canon; /* (n) */
    char *used;         /* (n): matched with the other file */
};

static int side_open(struct side *s, const char *path, char *msg, size_t len)
{
    struct zero_error err = {0};
    memset(s, 0, sizeof *s);
    s->path = path;
    if (zero_st_open(&s->f, path, &err)) {
        snprintf(msg, len, "%s", err.msg);
        return 2;
    }
    s->n = zero_st_count(s->f);
    s->canon = calloc((size_t)s->n + 1, sizeof *s->canon);
    s->used = calloc((size_t)s->n + 1, 1);
    if (!s->canon || !s->used) {
        snprintf(msg, len, "%s: out of memory", path);
        return 2;
    }
    for (int i = 0; i < s->n; i++) {
        s->canon[i] = weight_name_canonical(zero_st_tensor(s->f, i)->name);
        for (int j = 0; j < i; j++)
            if (strcmp(s->canon[i], s->canon[j]) == 0) {
                snprintf(msg, len,
                         "%s: tensors '%s' and '%s' are both '%s' once prefixes are "
                         "stripped",
                         path, zero_st_tensor(s->f, j)->name, zero_st_tensor(s->f, i)->name,
                         s->canon[i]);
                return 2;
            }
    }
    return 0;
}

static void side_close(struct side *s)
{
    zero_st_close(s->f);
    free(s->canon);
    free(s->used);
}

static int side_find(const struct side *s, const char *canon)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->canon[i], canon) == 0)
            return i;
    return -1;
}

/* The whole tensor i in its stored dtype (malloc'ed), or NULL with msg. */
static void *read_raw(struct side *s, int i, char *msg, size_t len)
{
    const struct zero_st_tensor_desc *d = zero_st_tensor(s->f, i);
    size_t n = zero_st_numel(d), bytes = n * zero_dtype_size(d->dtype);
    void *p = malloc(bytes ? bytes : 1);
    struct zero_error err = {0};
    if (p == NULL)
        snprintf(msg, len, "%s: tensor %s: no memory for %zu bytes", s->path, d->name, bytes);
    else if (zero_st_read(s->f, i, p, d->dtype, n, &err)) {
        snprintf(msg, len, "%s", err.msg);
        free(p);
        p = NULL;
    }
    return p;
}

static void shape_text(const struct zero_st_tensor_desc *d, char *out, size_t len)
{
    size_t at = (size_t)snprintf(out, len, "[");
    for (int k = 0; k < d->ndim && at < len; k++)
        at += (size_t)snprintf(out + at, len - at, "%s%" PRId64, k ? ", " : "", d->shape[k]);
    if (at < len)
        snprintf(out + at, len - at, "]");
}

static int same_shape(const struct zero_st_tensor_desc *a, const struct zero_st_tensor_desc *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int k = 0; k < a->ndim; k++)
        if (a->shape[k] != b->shape[k])
            return 0;
    return 1;
}

static int reversed_2d(const struct zero_st_tensor_desc *a, const struct zero_st_tensor_desc *b)
{
    return a->ndim == 2 && b->ndim == 2 && a->shape[0] == b->shape[1] && a->shape[1] == b->shape[0];
}

/* "[3, 17]": the coordinates of flat index i in d's shape */
static void coords(const struct zero_st_tensor_desc *d, int64_t i, char *out, size_t len)
{
    int64_t c[16] = {0};
    int nd = d->ndim < 16 ? d->ndim : 16;
    for (int k = nd - 1; k >= 0; k--) {
        c[k] = d->shape[k] ? i % d->shape[k] : 0;
        i = d->shape[k] ? i / d->shape[k] : 0;
    }
    size_t at = (size_t)snprintf(out, len, "[");
    for (int k = 0; k < nd && at < len; k++)
        at += (size_t)snprintf(out + at, len - at, "%s%" PRId64, k ? ", " : "", c[k]);
    if (at < len)
        snprintf(out + at, len - at, "]");
}

static void note_outside(struct diff_summary *s, const char *fmt, const char *name, const char *why)
{
    if (s->first_outside[0] == '\0')
        snprintf(s->first_outside, sizeof s->first_outside, fmt, name, why);
}

/* The differences of one matched pair, printed after its verdict word */
static void print_stats(FILE *out, const struct tensor_diff *d,
                        const struct zero_st_tensor_desc *da, enum zero_dtype tb)
{
    fprintf(out, ": %" PRId64 " of %" PRId64 " differ | max abs %.3g | rel L2 %.3g | ulps (%s)",
            d->differing, d->numel, d->max_abs, tensor_diff_rel_l2(d),
            zero_dtype_name(d->ulp_dtype));
    for (int k = 0; k < TENSOR_DIFF_BUCKETS; k++)
        if (d->hist[k]) {
            char label[48];
            tensor_diff_bucket_label(k, label, sizeof label);
            fprintf(out, " %s:%" PRId64, label, d->hist[k]);
        }
    char at[200];
    coords(da, d->first, at, sizeof at);
    int wa = (int)zero_dtype_size(da->dtype) * 2, wb = (int)zero_dtype_size(tb) * 2;
    fprintf(out, " | first %s: %.9g (0x%0*" PRIx64 ") vs %.9g (0x%0*" PRIx64 ")\n", at, d->first_a,
            wa, d->first_bits_a, d->first_b, wb, d->first_bits_b);
}

/* Compares matched tensors ia of a and ib of b. Returns 0, or 2 when one cannot be read. */
static int compare_pair(struct side *a, int ia, struct side *b, int ib,
                        const struct envelope_step *env, const struct diff_options *o, FILE *out,
                        struct diff_summary *s, char *msg, size_t len)
{
    const struct zero_st_tensor_desc *da = zero_st_tensor(a->f, ia), *db = zero_st_tensor(b->f, ib);
    const char *name = a->canon[ia];
    char sa[160], sb[160];
    shape_text(da, sa, sizeof sa);
    shape_text(db, sb, sizeof sb);
    int transposed = !same_shape(da, db) && reversed_2d(da, db);
    s->compared++;
    if (!same_shape(da, db) && !transposed) {
        fprintf(out, "%sOUTSIDE %s: shape %s in A, %s in B\n", o->indent, name, sa, sb);
        s->outside++;
        note_outside(s, "%s: %s", name, "the shapes differ");
        return 0;
    }
    void *pa = read_raw(a, ia, msg, len), *pb = pa ? read_raw(b, ib, msg, len) : NULL;
    if (pb == NULL) {
        free(pa);
        return 2;
    }
    struct tensor_diff d;
    int64_t n = (int64_t)zero_st_numel(da);
    if (transposed) { /* say whether B holds A's values transposed, as HF's Conv1D does */
        tensor_diff_compute(&d, pa, da->dtype, pb, db->dtype, n, 1, da->shape[0]);
        fprintf(out, "%sOUTSIDE %s: shape %s in A, %s in B: B is %s A transposed\n", o->indent,
                name, sa, sb, d.differing == 0 ? "exactly" : "not even");
        s->outside++;
        note_outside(s, "%s: %s", name, "B holds it transposed");
        free(pa);
        free(pb);
        return 0;
    }
    tensor_diff_compute(&d, pa, da->dtype, pb, db->dtype, n, 0, 0);
    const char *dtypes = da->dtype == db->dtype ? zero_dtype_name(da->dtype) : "mixed";
    if (d.differing == 0) {
        s->equal++;
        if (!o->brief)
            fprintf(out, "%sequal   %s %s %s\n", o->indent, name, sa, dtypes);
    } else {
        const struct envelope_tensor *et = envelope_tensor_at(env, name);
        int nan = d.hist[TENSOR_DIFF_NAN_BUCKET] > 0;
        int within_ulps = o->ulps > 0 && !nan && d.max_ulps <= (uint64_t)o->ulps;
        int inside = !nan && ((et && d.max_abs <= o->factor * et->max_abs) || within_ulps);
        if (!(o->brief && inside)) {
            fprintf(out, "%s%s %s %s %s", o->indent, inside ? "inside " : "OUTSIDE", name, sa,
                    dtypes);
            print_stats(out, &d, da, db->dtype);
        }
        if (o->brief && inside)
            ; /* --brief: an inside tensor is counted, not printed */
        else if (et)
            fprintf(out, "%s        envelope max abs %.3g: the difference is %.3g of it%s\n",
                    o->indent, et->max_abs, et->max_abs > 0 ? d.max_abs / et->max_abs : INFINITY,
                    nan ? " (and a NaN meets a number)" : "");
        else if (env)
            fprintf(out, "%s        (the envelope has no tensor %s: judged by equality%s)\n",
                    o->indent, name, o->ulps > 0 ? " or --ulps" : "");
        if (within_ulps && !(o->brief && inside))
            fprintf(out, "%s        within --ulps %lld: %llu ulps at most\n", o->indent,
                    (long long)o->ulps, (unsigned long long)d.max_ulps);
        if (inside) {
            s->inside++;
        } else {
            s->outside++;
            note_outside(s, "%s: %s", name,
                         nan  ? "a NaN against a number"
                         : et ? "beyond the envelope"
                              : "the bits differ");
        }
    }
    free(pa);
    free(pb);
    return 0;
}

/* A tensor of `in` that the other file lacks: a buffer, a tied copy, or missing */
static int one_sided(struct side *in, int i, const char *which, const struct diff_options *o,
                     FILE *out, struct diff_summary *s, char *msg, size_t len)
{
    const char *name = in->canon[i];
    if (weight_name_is_buffer(name)) {
        s->skipped++;
        if (!o->brief)
            fprintf(out, "%sskipped %s: a buffer, only in %s\n", o->indent, name, which);
        return 0;
    }
    const char *emb;
    for (int k = 0; (emb = weight_name_tied_to(name, k)); k++) {
        int j = side_find(in, emb);
        if (j < 0 || !same_shape(zero_st_tensor(in->f, i), zero_st_tensor(in->f, j)))
            continue;
        void *pi = read_raw(in, i, msg, len), *pj = pi ? read_raw(in, j, msg, len) : NULL;
        if (pj == NULL) {
            free(pi);
            return 2;
        }
        struct tensor_diff d;
        const struct zero_st_tensor_desc *di = zero_st_tensor(in->f, i),
                                         *dj = zero_st_tensor(in->f, j);
        tensor_diff_compute(&d, pi, di->dtype, pj, dj->dtype, (int64_t)zero_st_numel(di), 0, 0);
        free(pi);
        free(pj);
        if (d.differing == 0) {
            s->skipped++;
            if (!o->brief)
                fprintf(out, "%sskipped %s: only in %s, a tied copy of its %s\n", o->indent, name,
                        which, emb);
            return 0;
        }
    }
    s->missing++;
    fprintf(out, "%sOUTSIDE %s: only in %s (%s)\n", o->indent, name, which,
            zero_st_tensor(in->f, i)->name);
    note_outside(s, "%s: %s", name, which[0] == 'A' ? "missing in B" : "missing in A");
    return 0;
}

static int64_t file_step(const struct side *a, const struct side *b)
{
    const char *v = zero_st_metadata(b->f, "step");
    if (v == NULL)
        v = zero_st_metadata(a->f, "step");
    char *end;
    long long step = v ? strtoll(v, &end, 10) : -1;
    return v && *end == '\0' && step >= 0 ? step : -1;
}

int diff_weights(const char *pa, const char *pb, const struct diff_options *o, FILE *out,
                 struct diff_summary *s, char *msg, size_t len)
{
    struct side a = {0}, b = {0};
    memset(s, 0, sizeof *s);
    int rc = side_open(&a, pa, msg, len);
    if (rc == 0)
        rc = side_open(&b, pb, msg, len);
    const struct envelope_step *env = NULL;
    if (rc == 0 && o->envelope) {
        int64_t step = o->step >= 0 ? o->step : file_step(&a, &b);
        if (step < 0) {
            snprintf(msg, len,
                     "%s, %s: no \"step\" in their metadata: say which step of the "
                     "envelope judges them with --step S",
                     pa, pb);
            rc = 2;
        } else if ((env = envelope_step_at(o->envelope, step)) == NULL) {
            snprintf(msg, len, "the envelope has no step %" PRId64, step);
            rc = 2;
        } else if (env->ntensors == 0) {
            snprintf(msg, len,
                     "the envelope's step %" PRId64 " has no tensors (its runs wrote "
                     "no weights there)",
                     step);
            rc = 2;
        }
    }
    for (int i = 0; rc == 0 && i < a.n; i++) {
        int j = side_find(&b, a.canon[i]);
        if (j >= 0) {
            a.used[i] = b.used[j] = 1;
            rc = compare_pair(&a, i, &b, j, env, o, out, s, msg, len);
        }
    }
    for (int i = 0; rc == 0 && i < a.n; i++)
        if (!a.used[i])
            rc = one_sided(&a, i, "A", o, out, s, msg, len);
    for (int j = 0; rc == 0 && j < b.n; j++)
        if (!b.used[j])
            rc = one_sided(&b, j, "B", o, out, s, msg, len);
    if (a.f)
        side_close(&a);
    if (b.f)
        side_close(&b);
    return rc;
}

/* st_plant: a safetensors file with planted differences, for tests/test_diff.sh.
 *
 *     st_plant --make OUT               a small GPT-2-shaped file (wte, h.0.*, ln_f)
 *     st_plant IN OUT [edits...]        IN's tensors, edited, written to OUT
 *     st_plant --hash IN                "NAME HASH" per tensor: FNV-1a 64 over its fp32
 *                                       values' little-endian bytes (trajectory.h's hash,
 *                                       computed here independently)
 *
 * edits, applied in order to the named tensor (a name as stored in IN):
 *     --ulp NAME I        element I one ulp up (in its stored dtype)
 *     --nan NAME I        element I a NaN
 *     --scale NAME F      every element times F
 *     --transpose NAME    a 2-D tensor stored transposed
 *     --rename NAME NEW   stored under NEW
 *     --drop NAME         left out
 *     --copy NAME NEW     a second copy of NAME called NEW (a tied head)
 *     --prefix P          every name prefixed with P
 *     --dtype D           every float tensor stored as D (fp32, bf16, fp16)
 *     --meta KEY VALUE    a "__metadata__" entry
 *     --swap-rows I J     rows I and J of every tensor swapped (samples of a data file)
 *     --copy-row I J      row J of every tensor overwritten by row I (sample I counted twice) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zero/safetensors.h"

#define MAX_T 256

struct tensor {
    char name[256];
    int ndim;
    int64_t shape[2];
    float *v;    /* numel fp32 values (floating tensors) */
    int64_t *iv; /* numel values (integer tensors) */
    enum zero_dtype dtype;
    int dropped;
};

static struct tensor t[MAX_T];
static int nt;
static struct zero_st_kv meta[16];
static int nmeta;

static int64_t numel(const struct tensor *x)
{
    int64_t n = 1;
    for (int k = 0; k < x->ndim; k++)
        n *= x->shape[k];
    return n;
}

static struct tensor *add(const char *name, int ndim, int64_t r, int64_t c)
{
    struct tensor *x = &t[nt++];
    snprintf(x->name, sizeof x->name, "%s", name);
    x->ndim = ndim;
    x->shape[0] = r;
    x->shape[1] = c;
    x->dtype = ZERO_F32;
    x->v = calloc((size_t)numel(x), sizeof(float));
    return x;
}

static void make(void)
{
    static const struct {
        const char *name;
        int ndim;
        int64_t r, c;
    } spec[] = {{"wte.weight", 2, 16, 8},
                {"wpe.weight", 2, 6, 8},
                {"h.0.ln_1.weight", 1, 8, 0},
                {"h.0.ln_1.bias", 1, 8, 0},
                {"h.0.attn.c_attn.weight", 2, 8, 24},
                {"h.0.attn.c_attn.bias", 1, 24, 0},
                {"h.0.mlp.c_fc.weight", 2, 8, 32},
                {"ln_f.weight", 1, 8, 0}};
    uint32_t s = 12345;
    for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++) {
        struct tensor *x = add(spec[i].name, spec[i].ndim, spec[i].r, spec[i].c);
        for (int64_t k = 0; k < numel(x); k++) {
            s = s * 1664525u + 1013904223u;
            x->v[k] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 0.2f;
        }
    }
}

static struct tensor *find(const char *name)
{
    for (int i = 0; i < nt; i++)
        if (!t[i].dropped && strcmp(t[i].name, name) == 0)
            return &t[i];
    fprintf(stderr, "st_plant: no tensor %s\n", name);
    exit(2);
}

static int load(const char *path)
{
    struct zero_st_file *f;
    struct zero_error err = {0};
    if (zero_st_open(&f, path, &err)) {
        fprintf(stderr, "st_plant: %s\n", err.msg);
        return 1;
    }
    for (int i = 0; i < zero_st_count(f) && nt < MAX_T; i++) {
        const struct zero_st_tensor_desc *d = zero_st_tensor(f, i);
        if (d->ndim > 2) {
            fprintf(stderr, "st_plant: %s: more than 2 dimensions\n", d->name);
            return 1;
        }
        struct tensor *x =
            add(d->name, d->ndim, d->ndim > 0 ? d->shape[0] : 1, d->ndim > 1 ? d->shape[1] : 0);
        x->dtype = d->dtype;
        int integer = d->dtype == ZERO_I32 || d->dtype == ZERO_I64;
        if (integer && !(x->iv = calloc((size_t)numel(x), sizeof *x->iv)))
            return 1;
        if (zero_st_read(f, i, integer ? (void *)x->iv : (void *)x->v,
                         integer ? ZERO_I64 : ZERO_F32, (size_t)numel(x), &err)) {
            fprintf(stderr, "st_plant: %s\n", err.msg);
            return 1;
        }
    }
    zero_st_close(f);
    return 0;
}

/* one ulp up of v as stored in dtype d (its fp32 widening, for the file) */
static float ulp_up(float v, enum zero_dtype d)
{
    if (d == ZERO_BF16)
        return zero_bf16_to_f32((uint16_t)(zero_f32_to_bf16(v) + (v >= 0 ? 1 : -1)));
    if (d == ZERO_F16)
        return zero_f16_to_f32((uint16_t)(zero_f32_to_f16(v) + (v >= 0 ? 1 : -1)));
    return nextafterf(v, v >= 0 ? INFINITY : -INFINITY);
}

static int save(const char *path)
{
    struct zero_st_tensor_desc d[MAX_T];
    int n = 0;
    for (int i = 0; i < nt; i++)
        if (!t[i].dropped)
            d[n++] = (struct zero_st_tensor_desc){
                .name = t[i].name, .dtype = t[i].dtype, .ndim = t[i].ndim, .shape = t[i].shape};
    struct zero_st_writer *w;
    struct zero_error err = {0};
    int rc = zero_st_writer_begin(&w, path, d, n, meta, nmeta, &err);
    for (int i = 0; rc == 0 && i < nt; i++)
        if (!t[i].dropped)
            rc =
                zero_st_writer_put_named(w, t[i].name, t[i].iv ? (void *)t[i].iv : (void *)t[i].v,
                                         t[i].iv ? ZERO_I64 : ZERO_F32, (size_t)numel(&t[i]), &err);
    if (rc == 0)
        rc = zero_st_writer_finish(w, &err);
    else
        zero_st_writer_abort(w);
    if (rc)
        fprintf(stderr, "st_plant: %s\n", err.msg);
    return rc ? 1 : 0;
}

static int print_hashes(void)
{
    for (int k = 0; k < nt; k++) {
        uint64_t h = 14695981039346656037ull;
        const unsigned char *b = (const unsigned char *)t[k].v;
        for (size_t j = 0; j < (size_t)numel(&t[k]) * 4; j++) /* a little-endian host */
            h = (h ^ b[j]) * 1099511628211ull;
        printf("%s %016llx\n", t[k].name, (unsigned long long)h);
    }
    return 0;
}

static int done(int rc)
{
    for (int k = 0; k < nt; k++) {
        free(t[k].v);
        free(t[k].iv);
    }
    return rc;
}

static int run(int argc, char **argv);

int main(int argc, char **argv)
{
    return done(run(argc, argv));
}

static int run(int argc, char **argv)
{
    int i = 3;
    const char *out;
    if (argc == 3 && strcmp(argv[1], "--hash") == 0)
        return load(argv[2]) ? 1 : print_hashes();
    if (argc >= 3 && strcmp(argv[1], "--make") == 0) {
        make();
        out = argv[2];
    } else if (argc >= 3) {
        if (load(argv[1]))
            return 1;
        out = argv[2];
    } else {
        fprintf(stderr, "usage: st_plant --make OUT | st_plant IN OUT [edits]\n");
        return 2;
    }
    for (; i < argc; i++) {
        const char *op = argv[i], *a1 = i + 1 < argc ? argv[i + 1] : NULL,
                   *a2 = i + 2 < argc ? argv[i + 2] : NULL;
        if (a1 == NULL) {
            fprintf(stderr, "st_plant: %s needs arguments\n", op);
            return 2;
        }
        if (strcmp(op, "--prefix") == 0) {
            for (int k = 0; k < nt; k++) {
                size_t la = strlen(a1), ln = strlen(t[k].name);
                if (la + ln >= sizeof t[k].name) {
                    fprintf(stderr, "st_plant: --prefix: %s%s is too long\n", a1, t[k].name);
                    return 2;
                }
                memmove(t[k].name + la, t[k].name, ln + 1);
                memcpy(t[k].name, a1, la);
            }
            i += 1;
            continue;
        }
        if (strcmp(op, "--dtype") == 0) {
            int d = zero_dtype_parse(a1);
            for (int k = 0; k < nt; k++)
                t[k].dtype = (enum zero_dtype)d;
            i += 1;
            continue;
        }
        if (strcmp(op, "--drop") == 0 || strcmp(op, "--transpose") == 0) {
            struct tensor *x = find(a1);
            if (op[2] == 'd') {
                x->dropped = 1;
            } else {
                float *v = malloc((size_t)numel(x) * sizeof(float));
                int64_t r = x->shape[0], c = x->shape[1];
                for (int64_t p = 0; p < r; p++)
                    for (int64_t q = 0; q < c; q++)
                        v[q * r + p] = x->v[p * c + q];
                free(x->v);
                x->v = v;
                x->shape[0] = c;
                x->shape[1] = r;
            }
            i += 1;
            continue;
        }
        if (a2 == NULL) {
            fprintf(stderr, "st_plant: %s needs two arguments\n", op);
            return 2;
        }
        if (strcmp(op, "--swap-rows") == 0 || strcmp(op, "--copy-row") == 0) {
            int copy = strcmp(op, "--copy-row") == 0;
            int64_t r1 = atoll(a1), r2 = atoll(a2);
            for (int k = 0; k < nt; k++) {
                int64_t width = t[k].ndim > 1 ? t[k].shape[1] : 1;
                if (t[k].ndim == 0 || r1 >= t[k].shape[0] || r2 >= t[k].shape[0]) {
                    fprintf(stderr, "st_plant: %s: %s has no row %lld or %lld\n", op, t[k].name,
                            (long long)r1, (long long)r2);
                    return 2;
                }
                for (int64_t c = 0; c < width; c++) {
                    if (t[k].iv) {
                        int64_t tmp = t[k].iv[r1 * width + c];
                        if (!copy)
                            t[k].iv[r1 * width + c] = t[k].iv[r2 * width + c];
                        t[k].iv[r2 * width + c] = tmp;
                    } else {
                        float tmp = t[k].v[r1 * width + c];
                        if (!copy)
                            t[k].v[r1 * width + c] = t[k].v[r2 * width + c];
                        t[k].v[r2 * width + c] = tmp;
                    }
                }
            }
            i += 2;
            continue;
        }
        if (strcmp(op, "--meta") == 0) {
            meta[nmeta++] = (struct zero_st_kv){.key = a1, .value = a2};
            i += 2;
            continue;
        }
        struct tensor *x = find(a1);
        if (strcmp(op, "--ulp") == 0) {
            int64_t k = atoll(a2);
            x->v[k] = ulp_up(x->v[k], x->dtype);
        } else if (strcmp(op, "--nan") == 0) {
            x->v[atoll(a2)] = NAN;
        } else if (strcmp(op, "--scale") == 0) {
            for (int64_t k = 0; k < numel(x); k++)
                x->v[k] *= (float)atof(a2);
        } else if (strcmp(op, "--rename") == 0) {
            snprintf(x->name, sizeof x->name, "%s", a2);
        } else if (strcmp(op, "--copy") == 0) {
            struct tensor *y = add(a2, x->ndim, x->shape[0], x->shape[1]);
            x = find(a1); /* add may not move t[], but keep the lookup honest */
            memcpy(y->v, x->v, (size_t)numel(x) * sizeof(float));
            y->dtype = x->dtype;
        } else {
            fprintf(stderr, "st_plant: unknown edit %s\n", op);
            return 2;
        }
        i += 2;
    }
    return save(out);
}

/* See flags.h. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flag_number.h"
#include "flags.h"
#include "program.h"

/* "0,1,3" into f's int array: every item an integer in range, at most cap of them; the
 * array and its count change only when the whole list is good. */
static int store_list(const struct flag *f, const char *text)
{
    int v[256], n = 0;
    const char *p = text;
    do {
        size_t k = strcspn(p, ",");
        char item[32];
        int64_t x;
        if (k == 0 || k >= sizeof item || n == f->cap || n == (int)(sizeof v / sizeof v[0]))
            return -1;
        memcpy(item, p, k);
        item[k] = '\0';
        if (flag_integer(item, f->min, f->max, &x))
            return -1;
        v[n++] = (int)x;
        p += k;
    } while (*p++ == ',');
    memcpy(f->dst, v, (size_t)n * sizeof v[0]);
    *f->count = n;
    return 0;
}

/* Stores text into f's destination; -1 when it does not parse or is out of range. */
static int store(const struct flag *f, const char *text)
{
    char *end = NULL;
    errno = 0;
    switch (f->kind) {
    case FLAG_INT:
    case FLAG_I64: {
        int64_t v;
        if (flag_integer(text, f->min, f->max, &v))
            return -1;
        if (f->kind == FLAG_INT)
            *(int *)f->dst = (int)v;
        else
            *(int64_t *)f->dst = v;
        return 0;
    }
    case FLAG_U64: {
        unsigned long long v = strtoull(text, &end, 10);
        if (errno || end == text || *end || text[0] == '-')
            return -1;
        *(uint64_t *)f->dst = v;
        return 0;
    }
    case FLAG_REAL: {
        double v = strtod(text, &end);
        if (errno || end == text || *end || !isfinite(v) || v < f->min || v > f->max)
            return -1;
        *(double *)f->dst = v;
        return 0;
    }
    case FLAG_STR:
        *(const char **)f->dst = text;
        return 0;
    case FLAG_CHOICE:
        for (int c = 0; f->choices[c]; c++)
            if (strcmp(text, f->choices[c]) == 0) {
                *(int *)f->dst = c;
                return 0;
            }
        return -1;
    case FLAG_SET:
        *(int *)f->dst = 1;
        return 0;
    case FLAG_LIST:
        return store_list(f, text);
    }
    return -1;
}

/* What f accepts, for its error message. */
static void want(const struct flag *f, char *out, size_t len)
{
    if (f->want) {
        snprintf(out, len, "%s", f->want);
        return;
    }
    switch (f->kind) {
    case FLAG_INT:
    case FLAG_I64:
        snprintf(out, len, "an integer in [%.0f, %.0f]", f->min, f->max);
        break;
    case FLAG_U64:
        snprintf(out, len, "an unsigned integer");
        break;
    case FLAG_REAL:
        snprintf(out, len, "a number in [%g, %g]", f->min, f->max);
        break;
    case FLAG_CHOICE: {
        size_t at = (size_t)snprintf(out, len, "one of");
        for (int c = 0; f->choices[c] && at < len; c++)
            at += (size_t)snprintf(out + at, len - at, " %s", f->choices[c]);
        break;
    }
    default:
        snprintf(out, len, "valid");
        break;
    }
}

#define FLAGS_MAX 128

/* getopt_long's table of t: entry i returns 256 + i, --help 'h' */
static void long_options(const struct flag *t, int n, struct option *longs)
{
    int nl = 0;
    for (int i = 0; i < n && nl < FLAGS_MAX; i++)
        if (t[i].name)
            longs[nl++] = (struct option){
                t[i].name, t[i].kind == FLAG_SET ? no_argument : required_argument, NULL, 256 + i};
    longs[nl++] = (struct option){"help", no_argument, NULL, 'h'};
    longs[nl] = (struct option){NULL, 0, NULL, 0};
    opterr = 0; /* we name the flag ourselves */
    optind = 0; /* glibc: 0 resets getopt fully (1 keeps the last parse's position in a word) */
}

enum flags_result flags_scan(const struct flag *t, int n, int argc, char **argv, int *given)
{
    struct option longs[FLAGS_MAX + 2];
    long_options(t, n, longs);
    memset(given, 0, (size_t)n * sizeof *given);
    int c, help = 0;
    while ((c = getopt_long(argc, argv, ":", longs, NULL)) != -1) {
        help |= c == 'h';
        if (c < 256)
            continue;
        given[c - 256]++;
        if (t[c - 256].kind == FLAG_STR)
            store(&t[c - 256], optarg);
    }
    return help ? FLAGS_HELP : FLAGS_OK;
}

enum flags_result flags_parse(const char *prog, const struct flag *t, int n, int argc, char **argv,
                              int *given, char *msg, size_t len)
{
    struct option longs[FLAGS_MAX + 2];
    long_options(t, n, longs);
    if (given)
        memset(given, 0, (size_t)n * sizeof *given);
    msg[0] = '\0';
    int c;
    while ((c = getopt_long(argc, argv, ":", longs, NULL)) != -1) {
        if (c == 'h')
            return FLAGS_HELP;
        if (c == '?' || c == ':') {
            snprintf(msg, len,
                     c == '?' ? "%s: unknown option '%s' (see --help)"
                              : "%s: option '%s' needs a value",
                     prog, argv[optind - 1]);
            return FLAGS_USAGE;
        }
        const struct flag *f = &t[c - 256];
        if (given)
            given[c - 256]++;
        if (store(f, optarg) != 0) {
            char what[128];
            want(f, what, sizeof what);
            snprintf(msg, len, "%s: --%s: '%s' is not %s", prog, f->name, optarg, what);
            return FLAGS_USAGE;
        }
    }
    if (optind < argc) {
        snprintf(msg, len, "%s: unexpected argument '%s' (see --help)", prog, argv[optind]);
        return FLAGS_USAGE;
    }
    return FLAGS_OK;
}

int flags_take(const struct flag *t, int n, int argc, char **argv, int *i,
               const struct flag **taken, char *msg, size_t len)
{
    const char *arg = argv[*i];
    for (int k = 0; k < n; k++) {
        int named = t[k].name && strncmp(arg, "--", 2) == 0 && strcmp(arg + 2, t[k].name) == 0;
        if (!named && !(t[k].alias && strcmp(arg, t[k].alias) == 0))
            continue;
        *taken = &t[k];
        if (t[k].kind == FLAG_SET)
            return store(&t[k], NULL) == 0 ? 1 : -1;
        if (*i + 1 >= argc) {
            snprintf(msg, len, "%s needs a value", arg);
            return -1;
        }
        const char *v = argv[++*i];
        if (store(&t[k], v) != 0) {
            char what[128];
            want(&t[k], what, sizeof what);
            snprintf(msg, len, "%s: '%s' is not %s", arg, v, what);
            return -1;
        }
        return 1;
    }
    return 0;
}

int flags_is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

const char *flags_find(const char *name, int argc, char **argv)
{
    const char *value = NULL;
    size_t k = strlen(name);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], name) == 0 && i + 1 < argc)
            value = argv[++i];
        else if (strncmp(argv[i], name, k) == 0 && argv[i][k] == '=')
            value = argv[i] + k + 1;
    }
    return value;
}

static void print_default(FILE *out, const struct flag *f)
{
    switch (f->kind) {
    case FLAG_INT:
        fprintf(out, " (default %d)", *(int *)f->dst);
        break;
    case FLAG_I64:
        fprintf(out, " (default %lld)", (long long)*(int64_t *)f->dst);
        break;
    case FLAG_U64:
        fprintf(out, " (default %llu)", (unsigned long long)*(uint64_t *)f->dst);
        break;
    case FLAG_REAL:
        fprintf(out, " (default %g)", *(double *)f->dst);
        break;
    case FLAG_CHOICE:
        fprintf(out, " (default %s)", f->choices[*(int *)f->dst]);
        break;
    default:
        break;
    }
}

/* text in lines of about width columns, continuation lines indented by indent */
static void print_wrapped(FILE *out, const char *text, int indent, int width)
{
    int col = 0;
    while (*text) {
        int word = (int)strcspn(text, " ");
        if (col > 0 && col + 1 + word > width) {
            fprintf(out, "\n%*s", indent, "");
            col = 0;
        } else if (col > 0) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", word, text);
        col += word;
        text += word;
        text += strspn(text, " ");
    }
}

void flags_usage(FILE *out, const struct flag *t, int n)
{
    for (int i = 0; i < n; i++) {
        if (t[i].name == NULL) {
            fprintf(out, "\n%s\n", t[i].help);
            continue;
        }
        char flag[64];
        snprintf(flag, sizeof flag, "--%s%s%s", t[i].name, t[i].arg ? " " : "",
                 t[i].arg ? t[i].arg : "");
        fprintf(out, "    %-26s ", flag);
        print_wrapped(out, t[i].help, 31, 50);
        print_default(out, &t[i]);
        fputc('\n', out);
    }
}

void flags_fields(const struct flag *t, int n, const char *skip, struct program_startup *s)
{
    char name[80];
    for (int i = 0; i < n; i++) {
        if (!t[i].name || (skip && strcmp(t[i].name, skip) == 0))
            continue;
        snprintf(name, sizeof name, "--%s", t[i].name);
        switch (t[i].kind) {
        case FLAG_INT:
        case FLAG_SET:
            program_field(s, name, "%d", *(int *)t[i].dst);
            break;
        case FLAG_I64:
            program_field(s, name, "%lld", (long long)*(int64_t *)t[i].dst);
            break;
        case FLAG_U64:
            program_field(s, name, "%llu", (unsigned long long)*(uint64_t *)t[i].dst);
            break;
        case FLAG_REAL:
            program_field(s, name, "%.17g", *(double *)t[i].dst);
            break;
        case FLAG_STR: {
            const char *v = *(const char **)t[i].dst;
            program_field(s, name, "%s", v ? v : "(not given)");
            break;
        }
        case FLAG_CHOICE: {
            int c = *(int *)t[i].dst, nc = 0;
            while (t[i].choices[nc])
                nc++;
            program_field(s, name, "%s", c >= 0 && c < nc ? t[i].choices[c] : "(from --config)");
            break;
        }
        case FLAG_LIST: {
            char list[256] = "";
            const int *v = t[i].dst;
            for (int k = 0; k < *t[i].count; k++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", k ? "," : "",
                         v[k]);
            program_field(s, name, "%s", list);
            break;
        }
        }
    }
}

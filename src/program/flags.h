/* A program's flags as one table: each entry names a flag, its kind, where its value
 * goes, its range or choices, and its help line; the parser, --help's lines and the
 * start-up fields all read the table. Errors name the flag:
 *
 *     prog: unknown option '--x' (see --help)
 *     prog: option '--steps' needs a value
 *     prog: --steps: 'x' is not an integer in [0, 9e15]
 *     prog: unexpected argument 'x' (see --help) */
#ifndef ZERO_PROGRAM_FLAGS_H
#define ZERO_PROGRAM_FLAGS_H

#include <stddef.h>
#include <stdio.h>

struct program_startup;

enum flag_kind {
    FLAG_INT,    /* int, in [min, max] */
    FLAG_I64,    /* int64_t, in [min, max] */
    FLAG_U64,    /* uint64_t (seeds) */
    FLAG_REAL,   /* double, finite, in [min, max] */
    FLAG_STR,    /* const char *, pointing into argv */
    FLAG_SET,    /* int set to 1; takes no value */
    FLAG_CHOICE, /* int: the index of the value in choices */
    FLAG_LIST,   /* int[cap]: "0,1,3", each in [min, max]; *count the number given */
};

struct flag {
    const char *name; /* without the leading "--"; NULL: a section title (help) */
    const char *arg;  /* the value's name in --help ("N"); NULL for FLAG_SET */
    const char *help;
    enum flag_kind kind;
    void *dst;
    double min, max;            /* FLAG_INT, FLAG_I64, FLAG_REAL: accepted range */
    const char *const *choices; /* FLAG_CHOICE: NULL-terminated */
    const char *want;           /* what the error says a bad value is not ("0 or 1"); NULL: said
                                   from the kind and the range or choices */
    int *count, cap;            /* FLAG_LIST: how many dst holds, and room for */
    const char *alias;          /* flags_take only: another spelling, whole ("-o") */
};

/* Table entries: numbers with a range, strings / flags / seeds, and choices. */
#define FLAG_NUM(n, a, h, k, d, lo, hi)                                                            \
    {                                                                                              \
        .name = n, .arg = a, .help = h, .kind = k, .dst = d, .min = lo, .max = hi                  \
    }
#define FLAG_ANY(n, a, h, k, d)                                                                    \
    {                                                                                              \
        .name = n, .arg = a, .help = h, .kind = k, .dst = d                                        \
    }
#define FLAG_ONE_OF(n, a, h, d, c)                                                                 \
    {                                                                                              \
        .name = n, .arg = a, .help = h, .kind = FLAG_CHOICE, .dst = d, .choices = c                \
    }

/* The same with the error's own words for a bad value (.want). */
#define FLAG_NUM_WANT(n, a, h, k, d, lo, hi, w)                                                    \
    {                                                                                              \
        .name = n, .arg = a, .help = h, .kind = k, .dst = d, .min = lo, .max = hi, .want = w       \
    }
#define FLAG_ONE_OF_WANT(n, a, h, d, c, w)                                                         \
    {                                                                                              \
        .name = n, .arg = a, .help = h, .kind = FLAG_CHOICE, .dst = d, .choices = c, .want = w     \
    }

/* A list of at most cap integers in [lo, hi] into the int array d, their number into *nd
 * (a value is one or more, comma-separated, none empty). */
#define FLAG_LIST_WANT(n, a, h, d, nd, cp, lo, hi, w)                                              \
    {                                                                                              \
        .name = n, .arg = a, .help = h, .kind = FLAG_LIST, .dst = d, .min = lo, .max = hi,         \
        .want = w, .count = nd, .cap = cp                                                          \
    }

/* A flag of any kind with a second spelling (see .alias). */
#define FLAG_ALIAS(n, al, a, h, k, d)                                                              \
    {                                                                                              \
        .name = n, .alias = al, .arg = a, .help = h, .kind = k, .dst = d                           \
    }

enum flags_result { FLAGS_OK = 0, FLAGS_HELP, FLAGS_USAGE };

/* Parses argv[1..] against the n entries of t (and --help), storing each value as it
 * comes; given[i] (NULL: not kept) counts the times entry i was given. FLAGS_USAGE puts
 * "prog: why" into msg. */
enum flags_result flags_parse(const char *prog, const struct flag *t, int n, int argc, char **argv,
                              int *given, char *msg, size_t len);

/* A first pass over argv: counts each entry given into given[i] and stores only the
 * FLAG_STR values (a --config path read before the other flags), ignoring every error
 * (flags_parse reports them). Returns FLAGS_HELP when --help is among the flags. */
enum flags_result flags_scan(const struct flag *t, int n, int argc, char **argv, int *given);

/* One flag at argv[*i], for a program that reads its own flags too: returns 0 when it
 * is neither "--name" nor the alias of an entry of t, else 1 with *taken the entry and
 * its value stored (*i moves past the value), or -1 with "--name needs a value" or
 * "--name: 'v' is not W" in msg (the flag as argv spells it). */
int flags_take(const struct flag *t, int n, int argc, char **argv, int *i,
               const struct flag **taken, char *msg, size_t len);

/* 1 if arg asks for --help ("--help" or "-h"), for a program that reads its flags with
 * flags_take. */
int flags_is_help(const char *arg);

/* The value of flag `name` ("--config"), wherever it stands in argv, as "--name V" or
 * "--name=V"; NULL when absent (the last one wins). For a flag that shapes the others'
 * defaults, read before flags_parse. */
const char *flags_find(const char *name, int argc, char **argv);

/* --help's lines: each section title, then "    --name ARG   help (default D)", the help
 * wrapped at about 50 columns. */
void flags_usage(FILE *out, const struct flag *t, int n);

/* Every entry but skip (NULL: none) as a start-up field "--name" = its value. */
void flags_fields(const struct flag *t, int n, const char *skip, struct program_startup *s);

#endif

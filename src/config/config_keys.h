/* The table of ds_config.json keys the loader, the printer and the comparison
 * walk: one entry per key, in DeepSpeed's documentation order. The bottom floor
 * of src/config: config_keys.c calls no other file. */
#ifndef ZERO_CONFIG_KEYS_H
#define ZERO_CONFIG_KEYS_H

#include <stddef.h>

#include "zero/config.h"

enum config_key_type {
    KEY_SECTION, /* a JSON object of further keys */
    KEY_BOOL,    /* int, 0 or 1 */
    KEY_INT,     /* int */
    KEY_I64,     /* int64_t */
    KEY_U64,     /* uint64_t */
    KEY_REAL,    /* double */
    KEY_PAIR,    /* double[2] */
    KEY_STRING,  /* char[size], NUL-terminated */
    KEY_ENUM     /* an enum (int) written as one of names[] */
};

/* Key flags. */
enum {
    KEY_NULLABLE = 1, /* JSON null means DeepSpeed's None: the default (0 or "") */
    KEY_ALIAS = 2,    /* another name for the key before it with the same field */
    KEY_NOCASE = 4    /* enum names compare case-insensitively (DeepSpeed lowercases them) */
};

/* Which optimizer / scheduler a params key belongs to: bit (1 << type) of
 * enum zero_optim_type, or bit (8 + type) of enum zero_sched_type. */
#define WHEN_OPTIM(t) (1u << (t))
#define WHEN_SCHED(t) (1u << (8 + (t)))
#define WHEN_ADAMS (WHEN_OPTIM(ZERO_OPTIM_ADAM) | WHEN_OPTIM(ZERO_OPTIM_ADAMW))

struct config_key {
    const char *path; /* "zero_optimization.reduce_bucket_size" */
    enum config_key_type type;
    size_t offset, size;      /* the field in struct zero_config */
    double min, max;          /* numbers: the accepted range */
    const char *const *names; /* KEY_ENUM: by value; KEY_STRING: the accepted values (or NULL) */
    const char *const *known; /* KEY_ENUM: names DeepSpeed knows that this build lacks */
    unsigned flags;
    unsigned when; /* 0 = always; else the WHEN_* bits it applies to */
};

extern const struct config_key config_keys[];
extern const int config_nkeys;

/* The index of the key with this path, -1 if none. */
int config_key_find(const char *path);

/* The index of the key an alias stands for (itself when it is no alias). */
int config_key_canonical(int k);

/* Whether key k applies to c's optimizer and scheduler types. */
int config_key_applies(const struct config_key *k, const struct zero_config *c);

/* The last component of a path ("stage" for "zero_optimization.stage"). */
const char *config_key_leaf(const char *path);

/* The valid key nearest to an unknown one: a sibling in the same section within
 * a small edit distance, else a key of that name in another section; NULL if none. */
const char *config_key_suggest(const char *path);

/* The field of key k inside c. */
static inline void *config_key_field(const struct config_key *k, struct zero_config *c)
{
    return (char *)c + k->offset;
}

static inline const void *config_key_cfield(const struct config_key *k, const struct zero_config *c)
{
    return (const char *)c + k->offset;
}

#endif

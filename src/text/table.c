/* The hash tables of a tokenizer: token string -> id, and (left, right) -> merge. Both
 * open addressing with linear probing, grown to keep them at most half full; written
 * while loading only, so lookups from many threads need no lock. */
#include <stdlib.h>
#include <string.h>

#include "text/text_internal.h"

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

static int64_t strmap_find(const struct tk_strmap *m, const char *key, size_t len)
{
    if (!m->slots)
        return -1;
    for (uint64_t s = hash_bytes(key, len) & (uint64_t)(m->slots - 1);;
         s = (s + 1) & (uint64_t)(m->slots - 1)) {
        const int64_t e = m->slot[s];
        if (e < 0)
            return -((int64_t)s) - 2; /* the free slot, encoded */
        if (m->key_len[e] == len && memcmp(m->keys.p + m->key_off[e], key, len) == 0)
            return e;
    }
}

static int strmap_grow(struct tk_strmap *m)
{
    const int64_t slots = m->slots ? 2 * m->slots : 1024;
    int64_t *slot = malloc((size_t)slots * sizeof *slot);
    if (!slot)
        return ZERO_ENOMEM;
    for (int64_t s = 0; s < slots; s++)
        slot[s] = -1;
    for (int64_t e = 0; e < m->n; e++) {
        uint64_t s = hash_bytes(m->keys.p + m->key_off[e], m->key_len[e]) & (uint64_t)(slots - 1);
        while (slot[s] >= 0)
            s = (s + 1) & (uint64_t)(slots - 1);
        slot[s] = e;
    }
    free(m->slot);
    m->slot = slot;
    m->slots = slots;
    return ZERO_OK;
}

int tk_strmap_put(struct tk_strmap *m, const char *key, size_t len, int32_t value)
{
    if (len > UINT32_MAX || m->keys.n + len + 1 > UINT32_MAX)
        return ZERO_ENOMEM;
    if (2 * (m->n + 1) > m->slots && strmap_grow(m))
        return ZERO_ENOMEM;
    int64_t e = strmap_find(m, key, len);
    if (e >= 0) {
        m->value[e] = value;
        return ZERO_OK;
    }
    const int64_t free_slot = -(e + 2);
    if (m->n == m->cap) {
        const int64_t cap = m->cap ? 2 * m->cap : 1024;
        uint32_t *off = realloc(m->key_off, (size_t)cap * sizeof *off);
        if (off)
            m->key_off = off;
        uint32_t *klen = realloc(m->key_len, (size_t)cap * sizeof *klen);
        if (klen)
            m->key_len = klen;
        int32_t *val = realloc(m->value, (size_t)cap * sizeof *val);
        if (val)
            m->value = val;
        if (!off || !klen || !val)
            return ZERO_ENOMEM;
        m->cap = cap;
    }
    m->key_off[m->n] = (uint32_t)m->keys.n;
    m->key_len[m->n] = (uint32_t)len;
    m->value[m->n] = value;
    if (tk_buf_put(&m->keys, key, len) || tk_buf_put(&m->keys, "", 1))
        return ZERO_ENOMEM;
    m->slot[free_slot] = m->n++;
    return ZERO_OK;
}

int32_t tk_strmap_get(const struct tk_strmap *m, const char *key, size_t len)
{
    const int64_t e = strmap_find(m, key, len);
    return e >= 0 ? m->value[e] : -1;
}

void tk_strmap_free(struct tk_strmap *m)
{
    tk_buf_free(&m->keys);
    free(m->key_off);
    free(m->key_len);
    free(m->value);
    free(m->slot);
    memset(m, 0, sizeof *m);
}

static uint64_t hash_pair(uint64_t key)
{
    key ^= key >> 33; /* splitmix64's finalizer */
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ull;
    return key ^ (key >> 33);
}

static struct tk_merge_entry *merges_slot(struct tk_merge_entry *slot, int64_t slots, uint64_t key)
{
    uint64_t s = hash_pair(key) & (uint64_t)(slots - 1);
    while (slot[s].key != UINT64_MAX && slot[s].key != key)
        s = (s + 1) & (uint64_t)(slots - 1);
    return &slot[s];
}

int tk_merges_put(struct tk_merges *m, int32_t left, int32_t right, int32_t rank, int32_t merged)
{
    if (2 * (m->n + 1) > m->slots) {
        const int64_t slots = m->slots ? 2 * m->slots : 1024;
        struct tk_merge_entry *slot = malloc((size_t)slots * sizeof *slot);
        if (!slot)
            return ZERO_ENOMEM;
        for (int64_t s = 0; s < slots; s++)
            slot[s].key = UINT64_MAX;
        for (int64_t s = 0; s < m->slots; s++)
            if (m->slot[s].key != UINT64_MAX)
                *merges_slot(slot, slots, m->slot[s].key) = m->slot[s];
        free(m->slot);
        m->slot = slot;
        m->slots = slots;
    }
    const uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    struct tk_merge_entry *e = merges_slot(m->slot, m->slots, key);
    if (e->key == UINT64_MAX)
        m->n++;
    *e = (struct tk_merge_entry){.key = key, .rank = rank, .merged = merged};
    return ZERO_OK;
}

const struct tk_merge_entry *tk_merges_get(const struct tk_merges *m, int32_t left, int32_t right)
{
    if (!m->slots)
        return NULL;
    const uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    const struct tk_merge_entry *e = merges_slot(m->slot, m->slots, key);
    return e->key == key ? e : NULL;
}

void tk_merges_free(struct tk_merges *m)
{
    free(m->slot);
    memset(m, 0, sizeof *m);
}

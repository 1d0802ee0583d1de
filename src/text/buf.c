/* The growing buffers of src/text/: bytes, ids and the pieces a text is cut into. */
#include <stdlib.h>
#include <string.h>

#include "text/text_internal.h"

int tk_buf_reserve(struct tk_buf *b, size_t extra)
{
    if (b->cap - b->n > extra)
        return ZERO_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap - b->n <= extra)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return ZERO_ENOMEM;
    b->p = p;
    b->cap = cap;
    return ZERO_OK;
}

int tk_buf_put(struct tk_buf *b, const void *p, size_t n)
{
    if (tk_buf_reserve(b, n))
        return ZERO_ENOMEM;
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
    return ZERO_OK;
}

int tk_buf_nul(struct tk_buf *b)
{
    if (tk_buf_reserve(b, 1))
        return ZERO_ENOMEM;
    b->p[b->n] = '\0';
    return ZERO_OK;
}

void tk_buf_free(struct tk_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

int tk_ids_push(struct zero_token_buf *b, int32_t id)
{
    if (b->n == b->cap) {
        int64_t cap = b->cap ? 2 * b->cap : 256;
        int32_t *ids = realloc(b->ids, (size_t)cap * sizeof *ids);
        if (!ids)
            return ZERO_ENOMEM;
        b->ids = ids;
        b->cap = cap;
    }
    b->ids[b->n++] = id;
    return ZERO_OK;
}

int zero_token_buf_push(struct zero_token_buf *b, int32_t id)
{
    return tk_ids_push(b, id);
}

void zero_token_buf_free(struct zero_token_buf *b)
{
    free(b->ids);
    memset(b, 0, sizeof *b);
}

int tk_pieces_add(struct tk_pieces *l, const char *p, size_t len, int32_t id, int first)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        struct tk_piece *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return ZERO_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    const size_t off = l->text.n;
    if (tk_buf_put(&l->text, p, len))
        return ZERO_ENOMEM;
    l->v[l->n++] = (struct tk_piece){.off = off, .len = len, .id = id, .first = first};
    return ZERO_OK;
}

void tk_pieces_reset(struct tk_pieces *l)
{
    l->n = 0;
    l->text.n = 0;
}

void tk_pieces_free(struct tk_pieces *l)
{
    free(l->v);
    tk_buf_free(&l->text);
    memset(l, 0, sizeof *l);
}

/* Post-processors: the special tokens around an encoded sequence when HF's
 * add_special_tokens asks for them (Llama's <s>, Llama 3's <|begin_of_text|>). One
 * sequence at a time, so a template is the ids before it and the ids after it. */
#include <stdlib.h>
#include <string.h>

#include "text/text_internal.h"

struct tk_post {
    int32_t *before, *after; /* (n_before), (n_after) */
    size_t n_before, n_after;
};

static int append_ids(int32_t **v, size_t *n, const int32_t *ids, size_t k)
{
    int32_t *p = realloc(*v, (*n + k + 1) * sizeof *p);
    if (!p)
        return ZERO_ENOMEM;
    if (k)
        memcpy(p + *n, ids, k * sizeof *p);
    *v = p;
    *n += k;
    return ZERO_OK;
}

/* The ids of a template's special token: special_tokens[name].ids. */
static int special_ids(const struct tk_where *w, json_t *j, const char *name, struct tk_post *pp,
                       int after, struct zero_error *err)
{
    struct tk_where k = tk_where_key(w, "special_tokens");
    k = tk_where_key(&k, name);
    json_t *ids =
        json_object_get(json_object_get(json_object_get(j, "special_tokens"), name), "ids");
    if (!json_is_array(ids))
        return tk_fail(&k, err, ZERO_EFORMAT, "the template names it but it has no \"ids\" array");
    for (size_t i = 0; i < json_array_size(ids); i++) {
        json_t *v = json_array_get(ids, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= INT32_MAX) {
            struct tk_where wi = tk_where_index(&k, i);
            return tk_fail(&wi, err, ZERO_EFORMAT, "expected an id");
        }
        const int32_t id = (int32_t)json_integer_value(v);
        if (after ? append_ids(&pp->after, &pp->n_after, &id, 1)
                  : append_ids(&pp->before, &pp->n_before, &id, 1))
            return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", w->file);
    }
    return ZERO_OK;
}

static int load_template(const struct tk_where *w, json_t *j, struct tk_post *pp,
                         struct zero_error *err)
{
    struct tk_where k = tk_where_key(w, "single");
    json_t *single = json_object_get(j, "single");
    if (!json_is_array(single))
        return tk_fail(&k, err, ZERO_EFORMAT, "expected an array");
    int seen_sequence = 0;
    for (size_t i = 0; i < json_array_size(single); i++) {
        struct tk_where wi = tk_where_index(&k, i);
        json_t *item = json_array_get(single, i);
        json_t *sp = json_object_get(item, "SpecialToken"),
               *seq = json_object_get(item, "Sequence");
        const char *id = json_string_value(json_object_get(sp ? sp : seq, "id"));
        if (!id)
            return tk_fail(&wi, err, ZERO_EFORMAT,
                           "expected {\"SpecialToken\": {\"id\": ...}} or {\"Sequence\": ...}");
        if (seq) {
            if (seen_sequence || strcmp(id, "A") != 0)
                return tk_fail(&wi, err, ZERO_EFORMAT, "a single template has one sequence, A");
            seen_sequence = 1;
        } else if (special_ids(w, j, id, pp, seen_sequence, err)) {
            return err->code;
        }
    }
    if (!seen_sequence)
        return tk_fail(&k, err, ZERO_EFORMAT, "the template has no sequence A");
    return ZERO_OK;
}

/* RobertaProcessing / BertProcessing: cls A sep, each a [token, id] pair. */
static int load_cls_sep(const struct tk_where *w, json_t *j, struct tk_post *pp,
                        struct zero_error *err)
{
    static const char *const keys[2] = {"cls", "sep"};
    for (int i = 0; i < 2; i++) {
        json_t *v = json_array_get(json_object_get(j, keys[i]), 1);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) >= INT32_MAX) {
            struct tk_where k = tk_where_key(w, keys[i]);
            return tk_fail(&k, err, ZERO_EFORMAT, "expected [token, id]");
        }
        const int32_t id = (int32_t)json_integer_value(v);
        if (i ? append_ids(&pp->after, &pp->n_after, &id, 1)
              : append_ids(&pp->before, &pp->n_before, &id, 1))
            return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", w->file);
    }
    return ZERO_OK;
}

static int load_into(const struct tk_where *w, json_t *j, struct tk_post *pp,
                     struct zero_error *err)
{
    const char *type;
    if (tk_get_type(w, j, &type, err))
        return err->code;
    if (strcmp(type, "ByteLevel") == 0)
        return ZERO_OK; /* it moves offsets only; ids are untouched */
    if (strcmp(type, "TemplateProcessing") == 0)
        return load_template(w, j, pp, err);
    if (strcmp(type, "RobertaProcessing") == 0 || strcmp(type, "BertProcessing") == 0)
        return load_cls_sep(w, j, pp, err);
    if (strcmp(type, "Sequence") == 0) {
        struct tk_where k = tk_where_key(w, "processors");
        json_t *arr = json_object_get(j, "processors");
        if (!json_is_array(arr))
            return tk_fail(&k, err, ZERO_EFORMAT, "expected an array");
        for (size_t i = 0; i < json_array_size(arr); i++) {
            struct tk_where wi = tk_where_index(&k, i);
            if (load_into(&wi, json_array_get(arr, i), pp, err))
                return err->code;
        }
        return ZERO_OK;
    }
    return tk_fail(w, err, ZERO_ENOTSUP,
                   "post-processor \"%s\" is not supported (ByteLevel, TemplateProcessing, "
                   "RobertaProcessing, BertProcessing, Sequence are)",
                   type);
}

int tk_post_load(const struct tk_where *w, json_t *j, const struct zero_tokenizer *tok,
                 struct tk_post **out, struct zero_error *err)
{
    (void)tok;
    *out = NULL;
    if (!j || json_is_null(j))
        return ZERO_OK;
    struct tk_post *pp = calloc(1, sizeof *pp);
    if (!pp)
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", w->file);
    if (load_into(w, j, pp, err)) {
        tk_post_free(pp);
        return err->code;
    }
    *out = pp;
    return ZERO_OK;
}

int tk_post_apply(const struct tk_post *pp, struct zero_token_buf *out, int64_t from)
{
    for (size_t i = 0; i < pp->n_before; i++)
        if (tk_ids_push(out, 0))
            return ZERO_ENOMEM;
    const int64_t body = out->n - (int64_t)pp->n_before - from;
    if (pp->n_before) { /* the sequence moves right to make room (out->ids may be NULL else) */
        memmove(out->ids + from + pp->n_before, out->ids + from, (size_t)body * sizeof *out->ids);
        memcpy(out->ids + from, pp->before, pp->n_before * sizeof *out->ids);
    }
    for (size_t i = 0; i < pp->n_after; i++)
        if (tk_ids_push(out, pp->after[i]))
            return ZERO_ENOMEM;
    return ZERO_OK;
}

void tk_post_free(struct tk_post *pp)
{
    if (!pp)
        return;
    free(pp->before);
    free(pp->after);
    free(pp);
}

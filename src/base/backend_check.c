/* The backend table's shape, checked before a backend is used (zero_backend_check in
 * zero/backend.h): the core's interface version, every core entry present, and for each
 * optional group the backend has, the group's version and every one of its entries.
 * The lists below name every entry; the static asserts keep them complete, so an entry
 * added to a struct without its name here does not compile. */
#include <stddef.h>
#include <stdio.h>

#include "zero/backend.h"
#include "zero/backend_attention.h"
#include "zero/backend_bf16_dot.h"
#include "zero/backend_classifier.h"
#include "zero/backend_llama.h"
#include "zero/backend_device_step.h"
#include "zero/backend_fused.h"
#include "zero/backend_groups.h"
#include "zero/backend_quant.h"
#include "zero/backend_stored.h"
#include "zero/error.h"

typedef void (*entry_fn)(void);

/* One function pointer of a table: its name and where it lies. */
struct entry {
    const char *name;
    size_t offset;
};

#define LEN(a) (sizeof(a) / sizeof((a)[0]))
/* clang-format off */
#define AT(type, name) {#name, offsetof(type, name)}
/* clang-format on */
#define CORE(name) AT(struct zero_backend, name)

static const struct entry core_entries[] = {
    CORE(probe),
    CORE(open),
    CORE(close),
    CORE(rank),
    CORE(size),
    CORE(last_error),
    CORE(set_coll_mode),
    CORE(alloc),
    CORE(free),
    CORE(copy),
    CORE(to_host),
    CORE(from_host),
    CORE(fill),
    CORE(product_workspace_bytes),
    CORE(host_alloc),
    CORE(host_free),
    CORE(copy_async),
    CORE(event_create),
    CORE(event_destroy),
    CORE(event_record),
    CORE(stream_wait_event),
    CORE(event_synchronize),
    CORE(synchronize),
    CORE(gemm),
    CORE(cast),
    CORE(axpy),
    CORE(scale),
    CORE(add),
    CORE(adam),
    CORE(sgd),
    CORE(sumsq_blocks),
    CORE(nonfinite),
    CORE(bias_add),
    CORE(bias_grad),
    CORE(gelu_forward),
    CORE(gelu_backward),
    CORE(xent_forward),
    CORE(xent_backward),
    CORE(embedding_forward),
    CORE(embedding_backward),
    CORE(layernorm_forward),
    CORE(layernorm_backward),
    CORE(attention_forward),
    CORE(attention_backward),
    CORE(reduce_scatter),
    CORE(all_gather),
    CORE(all_reduce),
    CORE(broadcast),
    CORE(barrier),
    CORE(wait),
    CORE(wait_timed),
    CORE(host_all_gather),
};
/* every pointer from probe up to the first group pointer is in the list */
_Static_assert(offsetof(struct zero_backend, fused) - offsetof(struct zero_backend, probe) ==
                   LEN(core_entries) * sizeof(entry_fn),
               "core_entries must name every entry of struct zero_backend");

#define FUSED(name) AT(struct zero_fused_ops, name)
static const struct entry fused_entries[] = {
    FUSED(residual_layernorm_forward),
    FUSED(gemm_bias),
    FUSED(gemm_dgelu),
    FUSED(gemm_bgrad),
};
_Static_assert(sizeof(struct zero_fused_ops) -
                       offsetof(struct zero_fused_ops, residual_layernorm_forward) ==
                   LEN(fused_entries) * sizeof(entry_fn),
               "fused_entries must name every entry of struct zero_fused_ops");

#define CLASSIFIER(name) AT(struct zero_classifier_ops, name)
static const struct entry classifier_entries[] = {
    CLASSIFIER(xent_fused),
};
_Static_assert(sizeof(struct zero_classifier_ops) -
                       offsetof(struct zero_classifier_ops, xent_fused) ==
                   LEN(classifier_entries) * sizeof(entry_fn),
               "classifier_entries must name every entry of struct zero_classifier_ops");

#define STORED(name) AT(struct zero_stored_ops, name)
static const struct entry stored_entries[] = {
    STORED(layernorm_forward_stored),
    STORED(gemm_bias_stored),
    STORED(gemm_dgelu_stored),
};
_Static_assert(sizeof(struct zero_stored_ops) -
                       offsetof(struct zero_stored_ops, layernorm_forward_stored) ==
                   LEN(stored_entries) * sizeof(entry_fn),
               "stored_entries must name every entry of struct zero_stored_ops");

#define ATTENTION(name) AT(struct zero_attention_ops, name)
static const struct entry attention_entries[] = {
    ATTENTION(attention_state_floats),
    ATTENTION(attention_forward_stored),
    ATTENTION(attention_backward_stored),
};
_Static_assert(sizeof(struct zero_attention_ops) -
                       offsetof(struct zero_attention_ops, attention_state_floats) ==
                   LEN(attention_entries) * sizeof(entry_fn),
               "attention_entries must name every entry of struct zero_attention_ops");

#define DEVICE_STEP(name) AT(struct zero_device_step_ops, name)
static const struct entry device_step_entries[] = {
    DEVICE_STEP(loss_accumulate), DEVICE_STEP(graph_open),  DEVICE_STEP(graph_close),
    DEVICE_STEP(input_errors),    DEVICE_STEP(graph_begin), DEVICE_STEP(graph_end),
};
_Static_assert(sizeof(struct zero_device_step_ops) -
                       offsetof(struct zero_device_step_ops, loss_accumulate) ==
                   LEN(device_step_entries) * sizeof(entry_fn),
               "device_step_entries must name every entry of struct zero_device_step_ops");

#define LLAMA(name) AT(struct zero_llama_ops, name)
static const struct entry llama_entries[] = {
    LLAMA(rmsnorm_forward), LLAMA(rmsnorm_backward), LLAMA(rope_table), LLAMA(rope_apply),
    LLAMA(swiglu_forward),  LLAMA(swiglu_backward),  LLAMA(gqa_pack),   LLAMA(gqa_unpack),
};
_Static_assert(sizeof(struct zero_llama_ops) - offsetof(struct zero_llama_ops, rmsnorm_forward) ==
                   LEN(llama_entries) * sizeof(entry_fn),
               "llama_entries must name every entry of struct zero_llama_ops");
#define GROUPS(name) AT(struct zero_groups_ops, name)
static const struct entry groups_entries[] = {
    GROUPS(node_group_size),      GROUPS(group_open),       GROUPS(group_close),
    GROUPS(group_rank),           GROUPS(group_size),       GROUPS(group_all_gather),
    GROUPS(group_reduce_scatter), GROUPS(group_all_reduce),
};
_Static_assert(sizeof(struct zero_groups_ops) - offsetof(struct zero_groups_ops, node_group_size) ==
                   LEN(groups_entries) * sizeof(entry_fn),
               "groups_entries must name every entry of struct zero_groups_ops");
#define BF16_DOT(name) AT(struct zero_bf16_dot_ops, name)
static const struct entry bf16_dot_entries[] = {
    BF16_DOT(set_bf16_product),
};
_Static_assert(sizeof(struct zero_bf16_dot_ops) -
                       offsetof(struct zero_bf16_dot_ops, set_bf16_product) ==
                   LEN(bf16_dot_entries) * sizeof(entry_fn),
               "bf16_dot_entries must name every entry of struct zero_bf16_dot_ops");
#define QUANT(name) AT(struct zero_quant_ops, name)
static const struct entry quant_entries[] = {
    QUANT(quantize_int8),   QUANT(dequantize_int8), QUANT(quantize_int4),
    QUANT(dequantize_int4), QUANT(all_to_all),
};
_Static_assert(sizeof(struct zero_quant_ops) - offsetof(struct zero_quant_ops, quantize_int8) ==
                   LEN(quant_entries) * sizeof(entry_fn),
               "quant_entries must name every entry of struct zero_quant_ops");

static entry_fn entry_at(const void *table, const struct entry *en)
{
    return *(const entry_fn *)(const void *)((const char *)table + en->offset);
}

/* The first entry of table (n of them) that is NULL, or NULL when all are there. */
static const char *missing(const void *table, const struct entry *entries, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (entry_at(table, &entries[i]) == NULL)
            return entries[i].name;
    return NULL;
}

/* A present group: its version, then its entries. */
static int check_group(const char *backend, const char *group, const void *ops, int version,
                       int want, const struct entry *entries, size_t n, char *why, size_t why_len)
{
    if (version != want) {
        snprintf(why, why_len, "backend '%s': group %s has version %d, need %d", backend, group,
                 version, want);
        return ZERO_ENOTSUP;
    }
    const char *hole = missing(ops, entries, n);
    if (hole != NULL) {
        snprintf(why, why_len, "backend '%s': group %s has no %s (a present group has every entry)",
                 backend, group, hole);
        return ZERO_EINVAL;
    }
    return ZERO_OK;
}

/* rc = the check of group g where be has it */
#define CHECK_GROUP(g, G)                                                                          \
    if (rc == ZERO_OK && be->g != NULL)                                                            \
    rc = check_group(name, #g, be->g, be->g->version, ZERO_##G##_OPS_VERSION, g##_entries,         \
                     LEN(g##_entries), why, why_len)

int zero_backend_check(const struct zero_backend *be, char *why, size_t why_len)
{
    const char *name = be->name != NULL ? be->name : "(unnamed)";
    if (be->abi_version != ZERO_BACKEND_ABI) {
        snprintf(why, why_len, "backend '%s' has interface version %d, need %d", name,
                 be->abi_version, ZERO_BACKEND_ABI);
        return ZERO_ENOTSUP;
    }
    const char *hole = missing(be, core_entries, LEN(core_entries));
    if (hole != NULL) {
        snprintf(why, why_len, "backend '%s' has no %s (every core entry is required)", name, hole);
        return ZERO_EINVAL;
    }
    int rc = ZERO_OK;
    CHECK_GROUP(fused, FUSED);
    CHECK_GROUP(classifier, CLASSIFIER);
    CHECK_GROUP(stored, STORED);
    CHECK_GROUP(attention, ATTENTION);
    CHECK_GROUP(device_step, DEVICE_STEP);
    CHECK_GROUP(llama, LLAMA);
    CHECK_GROUP(groups, GROUPS);
    CHECK_GROUP(bf16_dot, BF16_DOT);
    CHECK_GROUP(quant, QUANT);
    return rc;
}

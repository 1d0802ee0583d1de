/* The attention's own state and its 16-bit qkv.
 *
 * Without this group, attention_forward / attention_backward keep the core table's
 * contract: att and scratch of B * NH * T * T floats each, fp32 qkv. A backend whose
 * kernels keep less (cuda's flash attention) says how much here, and reads and writes
 * the stored-dtype qkv directly.
 *
 * Reached from struct zero_backend's `attention` pointer (zero/backend.h): NULL = the
 * backend has none of these; a present group has every entry (src/base/registry.c
 * refuses one with a NULL entry or another version). */
#ifndef ZERO_BACKEND_ATTENTION_H
#define ZERO_BACKEND_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "zero/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_ATTENTION_OPS_VERSION 1

struct zero_attention_ops {
    int version; /* ZERO_ATTENTION_OPS_VERSION */
    /* How many floats of att and of scratch attention_forward / attention_backward (and
     * the _stored entries below) read and write for this shape on this instance, as it
     * is configured now: B * NH * T * T each where they keep the probabilities, fewer
     * where a fused kernel keeps only per-query statistics (cuda's flash attention:
     * B * NH * T each). The caller may then hand att and scratch of just that size.
     * The answer stays the same as long as the instance's mode does. */
    void (*attention_state_floats)(void *self, int64_t B, int64_t T, int64_t C, int64_t NH,
                                   enum zero_dtype matmul_type, size_t *att_floats,
                                   size_t *scratch_floats);
    /* attention_forward with qkv (B*T, 3C) and y (B*T, C) in qkv_type (ZERO_F32, ZERO_F16
     * or ZERO_BF16: the stored activations): the bits of attention_forward on qkv widened
     * to fp32, y rounded once (to nearest even) from its fp32 result, att as there. */
    int (*attention_forward_stored)(void *self, void *y, float *att, const void *qkv,
                                    enum zero_dtype qkv_type, int64_t B, int64_t T, int64_t C,
                                    int64_t NH, enum zero_dtype matmul_type);
    /* attention_backward with qkv in qkv_type: the bits of attention_backward on qkv
     * widened to fp32; dy, att and dqkv fp32 as there. */
    int (*attention_backward_stored)(void *self, float *dqkv, float *scratch, const float *dy,
                                     const void *qkv, enum zero_dtype qkv_type, const float *att,
                                     int64_t B, int64_t T, int64_t C, int64_t NH,
                                     enum zero_dtype matmul_type);
};

#ifdef __cplusplus
}
#endif

#endif

/* The fused classifier: the loss and its gradient in one pass over the logits.
 *
 * Where a backend has it, the GPT head calls xent_fused instead of xent_forward then
 * xent_backward and keeps no probability buffer.
 *
 * Reached from struct zero_backend's `classifier` pointer (zero/backend.h): NULL = the
 * backend has none of these; a present group has every entry (src/base/registry.c
 * refuses one with a NULL entry or another version). */
#ifndef ZERO_BACKEND_CLASSIFIER_H
#define ZERO_BACKEND_CLASSIFIER_H

#include <stddef.h>
#include <stdint.h>

#include "zero/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_CLASSIFIER_OPS_VERSION 1

struct zero_classifier_ops {
    int version; /* ZERO_CLASSIFIER_OPS_VERSION */
    /* The fused classifier (llm.c's fused_classifier): per row r of logits (rows, classes)
     *   losses (rows)           = -log softmax(logits[r])[labels[r]]
     *   dlogits (rows, classes) = (softmax(logits[r]) - onehot(labels[r])) * dloss
     * in one pass over the logits with no probability buffer: xent_forward then
     * xent_backward, to rounding. t (fp32 or bf16) is the dtype of logits and dlogits;
     * dlogits is logits itself (in place) or disjoint from it. Labels are checked as in
     * xent_forward, before anything is written. */
    int (*xent_fused)(void *self, float *losses, void *dlogits, const void *logits,
                      enum zero_dtype t, const int32_t *labels, int64_t rows, int64_t classes,
                      float dloss);
};

#ifdef __cplusplus
}
#endif

#endif

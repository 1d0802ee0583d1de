/* Native mode's embedding backward: the bucketed kernel (cuda_embedding_backward.cu) in a
 * workspace, the reference kernel where the shape does not fit, no workspace can be had
 * or ZERO_CUDA_FUSED=off. Below cuda_layer_ops.c's embedding_backward entry, which calls it. */
#include <stdint.h>

#include "cuda_launch.h"
#include "cuda_ops.h"

int cuda_embedding_backward_native(struct cuda_state *s, float *dtable, const int32_t *ids,
                                   const float *dy, int64_t rows, int64_t cols, int64_t vocab,
                                   float beta)
{
    if (!cuda_fused_disabled() && cuda_embedding_backward_bucketed_supports(rows, cols, vocab)) {
        size_t bytes = cuda_embedding_backward_bucketed_workspace(rows, vocab);
        void *ws = NULL;
        if (bytes > 0 && cuda_alloc(s, bytes, ZERO_TAG_WORKSPACE, &ws) == ZERO_OK) {
            int rc =
                cuda_check(s,
                           cuda_launch_embedding_backward_bucketed(
                               s->compute, dtable, ids, dy, rows, cols, vocab, beta, ws, bytes),
                           "embedding_backward: bucketed kernel");
            cuda_free(s, ws); /* back to the cache; the stream order keeps it for the kernels */
            return rc;
        }
    }
    return cuda_check(
        s, cuda_launch_embedding_backward(s->compute, dtable, ids, dy, rows, cols, vocab, beta),
        "embedding_backward");
}

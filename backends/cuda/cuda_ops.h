/* The cuda backend's table entries, one group per file; cuda_backend.c puts them
 * in the table (not installed). */
#ifndef ZERO_CUDA_OPS_H
#define ZERO_CUDA_OPS_H

#include "cuda_internal.h"

/* cuda_memory.c: tagged device memory, copies, streams and events */
int cuda_alloc(void *self, size_t bytes, enum zero_tag tag, void **dev);
int cuda_free(void *self, void *dev);
int cuda_copy(void *self, void *dst, const void *src, size_t bytes);
int cuda_to_host(void *self, void *host, const void *dev, size_t bytes);
int cuda_from_host(void *self, void *dev, const void *host, size_t bytes);
int cuda_fill(void *self, void *x, enum zero_dtype t, double value, size_t n);
/* cuda_blaslt.c: the cuBLASLt workspace every product shares */
size_t cuda_product_workspace_bytes(void *self);
int cuda_copy_async(void *self, void *dst, const void *src, size_t bytes, enum zero_stream s);
int cuda_event_create(void *self, void **ev);
int cuda_event_destroy(void *self, void *ev);
int cuda_event_record(void *self, void *ev, enum zero_stream s);
int cuda_stream_wait_event(void *self, enum zero_stream s, void *ev);
int cuda_event_synchronize(void *self, void *ev);
int cuda_synchronize(void *self);

/* cuda_host.c: mapped pinned memory for offload, on the host ledger */
int cuda_host_alloc(void *self, size_t bytes, enum zero_tag tag, void **host);
int cuda_host_free(void *self, void *host);

/* cuda_blas.c */
int cuda_gemm(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
              enum zero_dtype b_type, int64_t ldb, float beta, void *c, enum zero_dtype c_type,
              int64_t ldc);

/* cuda_ops.c: elementwise, optimizers, reductions */
int cuda_cast(void *self, void *dst, enum zero_dtype dst_type, const void *src,
              enum zero_dtype src_type, size_t n);
int cuda_axpy(void *self, float a, const float *x, float *y, size_t n);
int cuda_scale(void *self, float a, float *x, size_t n);
int cuda_add(void *self, float *out, const float *a, const float *b, size_t n);
int cuda_adam(void *self, float *param, const void *grad, enum zero_dtype grad_type, float *exp_avg,
              float *exp_avg_sq, size_t n, const struct zero_adam_args *args, void *param_copy,
              enum zero_dtype copy_type);
int cuda_sgd(void *self, float *param, const void *grad, enum zero_dtype grad_type, float *momentum,
             size_t n, const struct zero_sgd_args *args, void *param_copy,
             enum zero_dtype copy_type);
int cuda_sumsq_blocks(void *self, const void *x, enum zero_dtype t, size_t n, size_t block,
                      double *out);
int cuda_nonfinite(void *self, const void *x, enum zero_dtype t, size_t n, int *host_flag);

/* cuda_layer_ops.c: layer and GPT kernels on fp32 activations */
int cuda_bias_add(void *self, float *y, const float *b, int64_t rows, int64_t cols);
int cuda_bias_grad(void *self, float *db, const float *dy, int64_t rows, int64_t cols, float beta);
int cuda_gelu_forward(void *self, float *y, const float *x, size_t n, enum zero_gelu kind);
int cuda_gelu_backward(void *self, float *dx, const float *x, const float *dy, size_t n,
                       enum zero_gelu kind);
int cuda_xent_forward(void *self, float *losses, float *probs, const float *logits,
                      const int32_t *labels, int64_t rows, int64_t classes);
int cuda_xent_backward(void *self, float *dlogits, const float *probs, const int32_t *labels,
                       int64_t rows, int64_t classes, float dloss);
int cuda_embedding_forward(void *self, float *y, const int32_t *ids, const float *table,
                           int64_t rows, int64_t cols, int64_t vocab);
int cuda_embedding_backward(void *self, float *dtable, const int32_t *ids, const float *dy,
                            int64_t rows, int64_t cols, int64_t vocab, float beta);
int cuda_layernorm_forward(void *self, float *y, float *mean, float *rstd, const float *x,
                           const float *weight, const float *bias, int64_t rows, int64_t cols,
                           float eps);
int cuda_layernorm_backward(void *self, float *dx, float *dweight, float *dbias, const float *dy,
                            const float *x, const float *weight, const float *mean,
                            const float *rstd, int64_t rows, int64_t cols, float dx_beta,
                            float w_beta, float b_beta);
int cuda_attention_forward(void *self, float *y, float *att, const float *qkv, int64_t B, int64_t T,
                           int64_t C, int64_t NH, enum zero_dtype matmul_type);
int cuda_attention_backward(void *self, float *dqkv, float *scratch, const float *dy,
                            const float *qkv, const float *att, int64_t B, int64_t T, int64_t C,
                            int64_t NH, enum zero_dtype matmul_type);
void cuda_attention_state_floats(void *self, int64_t B, int64_t T, int64_t C, int64_t NH,
                                 enum zero_dtype matmul_type, size_t *att_floats,
                                 size_t *scratch_floats);
int cuda_attention_forward_stored(void *self, void *y, float *att, const void *qkv,
                                  enum zero_dtype qkv_type, int64_t B, int64_t T, int64_t C,
                                  int64_t NH, enum zero_dtype matmul_type);
int cuda_attention_backward_stored(void *self, float *dqkv, float *scratch, const float *dy,
                                   const void *qkv, enum zero_dtype qkv_type, const float *att,
                                   int64_t B, int64_t T, int64_t C, int64_t NH,
                                   enum zero_dtype matmul_type);

/* cuda_layer_ops.c's range check, for the fused entries: ZERO_EINVAL naming the first
 * row whose id (device memory, (rows)) is outside [0, limit), as the cpu says it */
int cuda_check_ids(struct cuda_state *s, const char *what, const char *noun, const int32_t *ids,
                   int64_t rows, int64_t limit);

/* cuda_fused_switch.c: 1 when ZERO_CUDA_FUSED=off: native mode runs the unfused kernels in sequence
 * instead of the fused classifier, residual LayerNorm, GEMM epilogues and bucketed embedding
 * backward (to tell on a device which one is wrong) */
int cuda_fused_disabled(void);

/* cuda_fused_ops.c: the optional fused entries (native mode: one kernel; exact mode: the
 * reference kernels in sequence, the cpu's bits) */
int cuda_xent_fused(void *self, float *losses, void *dlogits, const void *logits, enum zero_dtype t,
                    const int32_t *labels, int64_t rows, int64_t classes, float dloss);
int cuda_residual_layernorm_forward(void *self, float *res, float *y, float *mean, float *rstd,
                                    const float *a, const float *b, const float *weight,
                                    const float *bias, int64_t rows, int64_t cols, float eps);
int cuda_layernorm_forward_stored(void *self, void *y, enum zero_dtype y_type, float *mean,
                                  float *rstd, const float *x, float *res, const float *a,
                                  const float *b, const float *weight, const float *bias,
                                  int64_t rows, int64_t cols, float eps);
/* cuda_embedding_native.c: native mode's embedding backward: the bucketed kernel in a workspace,
 * the reference kernel where the shape does not fit or no workspace can be had */
int cuda_embedding_backward_native(struct cuda_state *s, float *dtable, const int32_t *ids,
                                   const float *dy, int64_t rows, int64_t cols, int64_t vocab,
                                   float beta);

/* cuda_gemm_epilogue.c: GEMMs with the bias, GELU, GELU's derivative or the bias
 * gradient in cuBLASLt's epilogue */
int cuda_gemm_bias(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                   const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                   enum zero_dtype b_type, int64_t ldb, const float *bias, float *c, int64_t ldc,
                   float *gelu, enum zero_gelu kind);
int cuda_gemm_dgelu(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                    const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                    enum zero_dtype b_type, int64_t ldb, float *c, int64_t ldc, const float *pre,
                    enum zero_gelu kind);
/* the same with 16-bit stored activations: c and gelu written in out_type, pre read in
 * pre_type (include/zero/backend.h's gemm_bias_stored, gemm_dgelu_stored) */
int cuda_gemm_bias_stored(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                          const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                          enum zero_dtype b_type, int64_t ldb, const float *bias, void *c,
                          void *gelu, enum zero_dtype out_type, int64_t ldc, enum zero_gelu kind);
int cuda_gemm_dgelu_stored(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                           const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                           enum zero_dtype b_type, int64_t ldb, float *c, int64_t ldc,
                           const void *pre, enum zero_dtype pre_type, enum zero_gelu kind);
int cuda_gemm_bgrad(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                    const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
                    enum zero_dtype b_type, int64_t ldb, float beta, float *c, int64_t ldc,
                    int db_side, const float *dy, float *db, float db_beta);

/* cuda_coll.c */
int cuda_reduce_scatter(void *self, const void *send, enum zero_dtype wire_type, void *recv,
                        enum zero_dtype recv_type, size_t count, struct zero_request **req);
int cuda_all_gather(void *self, const void *send, void *recv, enum zero_dtype t, size_t count,
                    struct zero_request **req);
int cuda_all_reduce(void *self, const void *send, void *recv, enum zero_dtype t, size_t count,
                    struct zero_request **req);
int cuda_broadcast(void *self, void *buf, enum zero_dtype t, size_t count, int root,
                   struct zero_request **req);
int cuda_barrier(void *self);
int cuda_wait(void *self, struct zero_request *req);
/* cuda_wait with *done_ago 0: the wait is queued on the compute stream, so the host does
 * not see when the collective completed */
int cuda_wait_timed(void *self, struct zero_request *req, double *done_ago);
int cuda_host_all_gather(void *self, const void *send_host, void *recv_host, size_t bytes);
/* cuda_coll.c: the groups table (zero/backend_groups.h) */
extern const struct zero_groups_ops cuda_groups_ops;
extern const struct zero_quant_ops cuda_quant_ops; /* cuda_quant.c */
struct zero_group;                                 /* zero/backend_groups.h */
/* the quant group's all_to_all (cuda_coll.c, beside the groups it runs over) */
int cuda_all_to_all(void *self, struct zero_group *group, const void *send,
                    const size_t *send_bytes, void *recv, const size_t *recv_bytes);

/* cuda_step.c: the loss kept on the device, the deferred checks' verdict */
int cuda_loss_accumulate(void *self, double *acc, float *last, const float *losses, size_t n,
                         int64_t rows);
int cuda_input_errors(void *self);

/* cuda_graph.c: CUDA Graphs of the engine's passes */
int cuda_graph_open(void *self);
void cuda_graph_close(void *self);
int cuda_graph_begin(void *self, int key);
int cuda_graph_end(void *self, int key, int launch);

#endif

/* The cpu backend's non-collective entries, one group per file; cpu_backend.c
 * puts them in the table (not installed). */
#ifndef ZERO_CPU_OPS_H
#define ZERO_CPU_OPS_H

#include "cpu_internal.h"
#include "zero/backend_bf16_dot.h"

/* cpu_memory.c: tagged host memory, trivial streams and events */
int cpu_alloc(void *self, size_t bytes, enum zero_tag tag, void **dev);
int cpu_free(void *self, void *dev);
int cpu_copy(void *self, void *dst, const void *src, size_t bytes);
int cpu_to_host(void *self, void *host, const void *dev, size_t bytes);
int cpu_from_host(void *self, void *dev, const void *host, size_t bytes);
int cpu_fill(void *self, void *x, enum zero_dtype t, double value, size_t n);
int cpu_host_alloc(void *self, size_t bytes, enum zero_tag tag, void **host);
int cpu_host_free(void *self, void *host);
int cpu_copy_async(void *self, void *dst, const void *src, size_t bytes, enum zero_stream s);
int cpu_event_create(void *self, void **ev);
int cpu_event_destroy(void *self, void *ev);
int cpu_event_record(void *self, void *ev, enum zero_stream s);
int cpu_stream_wait_event(void *self, enum zero_stream s, void *ev);
int cpu_event_synchronize(void *self, void *ev);
int cpu_synchronize(void *self);

/* cpu_llama_kernels.c: the llama group (zero/backend_llama.h) */
extern const struct zero_llama_ops cpu_llama_ops;

/* cpu_blas.c */
/* The backend table's product_workspace_bytes: exact GEMM's packing panels */
size_t cpu_product_workspace_bytes(void *self);
int cpu_gemm(void *self, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const void *a, enum zero_dtype a_type, int64_t lda, const void *b,
             enum zero_dtype b_type, int64_t ldb, float beta, void *c, enum zero_dtype c_type,
             int64_t ldc);
/* An fp32 GEMM for the backend's own kernels (attention), by mode as cpu_gemm.
 * a_round/b_round = ZERO_F16/ZERO_BF16 rounds that operand's elements while
 * packing; only exact mode can (cpu_gemm_rounds_while_packing), native callers
 * round into a copy first and pass ZERO_F32. */
int cpu_gemm_f32(struct cpu_state *s, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                 float alpha, const float *a, int64_t lda, enum zero_dtype a_round, const float *b,
                 int64_t ldb, enum zero_dtype b_round, float beta, float *c, int64_t ldc);
int cpu_gemm_rounds_while_packing(const struct cpu_state *s);
/* the bf16_dot group's switch (zero/backend_bf16_dot.h) */
int cpu_set_bf16_product(void *self, enum zero_bf16_product product);

/* cpu_kernels.c: elementwise, optimizers, reductions */
int cpu_cast(void *self, void *dst, enum zero_dtype dst_type, const void *src,
             enum zero_dtype src_type, size_t n);
int cpu_axpy(void *self, float a, const float *x, float *y, size_t n);
int cpu_scale(void *self, float a, float *x, size_t n);
int cpu_add(void *self, float *out, const float *a, const float *b, size_t n);
int cpu_adam(void *self, float *param, const void *grad, enum zero_dtype grad_type, float *exp_avg,
             float *exp_avg_sq, size_t n, const struct zero_adam_args *args, void *param_copy,
             enum zero_dtype copy_type);
int cpu_sgd(void *self, float *param, const void *grad, enum zero_dtype grad_type, float *momentum,
            size_t n, const struct zero_sgd_args *args, void *param_copy,
            enum zero_dtype copy_type);
int cpu_sumsq_blocks(void *self, const void *x, enum zero_dtype t, size_t n, size_t block,
                     double *out);
int cpu_nonfinite(void *self, const void *x, enum zero_dtype t, size_t n, int *host_flag);

/* cpu_layers.c: fp32 layer kernels */
int cpu_bias_add(void *self, float *y, const float *b, int64_t rows, int64_t cols);
int cpu_bias_grad(void *self, float *db, const float *dy, int64_t rows, int64_t cols, float beta);
int cpu_gelu_forward(void *self, float *y, const float *x, size_t n, enum zero_gelu kind);
int cpu_gelu_backward(void *self, float *dx, const float *x, const float *dy, size_t n,
                      enum zero_gelu kind);
int cpu_xent_forward(void *self, float *losses, float *probs, const float *logits,
                     const int32_t *labels, int64_t rows, int64_t classes);
int cpu_xent_backward(void *self, float *dlogits, const float *probs, const int32_t *labels,
                      int64_t rows, int64_t classes, float dloss);
int cpu_xent_fused(void *self, float *losses, void *dlogits, const void *logits, enum zero_dtype t,
                   const int32_t *labels, int64_t rows, int64_t classes, float dloss);

/* cpu_gpt_kernels.c: GPT kernels on fp32 activations (token embedding, LayerNorm, attention) */
int cpu_embedding_forward(void *self, float *y, const int32_t *ids, const float *table,
                          int64_t rows, int64_t cols, int64_t vocab);
int cpu_embedding_backward(void *self, float *dtable, const int32_t *ids, const float *dy,
                           int64_t rows, int64_t cols, int64_t vocab, float beta);
int cpu_layernorm_forward(void *self, float *y, float *mean, float *rstd, const float *x,
                          const float *weight, const float *bias, int64_t rows, int64_t cols,
                          float eps);
int cpu_layernorm_backward(void *self, float *dx, float *dweight, float *dbias, const float *dy,
                           const float *x, const float *weight, const float *mean,
                           const float *rstd, int64_t rows, int64_t cols, float dx_beta,
                           float w_beta, float b_beta);
int cpu_attention_forward(void *self, float *y, float *att, const float *qkv, int64_t B, int64_t T,
                          int64_t C, int64_t NH, enum zero_dtype matmul_type);
int cpu_attention_backward(void *self, float *dqkv, float *scratch, const float *dy,
                           const float *qkv, const float *att, int64_t B, int64_t T, int64_t C,
                           int64_t NH, enum zero_dtype matmul_type);

#endif

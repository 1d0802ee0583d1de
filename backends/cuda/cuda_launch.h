/* Kernel launchers of the cuda backend: C functions defined in the .cu files and
 * called from the C entries. Each enqueues on the given stream and returns the
 * launch status (cudaGetLastError); arguments were checked by the caller.
 *
 * Numerics: kernels that promise the cpu backend's bits use the explicit
 * round-to-nearest intrinsics (__fadd_rn, __fmul_rn, ...), which the compiler never
 * contracts into fused multiply-adds, and the same operation order as
 * backends/cpu. Sums never use float atomics: every result is deterministic. */
#ifndef ZERO_CUDA_LAUNCH_H
#define ZERO_CUDA_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "base/optim_consts.h"
#include "zero/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- cuda_kernels.cu: elementwise, optimizers, reductions ---- */

/* x (n elements of elem_size 1, 2, 4 or 8 bytes) = the low bytes of pattern */
cudaError_t cuda_launch_fill(cudaStream_t st, void *x, size_t elem_size, uint64_t pattern,
                             size_t n);
/* dst (rows, cols; ld_dst) = src (rows, cols; ld_src) converted; fp32/fp16/bf16/fp64 as
 * the cpu backend's cast allows (fp64 only to or from fp32). */
cudaError_t cuda_launch_cast(cudaStream_t st, void *dst, enum zero_dtype dst_type, const void *src,
                             enum zero_dtype src_type, size_t rows, size_t cols, size_t ld_dst,
                             size_t ld_src);
cudaError_t cuda_launch_axpy(cudaStream_t st, float a, const float *x, float *y, size_t n);
cudaError_t cuda_launch_scale(cudaStream_t st, float a, float *x, size_t n);
cudaError_t cuda_launch_add(cudaStream_t st, float *out, const float *a, const float *b, size_t n);

/* The per-step constants of src/base/host_optim.c's adam_f32, computed on
 * the host in the same way. */
cudaError_t cuda_launch_adam(cudaStream_t st, float *param, const void *grad,
                             enum zero_dtype grad_type, float *exp_avg, float *exp_avg_sq, size_t n,
                             struct zero_adam_consts k, void *param_copy,
                             enum zero_dtype copy_type);

struct cuda_sgd_consts {
    float lr, momentum, weight_decay, undamped, grad_div;
    int nesterov, first;
};
cudaError_t cuda_launch_sgd(cudaStream_t st, float *param, const void *grad,
                            enum zero_dtype grad_type, float *momentum, size_t n,
                            struct cuda_sgd_consts k, void *param_copy, enum zero_dtype copy_type);

/* out (ceil(n / block)) = sequential double sums of squares, one thread per block */
cudaError_t cuda_launch_sumsq_blocks(cudaStream_t st, const void *x, enum zero_dtype t, size_t n,
                                     size_t block, double *out);
/* *flag = 0, then 1 if any element is inf or NaN (flag: device memory) */
cudaError_t cuda_launch_nonfinite(cudaStream_t st, const void *x, enum zero_dtype t, size_t n,
                                  unsigned long long *flag);

/* ---- cuda_layers.cu: fp32 layer kernels ---- */

cudaError_t cuda_launch_bias_add(cudaStream_t st, float *y, const float *b, int64_t rows,
                                 int64_t cols);
cudaError_t cuda_launch_bias_grad(cudaStream_t st, float *db, const float *dy, int64_t rows,
                                  int64_t cols, float beta);
cudaError_t cuda_launch_gelu_forward(cudaStream_t st, float *y, const float *x, size_t n,
                                     enum zero_gelu kind);
cudaError_t cuda_launch_gelu_backward(cudaStream_t st, float *dx, const float *x, const float *dy,
                                      size_t n, enum zero_gelu kind);
/* *first_bad = the smallest row r with ids[r] outside [0, limit), or ULLONG_MAX */
cudaError_t cuda_launch_index_check(cudaStream_t st, const int32_t *ids, int64_t rows,
                                    int64_t limit, unsigned long long *first_bad);
cudaError_t cuda_launch_xent_forward(cudaStream_t st, float *losses, float *probs,
                                     const float *logits, const int32_t *labels, int64_t rows,
                                     int64_t classes);
cudaError_t cuda_launch_xent_backward(cudaStream_t st, float *dlogits, const float *probs,
                                      const int32_t *labels, int64_t rows, int64_t classes,
                                      float dloss);

/* ---- cuda_gpt_kernels.cu: embedding, LayerNorm, the softmax parts of attention ---- */

cudaError_t cuda_launch_embedding_forward(cudaStream_t st, float *y, const int32_t *ids,
                                          const float *table, int64_t rows, int64_t cols);
cudaError_t cuda_launch_embedding_backward(cudaStream_t st, float *dtable, const int32_t *ids,
                                           const float *dy, int64_t rows, int64_t cols,
                                           int64_t vocab, float beta);
cudaError_t cuda_launch_layernorm_forward(cudaStream_t st, float *y, float *mean, float *rstd,
                                          const float *x, const float *weight, const float *bias,
                                          int64_t rows, int64_t cols, float eps);
cudaError_t cuda_launch_layernorm_backward(cudaStream_t st, float *dx, float *dweight, float *dbias,
                                           const float *dy, const float *x, const float *weight,
                                           const float *mean, const float *rstd, int64_t rows,
                                           int64_t cols, float dx_beta, float w_beta, float b_beta);
/* att (rows, T): row i of every (T, T) block (i = row % T) softmaxed over j <= i, zeros after */
cudaError_t cuda_launch_causal_softmax(cudaStream_t st, float *att, int64_t rows, int64_t T);
/* ds (rows, T) in place of datt: att * (datt - rowsum(att * datt)), zeros above the diagonal */
cudaError_t cuda_launch_causal_softmax_backward(cudaStream_t st, float *datt, const float *att,
                                                int64_t rows, int64_t T);

/* ---- cuda_combine.cu: the owner's combine of exact mode ---- */

/* out (len, out_type) = tree over j < n of piece j (len, wire_type), summed in fp32 along
 * the canonical tree (src/base/tree.h) and rounded once. Piece me is `own`; the others lie in
 * `peers` (n - 1, len) in rank order with me left out. out may alias own exactly. */
cudaError_t cuda_launch_combine(cudaStream_t st, void *out, enum zero_dtype out_type,
                                const void *own, const void *peers, enum zero_dtype wire_type,
                                int n, int me, size_t len);

/* ---- cuda_fast_kernels.cu: native-mode LayerNorm, residual, cross-entropy, classifier ---- */

/* as cuda_launch_layernorm_forward: a warp per row, fp32 moments, 128-bit loads */
cudaError_t cuda_launch_layernorm_forward_fast(cudaStream_t st, float *y, float *mean, float *rstd,
                                               const float *x, const float *weight,
                                               const float *bias, int64_t rows, int64_t cols,
                                               float eps);
/* as cuda_launch_xent_forward: online softmax, two reads of the logits */
cudaError_t cuda_launch_xent_forward_fast(cudaStream_t st, float *losses, float *probs,
                                          const float *logits, const int32_t *labels, int64_t rows,
                                          int64_t classes);

/* res (rows, cols) = a + b (res may be a or b), then y, mean, rstd = LayerNorm(res) as
 * cuda_launch_layernorm_forward_fast, in one pass (the residual add fused) */
cudaError_t cuda_launch_residual_layernorm_forward_fast(cudaStream_t st, float *res, float *y,
                                                        float *mean, float *rstd, const float *a,
                                                        const float *b, const float *weight,
                                                        const float *bias, int64_t rows,
                                                        int64_t cols, float eps);
/* cuda_launch_layernorm_forward_fast (x != NULL) or the residual one (x == NULL:
 * res = a + b) with y (rows, cols) stored in yt (fp16 or bf16), each fp32 result
 * rounded once; 128-bit stores of 8 where the row allows */
cudaError_t cuda_launch_layernorm_forward_stored_fast(cudaStream_t st, void *y, enum zero_dtype yt,
                                                      float *mean, float *rstd, const float *x,
                                                      float *res, const float *a, const float *b,
                                                      const float *weight, const float *bias,
                                                      int64_t rows, int64_t cols, float eps);
/* losses (rows) and dlogits (rows, classes) = (softmax - onehot) * dloss from logits, t fp32
 * or bf16 for both (dlogits may be logits): online softmax, two reads and one write */
cudaError_t cuda_launch_xent_fused(cudaStream_t st, float *losses, void *dlogits,
                                   const void *logits, enum zero_dtype t, const int32_t *labels,
                                   int64_t rows, int64_t classes, float dloss);

/* ---- cuda_embedding_backward.cu: the bucketed embedding backward (native mode) ---- */

/* 1 if the bucketed kernel takes this shape (rows, vocab < 2^31; cols in 65535 chunks) */
int cuda_embedding_backward_bucketed_supports(int64_t rows, int64_t cols, int64_t vocab);
/* bytes of device workspace it needs (0: cub cannot size its sort) */
size_t cuda_embedding_backward_bucketed_workspace(int64_t rows, int64_t vocab);
/* as cuda_launch_embedding_backward, the same bits: rows sorted by id, one warp per run */
cudaError_t cuda_launch_embedding_backward_bucketed(cudaStream_t st, float *dtable,
                                                    const int32_t *ids, const float *dy,
                                                    int64_t rows, int64_t cols, int64_t vocab,
                                                    float beta, void *ws, size_t ws_bytes);

/* ---- cuda_flash_attention.cu: fused causal attention (native mode) ---- */

/* 1 if the fused kernels take this shape (head size 8, 16, 32 or 64, B * NH <= 65535) */
int cuda_flash_attention_supports(int64_t B, int64_t T, int64_t C, int64_t NH);
/* y (B, T, C) = causal softmax(q k^T / sqrt(hs)) v per head; lse (B, NH, T) saved.
 * qkv and y in t: fp32, or fp16/bf16 (q, k, v widened as loaded, y rounded once: the
 * bits of the fp32 kernel on widened qkv, then cast) */
cudaError_t cuda_launch_flash_attention_forward(cudaStream_t st, void *y, float *lse,
                                                const void *qkv, enum zero_dtype t, int64_t B,
                                                int64_t T, int64_t C, int64_t NH);
/* dqkv (B, T, 3C) from dy (B, T, C), qkv (in t, as above) and the forward's lse; dsum
 * (B, NH, T) scratch */
cudaError_t cuda_launch_flash_attention_backward(cudaStream_t st, float *dqkv, float *dsum,
                                                 const float *dy, const void *qkv,
                                                 enum zero_dtype t, const float *lse, int64_t B,
                                                 int64_t T, int64_t C, int64_t NH);

/* ---- cuda_exact_gemm.cu: the GEMM of exact mode ---- */

/* C_i (m, n) = alpha op(A_i) op(B_i) + beta C_i for i < batch, row-major, the operands of
 * item i at element offset i * stride; fp32/fp16/bf16 A, B and C in any mix. Every
 * output is one fmaf chain over k in increasing order (the file's comment gives the
 * rule for alpha and beta): the bits of the cpu backend's exact GEMM. With bf16 A and B,
 * bf16_product (enum zero_bf16_product) 1: the bf16-product contract instead
 * (src/base/bf16_dot.h), 2: the bf16-tile contract (src/base/bf16_tile.h). */
cudaError_t cuda_launch_exact_gemm(cudaStream_t st, int trans_a, int trans_b, int64_t m, int64_t n,
                                   int64_t k, float alpha, const void *a, enum zero_dtype a_type,
                                   int64_t lda, int64_t stride_a, const void *b,
                                   enum zero_dtype b_type, int64_t ldb, int64_t stride_b,
                                   float beta, void *c, enum zero_dtype c_type, int64_t ldc,
                                   int64_t stride_c, int64_t batch, int bf16_product);

/* ---- cuda_step_kernels.cu: what a step keeps on the device (cuda_step.c) ---- */

/* The micro-step's mean loss, in the host's order (backend.h, loss_accumulate): losses
 * (n) summed in double in index order (one block: staged in shared memory, added by one
 * thread); *last = (float)(sum / rows); *acc += *last. */
cudaError_t cuda_launch_loss_accumulate(cudaStream_t st, double *acc, float *last,
                                        const float *losses, size_t n, int64_t rows);

/* The first bad id of the step: site -1 until a check meets one. */
struct cuda_id_record {
    unsigned long long row;
    int32_t value;
    int32_t site;
};
/* Deferred check of ids (rows): where rec holds nothing yet and some id is outside
 * [0, limit), rec = (site, the smallest such row, its id); then every such id is
 * replaced by 0 in place, so the kernels after it stay inside their tables. */
cudaError_t cuda_launch_defer_ids(cudaStream_t st, int32_t *ids, int64_t rows, int64_t limit,
                                  int site, struct cuda_id_record *rec);

/* ---- cuda_llama_kernels.cu: the llama group (zero/backend_llama.h), the cpu's bits ---- */
struct zero_rope_params;
cudaError_t cuda_launch_rmsnorm_forward(cudaStream_t st, float *y, float *rstd, const float *x,
                                        const float *weight, int64_t rows, int64_t cols, float eps);
cudaError_t cuda_launch_rmsnorm_backward(cudaStream_t st, float *dx, float *dweight,
                                         const float *dy, const float *x, const float *weight,
                                         const float *rstd, int64_t rows, int64_t cols,
                                         float dx_beta, float w_beta);
cudaError_t cuda_launch_rope_table(cudaStream_t st, float *cos_t, float *sin_t, int64_t T,
                                   int64_t D, const struct zero_rope_params *p);
cudaError_t cuda_launch_rope_apply(cudaStream_t st, float *x, const float *cos_t,
                                   const float *sin_t, int64_t rows, int64_t T, int64_t heads,
                                   int64_t D, int inverse);
cudaError_t cuda_launch_swiglu_forward(cudaStream_t st, float *h, const float *gate,
                                       const float *up, size_t n);
cudaError_t cuda_launch_swiglu_backward(cudaStream_t st, float *dgate, float *dup, const float *dh,
                                        const float *gate, const float *up, size_t n);
cudaError_t cuda_launch_gqa_pack(cudaStream_t st, float *qkv, const float *q, const float *k,
                                 const float *v, int64_t rows, int64_t H, int64_t KV, int64_t D);
cudaError_t cuda_launch_gqa_unpack(cudaStream_t st, float *dq, float *dk, float *dv,
                                   const float *dqkv, int64_t rows, int64_t H, int64_t KV,
                                   int64_t D);

/* ---- cuda_quant.cu: the quant group (zero/backend_quant.h) ---- */
cudaError_t cuda_launch_quantize_int8(cudaStream_t st, const void *x, enum zero_dtype t, size_t n,
                                      size_t block, float *scales, int8_t *q);
cudaError_t cuda_launch_dequantize_int8(cudaStream_t st, const float *scales, const int8_t *q,
                                        size_t n, size_t block, void *y, enum zero_dtype t);
cudaError_t cuda_launch_quantize_int4(cudaStream_t st, const void *x, enum zero_dtype t, size_t n,
                                      size_t block, float *scales, uint8_t *q);
cudaError_t cuda_launch_dequantize_int4(cudaStream_t st, const float *scales, const uint8_t *q,
                                        size_t n, size_t block, void *y, enum zero_dtype t);

#ifdef __cplusplus
}
#endif

#endif

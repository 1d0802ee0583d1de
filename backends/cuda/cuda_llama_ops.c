/* The llama group of the cuda backend (zero/backend_llama.h): the shared argument
 * checks (src/base/backend_contract.c), then the kernels of cuda_llama_kernels.cu on
 * the compute stream. They compute the cpu backend's bits in every mode. */
#include "cuda_internal.h"
#include "cuda_launch.h"
#include "base/backend_contract.h"
#include "zero/backend_llama.h"

/* A refusal of the contract, in the backend's words. */
#define CONTRACT(call)                                                                             \
    ZERO_CONTRACT(call, cuda_fail(s, zero_contract_rc_, "%s", zero_contract_why_))
#define WHY ZERO_CONTRACT_WHY

static int rmsnorm_forward(void *self, float *y, float *rstd, const float *x, const float *weight,
                           int64_t rows, int64_t cols, float eps)
{
    struct cuda_state *s = self;
    CONTRACT(zero_contract_rmsnorm("rmsnorm_forward", rows, cols, WHY));
    return cuda_check(s,
                      cuda_launch_rmsnorm_forward(s->compute, y, rstd, x, weight, rows, cols, eps),
                      "rmsnorm_forward");
}

static int rmsnorm_backward(void *self, float *dx, float *dweight, const float *dy, const float *x,
                            const float *weight, const float *rstd, int64_t rows, int64_t cols,
                            float dx_beta, float w_beta)
{
    struct cuda_state *s = self;
    CONTRACT(zero_contract_rmsnorm("rmsnorm_backward", rows, cols, WHY));
    return cuda_check(s,
                      cuda_launch_rmsnorm_backward(s->compute, dx, dweight, dy, x, weight, rstd,
                                                   rows, cols, dx_beta, w_beta),
                      "rmsnorm_backward");
}

static int rope_table(void *self, float *cos_t, float *sin_t, int64_t T, int64_t D,
                      const struct zero_rope_params *p)
{
    struct cuda_state *s = self;
    CONTRACT(zero_contract_rope("rope_table", T, 1, D, p, WHY));
    return cuda_check(s, cuda_launch_rope_table(s->compute, cos_t, sin_t, T, D, p), "rope_table");
}

static int rope_apply(void *self, float *x, const float *cos_t, const float *sin_t, int64_t rows,
                      int64_t T, int64_t heads, int64_t D, int inverse)
{
    struct cuda_state *s = self;
    CONTRACT(zero_contract_rope("rope_apply", T, heads, D, NULL, WHY));
    return cuda_check(
        s, cuda_launch_rope_apply(s->compute, x, cos_t, sin_t, rows, T, heads, D, inverse),
        "rope_apply");
}

static int swiglu_forward(void *self, float *h, const float *gate, const float *up, size_t n)
{
    struct cuda_state *s = self;
    return cuda_check(s, cuda_launch_swiglu_forward(s->compute, h, gate, up, n), "swiglu_forward");
}

static int swiglu_backward(void *self, float *dgate, float *dup, const float *dh, const float *gate,
                           const float *up, size_t n)
{
    struct cuda_state *s = self;
    return cuda_check(s, cuda_launch_swiglu_backward(s->compute, dgate, dup, dh, gate, up, n),
                      "swiglu_backward");
}

static int gqa_pack(void *self, float *qkv, const float *q, const float *k, const float *v,
                    int64_t rows, int64_t H, int64_t KV, int64_t D)
{
    struct cuda_state *s = self;
    CONTRACT(zero_contract_gqa("gqa_pack", rows, H, KV, D, WHY));
    return cuda_check(s, cuda_launch_gqa_pack(s->compute, qkv, q, k, v, rows, H, KV, D),
                      "gqa_pack");
}

static int gqa_unpack(void *self, float *dq, float *dk, float *dv, const float *dqkv, int64_t rows,
                      int64_t H, int64_t KV, int64_t D)
{
    struct cuda_state *s = self;
    CONTRACT(zero_contract_gqa("gqa_unpack", rows, H, KV, D, WHY));
    return cuda_check(s, cuda_launch_gqa_unpack(s->compute, dq, dk, dv, dqkv, rows, H, KV, D),
                      "gqa_unpack");
}

const struct zero_llama_ops cuda_llama_ops = {
    .version = ZERO_LLAMA_OPS_VERSION,
    .rmsnorm_forward = rmsnorm_forward,
    .rmsnorm_backward = rmsnorm_backward,
    .rope_table = rope_table,
    .rope_apply = rope_apply,
    .swiglu_forward = swiglu_forward,
    .swiglu_backward = swiglu_backward,
    .gqa_pack = gqa_pack,
    .gqa_unpack = gqa_unpack,
};

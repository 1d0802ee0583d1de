/* The attention-state test backend (attention_state_backend.h). Private buffers are
 * malloc'd host memory (the cpu backend's entries take any host memory), so the
 * ledger shows only what the engine and src/nn allocate. */
#include "attention_state_backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zero/error.h"

static const struct zero_backend *cpu;
static struct zero_backend table;
static struct zero_attention_ops group;

static size_t state_floats(int64_t B, int64_t T, int64_t NH)
{
    return (size_t)(B * NH * T);
}

static void as_state_floats(void *self, int64_t B, int64_t T, int64_t C, int64_t NH,
                            enum zero_dtype matmul_type, size_t *att, size_t *scratch)
{
    (void)self, (void)C, (void)matmul_type;
    *att = *scratch = state_floats(B, T, NH);
}

/* the contract's sizes: the plain entries keep the probabilities */
static void as_contract_floats(void *self, int64_t B, int64_t T, int64_t C, int64_t NH,
                               enum zero_dtype matmul_type, size_t *att, size_t *scratch)
{
    (void)self, (void)C, (void)matmul_type;
    *att = *scratch = (size_t)(B * NH * T * T);
}

/* probs (B, NH, T, T) and y (B*T, C) from qkv: the cpu entry into private buffers */
static int cpu_forward(void *self, float **y, float **probs, const float *qkv, int64_t B, int64_t T,
                       int64_t C, int64_t NH, enum zero_dtype mt)
{
    *probs = malloc((size_t)(B * NH * T * T) * sizeof(float));
    *y = malloc((size_t)(B * T * C) * sizeof(float));
    if (*probs == NULL || *y == NULL)
        return ZERO_ENOMEM;
    return cpu->attention_forward(self, *y, *probs, qkv, B, T, C, NH, mt);
}

/* the state: per (b, h, query i) the diagonal probability att[i, i] */
static float state_of(const float *probs, int64_t q, int64_t T)
{
    return probs[q * T + q % T];
}

static int as_forward(void *self, float *y, float *att, const float *qkv, int64_t B, int64_t T,
                      int64_t C, int64_t NH, enum zero_dtype mt)
{
    float *y_own = NULL, *probs = NULL;
    int rc = cpu_forward(self, &y_own, &probs, qkv, B, T, C, NH, mt);
    if (rc == ZERO_OK) {
        memcpy(y, y_own, (size_t)(B * T * C) * sizeof(float));
        for (size_t q = 0; q < state_floats(B, T, NH); q++)
            att[q] = state_of(probs, (int64_t)q, T);
    }
    free(y_own);
    free(probs);
    return rc;
}

static int as_backward(void *self, float *dqkv, float *scratch, const float *dy, const float *qkv,
                       const float *att, int64_t B, int64_t T, int64_t C, int64_t NH,
                       enum zero_dtype mt)
{
    float *y = NULL, *probs = NULL, *katt = malloc((size_t)(B * NH * T * T) * sizeof(float));
    int rc = katt != NULL ? cpu_forward(self, &y, &probs, qkv, B, T, C, NH, mt) : ZERO_ENOMEM;
    const size_t n = state_floats(B, T, NH);
    for (size_t q = 0; q < n && rc == ZERO_OK; q++) {
        const float want = state_of(probs, (int64_t)q, T);
        if (memcmp(&att[q], &want, sizeof want) != 0) {
            fprintf(stderr, "attention state backend: att[%zu] = %.9g, the forward kept %.9g\n", q,
                    att[q], want);
            rc = ZERO_EINVAL;
        }
    }
    if (rc == ZERO_OK)
        rc = cpu->attention_backward(self, dqkv, katt, dy, qkv, probs, B, T, C, NH, mt);
    for (size_t q = 0; q < n && rc == ZERO_OK; q++)
        scratch[q] = NAN;
    free(y);
    free(probs);
    free(katt);
    return rc;
}

/* *out (n fp32) = x (n, t) widened, a private copy */
static int widen(void *self, float **out, const void *x, enum zero_dtype t, size_t n)
{
    *out = malloc(n * sizeof(float));
    return *out == NULL ? ZERO_ENOMEM : cpu->cast(self, *out, ZERO_F32, x, t, n);
}

static int as_forward_stored(void *self, void *y, float *att, const void *qkv, enum zero_dtype t,
                             int64_t B, int64_t T, int64_t C, int64_t NH, enum zero_dtype mt)
{
    const size_t ny = (size_t)(B * T * C);
    float *q32 = NULL, *y32 = malloc(ny * sizeof(float));
    int rc = y32 != NULL ? widen(self, &q32, qkv, t, (size_t)(3 * B * T * C)) : ZERO_ENOMEM;
    if (rc == ZERO_OK)
        rc = table.attention_forward(self, y32, att, q32, B, T, C, NH, mt);
    if (rc == ZERO_OK)
        rc = cpu->cast(self, y, t, y32, ZERO_F32, ny);
    free(q32);
    free(y32);
    return rc;
}

static int as_backward_stored(void *self, float *dqkv, float *scratch, const float *dy,
                              const void *qkv, enum zero_dtype t, const float *att, int64_t B,
                              int64_t T, int64_t C, int64_t NH, enum zero_dtype mt)
{
    float *q32 = NULL;
    int rc = widen(self, &q32, qkv, t, (size_t)(3 * B * T * C));
    if (rc == ZERO_OK)
        rc = table.attention_backward(self, dqkv, scratch, dy, q32, att, B, T, C, NH, mt);
    free(q32);
    return rc;
}

const struct zero_backend *attention_state_backend(const struct zero_backend *cpu_table,
                                                   unsigned flags)
{
    cpu = cpu_table;
    table = *cpu_table;
    if (flags == 0)
        return &table;
    group = (struct zero_attention_ops){
        .version = ZERO_ATTENTION_OPS_VERSION,
        .attention_state_floats = as_contract_floats,
        .attention_forward_stored = as_forward_stored,
        .attention_backward_stored = as_backward_stored,
    };
    if (flags & ATTN_STATE) {
        group.attention_state_floats = as_state_floats;
        table.attention_forward = as_forward;
        table.attention_backward = as_backward;
    }
    table.attention = &group;
    return &table;
}

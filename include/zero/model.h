/* Models as sequences of units.
 *
 * A unit is the group of parameters fetched and released together (a layer or
 * a block). It declares its parameters, and computes forward and backward on
 * activations through the backend. The engine owns all parameter, gradient and
 * activation memory and hands the unit pointers to them; under stage 3 those
 * pointers are valid only while the unit is gathered. */
#ifndef ZERO_MODEL_H
#define ZERO_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "zero/backend.h"
#include "zero/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_NAME_LEN 96
#define ZERO_MAX_DIMS 4
#define ZERO_UNIT_MAX_PARAMS 16
/* Elements a unit, and a whole model, may hold (2^56): padding and the byte
 * counts of the model states (16 bytes an element and more) then fit 64 bits. */
#define ZERO_MAX_NUMEL ((int64_t)1 << 56)
#define ZERO_UNIT_MAX_EXTERNAL 4
/* Units a model may hold (Llama 3.1 405B has 129): each new unit's name is checked
 * against the others, so building a model is quadratic in its units (at this many, 0.1 s
 * of checks), and a config naming 2^30 layers is refused at once. */
#define ZERO_MAX_UNITS 4096

enum zero_init_kind {
    ZERO_INIT_ZEROS = 0,
    ZERO_INIT_ONES,
    ZERO_INIT_UNIFORM, /* U(-a, a) */
    ZERO_INIT_NORMAL   /* N(0, a^2) */
};

/* A parameter a unit owns. Its full name is "<unit name>.<name>". */
struct zero_param_spec {
    char name[ZERO_NAME_LEN];
    int ndim;
    int64_t shape[ZERO_MAX_DIMS];
    enum zero_init_kind init;
    float init_a;
    /* 1: the unit reads this parameter only as a GEMM operand (nn_gemm). Where the
     * products read it in the compute dtype (zero_unit_ctx.param_lowp) the engine then
     * gives it no fp32 copy: param[i] points at memory with undefined contents.
     * 0 (the default): always converted. */
    int gemm_only;
};

/* A parameter owned by another (earlier) unit that this unit also uses, e.g. a
 * language-model head tied to the token embedding. */
struct zero_external_ref {
    int unit;  /* index of the owning unit in the model */
    int param; /* index among that unit's own parameters */
};

/* The batch of one micro-step on this rank (host memory). */
struct zero_batch {
    int64_t rows;          /* samples (or tokens) in this micro-batch */
    const float *inputs;   /* (rows, units[0].in_width) or NULL */
    const int32_t *tokens; /* (rows) or NULL: for embedding units */
    const int32_t *labels; /* (rows) or NULL: for the loss unit */
};

/* What a unit's forward and backward see. All pointers are backend memory. */
struct zero_unit_ctx {
    const struct zero_backend *be;
    void *bself;
    int64_t rows;
    /* param[i] / grad[i]: own parameters first (i < nparams), then externals
     * in declaration order. grad_accumulate[i] = 1 means grad[i] already holds
     * another unit's contribution for this micro-step: add to it; 0: overwrite. */
    float *param[ZERO_UNIT_MAX_PARAMS + ZERO_UNIT_MAX_EXTERNAL];
    /* The GEMM operand dtype (libzero.matmul): ZERO_F32, or the compute dtype
     * (fp16/bf16). In the latter case param_lowp[i] is parameter i in that dtype
     * (the engine's own buffer, not a copy) and the layers round activations to
     * it before each product (nn_gemm); sums and results stay fp32. */
    enum zero_dtype matmul_type;
    const void *param_lowp[ZERO_UNIT_MAX_PARAMS + ZERO_UNIT_MAX_EXTERNAL];
    float *grad[ZERO_UNIT_MAX_PARAMS + ZERO_UNIT_MAX_EXTERNAL];
    int grad_accumulate[ZERO_UNIT_MAX_PARAMS + ZERO_UNIT_MAX_EXTERNAL];
    void *saved;           /* saved_bytes(ctx) kept from forward to backward */
    void *scratch;         /* scratch_bytes(ctx), contents undefined on entry */
    const int32_t *tokens; /* (rows) device copy of batch tokens, or NULL */
    const int32_t *labels; /* (rows) device copy of batch labels, or NULL */
    float dloss;           /* loss unit: d(micro-batch loss)/d(per-row loss), e.g. 1/rows */
    char *errmsg;          /* on failure the unit writes its reason here */
    size_t errlen;
    /* (Fields added after the first release go at the end: the layout of the ones
     * before stays.) The dtype of param_lowp. With fp32 GEMMs (matmul_type ZERO_F32) in mixed
     * precision the engine may still fill param_lowp (a backend with
     * ZERO_CAP_WIDENING_GEMM): nn_gemm then passes that exact compute-dtype value to
     * the backend instead of param[i] (same product, no conversion). */
    enum zero_dtype param_lowp_type;
    /* (Added after param_lowp_type.) The direct route of a gradient in mixed precision:
     * where grad_lowp[i] is not NULL the layer MAY write the final value of gradient i
     * there, in grad_lowp_type (the compute dtype), instead of writing grad[i] — only
     * with one product that writes the whole gradient with beta 0 (nn_gemm_grad). It
     * then sets grad_lowp_written[i] = 1 and leaves grad[i] alone. The engine offers it
     * only where nothing else adds to gradient i this micro-step (grad_accumulate[i] is
     * 0 and no later unit uses the parameter) and the backend rounds a 16-bit C once
     * (ZERO_CAP_ROUNDING_GEMM_STORE): the bits equal grad[i] cast afterwards. */
    void *grad_lowp[ZERO_UNIT_MAX_PARAMS + ZERO_UNIT_MAX_EXTERNAL];
    enum zero_dtype grad_lowp_type;
    int grad_lowp_written[ZERO_UNIT_MAX_PARAMS + ZERO_UNIT_MAX_EXTERNAL];
    /* (Added after grad_lowp_written.) The dtype of the activations the unit saves for
     * its backward and hands from one sub-layer to the next (libzero.activations):
     * ZERO_F32, or the compute dtype where the engine trains in mixed precision with
     * libzero.activations "compute" and the unit says it can (stored_activations). Each
     * value is rounded once when stored and widened exactly when read; the unit's
     * input x, output y and every gradient stay fp32. */
    enum zero_dtype act_type;
};

struct zero_unit;

struct zero_unit_ops {
    const char *kind; /* "linear", "mlp_block", ... */
    /* The bytes of ctx->saved (kept from forward to backward) and of ctx->scratch
     * (contents undefined on entry) that forward and backward use. ctx has be, bself,
     * rows, matmul_type and act_type filled and nothing else; be NULL asks for the
     * sizes of the plain backend entries' contract (a caller with no backend). The
     * answer may depend on the backend's kernels (a fused attention that keeps no
     * T x T matrix: zero/backend_attention.h); a unit answers the same for the same ctx
     * every time, and the engine hands forward and backward buffers of these sizes. */
    size_t (*saved_bytes)(const struct zero_unit *u, const struct zero_unit_ctx *ctx);
    size_t (*scratch_bytes)(const struct zero_unit *u, const struct zero_unit_ctx *ctx);
    /* y (rows, out_width) from x (rows, in_width); x is NULL when in_width == 0.
     * A loss unit writes its per-row losses to y (rows, 1). */
    int (*forward)(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x, float *y);
    /* From dy (rows, out_width) (NULL for a loss unit) and the forward input x,
     * writes dx (rows, in_width) (dx is NULL for the first unit) and the
     * parameter gradients. */
    int (*backward)(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x,
                    const float *dy, float *dx);
    void (*destroy)(struct zero_unit *u); /* frees impl; may be NULL */
    /* Loss units only, may be NULL: writes the predictions (rows, predict_width)
     * that the loss is computed from (e.g. logits) instead of per-row losses.
     * Used for evaluation and sampling; needs no labels. */
    int (*predict)(const struct zero_unit *u, struct zero_unit_ctx *ctx, const float *x, float *y);
    /* 1: the unit can keep the activations it saves in the compute dtype: with
     * libzero.activations "compute" in mixed precision the engine then hands it
     * ctx->act_type = the compute dtype (sizing included). 0: always ZERO_F32. */
    int stored_activations;
};

struct zero_unit {
    char name[ZERO_NAME_LEN]; /* e.g. "layers.3" */
    const struct zero_unit_ops *ops;
    void *impl; /* the layer's own host-side settings */
    int64_t in_width, out_width;
    int is_loss;
    int64_t predict_width; /* loss units with predict(): columns of the predictions */
    /* Activation checkpointing: keep only the unit's input and output between
     * forward and backward, and recompute its saved activations in backward. */
    int checkpoint;
    int nparams;
    struct zero_param_spec params[ZERO_UNIT_MAX_PARAMS];
    int nexternal;
    struct zero_external_ref external[ZERO_UNIT_MAX_EXTERNAL];
};

struct zero_model {
    int nunits;
    struct zero_unit **units;
    /* rows of a micro-batch per sample: a sequence model's block size (a sample is T
     * token rows); 0 or 1: a sample is one row. The memory plan sizes activations
     * for train_micro_batch_size_per_gpu samples of it. */
    int64_t rows_per_sample;
};

int zero_model_create(struct zero_model **m, struct zero_error *err);
/* Frees a unit that was not added to a model (a constructor's cleanup). */
void zero_unit_destroy(struct zero_unit *u);
/* Takes ownership of u (also on failure). Checks widths chain and names are unique. */
int zero_model_add(struct zero_model *m, struct zero_unit *u, struct zero_error *err);
void zero_model_destroy(struct zero_model *m);

/* Helpers for unit implementations. */
int64_t zero_param_numel(const struct zero_param_spec *p);
/* Allocates a unit with ops/impl/name set and no parameters. */
int zero_unit_new(struct zero_unit **u, const char *name, const struct zero_unit_ops *ops,
                  void *impl, int64_t in_width, int64_t out_width, struct zero_error *err);
/* Declares an owned parameter; returns its index, or -1 with err set. */
int zero_unit_add_param(struct zero_unit *u, const char *name, int ndim, const int64_t *shape,
                        enum zero_init_kind init, float init_a, struct zero_error *err);

/* Total parameters in the model (Ψ), not counting padding. */
int64_t zero_model_numel(const struct zero_model *m);
/* Finds "unit.param" by full name: returns 0 and fills unit/param indices, or -1. */
int zero_model_find_param(const struct zero_model *m, const char *full_name, int *unit, int *param);

#ifdef __cplusplus
}
#endif

#endif

/* Built-in units with hand-written forward and backward (src/nn/). Parameter
 * names follow PyTorch's state_dict so weights interchange by name:
 *   linear:      weight (out, in), bias (out)
 *   mlp_block:   "0.weight" (hidden, width), "0.bias", "2.weight" (width, hidden), "2.bias"
 *                — the names of nn.Sequential(Linear, GELU, Linear)
 *   classifier:  weight (classes, in), bias (classes), with softmax cross-entropy
 * Initialization follows torch.nn.Linear: U(-1/sqrt(in), 1/sqrt(in)) for weight and bias. */
#ifndef ZERO_NN_H
#define ZERO_NN_H

#include "zero/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y (rows, out) = x (rows, in) @ weight^T + bias */
int zero_nn_linear(struct zero_unit **u, const char *name, int64_t in, int64_t out, int bias,
                   struct zero_error *err);
/* y (rows, width) = gelu(x) — no parameters */
int zero_nn_gelu(struct zero_unit **u, const char *name, int64_t width, enum zero_gelu kind,
                 struct zero_error *err);
/* y (rows, width) = x + Linear(hidden, width)(gelu(Linear(width, hidden)(x))) */
int zero_nn_mlp_block(struct zero_unit **u, const char *name, int64_t width, int64_t hidden,
                      struct zero_error *err);
/* loss per row (rows, 1) = cross_entropy(x (rows, in) @ weight^T + bias, label) */
int zero_nn_classifier(struct zero_unit **u, const char *name, int64_t in, int64_t classes,
                       struct zero_error *err);

/* The toy model of examples/train_mlp: `layers` residual MLP blocks of width
 * `hidden` (inner 4*hidden) named layers.0 .. layers.L-1, then "classifier". */
int zero_nn_build_mlp(struct zero_model **m, int64_t hidden, int layers, int64_t classes,
                      struct zero_error *err);

#ifdef __cplusplus
}
#endif

#endif

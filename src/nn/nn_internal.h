/* Pieces the built-in layers share (not installed). */
#ifndef ZERO_NN_INTERNAL_H
#define ZERO_NN_INTERNAL_H

#include "zero/model.h"

/* Writes the message to ctx->errmsg; returns rc. */
int nn_unit_fail(struct zero_unit_ctx *ctx, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Writes "<what>: <backend's last error>" to ctx->errmsg; returns rc. */
int nn_backend_fail(struct zero_unit_ctx *ctx, int rc, const char *what);

/* Declares "<prefix>weight" (out, in) and, if bias, "<prefix>bias" (out) with
 * torch.nn.Linear's initialization U(-1/sqrt(in), 1/sqrt(in)), in that order. */
int nn_add_affine_params(struct zero_unit *u, const char *prefix, int64_t in, int64_t out, int bias,
                         struct zero_error *err);

/* y (rows, out) = x (rows, in) @ w^T (in, out) + b (out); b may be NULL. */
int nn_affine_forward(struct zero_unit_ctx *ctx, const float *x, const float *w, const float *b,
                      float *y, int64_t in, int64_t out);

/* The gradients of nn_affine_forward from dy (rows, out):
 *   dx (rows, in) = dy @ w (out, in) + dx_beta * dx   (skipped when dx is NULL)
 *   dw (out, in)  = dy^T @ x (rows, in) + (acc_w ? dw : 0)
 *   db (out)      = sum over rows of dy + (acc_b ? db : 0)   (skipped when db is NULL) */
int nn_affine_backward(struct zero_unit_ctx *ctx, const float *x, const float *w, const float *dy,
                       float *dx, float dx_beta, float *dw, int acc_w, float *db, int acc_b,
                       int64_t in, int64_t out);

#endif

/* One unit's compute (unit_compute.c). */
#ifndef ZERO_ENGINE_UNIT_COMPUTE_H
#define ZERO_ENGINE_UNIT_COMPUTE_H

#include <stddef.h>

struct zero_engine;
struct zero_error;
struct zero_unit_ctx;

int compute_fetch(struct zero_engine *e, int u, struct zero_error *err);
int compute_release(struct zero_engine *e, int u, struct zero_error *err);
int compute_fill_params(struct zero_engine *e, int u, struct zero_unit_ctx *ctx,
                        struct zero_error *err);
void compute_drop_param_copies(struct zero_engine *e, int u);
void compute_init_ctx(struct zero_engine *e, struct zero_unit_ctx *ctx, char *msg, size_t len);
/* The bytes unit u saves from forward to backward for a micro-batch of rows rows, in
 * the dtype compute_fill_params hands it (ctx->act_type: libzero.activations). */
size_t compute_saved_bytes(const struct zero_engine *e, int u, int64_t rows);
/* The bytes of unit u's scratch in forward and backward (the same for both) */
size_t compute_scratch_bytes(const struct zero_engine *e, int u, int64_t rows);
/* Whether unit u's layers round GEMM operands or widen stored activations into
 * workspace of their own (low-precision products or stored activations) */
int compute_lowers_operands(const struct zero_engine *e, int u);
int compute_failed(struct zero_engine *e, int u, int rc, const char *pass, const char *msg,
                   struct zero_error *err);

#endif

/* Exact mode with rank-major atoms (atom_order.c): a rank sums its micro-steps, its
 * subtree of the canonical tree, and the gradient is reduced once per step; stages 0-3. */
#ifndef ZERO_ENGINE_ATOM_ORDER_H
#define ZERO_ENGINE_ATOM_ORDER_H

struct zero_engine;
struct zero_error;

/* Exact mode, libzero.atom_order = rank_major, accumulation A > 1. */
int atom_order_reduces_once(const struct zero_engine *e);
/* The rank's fp32 sum (padded,) of unit u, reduced into `mine` (its part, cdt);
 * stage 0 all-gathers it into the whole gradient. */
int atom_order_reduce(struct zero_engine *e, int u, float *sum, void *mine, struct zero_error *err);

#endif

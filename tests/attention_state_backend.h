/* A cpu test backend whose attention keeps what a fused (flash) attention keeps: a
 * (B, NH, T) state in att and (B, NH, T) floats of scratch (its attention group),
 * and the _stored entries that take qkv and y in the stored activation dtype. It stands
 * in for the cuda backend's flash attention, whose kernels need a GPU: src/nn must
 * size, lay out and hand over those buffers so that the run keeps the plain cpu
 * run's bits. Shared by test_gpt_stages and test_attention_state. */
#ifndef ZERO_TEST_ATTENTION_STATE_BACKEND_H
#define ZERO_TEST_ATTENTION_STATE_BACKEND_H

#include "zero/backend.h"
#include "zero/backend_attention.h"

/* Either flag installs the attention group (a group comes whole: state_floats and the
 * _stored entries that read and write 16-bit qkv and y). */
#define ATTN_STATE 1u /* the state: attention_state_floats B*NH*T each, forward saves only that */
#define ATTN_TYPED 2u /* the contract's state (B*NH*T*T), only the _stored entries added */

/* cpu's table with the group flags asks for (static storage: one at a time). The
 * forward runs the cpu attention into a private T x T buffer and keeps, per query,
 * its diagonal probability; the backward recomputes the forward, checks that state
 * to the bit (ZERO_EINVAL, message on stderr, where it was overwritten or misplaced)
 * and runs the cpu backward, then poisons its scratch with NaNs (contents undefined
 * on exit). the _stored entries widen qkv (cpu cast), call the table's own fp32
 * entry and round y (cpu cast). */
const struct zero_backend *attention_state_backend(const struct zero_backend *cpu, unsigned flags);

#endif

/* The memory ledger: every byte a backend allocates carries a tag, and the
 * ledger keeps current and peak bytes per tag on this rank. Model-state tags
 * (params, grads, master, optimizer) are what the ZeRO paper's formulas count. */
#ifndef ZERO_LEDGER_H
#define ZERO_LEDGER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum zero_tag {
    ZERO_TAG_PARAMS = 0,  /* parameters in compute dtype (whole, or the stage-3 shard) */
    ZERO_TAG_GRADS,       /* gradients in the compute dtype (whole or shard) */
    ZERO_TAG_MASTER,      /* separate fp32 master shard (mixed precision only) */
    ZERO_TAG_OPTIM,       /* optimizer state: Adam exp_avg/exp_avg_sq, SGD momentum */
    ZERO_TAG_GATHER,      /* stage 3: gathered whole units, live between gather and release */
    ZERO_TAG_BUCKETS,     /* transient gradient buffers and reduce buckets */
    ZERO_TAG_ACTIVATIONS, /* saved forward activations */
    ZERO_TAG_WORKSPACE,   /* scratch: converted copies, norms, staging */
    ZERO_TAG_COMM,        /* backend-owned collective buffers (shared-memory windows) */
    ZERO_TAG_ACCUM,       /* fp32 partial sums across micro-steps (accumulation > 1 only) */
    ZERO_TAG_HPZ,         /* hpZ: the secondary parameter shards (compute dtype, 1/g each) */
    ZERO_TAG_COUNT
};

struct zero_ledger {
    int64_t current[ZERO_TAG_COUNT];
    int64_t peak[ZERO_TAG_COUNT];
    int64_t current_total;
    int64_t peak_total;
    int64_t allocations; /* number of live allocations */
};

const char *zero_tag_name(enum zero_tag tag); /* "params", "grads", ... */

void zero_ledger_reset(struct zero_ledger *l);
/* Record an allocation (bytes > 0) or a free (bytes < 0) under tag. */
void zero_ledger_add(struct zero_ledger *l, enum zero_tag tag, int64_t bytes);
/* Peak values restart from the current values (e.g. at the start of a step). */
void zero_ledger_reset_peaks(struct zero_ledger *l);
/* Bytes of the model-state tags: params + grads + master + optimizer. */
int64_t zero_ledger_model_states(const struct zero_ledger *l);

#ifdef __cplusplus
}
#endif

#endif

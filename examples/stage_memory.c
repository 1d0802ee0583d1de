/* See stage_memory.h. */
#include <inttypes.h>
#include <string.h>

#include "program/example_agree.h"
#include "stage_memory.h"

#define MIB (1024.0 * 1024.0)

static const char *const formula_fp32[4] = {"16Ψ", "8Ψ + 8Ψ/N", "4Ψ + 12Ψ/N", "16Ψ/N"};
static const char *const formula_mixed[4] = {"16Ψ", "4Ψ + 12Ψ/N", "2Ψ + 14Ψ/N", "16Ψ/N"};

struct stage_row {
    struct zero_ledger created; /* right after creation: the model states */
    struct zero_ledger host;    /* host memory after creation: offloaded states */
    struct zero_ledger nvme;    /* NVMe swap files after creation (ZeRO-Infinity) */
    struct zero_ledger stepped; /* after one step: peaks of the transient tags */
    struct zero_theory theory;
};

static int one_stage(const struct zero_config *base, int stage, struct zero_model *model,
                     struct zero_device *dev, const struct zero_batch *batch, struct stage_row *row,
                     struct zero_comm *comm, struct zero_error *err)
{
    struct zero_config cfg = *base;
    cfg.zero_optimization.stage = stage;
    cfg.train_micro_batch_size_per_gpu = base->train_micro_batch_size_per_gpu;
    cfg.gradient_accumulation_steps = 1;
    cfg.train_batch_size = 0; /* derived: micro-batch x world */
    /* offload what this stage can: the optimizer from stage 1, the parameters at 3
     * (a section it cannot take goes back to its defaults, NVMe keys included) */
    struct zero_config defaults;
    zero_config_defaults(&defaults);
    if (stage == 0) {
        cfg.zero_optimization.offload_optimizer = defaults.zero_optimization.offload_optimizer;
        cfg.aio = defaults.aio;
    }
    if (stage < 3)
        cfg.zero_optimization.offload_param = defaults.zero_optimization.offload_param;
    struct zero_engine *e = NULL;
    zero_ledger_reset_peaks(&dev->ledger);
    int rc = example_agree(zero_engine_create(&e, &cfg, model, dev, err), err, comm);
    if (!rc) {
        row->created = dev->ledger;
        row->host = dev->host_ledger;
        row->nvme = *zero_engine_nvme_ledger(e);
        rc = zero_engine_forward(e, batch, NULL, err);
        if (!rc)
            rc = zero_engine_backward(e, err);
        if (!rc)
            rc = zero_engine_step(e, NULL, err);
        rc = example_agree(rc, err, comm);
    }
    if (!rc) {
        row->stepped = dev->ledger;
        zero_engine_theory(e, &row->theory);
    }
    zero_engine_destroy(e);
    return rc;
}

int stage_memory_table(FILE *out, const struct zero_config *cfg, struct zero_model *model,
                       struct zero_device *dev, const struct zero_batch *batch,
                       struct zero_comm *comm, struct zero_error *err)
{
    int rank = zero_comm_rank(comm), world = zero_comm_size(comm);
    struct stage_row rows[4];
    int mismatches = 0;
    for (int stage = 0; stage < 4; stage++) {
        int rc = one_stage(cfg, stage, model, dev, batch, &rows[stage], comm, err);
        if (rc)
            return rc;
        const struct stage_row *r = &rows[stage];
        int bad = zero_ledger_model_states(&r->created) != r->theory.model_state_bytes ||
                  zero_ledger_model_states(&r->host) != r->theory.host_state_bytes ||
                  zero_ledger_model_states(&r->nvme) != r->theory.nvme_state_bytes;
        zero_comm_allreduce_int(comm, &bad, ZERO_COMM_MAX);
        mismatches += bad;
    }
    if (mismatches)
        zero_fail(err, ZERO_EMISMATCH, "%d stage(s) differ from the theory", mismatches);
    if (rank != 0)
        return mismatches ? ZERO_EMISMATCH : ZERO_OK;
    int offload = cfg->zero_optimization.offload_optimizer.device != ZERO_OFFLOAD_NONE;
    int nvme = cfg->zero_optimization.offload_optimizer.device == ZERO_OFFLOAD_NVME;
    int mixed = cfg->fp16.enabled || cfg->bf16.enabled;
    const char *const *formula = mixed ? formula_mixed : formula_fp32;
    fprintf(out,
            "\nmemory per rank by stage (rank 0, MiB; model states measured next to the "
            "ZeRO paper, %s with Adam; one step each)\n",
            mixed ? "mixed precision: 2 + 2 + 4 + 8 bytes per parameter"
                  : "fp32: 4 + 4 + 8 bytes per parameter");
    if (offload)
        fprintf(out,
                "  (ZeRO-Offload: device columns; \"host\" is the offloaded states%s, "
                "measured and checked against the theory)\n",
                nvme ? ", \"nvme\" those in the NVMe swap files (ZeRO-Infinity)" : "");
    fprintf(out, "  stage %8s %8s %8s %8s %9s %9s %-11s %8s %8s %8s%s%s\n", "params", "grads",
            "master", "optim", "measured", "theory", "formula", "gather", "buckets", "activ.",
            offload ? "     host" : "", nvme ? "     nvme" : "");
    for (int stage = 0; stage < 4; stage++) {
        const struct zero_ledger *c = &rows[stage].created, *s = &rows[stage].stepped;
        int64_t measured = zero_ledger_model_states(c);
        int64_t theory = rows[stage].theory.model_state_bytes;
        int64_t host = zero_ledger_model_states(&rows[stage].host);
        int64_t on_disk = zero_ledger_model_states(&rows[stage].nvme);
        int ok = measured == theory && host == rows[stage].theory.host_state_bytes &&
                 on_disk == rows[stage].theory.nvme_state_bytes;
        char host_col[32] = "";
        if (offload)
            snprintf(host_col, sizeof host_col, " %8.2f", host / MIB);
        if (nvme)
            snprintf(host_col + strlen(host_col), sizeof host_col - strlen(host_col), " %8.2f",
                     on_disk / MIB);
        fprintf(out, "  %5d %8.2f %8.2f %8.2f %8.2f %9.2f %9.2f %-11s %8.2f %8.2f %8.2f%s  %s\n",
                stage, c->current[ZERO_TAG_PARAMS] / MIB, c->current[ZERO_TAG_GRADS] / MIB,
                c->current[ZERO_TAG_MASTER] / MIB, c->current[ZERO_TAG_OPTIM] / MIB, measured / MIB,
                theory / MIB, formula[stage], s->peak[ZERO_TAG_GATHER] / MIB,
                s->peak[ZERO_TAG_BUCKETS] / MIB, s->peak[ZERO_TAG_ACTIVATIONS] / MIB, host_col,
                ok ? "ok" : "MISMATCH");
    }
    fprintf(out,
            "  Ψ = %" PRId64 " padded elements (%" PRId64 " parameters), N = %d; gather, "
            "buckets, activ. are peaks during the step\n",
            rows[0].theory.psi_padded, rows[0].theory.psi, world);
    return mismatches ? ZERO_EMISMATCH : ZERO_OK;
}

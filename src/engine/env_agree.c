/* See env_agree.h. A variable set on some ranks only would mix two computations
 * in one run (ZERO_FP32_LOGITS on one rank: a loss that matches neither) or split
 * the ranks onto different collective paths; docs/faults.md lists the table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_agree.h"
#include "engine_internal.h"
#include "zero/fault.h"
#include "zero/knobs.h"

/* compared: the knobs of zero/knobs.h marked `agreed` (the bits or the collectives) */
#define NKNOBS ZERO_KNOB_COUNT
#define VALUE_LEN 64 /* a longer value is compared by its first 63 bytes */

int engine_env_agree(struct zero_engine *e, struct zero_error *err)
{
    char mine[NKNOBS][VALUE_LEN];
    memset(mine, 0, sizeof mine);
    for (size_t k = 0; k < NKNOBS; k++) {
        const char *v = zero_knob_info((enum zero_knob_id)k)->agreed
                            ? zero_knob((enum zero_knob_id)k)
                            : NULL; /* the others compare as unset */
        if (v)                      /* "\1" before the value: set to "" differs from unset */
            snprintf(mine[k], VALUE_LEN, "\1%s", v);
    }
    /* a value a knob does not take is an error on every rank, not a silent default */
    int rc = zero_knobs_check(err);
    if (!rc)
        rc = zero_fault_check(err);
    if (rc)
        zero_error_wrap(err, "rank %d: ", e->rank);
    char(*all)[NKNOBS][VALUE_LEN] = rc ? NULL : malloc((size_t)e->world * sizeof *all);
    if (!rc && !all)
        rc = zero_fail(err, ZERO_ENOMEM, "rank %d: the environment", e->rank);
    if ((rc = engine_agree(e, rc, ZERO_EINVAL, "has a bad environment", err))) {
        free(all);
        return rc;
    }
    if ((rc = e->be->host_all_gather(e->bself, mine, all, sizeof mine))) {
        free(all);
        return engine_backend_error(e, rc, err, "exchanging the environment");
    }
    for (int r = 1; r < e->world && !rc; r++)
        for (size_t k = 0; k < NKNOBS && !rc; k++)
            if (strcmp(all[0][k], all[r][k]) != 0)
                rc = zero_fail(err, ZERO_EMISMATCH,
                               "rank %d: %s differs between ranks: %s%s%s on rank %d, %s%s%s on "
                               "rank 0 (it changes the results or the collectives: set it alike "
                               "on every rank)",
                               e->rank, zero_knob_info((enum zero_knob_id)k)->name,
                               all[r][k][0] ? "'" : "", all[r][k][0] ? all[r][k] + 1 : "unset",
                               all[r][k][0] ? "'" : "", r, all[0][k][0] ? "'" : "",
                               all[0][k][0] ? all[0][k] + 1 : "unset", all[0][k][0] ? "'" : "");
    free(all);
    return rc;
}

/* See checkpointing.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpointing.h"

int example_checkpoint_after(struct zero_engine *e, const struct example_checkpointing *c,
                             int64_t done, struct zero_error *err)
{
    if (!c->save_dir || (done != c->total_steps && (!c->every || done % c->every != 0)))
        return ZERO_OK;
    char meta[128];
    snprintf(meta, sizeof meta, "{\"next_step\": %lld, \"samples_seen\": %lld}", (long long)done,
             (long long)(done * c->batch));
    int keep = c->keep_last > 1000000 ? 1000000 : (int)c->keep_last;
    int rc = zero_checkpoint_save(e, c->save_dir, keep, meta, err);
    if (!rc && c->rank == 0 && !c->quiet)
        printf("saved checkpoint %s/step_%06lld\n", c->save_dir, (long long)done);
    return rc ? zero_error_wrap(err, "--save-checkpoint: ") : ZERO_OK;
}

int example_resume(struct zero_engine *e, const struct example_checkpointing *c, int64_t *next_step,
                   struct zero_error *err)
{
    char *meta = NULL;
    int rc = zero_checkpoint_load(e, c->resume_dir, &meta, err);
    const char *at = meta ? strstr(meta, "\"next_step\":") : NULL;
    if (!rc && !at)
        rc = zero_fail(err, ZERO_EFORMAT, "%s: the checkpoint has no data position (next_step)",
                       c->resume_dir);
    if (!rc)
        *next_step = strtoll(at + strlen("\"next_step\":"), NULL, 10);
    free(meta);
    if (!rc && c->rank == 0 && !c->quiet)
        printf("resumed from %s at step %lld\n", c->resume_dir, (long long)*next_step);
    return rc ? zero_error_wrap(err, "--resume: ") : ZERO_OK;
}

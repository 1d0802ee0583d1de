/* See checkpointing.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "checkpointing.h"

int example_checkpoint_after(struct zero_engine *e, const struct example_checkpointing *c,
                             int64_t done, struct zero_error *err)
{
    if (!c->save_dir || (done != c->total_steps && (!c->every || done % c->every != 0)))
        return ZERO_OK;
    char meta[192];
    if (c->arch != NULL)
        snprintf(meta, sizeof meta,
                 "{\"next_step\": %lld, \"samples_seen\": %lld, \"arch\": \"%s\"}", (long long)done,
                 (long long)(done * c->batch), c->arch);
    else
        snprintf(meta, sizeof meta, "{\"next_step\": %lld, \"samples_seen\": %lld}",
                 (long long)done, (long long)(done * c->batch));
    int keep = c->keep_last > 1000000 ? 1000000 : (int)c->keep_last;
    int rc = zero_checkpoint_save(e, c->save_dir, keep, meta, err);
    if (!rc && c->rank == 0 && !c->quiet)
        printf("saved checkpoint %s/step_%06lld\n", c->save_dir, (long long)done);
    return rc ? zero_error_wrap(err, "--save-checkpoint: ") : ZERO_OK;
}

/* meta.json of the checkpoint loaded from dir (DIR/latest -> DIR/step_N, or a
 * step directory itself), for messages. */
static void meta_path(char *out, size_t len, const char *dir, int64_t step)
{
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    if (strncmp(base, "step_", 5) == 0)
        snprintf(out, len, "%s/meta.json", dir);
    else
        snprintf(out, len, "%s/step_%06lld/meta.json", dir, (long long)step);
}

/* user.next_step, parsed (jansson) and cross-checked: the trainers save after
 * step `done` with next_step = done, so it must equal the engine's restored
 * counters.global_steps (which every rank file's checksummed header repeats),
 * and its first sample, next_step * batch, must fit 64 bits. */
static int parse_next_step(const char *user, const char *file, int64_t global_steps, int64_t batch,
                           int64_t *next_step, struct zero_error *err)
{
    json_error_t jerr;
    json_t *root = user ? json_loads(user, 0, &jerr) : NULL;
    json_t *v = json_is_object(root) ? json_object_get(root, "next_step") : NULL;
    int rc = ZERO_OK;
    int64_t first = 0;
    if (!v) {
        rc = zero_fail(err, ZERO_EFORMAT, "%s: user.next_step: missing (no data position)", file);
    } else if (!json_is_integer(v)) {
        char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        rc = zero_fail(err, ZERO_EFORMAT, "%s: user.next_step: %.64s is not an integer", file,
                       text ? text : "?");
        free(text);
    } else if ((int64_t)json_integer_value(v) != global_steps) {
        rc = zero_fail(err, ZERO_EFORMAT,
                       "%s: user.next_step = %lld does not match counters.global_steps = %lld",
                       file, (long long)json_integer_value(v), (long long)global_steps);
    } else if (zero_size_mul(&first, global_steps, batch > 0 ? batch : 1,
                             "user.next_step * the global batch", err)) {
        rc = zero_error_wrap(err, "%s: ", file);
    } else {
        *next_step = global_steps;
    }
    json_decref(root);
    return rc;
}

/* The checkpoint's user.arch ("gpt2" when it has none) must be this run's: checked
 * before anything is loaded, so the message names the architectures, not a tensor. */
static int check_arch(const struct example_checkpointing *c, struct zero_error *err)
{
    if (c->arch == NULL)
        return ZERO_OK;
    struct zero_checkpoint *ck = NULL;
    int rc = zero_checkpoint_open(&ck, c->resume_dir, err);
    if (rc != ZERO_OK)
        return rc;
    struct zero_checkpoint_info info;
    zero_checkpoint_get_info(ck, &info);
    json_error_t jerr;
    json_t *root = info.user_json ? json_loads(info.user_json, 0, &jerr) : NULL;
    json_t *v = json_is_object(root) ? json_object_get(root, "arch") : NULL;
    const char *arch = json_is_string(v) ? json_string_value(v) : "gpt2";
    if (strcmp(arch, c->arch) != 0)
        rc = zero_fail(err, ZERO_EINVAL,
                       "%s/meta.json: user.arch is \"%s\"; this run is --arch %s (a checkpoint "
                       "resumes only the architecture that saved it)",
                       info.step_dir, arch, c->arch);
    json_decref(root);
    zero_checkpoint_close(ck);
    return rc;
}

int example_resume(struct zero_engine *e, const struct example_checkpointing *c, int64_t *next_step,
                   struct zero_error *err)
{
    char *meta = NULL, file[4200];
    int rc = check_arch(c, err);
    if (!rc)
        rc = zero_checkpoint_load(e, c->resume_dir, &meta, err);
    if (!rc) {
        meta_path(file, sizeof file, c->resume_dir, zero_engine_global_steps(e));
        rc = parse_next_step(meta, file, zero_engine_global_steps(e), c->batch, next_step, err);
    }
    free(meta);
    if (!rc && c->rank == 0 && !c->quiet)
        printf("resumed from %s at step %lld\n", c->resume_dir, (long long)*next_step);
    return rc ? zero_error_wrap(err, "--resume: ") : ZERO_OK;
}

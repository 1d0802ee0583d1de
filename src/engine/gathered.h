/* The gathered-parameters scope (gathered.c), which alone writes struct
 * gathered_scope. */
#ifndef ZERO_ENGINE_GATHERED_H
#define ZERO_ENGINE_GATHERED_H

struct zero_engine;
struct zero_error;

struct gathered_scope {
    int active, modifier;
    int *units;
    int n;
};

/* ZERO_OK outside a gathered-parameters scope; inside one an error naming the
 * call (what) and the scope's units. */
int engine_outside_scope(struct zero_engine *e, const char *what, struct zero_error *err);
void gathered_destroy(struct zero_engine *e);

#endif

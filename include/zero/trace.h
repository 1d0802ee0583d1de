/* A Chrome trace-event JSON writer (the format Perfetto and chrome://tracing open),
 * built as an engine observer (events.h):
 *
 *     zero_trace_create(&t, model, dev->rank, steps, nsteps, &err);
 *     zero_engine_set_observer(engine, zero_trace_observe, t);
 *     ... train ...
 *     zero_trace_write(t, dev, "trace.json", &err);   // collective: rank 0 writes
 *
 * One process (pid) per rank, named "rank r"; on each, thread 1 "compute" holds
 * forward, backward, recompute and optimizer slices, thread 2 "communication" holds
 * gathers, prefetches, waits, releases, reductions, parameter gathers and the norm
 * exchange. Every slice's args name the step, micro-step, unit, collective, bucket,
 * elements and bytes (elements x 4: fp32 on the wire) and, for a collective, the
 * elements this rank sends ((N-1)/N of the buffer, 2(N-1)/N for an all-reduce).
 * Times are microseconds since the engine was created on that rank.
 * Each non-blocking collective's flight from issue to completion is an async slice (ph
 * "b"/"e", cat "in_flight"), which Perfetto draws on a track of its own under the rank:
 * a flight that spans compute slices is overlap. */
#ifndef ZERO_TRACE_H
#define ZERO_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "zero/backend.h"
#include "zero/error.h"
#include "zero/events.h"
#include "zero/model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_TRACE_MAX_STEPS 64
#define ZERO_TRACE_TID_COMPUTE 1
#define ZERO_TRACE_TID_COMM 2

struct zero_trace;

/* Records the events of the listed optimizer steps (1-based, as train_mlp prints
 * them: step k is the k-th update and the forward/backward passes before it); nsteps
 * 0 records every step. world is the number of ranks (for the sent-elements args).
 * model must outlive the trace (unit names). */
int zero_trace_create(struct zero_trace **t, const struct zero_model *model, int rank, int world,
                      const int64_t *steps, int nsteps, struct zero_error *err);
void zero_trace_destroy(struct zero_trace *t);

/* The observer: zero_engine_set_observer(e, zero_trace_observe, t). An event that
 * cannot be stored (out of memory) is counted and reported by zero_trace_write. */
void zero_trace_observe(void *trace, const struct zero_event *ev);

/* Events recorded so far on this rank. */
int64_t zero_trace_count(const struct zero_trace *t);

/* This rank's trace events as JSON objects separated by commas (metadata naming
 * the process and threads first), NUL-terminated; the caller frees *json. */
int zero_trace_events_json(const struct zero_trace *t, char **json, size_t *len,
                           struct zero_error *err);

/* Collective over dev's ranks: gathers every rank's events (host_all_gather) and
 * rank 0 writes {"traceEvents": [...], "displayTimeUnit": "ms"} to path. */
int zero_trace_write(const struct zero_trace *t, struct zero_device *dev, const char *path,
                     struct zero_error *err);

/* Parses a step list such as "2,3" or "2-4,7" (1-based, ascending or not) into
 * steps; *n receives the count. */
int zero_trace_parse_steps(const char *list, int64_t *steps, int max, int *n,
                           struct zero_error *err);

#ifdef __cplusplus
}
#endif

#endif

/* The memory plan's transient tags: upper bounds of what a training step holds
 * beyond the model states (memory_peaks.c). Not installed. */
#ifndef ZERO_ENGINE_MEMORY_PEAKS_H
#define ZERO_ENGINE_MEMORY_PEAKS_H

#include <stdint.h>

#include "zero/ledger.h"

struct zero_engine;

/* Adds to plan (bytes per tag, host memory) the peaks of gather, buckets,
 * activations, workspace and comm where the backend's memory is the host's
 * (device_is_host), and always the host buffers of NVMe offload. Once the
 * layouts are known; activations for micro-batches of train_micro_batch_size_per_gpu
 * samples of the model's rows_per_sample rows. */
void memory_peaks_add(const struct zero_engine *e, int device_is_host,
                      int64_t plan[ZERO_TAG_COUNT]);

/* R: the rows of a micro-batch the activations are sized for */
int64_t memory_peaks_rows(const struct zero_engine *e);
/* Each tag's bound alone, so that a module adding a buffer adds its term here. */
int64_t peak_gather_bytes(const struct zero_engine *e);
int64_t peak_bucket_bytes(const struct zero_engine *e);
int64_t peak_activation_bytes(const struct zero_engine *e, int64_t rows);
int64_t peak_workspace_bytes(const struct zero_engine *e, int64_t rows);
int64_t peak_comm_bytes(const struct zero_engine *e);

#endif

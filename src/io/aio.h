/* Asynchronous file I/O for the NVMe swap files (ZeRO-Infinity), tuned by
 * DeepSpeed's "aio" section. An operation reads or writes one buffer at one
 * offset; it is split into block_size requests that thread_count workers
 * carry out: each worker drives its own io_uring with up to queue_depth
 * requests in flight (liburing builds), or, without io_uring, issues
 * blocking pread/pwrite calls (one request per worker at a time). Host I/O,
 * like checkpoints: no backend involved. Not installed. */
#ifndef ZERO_AIO_H
#define ZERO_AIO_H

#include <stddef.h>
#include <stdint.h>

struct aio_options {
    int64_t block_size;   /* bytes per request (aio.block_size) */
    int64_t queue_depth;  /* requests in flight per io_uring (aio.queue_depth) */
    int64_t thread_count; /* workers (aio.thread_count) */
    int single_submit;    /* io_uring: one submit call per request, not per batch */
    int overlap_events;   /* io_uring: refill the queue as requests complete, not per batch */
    int use_threads;      /* pread/pwrite workers even where io_uring works */
};

struct aio_queue;
struct aio_op;

/* 0, or an errno value with msg filled. Falls back to pread/pwrite workers
 * (and says why in aio_engine_name) when io_uring is missing or refused. */
int aio_create(struct aio_queue **q, const struct aio_options *o, char *msg, size_t len);
/* "io_uring" or "pread/pwrite threads (why)". */
const char *aio_engine_name(const struct aio_queue *q);
/* Queues a read (write = 0) or a write of len bytes of buf at offset off of
 * fd; returns at once. 0 or ENOMEM. */
int aio_start(struct aio_queue *q, int fd, int write, void *buf, size_t len, int64_t off,
              struct aio_op **op);
/* Waits for op and frees it: 0, an errno value, or ENODATA when a read met
 * the end of the file (the file is shorter than it should be). */
int aio_finish(struct aio_queue *q, struct aio_op *op);
/* Bytes read and written since aio_create. */
void aio_counters(const struct aio_queue *q, int64_t *read, int64_t *written);
void aio_destroy(struct aio_queue *q); /* waits for nothing: finish every op first */

#endif

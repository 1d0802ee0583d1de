/* See aio.h. Operations wait in one FIFO; each worker takes requests (blocks
 * of an operation) from its head. An io_uring worker keeps up to queue_depth
 * requests in its ring: with overlap_events it refills the ring as each one
 * completes, without it it submits a batch and drains it before the next. A
 * short transfer is resubmitted for the rest; a read that returns 0 bytes
 * met the end of the file (ENODATA). */
#include "aio.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_LIBURING
#include <liburing.h>
#endif

struct aio_block {
    struct aio_op *op;
    char *buf;
    size_t len; /* bytes still to move */
    int64_t off;
};

struct aio_op {
    int fd, write;
    int nblocks, next, done, err;
    struct aio_op *queue_next; /* FIFO while blocks are left to take */
    struct aio_block blocks[];
};

struct aio_worker {
    struct aio_queue *q;
    pthread_t thread;
    int started;
#ifdef HAVE_LIBURING
    struct io_uring ring;
    int ring_ok;
#endif
};

struct aio_queue {
    struct aio_options o;
    int uring;
    char name[128];
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    struct aio_op *head, *tail;
    int stop;
    int64_t bytes_read, bytes_written;
    int nworkers;
    struct aio_worker *workers;
};

/* Takes the next block (caller holds mu), or NULL. */
static struct aio_block *take(struct aio_queue *q)
{
    struct aio_op *op = q->head;
    if (!op)
        return NULL;
    struct aio_block *b = &op->blocks[op->next++];
    if (op->next == op->nblocks) {
        q->head = op->queue_next;
        if (!q->head)
            q->tail = NULL;
    }
    return b;
}

static void complete(struct aio_queue *q, struct aio_block *b, int err, size_t moved)
{
    pthread_mutex_lock(&q->mu);
    struct aio_op *op = b->op;
    if (err && !op->err)
        op->err = err;
    if (op->write)
        q->bytes_written += (int64_t)moved;
    else
        q->bytes_read += (int64_t)moved;
    if (++op->done == op->nblocks)
        pthread_cond_broadcast(&q->done);
    pthread_mutex_unlock(&q->mu);
}

/* One block with blocking calls: 0 or an errno value. */
static int move_block(struct aio_block *b, size_t *moved)
{
    struct aio_op *op = b->op;
    *moved = 0;
    while (b->len > 0) {
        ssize_t n = op->write ? pwrite(op->fd, b->buf, b->len, (off_t)b->off)
                              : pread(op->fd, b->buf, b->len, (off_t)b->off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return op->write ? ENOSPC : ENODATA;
        b->buf += n;
        b->off += n;
        b->len -= (size_t)n;
        *moved += (size_t)n;
    }
    return 0;
}

static void *thread_worker(void *arg)
{
    struct aio_worker *w = arg;
    struct aio_queue *q = w->q;
    for (;;) {
        pthread_mutex_lock(&q->mu);
        struct aio_block *b;
        while (!(b = take(q)) && !q->stop)
            pthread_cond_wait(&q->work, &q->mu);
        pthread_mutex_unlock(&q->mu);
        if (!b)
            return NULL;
        size_t moved;
        int err = move_block(b, &moved);
        complete(q, b, err, moved);
    }
}

#ifdef HAVE_LIBURING
static void prep(struct io_uring *ring, struct aio_block *b)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring); /* never NULL: in flight < depth */
    if (b->op->write)
        io_uring_prep_write(sqe, b->op->fd, b->buf, (unsigned)b->len, (uint64_t)b->off);
    else
        io_uring_prep_read(sqe, b->op->fd, b->buf, (unsigned)b->len, (uint64_t)b->off);
    io_uring_sqe_set_data(sqe, b);
}

static void *uring_worker(void *arg)
{
    struct aio_worker *w = arg;
    struct aio_queue *q = w->q;
    int depth = (int)q->o.queue_depth, inflight = 0;
    for (;;) {
        int taken = 0;
        pthread_mutex_lock(&q->mu);
        /* without overlap_events a new batch starts only once the last one drained */
        while (inflight == 0 && !q->head && !q->stop)
            pthread_cond_wait(&q->work, &q->mu);
        if (inflight == 0 && !q->head && q->stop) {
            pthread_mutex_unlock(&q->mu);
            return NULL;
        }
        if (q->o.overlap_events || inflight == 0) {
            struct aio_block *b;
            while (inflight + taken < depth && (b = take(q))) {
                prep(&w->ring, b);
                taken++;
                if (q->o.single_submit)
                    io_uring_submit(&w->ring);
            }
        }
        pthread_mutex_unlock(&q->mu);
        if (taken && !q->o.single_submit)
            io_uring_submit(&w->ring);
        inflight += taken;
        if (inflight == 0)
            continue;
        struct io_uring_cqe *cqe;
        int rc = io_uring_wait_cqe(&w->ring, &cqe);
        if (rc == -EINTR)
            continue;
        do {
            if (rc < 0)
                break;
            struct aio_block *b = io_uring_cqe_get_data(cqe);
            int res = cqe->res;
            io_uring_cqe_seen(&w->ring, cqe);
            inflight--;
            if (res == -EINTR || res == -EAGAIN) {
                prep(&w->ring, b); /* again, as it was */
                io_uring_submit(&w->ring);
                inflight++;
            } else if (res < 0) {
                complete(q, b, -res, 0);
            } else if (res == 0 && b->len > 0) {
                complete(q, b, b->op->write ? ENOSPC : ENODATA, 0);
            } else if ((size_t)res < b->len) { /* short: the rest goes again */
                b->buf += res;
                b->off += res;
                b->len -= (size_t)res;
                pthread_mutex_lock(&q->mu);
                if (b->op->write)
                    q->bytes_written += res;
                else
                    q->bytes_read += res;
                pthread_mutex_unlock(&q->mu);
                prep(&w->ring, b);
                io_uring_submit(&w->ring);
                inflight++;
            } else {
                complete(q, b, 0, (size_t)res);
            }
        } while (inflight > 0 && io_uring_peek_cqe(&w->ring, &cqe) == 0);
    }
}
#endif

int aio_create(struct aio_queue **out, const struct aio_options *o, char *msg, size_t len)
{
    *out = NULL;
    struct aio_queue *q = calloc(1, sizeof *q);
    int n = o->thread_count > 0 ? (int)o->thread_count : 1;
    if (!q || !(q->workers = calloc((size_t)n, sizeof *q->workers))) {
        free(q);
        snprintf(msg, len, "out of memory for the I/O queue");
        return ENOMEM;
    }
    q->o = *o;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->work, NULL);
    pthread_cond_init(&q->done, NULL);
    snprintf(q->name, sizeof q->name, "pread/pwrite threads (%s)",
             o->use_threads ? "asked for" : "built without liburing");
#ifdef HAVE_LIBURING
    q->uring = !o->use_threads;
    for (int i = 0; i < n && q->uring; i++) {
        int rc = io_uring_queue_init((unsigned)o->queue_depth, &q->workers[i].ring, 0);
        if (rc < 0) {
            snprintf(q->name, sizeof q->name, "pread/pwrite threads (io_uring refused: %s)",
                     strerror(-rc));
            q->uring = 0;
        } else {
            q->workers[i].ring_ok = 1;
        }
    }
    if (q->uring)
        snprintf(q->name, sizeof q->name, "io_uring");
#endif
    *out = q;
    for (int i = 0; i < n; i++) {
        struct aio_worker *w = &q->workers[i];
        w->q = q;
        void *(*fn)(void *) = thread_worker;
#ifdef HAVE_LIBURING
        if (q->uring)
            fn = uring_worker;
#endif
        int rc = pthread_create(&w->thread, NULL, fn, w);
        if (rc) {
            aio_destroy(q);
            *out = NULL;
            snprintf(msg, len, "starting I/O thread %d: %s", i, strerror(rc));
            return rc;
        }
        w->started = 1;
        q->nworkers = i + 1;
    }
    return 0;
}

const char *aio_engine_name(const struct aio_queue *q)
{
    return q->name;
}

int aio_start(struct aio_queue *q, int fd, int write, void *buf, size_t len, int64_t off,
              struct aio_op **out)
{
    size_t bs = (size_t)q->o.block_size;
    int nb = len == 0 ? 1 : (int)((len + bs - 1) / bs);
    struct aio_op *op = calloc(1, sizeof *op + (size_t)nb * sizeof op->blocks[0]);
    *out = op;
    if (!op)
        return ENOMEM;
    op->fd = fd;
    op->write = write;
    op->nblocks = nb;
    for (int i = 0; i < nb; i++) {
        size_t at = (size_t)i * bs;
        op->blocks[i] = (struct aio_block){.op = op,
                                           .buf = (char *)buf + at,
                                           .len = len - at < bs ? len - at : bs,
                                           .off = off + (int64_t)at};
    }
    pthread_mutex_lock(&q->mu);
    if (q->tail)
        q->tail->queue_next = op;
    else
        q->head = op;
    q->tail = op;
    pthread_cond_broadcast(&q->work);
    pthread_mutex_unlock(&q->mu);
    return 0;
}

int aio_finish(struct aio_queue *q, struct aio_op *op)
{
    if (!op)
        return 0;
    pthread_mutex_lock(&q->mu);
    while (op->done < op->nblocks)
        pthread_cond_wait(&q->done, &q->mu);
    pthread_mutex_unlock(&q->mu);
    int err = op->err;
    free(op);
    return err;
}

void aio_counters(const struct aio_queue *q, int64_t *read, int64_t *written)
{
    pthread_mutex_lock((pthread_mutex_t *)&q->mu);
    *read = q->bytes_read;
    *written = q->bytes_written;
    pthread_mutex_unlock((pthread_mutex_t *)&q->mu);
}

void aio_destroy(struct aio_queue *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    pthread_cond_broadcast(&q->work);
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < q->nworkers; i++)
        if (q->workers[i].started)
            pthread_join(q->workers[i].thread, NULL);
#ifdef HAVE_LIBURING
    int n = q->o.thread_count > 0 ? (int)q->o.thread_count : 1;
    for (int i = 0; i < n; i++)
        if (q->workers[i].ring_ok)
            io_uring_queue_exit(&q->workers[i].ring);
#endif
    pthread_cond_destroy(&q->work);
    pthread_cond_destroy(&q->done);
    pthread_mutex_destroy(&q->mu);
    free(q->workers);
    free(q);
}

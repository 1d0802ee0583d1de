/* The communication thread: exact non-blocking collectives run here, in issue order,
 * while the caller's thread computes.
 *
 * Why a thread: Open MPI progresses a non-blocking collective only inside MPI calls, and
 * the exact collectives are not MPI's anyway (the owner combines along the canonical
 * tree, cpu_coll_exact.c). So a second thread per rank performs them: it copies the
 * pieces, fences, combines, and completes the handle; wait() sleeps on a condition
 * variable until then. The combine is the same function on the same pieces in the same
 * order, so the bits do not change (tests/test_overlap.sh compares hashes).
 *
 * MPI thread level: the caller's thread keeps issuing blocking collectives on its own
 * communicator while this thread works, so both call MPI concurrently; that needs
 * MPI_THREAD_MULTIPLE (Open MPI 4.1 here supports it: ompi_info "MPI_THREAD_MULTIPLE:
 * yes"). The thread therefore starts only where MPI_Query_thread says MULTIPLE, i.e.
 * when the program called MPI_Init_thread(MPI_THREAD_MULTIPLE); otherwise exact
 * collectives complete at issue as before. ZERO_CPU_PROGRESS=0 turns the thread off.
 * Every rank must decide alike (a job on the thread's communicator on one rank and on
 * the main one on another would never match), so the choice is agreed at open.
 *
 * Resources: the thread owns a shallow copy of the instance (bg) with duplicated
 * communicators (its operations never match the main thread's), its own shared-memory
 * window, staging buffer and scratch, and a private ledger whose changes each job
 * reports in its handle; wait() moves them into the instance's ledger, so the ledger
 * keeps one writer.
 *
 * Cores: the thread sleeps while it has no job, and while it waits for peers it polls
 * MPI politely (MPI_Test, then short sleeps: cpu_mpi_complete), so it takes a core only
 * for the copies and the combine: work the caller's thread would do anyway when the
 * collective completes at issue. With N ranks on C cores the 2N threads share the C
 * cores through the kernel's scheduler; nothing is pinned. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_coll.h"
#include "zero/knobs.h"

struct cpu_progress {
    struct cpu_state bg; /* the thread's copy of the instance */
    struct zero_ledger ledger;
    int64_t reported; /* ZERO_TAG_COMM bytes moved into the instance's ledger */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t has_job, job_done;
    struct zero_request *head, *tail; /* queued jobs, oldest first */
    int stop;
};

static void run_job(struct cpu_progress *p, struct zero_request *rq)
{
    struct cpu_state *bg = &p->bg;
    int64_t before = p->ledger.current[ZERO_TAG_COMM];
    bg->err[0] = '\0';
    rq->rc = cpu_coll_run_job(bg, rq);
    if (rq->rc)
        memcpy(rq->err, bg->err, sizeof rq->err);
    rq->comm_bytes = p->ledger.current[ZERO_TAG_COMM] - before;
    rq->t_done = MPI_Wtime();
}

static void *progress_main(void *arg)
{
    struct cpu_progress *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stop)
            pthread_cond_wait(&p->has_job, &p->lock);
        if (!p->head)
            break; /* stop, and every job is done */
        struct zero_request *rq = p->head;
        pthread_mutex_unlock(&p->lock);
        run_job(p, rq);
        pthread_mutex_lock(&p->lock);
        p->head = rq->next;
        if (!p->head)
            p->tail = NULL;
        rq->settled = 1;
        pthread_cond_broadcast(&p->job_done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int cpu_progress_active(const struct cpu_state *s)
{
    return s->progress != NULL && s->mode == ZERO_COLL_EXACT;
}

void cpu_progress_submit(struct cpu_state *s, struct zero_request *rq)
{
    struct cpu_progress *p = s->progress;
    rq->queued = 1;
    rq->next = NULL;
    pthread_mutex_lock(&p->lock);
    if (p->tail)
        p->tail->next = rq;
    else
        p->head = rq;
    p->tail = rq;
    pthread_cond_signal(&p->has_job);
    pthread_mutex_unlock(&p->lock);
}

int cpu_progress_wait(struct cpu_state *s, struct zero_request *rq)
{
    struct cpu_progress *p = s->progress;
    pthread_mutex_lock(&p->lock);
    while (!rq->settled)
        pthread_cond_wait(&p->job_done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    zero_ledger_add(s->ledger, ZERO_TAG_COMM, rq->comm_bytes);
    p->reported += rq->comm_bytes;
    if (rq->rc)
        return cpu_fail(s, rq->rc, "%s (communication thread)", rq->err);
    return 0;
}

/* Start the thread where every rank can: MPI_THREAD_MULTIPLE, more than one rank, not
 * turned off. */
static int progress_wanted(struct cpu_state *s, int *all)
{
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    const char *env = zero_knob(ZERO_KNOB_CPU_PROGRESS);
    int want = level == MPI_THREAD_MULTIPLE && s->size > 1 && !(env && strcmp(env, "0") == 0);
    int err = MPI_Allreduce(&want, all, 1, MPI_INT, MPI_MIN, s->comm);
    return err == MPI_SUCCESS ? 0 : cpu_mpi_fail(s, "communication thread: MPI_Allreduce", err);
}

static void progress_free(struct cpu_progress *p)
{
    if (p->bg.node_comm != MPI_COMM_NULL)
        MPI_Comm_free(&p->bg.node_comm);
    if (p->bg.comm != MPI_COMM_NULL)
        MPI_Comm_free(&p->bg.comm);
    free(p);
}

int cpu_progress_init(struct cpu_state *s)
{
    int all = 0;
    int rc = progress_wanted(s, &all);
    if (rc || !all)
        return rc;
    struct cpu_progress *p = calloc(1, sizeof *p);
    if (!p)
        return cpu_fail(s, ZERO_ENOMEM, "communication thread: out of memory");
    p->bg = *s;
    p->bg.comm = MPI_COMM_NULL;
    p->bg.node_comm = MPI_COMM_NULL;
    p->bg.ledger = &p->ledger;
    p->bg.host_ledger = NULL;
    p->bg.cache = NULL;
    p->bg.shm = NULL;
    p->bg.progress = NULL;
    p->bg.polite = 1;
    if (MPI_Comm_dup(s->comm, &p->bg.comm) != MPI_SUCCESS ||
        MPI_Comm_dup(s->node_comm, &p->bg.node_comm) != MPI_SUCCESS) {
        progress_free(p);
        return cpu_fail(s, ZERO_ECOMM, "communication thread: MPI_Comm_dup failed");
    }
    MPI_Comm_set_errhandler(p->bg.comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(p->bg.node_comm, MPI_ERRORS_RETURN);
    if ((rc = cpu_coll_init(&p->bg)) != 0) {
        rc = cpu_fail(s, rc, "communication thread: %s", p->bg.err);
        progress_free(p);
        return rc;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->has_job, NULL);
    pthread_cond_init(&p->job_done, NULL);
    if (pthread_create(&p->thread, NULL, progress_main, p) != 0) {
        cpu_coll_fini(&p->bg);
        progress_free(p);
        return cpu_fail(s, ZERO_ENOMEM, "communication thread: pthread_create failed");
    }
    s->progress = p;
    return 0;
}

void cpu_progress_fini(struct cpu_state *s)
{
    struct cpu_progress *p = s->progress;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1; /* the thread finishes the queued jobs first: peers are in them too */
    pthread_cond_signal(&p->has_job);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->job_done);
    pthread_cond_destroy(&p->has_job);
    pthread_mutex_destroy(&p->lock);
    zero_ledger_add(s->ledger, ZERO_TAG_COMM, -p->reported);
    cpu_coll_fini(&p->bg);
    progress_free(p);
    s->progress = NULL;
}

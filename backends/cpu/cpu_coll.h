/* Private to the cpu backend's collectives (cpu_coll*.c, cpu_combine.c, cpu_shm.c).
 *
 * Files:
 *   cpu_coll.c         entry points of the backend table: argument checks, comm stats,
 *                      requests, mode dispatch; barrier, wait, host_all_gather
 *   cpu_coll_setup.c   the instance's collective resources: open (path choice), close
 *   cpu_coll_job.c     exact mode's collectives as one call each, at issue or as a job
 *   cpu_coll_exact.c   exact reduce-scatter / all-reduce: owners combine in tree order
 *   cpu_coll_gather.c  exact all-gather on one node: pieces copied through the window
 *   cpu_coll_native.c  native mode: MPI's own reductions (MPI_I* calls)
 *   cpu_combine.c      the cache-blocked tree combine of N pieces (no MPI)
 *   cpu_shm.c          the shared-memory window peers read each other's pieces from
 *   cpu_progress.c     the communication thread that runs exact non-blocking collectives
 *   cpu_mpi.c          MPI's error text, datatypes, int counts, the polite wait
 *
 * Floors (a file calls only files below it): cpu_coll.c; cpu_progress.c;
 * cpu_coll_setup.c, cpu_coll_job.c; cpu_coll_native.c, cpu_coll_exact.c;
 * cpu_coll_gather.c; cpu_shm.c, cpu_combine.c; cpu_mpi.c (tests/test_call_circles.sh).
 *
 * Environment: ZERO_CPU_NO_SHM=1 (read once per open) forces the MPI path even when all
 * ranks share one node, so both paths can be tested on one machine. */
#ifndef ZERO_CPU_COLL_H
#define ZERO_CPU_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_internal.h"
#include "base/host_isa.h"

/* Collective resources of one backend instance (cpu_state.shm). */
struct cpu_shm {
    int use_shm;       /* single node and not disabled: owners read peers' window segments */
    int *node_rank_of; /* (size) rank in s->comm -> rank in s->node_comm */

    MPI_Win win;      /* MPI_WIN_NULL until the first shared-memory collective */
    size_t seg_bytes; /* bytes of every rank's segment (all grow together) */
    char **seg;       /* (size) each rank's segment, indexed by rank in s->comm */

    void *staging; /* MPI path: the peers' pieces of this rank's shard */
    size_t staging_bytes;

    float *scratch;                    /* (cpu_combine_scratch_floats(size)) combine accumulators */
    const void **piece;                /* (size) the pieces one combine reads */
    size_t *split_count, *split_displ; /* (size) each: storage of the current split */
    int *send_counts, *send_displs, *recv_counts, *recv_displs; /* (size) each: Alltoallv */

    MPI_Op op_sum_f16; /* native mode: fp16/bf16 sums on MPI_UINT16_T */
    MPI_Op op_sum_bf16;
};

/* What a queued exact collective does (run on the communication thread). */
struct cpu_job {
    const void *send;
    void *recv;
    enum zero_dtype wire_type, recv_type;
    size_t count;
    int root;
};

/* A non-blocking collective in flight. Exact mode: queued to the communication thread
 * (queued = 1; it sets settled when done) or, without one, completed at issue (mpi is
 * MPI_REQUEST_NULL); native mode finishes in cpu_wait. */
struct zero_request {
    MPI_Request mpi;
    int blocking; /* issue with the blocking MPI call */
    int settled;  /* done, converted, time stamped */
    enum zero_coll_kind kind;
    double t_issue, t_done;
    int64_t payload_bytes, sent_bytes;
    /* native reduce-scatter through a temporary: recv (finish_n, finish_type) =
     * tmp (finish_n, tmp_type) after completion; tmp is freed then. */
    void *tmp;
    size_t tmp_bytes;
    enum zero_dtype tmp_type;
    void *finish_dst;
    enum zero_dtype finish_type;
    size_t finish_n;
    /* communication thread */
    int queued;
    struct cpu_job job;
    int rc; /* the job's status, err its message */
    char err[ZERO_ERRMSG_LEN];
    int64_t comm_bytes;        /* ZERO_TAG_COMM bytes the job allocated (the thread's ledger) */
    struct zero_request *next; /* queue link */
};

/* How a buffer of `total` elements splits into one piece per rank: rank r owns
 * [displ[r], displ[r] + count[r]). */
struct cpu_split {
    const size_t *count, *displ; /* (size) each */
    size_t total;
};

/* ---- cpu_combine.c ---- */
enum { CPU_COMBINE_CHUNK = 2048 }; /* elements per block: N pieces + accumulators in L1/L2 */
size_t cpu_combine_scratch_floats(int n);
/* out (len, out_type) = tree over j < n of piece[j] (len, wire_type), summed in fp32 and
 * rounded once. out may alias a piece exactly (in place); scratch as sized above. */
void cpu_combine(void *out, enum zero_dtype out_type, const void *const *piece, int n,
                 enum zero_dtype wire_type, size_t len, float *scratch);
/* The same with the host variant isa (base, avx2, avx512: host_isa.h), or the widest
 * this processor has below it; cpu_combine takes zero_host_isa_best(). Same bits. */
void cpu_combine_isa(enum zero_host_isa isa, void *out, enum zero_dtype out_type,
                     const void *const *piece, int n, enum zero_dtype wire_type, size_t len,
                     float *scratch);
/* dst (n, dst_type) = src (n, src_type), floating types only; dst == src allowed when the
 * element sizes are equal or dst's is larger (converted from the end). */
void cpu_convert(void *dst, enum zero_dtype dst_type, const void *src, enum zero_dtype src_type,
                 size_t n);

/* ---- cpu_shm.c ---- */
int cpu_shm_reserve(struct cpu_state *s, size_t bytes); /* collective over the node */
int cpu_shm_fence(struct cpu_state *s); /* segment writes visible to / reads done by all */
void cpu_shm_release(struct cpu_state *s);

/* ---- cpu_coll_exact.c ---- */
/* recv (split.count[rank], recv_type) = tree over ranks of each rank's send piece
 * [displ[rank], +count[rank]) (wire_type). Sets *sent to the bytes peers took from us. */
int cpu_exact_reduce_scatter(struct cpu_state *s, const void *send, enum zero_dtype wire_type,
                             void *recv, enum zero_dtype recv_type, const struct cpu_split *split,
                             int64_t *sent);

/* ---- cpu_coll_gather.c ---- */
enum { CPU_SHM_GATHER_MIN_BYTES = 32 * 1024 }; /* smaller pieces: MPI's all-gather */
/* use_shm, pieces of at least CPU_SHM_GATHER_MIN_BYTES, and a window the reductions
 * already grew large enough: an all-gather never grows it (every rank decides alike:
 * the windows grow together) */
int cpu_shm_all_gather_wanted(const struct cpu_state *s, size_t largest_piece_bytes);
/* recv (split.total, esize bytes each) = every rank's piece at displ[r], through the
 * window (use_shm only); this rank's piece is mine, which may be its place in recv. */
int cpu_shm_all_gather(struct cpu_state *s, const void *mine, void *recv, size_t esize,
                       const struct cpu_split *split);

/* recv (split.total, t) = the tree over ranks of every rank's send (split.total, t), each
 * piece combined by its owner, through the window (use_shm only, more than one rank);
 * recv may equal send. */
int cpu_exact_all_reduce_shm(struct cpu_state *s, const void *send, void *recv, enum zero_dtype t,
                             const struct cpu_split *split);

/* ---- cpu_mpi.c ---- */
/* Sets "<what> failed: <MPI's text>" (ZERO_ECOMM); returns it. */
int cpu_mpi_fail(struct cpu_state *s, const char *what, int mpi_err);
MPI_Datatype cpu_mpi_type(enum zero_dtype t); /* MPI_DATATYPE_NULL if unknown */
/* MPI counts are ints: ZERO_ENOTSUP (named by op) beyond INT_MAX elements. */
int cpu_mpi_check_count(struct cpu_state *s, const char *op, size_t elements);
/* MPI_Wait, or on the communication thread a polling wait that sleeps between tests. */
int cpu_mpi_complete(struct cpu_state *s, MPI_Request *r);

/* ---- cpu_coll_job.c ---- */
/* rank r's piece of `total` elements split as evenly as possible (the first total % N
 * ranks get one more), in s->shm's split arrays */
struct cpu_split cpu_split_even(struct cpu_state *s, size_t total);
/* Exact reduce-scatter of N pieces of count elements each; *sent: bytes given away. */
int cpu_exact_reduce_scatter_equal(struct cpu_state *s, const void *send, enum zero_dtype wire_type,
                                   void *recv, enum zero_dtype recv_type, size_t count,
                                   int64_t *sent);
/* Exact all-reduce of nearly equal pieces; *sent: bytes given away. */
int cpu_exact_all_reduce(struct cpu_state *s, const void *send, void *recv, enum zero_dtype t,
                         size_t count, int64_t *sent);
/* Exact mode's all-gather of N pieces of count elements on one node, through the window. */
int cpu_shm_all_gather_equal(struct cpu_state *s, const void *send, void *recv, enum zero_dtype t,
                             size_t count);
/* Runs a queued job's collective on s (the communication thread's copy). */
int cpu_coll_run_job(struct cpu_state *s, struct zero_request *rq);

/* ---- cpu_progress.c ---- */
int cpu_progress_active(const struct cpu_state *s); /* exact mode with a thread */
void cpu_progress_submit(struct cpu_state *s, struct zero_request *rq); /* rq on the heap */
int cpu_progress_wait(struct cpu_state *s, struct zero_request *rq);    /* until settled */

/* ---- cpu_coll_native.c ---- */
int cpu_native_ops_create(struct cpu_state *s);
void cpu_native_ops_free(struct cpu_state *s);
/* over comm (the world's s->comm or a group's), rank being this rank's in it; a
 * temporary in rq is finished by cpu_request_settle */
int cpu_native_reduce_scatter(struct cpu_state *s, MPI_Comm comm, int rank, const void *send,
                              enum zero_dtype wire_type, void *recv, enum zero_dtype recv_type,
                              size_t count, struct zero_request *rq);
int cpu_native_all_reduce(struct cpu_state *s, MPI_Comm comm, const void *send, void *recv,
                          enum zero_dtype t, size_t count, struct zero_request *rq);

/* ---- cpu_coll.c ---- */
/* Waits for MPI where it still works on rq, moves the result out of its temporary and
 * stamps the time (once); 0 or a status. */
int cpu_request_settle(struct cpu_state *s, struct zero_request *rq);

#endif

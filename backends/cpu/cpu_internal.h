/* State shared by the files of the cpu backend (not installed). */
#ifndef ZERO_CPU_INTERNAL_H
#define ZERO_CPU_INTERNAL_H

#include <mpi.h>

#include "zero/backend.h"
#include "zero/error.h"

#include "cpu_gemm.h"

struct cpu_shm; /* shared-memory window state, owned by the collectives */
struct cpu_cache;
struct cpu_progress; /* the communication thread (cpu_progress.c) */

struct cpu_state {
    MPI_Comm comm; /* our duplicate of the user's communicator */
    int rank, size;
    MPI_Comm node_comm; /* ranks sharing memory with us (MPI_COMM_TYPE_SHARED) */
    int node_rank, node_size;
    int single_node; /* every rank of comm is in node_comm: shared-memory path usable */
    enum zero_coll_mode mode;
    enum cpu_isa gemm_isa; /* exact mode's GEMM variant (cpu_gemm.h; ZERO_CPU_ISA) */
    int gemm_threads;      /* exact mode's GEMM threads: this rank's share of the node */
    int blas_threads;      /* OpenBLAS's thread count once native mode loads it; 0: its own */
    enum cpu_product bf16_product; /* bf16-bf16 GEMMs' products (zero/backend_bf16_dot.h) */
    struct zero_ledger *ledger;
    struct zero_ledger *host_ledger; /* host_alloc blocks */
    struct zero_comm_stats *stats;
    char err[ZERO_ERRMSG_LEN];
    struct cpu_shm *shm;
    struct cpu_cache *cache;       /* freed blocks kept for reuse (cpu_memory.c) */
    struct cpu_progress *progress; /* NULL: exact collectives complete at issue */
    int polite; /* this copy runs on the communication thread: wait for peers by polling
                   with short sleeps instead of MPI's busy wait (cpu_mpi_complete) */
};

/* cpu_error.c: formats the instance's last error ("rank N: ..."); returns code. */
int cpu_fail(struct cpu_state *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* cpu_memory.c: returns cached blocks to the system (close). */
void cpu_memory_fini(struct cpu_state *s);

/* cpu_coll.c and friends: set up / tear down collective resources in open/close. */
int cpu_coll_init(struct cpu_state *s);
void cpu_coll_fini(struct cpu_state *s);
int cpu_shm_in_use(const struct cpu_state *s); /* exact collectives read peers' windows */
/* cpu_progress.c: the communication thread, started where MPI_THREAD_MULTIPLE allows. */
int cpu_progress_init(struct cpu_state *s);
void cpu_progress_fini(struct cpu_state *s);

int cpu_reduce_scatter(void *self, const void *send, enum zero_dtype wire_type, void *recv,
                       enum zero_dtype recv_type, size_t count, struct zero_request **req);
int cpu_all_gather(void *self, const void *send, void *recv, enum zero_dtype t, size_t count,
                   struct zero_request **req);
int cpu_all_reduce(void *self, const void *send, void *recv, enum zero_dtype t, size_t count,
                   struct zero_request **req);
int cpu_broadcast(void *self, void *buf, enum zero_dtype t, size_t count, int root,
                  struct zero_request **req);
int cpu_barrier(void *self);
int cpu_wait(void *self, struct zero_request *req);
int cpu_wait_timed(void *self, struct zero_request *req, double *done_ago);
int cpu_host_all_gather(void *self, const void *send_host, void *recv_host, size_t bytes);
/* cpu_groups.c: the groups table (zero/backend_groups.h) */
extern const struct zero_groups_ops cpu_groups_ops;
struct zero_group; /* zero/backend_groups.h */
/* the quant group's all_to_all (zero/backend_quant.h), beside the groups it runs over */
int cpu_all_to_all(void *self, struct zero_group *group, const void *send, const size_t *send_bytes,
                   void *recv, const size_t *recv_bytes);
extern const struct zero_quant_ops cpu_quant_ops; /* cpu_quant.c */

#endif

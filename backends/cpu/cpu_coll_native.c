/* Native mode: MPI's own reductions (MPI_Reduce_scatter_block, MPI_Allreduce and their
 * non-blocking twins), on the world's communicator or a group's (cpu_groups.c). Results agree with
 * exact mode within rounding, not bit for bit: the library picks the order of the additions.
 *
 * fp16/bf16 travel as 16-bit words and are summed by a user-defined MPI operation that
 * widens both operands to fp32, adds, and rounds back: the wire volume stays 2 bytes per
 * element, and, like NCCL's, every partial sum MPI forms is rounded to the wire type. */
#include <stdlib.h>

#include "cpu_coll.h"

static void sum_f16(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const uint16_t *a = in;
    uint16_t *b = inout;
    (void)type;
    for (int i = 0; i < *len; i++)
        b[i] = zero_f32_to_f16(zero_f16_to_f32(a[i]) + zero_f16_to_f32(b[i]));
}

static void sum_bf16(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const uint16_t *a = in;
    uint16_t *b = inout;
    (void)type;
    for (int i = 0; i < *len; i++)
        b[i] = zero_f32_to_bf16(zero_bf16_to_f32(a[i]) + zero_bf16_to_f32(b[i]));
}

int cpu_native_ops_create(struct cpu_state *s)
{
    struct cpu_shm *m = s->shm;
    int err = MPI_Op_create(sum_f16, 1, &m->op_sum_f16);
    if (err == MPI_SUCCESS)
        err = MPI_Op_create(sum_bf16, 1, &m->op_sum_bf16);
    if (err != MPI_SUCCESS)
        return cpu_mpi_fail(s, "native fp16/bf16 sum: MPI_Op_create", err);
    return 0;
}

void cpu_native_ops_free(struct cpu_state *s)
{
    struct cpu_shm *m = s->shm;
    if (m->op_sum_f16 != MPI_OP_NULL)
        MPI_Op_free(&m->op_sum_f16);
    if (m->op_sum_bf16 != MPI_OP_NULL)
        MPI_Op_free(&m->op_sum_bf16);
}

static MPI_Op sum_op(struct cpu_state *s, enum zero_dtype t)
{
    if (t == ZERO_F16)
        return s->shm->op_sum_f16;
    if (t == ZERO_BF16)
        return s->shm->op_sum_bf16;
    return MPI_SUM;
}

int cpu_native_reduce_scatter(struct cpu_state *s, MPI_Comm comm, int rank, const void *send,
                              enum zero_dtype wire_type, void *recv, enum zero_dtype recv_type,
                              size_t count, struct zero_request *rq)
{
    size_t esize = zero_dtype_size(wire_type);
    MPI_Datatype type = cpu_mpi_type(wire_type);
    int in_place = (const char *)recv == (const char *)send + (size_t)rank * count * esize;

    /* MPI forbids aliased buffers and knows no type change: go through a temporary,
     * finished (copied or converted into recv) when the operation completes */
    void *dst = recv;
    if (in_place || recv_type != wire_type) {
        size_t bytes = count * esize;
        rq->tmp = malloc(bytes > 0 ? bytes : 1);
        if (rq->tmp == NULL)
            return cpu_fail(s, ZERO_ENOMEM, "reduce_scatter: no memory for a %zu-byte temporary",
                            bytes);
        rq->tmp_bytes = bytes;
        rq->tmp_type = wire_type;
        rq->finish_dst = recv;
        rq->finish_type = recv_type;
        rq->finish_n = count;
        zero_ledger_add(s->ledger, ZERO_TAG_COMM, (int64_t)bytes);
        dst = rq->tmp;
    }
    int err;
    if (rq->blocking)
        err = MPI_Reduce_scatter_block(send, dst, (int)count, type, sum_op(s, wire_type), comm);
    else
        err = MPI_Ireduce_scatter_block(send, dst, (int)count, type, sum_op(s, wire_type), comm,
                                        &rq->mpi);
    if (err != MPI_SUCCESS)
        return cpu_mpi_fail(s, "reduce_scatter: MPI_Reduce_scatter_block", err);
    return 0;
}

int cpu_native_all_reduce(struct cpu_state *s, MPI_Comm comm, const void *send, void *recv,
                          enum zero_dtype t, size_t count, struct zero_request *rq)
{
    MPI_Datatype type = cpu_mpi_type(t);
    const void *src = send == recv ? MPI_IN_PLACE : send;
    int err;
    if (rq->blocking)
        err = MPI_Allreduce(src, recv, (int)count, type, sum_op(s, t), comm);
    else
        err = MPI_Iallreduce(src, recv, (int)count, type, sum_op(s, t), comm, &rq->mpi);
    if (err != MPI_SUCCESS)
        return cpu_mpi_fail(s, "all_reduce: MPI_Allreduce", err);
    return 0;
}

/* The atom index in either order: see atom.h. */
#include "zero/atom.h"

int64_t zero_atom_index(enum zero_atom_order order, int64_t micro_step, int rank, int world,
                        int64_t accum)
{
    if (order == ZERO_ATOM_RANK_MAJOR)
        return (int64_t)rank * accum + micro_step;
    return micro_step * world + rank;
}

int64_t zero_atom_first_sample_in(enum zero_atom_order order, int64_t step, int64_t micro_step,
                                  int rank, int world, int64_t accum, int64_t micro_batch)
{
    int64_t global_batch = (int64_t)world * accum * micro_batch;
    int64_t atom = zero_atom_index(order, micro_step, rank, world, accum);
    return step * global_batch + atom * micro_batch;
}

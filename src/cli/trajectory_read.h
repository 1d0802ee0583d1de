/* A trajectory file (src/program/trajectory.h) read back whole: its header's fields and every
 * step's numbers, hashes and weights file. */
#ifndef ZERO_CLI_TRAJECTORY_READ_H
#define ZERO_CLI_TRAJECTORY_READ_H

#include <stddef.h>
#include <stdint.h>

struct traj_hash {
    char *name; /* canonical (weight_names.h) */
    char hex[17];
};

struct traj_step {
    int64_t step;
    int start;                              /* the line of the starting weights: no numbers */
    double loss, grad_norm, lr, loss_scale; /* NAN where the file has null */
    int skipped;
    int nhashes;
    struct traj_hash *hash;
    char *weights; /* the safetensors path (resolved against the file's directory), or NULL */
};

struct trajectory_file {
    char *path;
    char program[64], compute_dtype[16], atom_order[32];
    int64_t world, stage, order_seed, global_batch;
    int nsteps;
    struct traj_step *steps;
};

/* Returns 0, or 2 with msg naming the file, the line and the key. */
int trajectory_load(struct trajectory_file *t, const char *path, char *msg, size_t len);
void trajectory_free_file(struct trajectory_file *t);

/* 1 when path's first line is a trajectory header ({"trajectory": ...}) */
int trajectory_sniff(const char *path);

const struct traj_step *trajectory_step_at(const struct trajectory_file *t, int64_t step);
/* the hash of tensor canonical at step s, or NULL */
const char *trajectory_hash(const struct traj_step *s, const char *canonical);

#endif

/* A training process for tests/test_checkpoint_crash.sh (run under mpirun):
 *
 *   ckpt_crash_writer DIR kill POINT HIT RANK   trains 2 steps, saves; trains to 4,
 *       saves again and SIGKILLs itself on rank RANK at the HIT-th (0-based) time
 *       the save reaches POINT (the fault-hook points of checkpoint_internal.h)
 *   ckpt_crash_writer DIR resume                loads DIR, trains to step 6
 *   ckpt_crash_writer DIR straight              trains steps 0-6 without stopping
 *
 * resume and straight print "step S loss L" for the last step (L in full
 * precision): equal lines mean the resumed run is bit-identical. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/checkpoint_internal.h"
#include "zero/checkpoint.h"
#include "zero/zero.h"

struct kill_at {
    const char *point;
    int hit, rank, seen;
};

static int kill_hook(const char *point, int rank, void *user)
{
    struct kill_at *k = user;
    if (rank == k->rank && strcmp(point, k->point) == 0 && k->seen++ == k->hit)
        raise(SIGKILL);
    return 0;
}

static int train(struct zero_engine *e, int rank, int world, int first, int last,
                 struct zero_error *err)
{
    float x[2 * 12];
    int32_t y[2];
    int rc = 0;
    for (int step = first; step < last && !rc; step++) {
        int64_t at = zero_atom_first_sample(step, 0, rank, world, 1, 2);
        zero_synthetic_samples(3, 12, 5, at, 2, x, y);
        struct zero_batch b = {.rows = 2, .inputs = x, .labels = y};
        if (!(rc = zero_engine_forward(e, &b, NULL, err)) && !(rc = zero_engine_backward(e, err)))
            rc = zero_engine_step(e, NULL, err);
    }
    return rc;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (argc < 3 || (strcmp(argv[2], "kill") == 0 && argc != 6)) {
        fprintf(stderr, "usage: ckpt_crash_writer DIR kill POINT HIT RANK | resume | straight\n");
        MPI_Finalize();
        return 2;
    }
    const char *dir = argv[1], *mode = argv[2];
    struct zero_config cfg;
    zero_config_defaults(&cfg);
    cfg.zero_optimization.stage = 3;
    cfg.optimizer.type = ZERO_OPTIM_ADAMW;
    cfg.optimizer.lr = 1e-2;
    cfg.train_micro_batch_size_per_gpu = 2;
    cfg.gradient_accumulation_steps = 1;
    cfg.libzero.align = 16;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    struct zero_device *dev = NULL;
    struct zero_model *model = NULL;
    struct zero_engine *e = NULL;
    struct zero_error err = {0};
    MPI_Comm comm = MPI_COMM_WORLD;
    zero_checkpoint_set_chunk_elements(64); /* many writes: kills land mid-file */
    int rc = zero_device_open(&dev, "cpu", &comm, &opt, &err);
    if (!rc)
        rc = zero_nn_build_mlp(&model, 12, 2, 5, &err);
    if (!rc)
        rc = zero_engine_create(&e, &cfg, model, dev, &err);
    int first = 0;
    if (!rc && strcmp(mode, "kill") == 0) {
        struct kill_at k = {.point = argv[3], .hit = atoi(argv[4]), .rank = atoi(argv[5])};
        if (!(rc = train(e, rank, world, 0, 2, &err)) &&
            !(rc = zero_checkpoint_save(e, dir, 2, NULL, &err)) &&
            !(rc = train(e, rank, world, 2, 4, &err))) {
            zero_checkpoint_set_fault_hook(kill_hook, &k);
            rc = zero_checkpoint_save(e, dir, 2, NULL, &err);
            zero_checkpoint_set_fault_hook(NULL, NULL);
        }
        if (!rc && rank == 0)
            printf("saved without being killed\n");
    } else if (!rc) {
        if (strcmp(mode, "resume") == 0 && !(rc = zero_checkpoint_load(e, dir, NULL, &err)))
            first = (int)zero_engine_global_steps(e);
        if (!rc)
            rc = train(e, rank, world, first, 6, &err);
        if (!rc && rank == 0)
            printf("resumed from step %d\nstep %lld loss %.9g\n", first,
                   (long long)zero_engine_global_steps(e), zero_engine_last_step(e)->loss);
    }
    if (rc)
        fprintf(stderr, "ckpt_crash_writer: rank %d: %s\n", rank, err.msg);
    zero_engine_destroy(e);
    zero_model_destroy(model);
    zero_device_close(dev);
    MPI_Finalize();
    return rc ? 1 : 0;
}

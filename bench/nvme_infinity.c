/* ZeRO-Infinity on this machine: a residual MLP whose model states (16Ψ bytes
 * in mixed precision) exceed the host's memory trains at stage 3 with the
 * master, the optimizer state and the parameter shards in NVMe swap files
 * (offload_optimizer and offload_param with device nvme). Run it under a
 * memory limit well below the states (bench/nvme_infinity.sh does, with the
 * disk's bandwidth measured by dd first):
 *
 *     mpirun -np 2 bench/nvme_infinity --path DIR [--hidden 2048] [--layers 54]
 *         [--steps 3] [--rows 4] [--lr 1e-5] [--read-gbps R --write-gbps W]
 *
 * Per step it prints the loss, the wall time, and the bytes the swap files
 * read and wrote (all ranks) next to the theory (zero_engine_theory):
 * written = the NVMe states, read = the NVMe states + every gather's shard,
 * and, given the disk's measured bandwidths, the disk-time bound
 * read / R + written / W (the ranks share one disk). Not a test. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "zero/zero.h"

struct args {
    const char *path;
    long hidden, layers, steps, rows;
    double read_bw, write_bw; /* bytes/s, 0: unknown */
    double lr;                /* AdamW's learning rate (1e-4 overshoots on this deep stack) */
};

static int parse(struct args *a, int argc, char **argv)
{
    *a = (struct args){.hidden = 2048, .layers = 54, .steps = 3, .rows = 4, .lr = 1e-5};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *f = argv[i], *v = argv[i + 1];
        if (!strcmp(f, "--path"))
            a->path = v;
        else if (!strcmp(f, "--hidden"))
            a->hidden = atol(v);
        else if (!strcmp(f, "--layers"))
            a->layers = atol(v);
        else if (!strcmp(f, "--steps"))
            a->steps = atol(v);
        else if (!strcmp(f, "--rows"))
            a->rows = atol(v);
        else if (!strcmp(f, "--lr"))
            a->lr = atof(v);
        else if (!strcmp(f, "--read-gbps"))
            a->read_bw = atof(v) * 1e9;
        else if (!strcmp(f, "--write-gbps"))
            a->write_bw = atof(v) * 1e9;
        else
            return -1;
    }
    return a->path && a->hidden > 0 && a->layers > 0 && a->steps > 0 && a->rows > 0 ? 0 : -1;
}

static void configure(struct zero_config *c, const struct args *a)
{
    zero_config_defaults(c);
    c->train_micro_batch_size_per_gpu = a->rows;
    c->gradient_accumulation_steps = 1;
    c->bf16.enabled = 1;
    c->optimizer.type = ZERO_OPTIM_ADAMW;
    c->optimizer.lr = (float)a->lr;
    c->optimizer.weight_decay = 0.01;
    struct zero_optimization_config *z = &c->zero_optimization;
    z->stage = 3;
    /* memory: gather the next units ahead, keep no unit for its reuse (every unit is
     * gathered for forward and again for backward: 2Ψ of shards read per step) */
    z->stage3_prefetch_bucket_size = 3 * 8 * a->hidden * a->hidden;
    z->stage3_max_live_parameters = 5 * 8 * a->hidden * a->hidden;
    z->stage3_max_reuse_distance = 0;
    z->sub_group_size = 8000000; /* the optimizer's chunk: 4 buffers of ~128 MB */
    z->offload_optimizer.device = ZERO_OFFLOAD_NVME;
    z->offload_optimizer.buffer_count = 4;
    z->offload_optimizer.pipeline_read = 1;
    z->offload_optimizer.pipeline_write = 1;
    z->offload_optimizer.pin_memory = 1;
    z->offload_param.device = ZERO_OFFLOAD_NVME;
    z->offload_param.max_in_cpu = 0;
    z->offload_param.buffer_count = 3;
    z->offload_param.pin_memory = 1;
    snprintf(z->offload_optimizer.nvme_path, sizeof z->offload_optimizer.nvme_path, "%.200s",
             a->path);
    snprintf(z->offload_param.nvme_path, sizeof z->offload_param.nvme_path, "%.200s", a->path);
    c->aio.queue_depth = 16;
    c->aio.thread_count = 2;
}

static long long all_sum(long long x)
{
    long long s = 0;
    MPI_Allreduce(&x, &s, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    struct args a;
    if (parse(&a, argc, argv)) {
        if (rank == 0)
            fprintf(stderr, "usage: bench/nvme_infinity --path DIR [--hidden H] [--layers L] "
                            "[--steps S] [--rows R] [--lr LR] [--read-gbps R --write-gbps W]\n");
        MPI_Finalize();
        return 2;
    }
    struct zero_config cfg;
    configure(&cfg, &a);
    struct zero_error err = {0};
    struct zero_device *dev = NULL;
    struct zero_model *model = NULL;
    struct zero_engine *e = NULL;
    MPI_Comm comm = MPI_COMM_WORLD;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    double t0 = bench_now();
    int rc = zero_device_open(&dev, "cpu", &comm, &opt, &err);
    if (!rc)
        rc = zero_nn_build_mlp(&model, a.hidden, (int)a.layers, 16, &err);
    if (!rc)
        rc = zero_engine_create(&e, &cfg, model, dev, &err);
    if (rc) {
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double t_init = bench_now() - t0;
    struct zero_theory t;
    zero_engine_theory(e, &t);
    const struct zero_ledger *disk = zero_engine_nvme_ledger(e);
    double psi = (double)t.psi;
    if (rank == 0) {
        printf("model: residual MLP, hidden %ld, %ld blocks: Ψ = %.3e parameters; model states "
               "16Ψ = %.1f GB (%.1f GiB)\n",
               a.hidden, a.layers, psi, 16 * psi / 1e9, 16 * psi / 1073741824.0);
        printf("stage 3, bf16, AdamW, N = %d; per rank on NVMe: %.2f GB (theory 14Ψ/N = %.2f GB), "
               "in host memory: %.2f GB of model states\n",
               world, zero_ledger_model_states(disk) / 1e9, t.nvme_state_bytes / 1e9,
               t.host_state_bytes / 1e9);
        printf("engine created (states initialized on NVMe) in %.1f s\n", t_init);
    }
    float *x = malloc((size_t)(a.rows * a.hidden) * sizeof *x);
    int32_t *y = malloc((size_t)a.rows * sizeof *y);
    /* theory per step, all ranks: the optimizer streams the NVMe states in and out
     * once; stage 3 gathers read a shard per unit per gather (2Ψ - Ψr elements
     * gathered, persistent units refreshed once, less what the read-ahead ring
     * still holds) */
    for (long step = 0; step < a.steps && !rc; step++) {
        int64_t r0, w0, r1, w1;
        zero_engine_nvme_io(e, &r0, &w0);
        zero_synthetic_samples(11, a.hidden, 16, (int64_t)rank * a.rows, a.rows, x, y);
        struct zero_batch b = {.rows = a.rows, .inputs = x, .labels = y};
        MPI_Barrier(MPI_COMM_WORLD);
        double s0 = bench_now();
        rc = zero_engine_forward(e, &b, NULL, &err);
        if (!rc)
            rc = zero_engine_backward(e, &err);
        double s1 = bench_now();
        if (!rc)
            rc = zero_engine_step(e, NULL, &err);
        MPI_Barrier(MPI_COMM_WORLD);
        double s2 = bench_now();
        if (rc)
            break;
        zero_engine_nvme_io(e, &r1, &w1);
        zero_engine_theory(e, &t);
        long long rd = all_sum(r1 - r0), wr = all_sum(w1 - w0);
        double states = (double)world * t.nvme_state_bytes;
        double gathered = (double)(2 * t.psi_padded - t.psi_reused) * 2.0; /* bf16 shards */
        double th_read = states + gathered, th_write = states;
        if (rank == 0) {
            printf("step %ld: loss %.6f, %.1f s (forward+backward %.1f s, step %.1f s); NVMe "
                   "read %.2f GB (theory <= %.2f), written %.2f GB (theory %.2f)",
                   step + 1, zero_engine_last_step(e)->loss, s2 - s0, s1 - s0, s2 - s1, rd / 1e9,
                   th_read / 1e9, wr / 1e9, th_write / 1e9);
            if (a.read_bw > 0 && a.write_bw > 0) {
                double bound = rd / a.read_bw + wr / a.write_bw;
                printf("; disk bound %.1f s, step / bound %.2f", bound, (s2 - s0) / bound);
            }
            printf("\n");
            fflush(stdout);
        }
    }
    if (rc)
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
    if (!rc && rank == 0) { /* the memory plan checked at creation against what happened */
        int64_t plan[ZERO_TAG_COUNT];
        const int64_t total = zero_engine_memory_plan(e, plan);
        const struct zero_ledger *d = zero_engine_ledger(e), *h = zero_engine_host_ledger(e);
        printf("host memory, rank 0, plan / ledger peak (GiB):");
        for (int g = 0; g < ZERO_TAG_COUNT; g++)
            if (plan[g] || d->peak[g] || h->peak[g])
                printf(" %s %.3f / %.3f", zero_tag_name(g), plan[g] / 1073741824.0,
                       (d->peak[g] + h->peak[g]) / 1073741824.0);
        printf("; total %.3f / %.3f (all tags at once)\n", total / 1073741824.0,
               (d->peak_total + h->peak_total) / 1073741824.0);
    }
    free(x);
    free(y);
    zero_engine_destroy(e); /* removes the swap files */
    zero_model_destroy(model);
    zero_device_close(dev);
    MPI_Finalize();
    return rc ? 1 : 0;
}

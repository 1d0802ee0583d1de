/* ZeRO-Infinity: the fp32 master and the optimizer state (and stage 3's
 * parameter shards) in per-rank NVMe swap files (src/engine/nvme_swap.c, src/io/aio.c).
 *
 *   - training with the states on NVMe gives the bits of training with them in
 *     memory: stages 1-3, fp32/bf16/fp16, with several chunks per unit, a ring
 *     that wraps, read-ahead and write-behind on and off, io_uring and the
 *     pread/pwrite threads, O_DIRECT and buffered files (tmpfs);
 *   - the swap files are removed when the engine goes, and a file a crash left
 *     behind is rebuilt, not trusted;
 *   - the host ledger loses the states the nvme ledger gains, as the theory says;
 *   - a missing, non-directory, read-only or shared nvme_path, a full disk at
 *     the reservation or in the middle of a step, and a swap file truncated by
 *     someone else are errors naming the path (and the unit). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine_harness.h"
#include "mpi_check.h"
#include "zero/dtype.h"

static char scratch[256]; /* this run's directory, the same on every rank */

static void make_scratch(void)
{
    setenv("ZERO_NVME_QUIET", "1", 1); /* the engine's line about its I/O choice */
    if (mpi_check_rank() == 0) {
        snprintf(scratch, sizeof scratch, "/tmp/libzero-nvme-test-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(scratch));
    }
    MPI_Bcast(scratch, sizeof scratch, MPI_CHAR, 0, MPI_COMM_WORLD);
}

static void remove_scratch(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (mpi_check_rank() == 0 && scratch[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
        ck_assert_int_eq(system(cmd), 0);
    }
}

static void sub_dir(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", scratch, name);
    if (mpi_check_rank() == 0)
        mkdir(out, 0700);
    MPI_Barrier(MPI_COMM_WORLD);
}

static int entries(const char *dir)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p && fscanf(p, "%d", &n) != 1)
        n = -1;
    if (p)
        pclose(p);
    return n;
}

static void nvme(struct harness_run *r, const char *dir, int param)
{
    struct zero_optimization_config *z = &r->cfg.zero_optimization;
    z->offload_optimizer.device = ZERO_OFFLOAD_NVME;
    snprintf(z->offload_optimizer.nvme_path, sizeof z->offload_optimizer.nvme_path, "%.200s", dir);
    if (param) {
        z->offload_param.device = ZERO_OFFLOAD_NVME;
        snprintf(z->offload_param.nvme_path, sizeof z->offload_param.nvme_path, "%.200s", dir);
        z->offload_param.max_in_cpu = 0; /* every shard on NVMe */
        z->offload_param.buffer_count = 2;
    }
}

static int run_ok(struct harness_run *r)
{
    struct zero_error err = {0};
    int rc = harness_train(r, MPI_COMM_WORLD, &err);
    if (rc)
        fprintf(stderr, "rank %d: %s\n", mpi_check_rank(), err.msg);
    return mpi_check_all(rc == 0);
}

/* The knobs each variant turns: none of them may change a bit. */
struct variant {
    int pipeline, fast_init, buffers, pin; /* pin: pin_memory (copies through copy_async) */
    const char *aio;                       /* ZERO_AIO */
    int tmpfs, no_direct;                  /* /dev/shm (no O_DIRECT there), ZERO_NVME_NO_DIRECT */
};

static void check_same_bits(enum zero_dtype precision, const struct variant *v, int accum,
                            double clip)
{
    char dir[320];
    sub_dir(dir, sizeof dir, "bits");
    if (v->tmpfs) {
        snprintf(dir, sizeof dir, "/dev/shm/libzero-nvme-test-%d", (int)getpid());
        MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
        if (mpi_check_rank() == 0)
            mkdir(dir, 0700);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    setenv("ZERO_AIO", v->aio, 1);
    setenv("ZERO_NVME_NO_DIRECT", v->no_direct ? "1" : "0", 1);
    for (int stage = 1; stage <= 3; stage++)
        for (int param = 0; param <= (stage == 3); param++) {
            struct harness_run base, off;
            for (int i = 0; i < 2; i++) {
                struct harness_run *x = i ? &off : &base;
                harness_defaults(x, stage);
                x->precision = precision;
                x->hidden = 48; /* ~4.8e3 elements a block: 3 chunks of 2048 on one rank */
                x->steps = 3;
                x->cfg.gradient_accumulation_steps = accum;
                x->cfg.gradient_clipping = clip;
                x->cfg.zero_optimization.stage3_param_persistence_threshold = 300;
                if (i) {
                    struct zero_optimization_config *z = &x->cfg.zero_optimization;
                    nvme(x, dir, param);
                    z->sub_group_size = 2048;
                    z->offload_optimizer.buffer_count = v->buffers;
                    z->offload_optimizer.pipeline_read = v->pipeline;
                    z->offload_optimizer.pipeline_write = v->pipeline;
                    z->offload_optimizer.fast_init = v->fast_init;
                    z->offload_optimizer.pin_memory = v->pin;
                    z->offload_param.pin_memory = v->pin;
                }
                ck_assert(run_ok(x));
            }
            ck_assert_msg(mpi_check_all(harness_same_bits(&base, &off)),
                          "%s stage %d offload_param %d (%s, pipeline %d, fast_init %d, %d "
                          "buffers): NVMe-offloaded training differs",
                          zero_dtype_name(precision), stage, param, v->aio, v->pipeline,
                          v->fast_init, v->buffers);
            ck_assert(base.losses[0] != base.losses[2]); /* it trained */
            ck_assert_int_gt(off.nvme_written, 0);
            MPI_Barrier(MPI_COMM_WORLD);
            ck_assert_msg(entries(dir) == 0, "swap files left in %s", dir);
            free(base.weights);
            free(off.weights);
        }
    unsetenv("ZERO_AIO");
    unsetenv("ZERO_NVME_NO_DIRECT");
    if (v->tmpfs && mpi_check_rank() == 0)
        rmdir(dir);
}

START_TEST(test_nvme_training_is_bit_identical_fp32)
{
    struct variant a = {.pipeline = 1, .fast_init = 0, .buffers = 2, .pin = 1, .aio = "io_uring"};
    struct variant b = {.pipeline = 0, .fast_init = 1, .buffers = 1, .aio = "threads"};
    check_same_bits(ZERO_F32, &a, 1, 0.0);
    check_same_bits(ZERO_F32, &b, 2, 0.05);
}
END_TEST

START_TEST(test_nvme_training_is_bit_identical_mixed_precision)
{
    struct variant a = {
        .pipeline = 1, .fast_init = 1, .buffers = 3, .pin = 1, .aio = "io_uring", .tmpfs = 1};
    struct variant b = {.pipeline = 1, .buffers = 4, .aio = "threads", .no_direct = 1};
    check_same_bits(ZERO_BF16, &a, 2, 0.05);
    check_same_bits(ZERO_F16, &b, 1, 0.0);
}
END_TEST

START_TEST(test_nvme_ledger_holds_the_states_the_theory_puts_on_disk)
{
    char dir[320];
    sub_dir(dir, sizeof dir, "ledger");
    for (int param = 0; param <= 1; param++) {
        struct harness_run r;
        harness_defaults(&r, 3);
        r.precision = ZERO_BF16;
        r.steps = 2;
        nvme(&r, dir, param);
        ck_assert(run_ok(&r));
        const struct zero_ledger *h = &r.host_ledger_after_create;
        const struct zero_ledger *d = &r.nvme_ledger_after_create;
        const struct zero_theory *t = &r.theory;
        int64_t n = mpi_check_size(), shard = t->psi_padded / n;
        /* host memory: no model state at all (the gradient streams through the ring) */
        ck_assert_int_eq(h->current[ZERO_TAG_MASTER], 0);
        ck_assert_int_eq(h->current[ZERO_TAG_OPTIM], 0);
        ck_assert_int_eq(h->current[ZERO_TAG_PARAMS], 0); /* on disk, or on the device */
        ck_assert_int_eq(h->current[ZERO_TAG_GRADS], 0);
        ck_assert_int_gt(h->current[ZERO_TAG_WORKSPACE], 0); /* the rings */
        /* disk: 4 + 8 (+ 2) bytes per shard element */
        ck_assert_int_eq(t->nvme_master_bytes, 4 * shard);
        ck_assert_int_eq(t->nvme_optim_bytes, 8 * shard);
        ck_assert_int_eq(t->nvme_params_bytes, param ? 2 * shard : 0);
        ck_assert_int_eq(t->host_state_bytes, 0);
        ck_assert_int_eq(d->current[ZERO_TAG_MASTER], t->nvme_master_bytes);
        ck_assert_int_eq(d->current[ZERO_TAG_OPTIM], t->nvme_optim_bytes);
        ck_assert_int_eq(d->current[ZERO_TAG_PARAMS], t->nvme_params_bytes);
        ck_assert_int_eq(zero_ledger_model_states(d), t->nvme_state_bytes);
        /* every step writes the optimizer file once (initialization writes it too) */
        int64_t opt = d->current[ZERO_TAG_MASTER] + d->current[ZERO_TAG_OPTIM];
        ck_assert_int_ge(r.nvme_written, (r.steps + 1) * opt);
        ck_assert_int_ge(r.nvme_read, r.steps * opt);
        free(r.weights);
    }
}
END_TEST

/* ---- faults: one engine driven by hand ---- */

struct driver {
    struct zero_config cfg;
    struct zero_device *dev;
    struct zero_model *model;
    struct zero_engine *e;
    struct zero_error err;
};

/* The config drive_open uses (the caller may change it before drive_create). */
static void drive_config(struct driver *d, const char *dir, int fast_init)
{
    memset(d, 0, sizeof *d);
    zero_config_defaults(&d->cfg);
    d->cfg.train_micro_batch_size_per_gpu = 2;
    d->cfg.zero_optimization.stage = 3;
    d->cfg.zero_optimization.sub_group_size = 2048;
    d->cfg.zero_optimization.stage3_param_persistence_threshold = 0;
    d->cfg.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_NVME;
    d->cfg.zero_optimization.offload_optimizer.fast_init = fast_init;
    d->cfg.zero_optimization.offload_param.device = ZERO_OFFLOAD_NVME;
    d->cfg.zero_optimization.offload_param.max_in_cpu = 0;
    snprintf(d->cfg.zero_optimization.offload_optimizer.nvme_path, 256, "%.200s", dir);
    snprintf(d->cfg.zero_optimization.offload_param.nvme_path, 256, "%.200s", dir);
}

static int drive_create(struct driver *d)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    int rc = zero_device_open(&d->dev, "cpu", &comm, &opt, &d->err);
    if (!rc)
        rc = zero_nn_build_mlp(&d->model, 48, 2, 3, &d->err);
    if (!rc)
        rc = zero_engine_create(&d->e, &d->cfg, d->model, d->dev, &d->err);
    return rc;
}

static int drive_open(struct driver *d, const char *dir, int fast_init)
{
    drive_config(d, dir, fast_init);
    return drive_create(d);
}

static int drive_forward(struct driver *d)
{
    float x[2 * 48];
    int32_t y[2];
    zero_synthetic_samples(3, 48, 3, 0, 2, x, y);
    struct zero_batch b = {.rows = 2, .inputs = x, .labels = y};
    return zero_engine_forward(d->e, &b, NULL, &d->err);
}

static int drive_step(struct driver *d)
{
    int rc = drive_forward(d);
    if (!rc)
        rc = zero_engine_backward(d->e, &d->err);
    if (!rc)
        rc = zero_engine_step(d->e, NULL, &d->err);
    return rc;
}

static void drive_close(struct driver *d)
{
    zero_engine_destroy(d->e);
    zero_model_destroy(d->model);
    zero_device_close(d->dev);
}

/* The error creating an engine on dir, or "". */
static void open_error(const char *dir, int fast_init, char *msg, size_t len)
{
    struct driver d;
    int rc = drive_open(&d, dir, fast_init);
    snprintf(msg, len, "%s", rc ? d.err.msg : "");
    drive_close(&d);
}

static void expect(const char *msg, const char *a, const char *b, const char *c)
{
    ck_assert_msg(strstr(msg, a) && (!b || strstr(msg, b)) && (!c || strstr(msg, c)),
                  "expected '%s' / '%s' / '%s', got '%s'", a, b ? b : "", c ? c : "", msg);
}

static int mount_tmpfs(const char *dir, const char *opts, unsigned long flags)
{
    mkdir(dir, 0700);
    return mount("tmpfs", dir, "tmpfs", flags, opts) == 0;
}

START_TEST(test_bad_nvme_paths_are_named)
{
    if (mpi_check_size() > 1)
        return; /* rank-local faults: one rank is enough, and no peer waits for it */
    char dir[320], file[340], msg[1024];
    sub_dir(dir, sizeof dir, "paths");
    snprintf(file, sizeof file, "%s/missing", dir);
    open_error(file, 0, msg, sizeof msg);
    expect(msg, "nvme_path", file, "does not exist");
    snprintf(file, sizeof file, "%s/a-file", dir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    open_error(file, 0, msg, sizeof msg);
    expect(msg, "nvme_path", file, "is not a directory");
    unlink(file);
    /* read-only: a read-only tmpfs (root ignores permission bits) */
    snprintf(file, sizeof file, "%s/ro", dir);
    if (mount_tmpfs(file, "size=1m", MS_RDONLY)) {
        open_error(file, 0, msg, sizeof msg);
        expect(msg, "nvme_path", file, "is not writable");
        umount(file);
    } else if (geteuid() != 0) {
        chmod(file, 0500);
        open_error(file, 0, msg, sizeof msg);
        expect(msg, "nvme_path", file, "is not writable");
    }
    rmdir(file);
    /* two engines on one path and rank: the second is refused while the first lives */
    struct driver a;
    ck_assert_msg(drive_open(&a, dir, 0) == 0, "%s", a.err.msg);
    open_error(dir, 0, msg, sizeof msg);
    expect(msg, "in use by another process", "libzero-", "nvme_path");
    /* the refused engine held no lock: its end removes nothing of the live one */
    char live[600];
    snprintf(live, sizeof live, "%s/libzero-optim-rank%05d.swap", dir, mpi_check_rank());
    ck_assert_msg(access(live, F_OK) == 0, "the refused engine removed the live one's %s", live);
    ck_assert_msg(drive_step(&a) == 0, "%s", a.err.msg);
    drive_close(&a);
    ck_assert_int_eq(entries(dir), 0);
}
END_TEST

/* A program's signal handler removes the swap files by their paths
 * (zero_engine_swap_paths) while the engine lives on; another job may then make files of
 * its own at those paths, which the first engine's end must leave alone. */
START_TEST(test_swap_paths_removed_early_and_taken_by_another_job_are_left_to_it)
{
    if (mpi_check_size() > 1)
        return;
    char dir[320];
    sub_dir(dir, sizeof dir, "handover");
    struct driver a, b;
    ck_assert_msg(drive_open(&a, dir, 0) == 0, "%s", a.err.msg);
    const char *paths[4];
    size_t n = zero_engine_swap_paths(a.e, paths, 4);
    ck_assert_uint_eq(n, 2); /* the optimizer's and the parameters' files */
    ck_assert_uint_eq(zero_engine_swap_paths(a.e, paths, 0), 2);
    ck_assert_ptr_nonnull(strstr(paths[0], "libzero-optim-rank"));
    ck_assert_ptr_nonnull(strstr(paths[1], "libzero-param-rank"));
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(unlink(paths[i]), 0);           /* what the handler does */
    ck_assert_msg(drive_step(&a) == 0, "%s", a.err.msg); /* the data lives on in the files */
    ck_assert_msg(drive_open(&b, dir, 0) == 0, "%s", b.err.msg); /* files of its own */
    drive_close(&a);
    ck_assert_int_eq(entries(dir), 2); /* b's files are still there */
    ck_assert_msg(drive_step(&b) == 0, "%s", b.err.msg);
    drive_close(&b);
    ck_assert_int_eq(entries(dir), 0);
}
END_TEST

/* A job killed at more ranks and resumed at fewer leaves the swap files of the ranks it
 * no longer has; the next engine on the path removes those no process locks, and leaves a
 * locked one (another job's) and any other name alone. */
START_TEST(test_stale_swap_files_of_ranks_past_the_world_are_removed_unless_locked)
{
    if (mpi_check_size() > 1)
        return;
    char dir[320], stale[400], locked[400], other[400];
    sub_dir(dir, sizeof dir, "stale");
    snprintf(stale, sizeof stale, "%s/libzero-optim-rank00003.swap", dir);
    snprintf(locked, sizeof locked, "%s/libzero-param-rank00004.swap", dir);
    snprintf(other, sizeof other, "%s/libzero-optim-rank00005.swap.keep", dir);
    const char *made[3] = {stale, locked, other};
    int fds[3];
    for (int i = 0; i < 3; i++) {
        fds[i] = open(made[i], O_RDWR | O_CREAT, 0600);
        ck_assert_int_ge(fds[i], 0);
    }
    ck_assert_int_eq(flock(fds[1], LOCK_EX | LOCK_NB), 0); /* another job holds it */
    struct driver d;
    ck_assert_msg(drive_open(&d, dir, 0) == 0, "%s", d.err.msg);
    ck_assert_msg(access(stale, F_OK) != 0, "%s stayed", stale);
    ck_assert_msg(access(locked, F_OK) == 0, "the locked %s went", locked);
    ck_assert_msg(access(other, F_OK) == 0, "%s went", other);
    drive_close(&d);
    for (int i = 0; i < 3; i++)
        close(fds[i]);
    unlink(locked);
    unlink(other);
    ck_assert_int_eq(entries(dir), 0);
}
END_TEST

START_TEST(test_a_full_disk_is_named_at_the_reservation_and_in_the_middle_of_a_step)
{
    if (mpi_check_size() > 1)
        return;
    char dir[320], probe[320], opts[64], reserve[1024] = "", step[1024] = "";
    sub_dir(probe, sizeof probe, "probe");
    sub_dir(dir, sizeof dir, "full");
    /* the sizes on disk, from an engine with room */
    struct driver d;
    ck_assert_msg(drive_open(&d, probe, 0) == 0, "%s", d.err.msg);
    const struct zero_ledger *l = zero_engine_nvme_ledger(d.e);
    int64_t params = l->current[ZERO_TAG_PARAMS], master = l->current[ZERO_TAG_MASTER];
    int64_t optim = l->current[ZERO_TAG_OPTIM];
    drive_close(&d);
    /* room for the parameter shards, the masters and a quarter of the optimizer state */
    snprintf(opts, sizeof opts, "size=%lldk", (long long)((params + master + optim / 4) / 1024));
    if (!mount_tmpfs(dir, opts, 0)) {
        fprintf(stderr, "test_nvme_offload: cannot mount a tmpfs here: full-disk cases skipped\n");
        return;
    }
    /* reserved up front (no fast_init): the engine is refused before training */
    open_error(dir, 0, reserve, sizeof reserve);
    /* sparse (fast_init): a write of the optimizer state in the step finds no room */
    int rc = drive_open(&d, dir, 1);
    if (!rc)
        rc = drive_step(&d);
    snprintf(step, sizeof step, "%s", rc ? d.err.msg : "(no error)");
    drive_close(&d);
    int left = entries(dir);
    umount(dir);
    expect(reserve, "reserving", "No space left on device", "offload_optimizer.nvme_path");
    expect(step, "No space left on device", "libzero-optim-rank00000.swap", "writing unit ");
    expect(step, "(the file system under zero_optimization.offload_optimizer.nvme_path is full)",
           NULL, NULL);
    ck_assert_int_eq(left, 0);
}
END_TEST

START_TEST(test_a_truncated_swap_file_is_named_with_its_unit)
{
    if (mpi_check_size() > 1)
        return;
    char dir[320], file[400];
    sub_dir(dir, sizeof dir, "truncated");
    struct driver d;
    ck_assert_msg(drive_open(&d, dir, 0) == 0, "%s", d.err.msg);
    ck_assert_msg(drive_step(&d) == 0, "%s", d.err.msg);
    snprintf(file, sizeof file, "%s/libzero-optim-rank00000.swap", dir);
    ck_assert_int_eq(truncate(file, 4096), 0);
    int64_t r0, w0, r1, w1;
    zero_engine_nvme_io(d.e, &r0, &w0);
    int rc = drive_step(&d);
    zero_engine_nvme_io(d.e, &r1, &w1);
    ck_assert_msg(rc != 0, "read %lld written %lld", (long long)(r1 - r0), (long long)(w1 - w0));
    expect(d.err.msg, file, "truncated by someone else", "reading unit ");
    drive_close(&d);
    ck_assert_int_eq(entries(dir), 0);
}
END_TEST

/* One rank's disk error (its swap file truncated) ends the step on every rank,
 * the others naming it, instead of leaving them in the next collective. */
START_TEST(test_one_rank_s_truncated_swap_file_stops_every_rank)
{
    int world = mpi_check_size(), rank = mpi_check_rank();
    if (world < 2)
        return;
    char dir[320], file[400];
    sub_dir(dir, sizeof dir, "truncated_one");
    struct driver d;
    ck_assert_msg(drive_open(&d, dir, 0) == 0, "%s", d.err.msg);
    ck_assert_msg(drive_step(&d) == 0, "%s", d.err.msg);
    snprintf(file, sizeof file, "%s/libzero-optim-rank%05d.swap", dir, world - 1);
    if (rank == world - 1)
        ck_assert_int_eq(truncate(file, 4096), 0);
    int rc = drive_step(&d);
    ck_assert_msg(rc != 0, "rank %d: the step went on after rank %d's file was truncated", rank,
                  world - 1);
    if (rank == world - 1) {
        expect(d.err.msg, file, "truncated by someone else", "reading unit ");
    } else {
        char who[64];
        snprintf(who, sizeof who, "rank %d failed in the NVMe optimizer step", world - 1);
        expect(d.err.msg, who, NULL, NULL);
    }
    drive_close(&d);
}
END_TEST

/* ---- one rank's parameter shard unreadable in a stage-3 gather ---- */

static void hung(int sig)
{
    (void)sig;
    static const char m[] = "test_nvme_offload: still running 60 s after one rank's NVMe read "
                            "failed: a rank hangs in a collective\n";
    ssize_t w = write(2, m, sizeof m - 1);
    (void)w;
    _exit(99); /* mpirun takes the other ranks down */
}

enum read_fault {
    FORWARD,            /* every shard cut: the first forward gather's own read fails */
    FORWARD_READ_AHEAD, /* the second block's shard cut: its read, issued ahead during the
                           first block's gather, fails at the second block's (a prefetch) */
    BACKWARD,           /* cut after a good forward: the backward's re-gather fails */
};

/* The last rank's parameter swap file is cut as `fault` says (what a disk
 * error or another process does to it); every rank must return from that
 * pass within a minute, the last naming its file, the unit and the cause, the
 * others naming it, and destroy must then free every byte and the files. */
static void check_one_rank_s_unreadable_shard(enum read_fault fault, const char *unit)
{
    int world = mpi_check_size(), rank = mpi_check_rank(), bad = world - 1;
    char dir[320], file[400], name[32];
    snprintf(name, sizeof name, "unreadable%d", (int)fault);
    sub_dir(dir, sizeof dir, name);
    struct driver d;
    drive_config(&d, dir, 0);
    if (fault == BACKWARD) {
        /* no read ahead (one buffer), no prefetch and nothing kept for reuse but
         * the classifier: backward gathers layers.1 again, reading its shard */
        d.cfg.zero_optimization.offload_param.buffer_count = 1;
        d.cfg.zero_optimization.stage3_prefetch_bucket_size = 0;
        d.cfg.zero_optimization.stage3_max_reuse_distance = 0;
    }
    ck_assert_msg(drive_create(&d) == 0, "%s", d.err.msg);
    ck_assert_msg(drive_step(&d) == 0, "%s", d.err.msg); /* records the fetch order */
    snprintf(file, sizeof file, "%s/libzero-param-rank%05d.swap", dir, bad);
    struct stat st;
    ck_assert_int_eq(stat(file, &st), 0);
    /* the blocks layers.0 and layers.1 have equal shards, the classifier's is
     * smaller: half the file (rounded down to a page) keeps layers.0 whole and
     * ends inside layers.1 */
    off_t keep = fault == FORWARD_READ_AHEAD ? st.st_size / 2 / 4096 * 4096 : 0;
    signal(SIGALRM, hung);
    alarm(60);
    int rc = fault == BACKWARD ? drive_forward(&d) : 0;
    ck_assert_msg(rc == 0, "%s", d.err.msg);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == bad)
        ck_assert_int_eq(truncate(file, keep), 0);
    MPI_Barrier(MPI_COMM_WORLD);
    rc = fault == BACKWARD ? zero_engine_backward(d.e, &d.err) : drive_forward(&d);
    ck_assert_msg(rc != 0, "rank %d: the pass went on after rank %d's file was cut", rank, bad);
    char what[64], who[700];
    snprintf(what, sizeof what, "reading unit %s (parameter shard", unit);
    if (rank == bad) {
        expect(d.err.msg, file, what, "the file ends early (truncated by someone else?)");
    } else {
        snprintf(who, sizeof who,
                 "rank %d: stage-3 gather of unit %s stopped on every rank: rank %d could not "
                 "read its parameter shard from its NVMe swap file %s",
                 rank, unit, bad, file);
        expect(d.err.msg, who, NULL, NULL);
    }
    /* destroy neither hangs nor leaks: the ledgers are back to the backend's own */
    zero_engine_destroy(d.e);
    d.e = NULL;
    alarm(0);
    for (int t = 0; t < ZERO_TAG_COUNT; t++)
        if (t != ZERO_TAG_COMM) {
            ck_assert_msg(d.dev->ledger.current[t] == 0, "rank %d: %lld bytes of %s left", rank,
                          (long long)d.dev->ledger.current[t], zero_tag_name(t));
            ck_assert_msg(d.dev->host_ledger.current[t] == 0, "rank %d: %lld bytes of host %s left",
                          rank, (long long)d.dev->host_ledger.current[t], zero_tag_name(t));
        }
    drive_close(&d);
    MPI_Barrier(MPI_COMM_WORLD);
    ck_assert_int_eq(entries(dir), 0);
}

START_TEST(test_one_rank_s_unreadable_parameter_shard_stops_every_rank_in_forward)
{
    check_one_rank_s_unreadable_shard(FORWARD, "layers.0");
}
END_TEST

START_TEST(test_one_rank_s_failed_read_ahead_surfaces_at_its_gather_on_every_rank)
{
    check_one_rank_s_unreadable_shard(FORWARD_READ_AHEAD, "layers.1");
}
END_TEST

START_TEST(test_one_rank_s_unreadable_parameter_shard_stops_every_rank_in_backward)
{
    check_one_rank_s_unreadable_shard(BACKWARD, "layers.1");
}
END_TEST

/* The rare paths read a unit's states from NVMe on each rank before a
 * collective (zero_engine_read_param all-gathers the master): one rank's
 * failed read must stop every rank there, the others naming it. */
START_TEST(test_one_rank_s_unreadable_states_stop_every_rank_in_read_param)
{
    int world = mpi_check_size(), rank = mpi_check_rank(), bad = world - 1;
    if (world < 2)
        return;
    char dir[320], file[400];
    sub_dir(dir, sizeof dir, "unreadable_read_param");
    struct driver d;
    ck_assert_msg(drive_open(&d, dir, 0) == 0, "%s", d.err.msg);
    ck_assert_msg(drive_step(&d) == 0, "%s", d.err.msg);
    const struct zero_param_spec *p = &d.model->units[0]->params[0];
    int64_t numel = 1;
    for (int i = 0; i < p->ndim; i++)
        numel *= p->shape[i];
    float *host = malloc((size_t)numel * sizeof *host);
    ck_assert_ptr_nonnull(host);
    ck_assert_msg(zero_engine_read_param(d.e, 0, 0, host, &d.err) == 0, "%s", d.err.msg);
    snprintf(file, sizeof file, "%s/libzero-optim-rank%05d.swap", dir, bad);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == bad)
        ck_assert_int_eq(truncate(file, 0), 0);
    MPI_Barrier(MPI_COMM_WORLD);
    signal(SIGALRM, hung);
    alarm(60);
    int rc = zero_engine_read_param(d.e, 0, 0, host, &d.err);
    alarm(0);
    ck_assert_msg(rc != 0, "rank %d: read_param went on after rank %d's file was cut", rank, bad);
    if (rank == bad) {
        expect(d.err.msg, file, "reading unit ", NULL);
    } else {
        char who[200];
        snprintf(who, sizeof who, "rank %d: rank %d could not read unit %s's states", rank, bad,
                 d.model->units[0]->name);
        expect(d.err.msg, who, "libzero-*-rank", "no rank went on to the collective");
    }
    free(host);
    drive_close(&d);
    MPI_Barrier(MPI_COMM_WORLD);
    ck_assert_int_eq(entries(dir), 0);
}
END_TEST

START_TEST(test_a_swap_file_left_by_a_crash_is_rebuilt)
{
    char dir[320], file[400];
    sub_dir(dir, sizeof dir, "stale");
    /* what a killed run leaves: a file of the right name with other contents */
    snprintf(file, sizeof file, "%s/libzero-optim-rank%05d.swap", dir, mpi_check_rank());
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 100000; i++)
        fputc(0x5a, f);
    fclose(f);
    struct harness_run base, off;
    for (int i = 0; i < 2; i++) {
        struct harness_run *x = i ? &off : &base;
        harness_defaults(x, 2);
        if (i)
            nvme(x, dir, 0);
        ck_assert(run_ok(x));
    }
    ck_assert(mpi_check_all(harness_same_bits(&base, &off)));
    MPI_Barrier(MPI_COMM_WORLD);
    ck_assert_int_eq(entries(dir), 0);
    free(base.weights);
    free(off.weights);
}
END_TEST

START_TEST(test_nvme_keys_the_build_cannot_honour_name_the_key)
{
    struct harness_run r;
    harness_defaults(&r, 3);
    struct zero_error err = {0};
    r.cfg.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_NVME;
    ck_assert(harness_train(&r, MPI_COMM_WORLD, &err) != 0);
    expect(err.msg, "offload_optimizer.device = nvme needs", "nvme_path", NULL);
    harness_defaults(&r, 3);
    r.cfg.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
    r.cfg.zero_optimization.offload_param.device = ZERO_OFFLOAD_NVME;
    snprintf(r.cfg.zero_optimization.offload_param.nvme_path, 256, "%s", scratch);
    ck_assert(harness_train(&r, MPI_COMM_WORLD, &err) != 0);
    expect(err.msg, "offload_param.device = nvme needs", "offload_optimizer.device = nvme", NULL);
    harness_defaults(&r, 3);
    nvme(&r, scratch, 1);
    r.cfg.zero_optimization.offload_param.buffer_size = 10;
    ck_assert(harness_train(&r, MPI_COMM_WORLD, &err) != 0);
    expect(err.msg, "offload_param.buffer_size 10 is smaller than unit", "shard", NULL);
    /* the NVMe-only keys away from their defaults without NVMe: refused, not ignored */
    harness_defaults(&r, 3);
    r.cfg.zero_optimization.offload_optimizer.device = ZERO_OFFLOAD_CPU;
    r.cfg.zero_optimization.offload_optimizer.pipeline_read = 1;
    ck_assert(harness_train(&r, MPI_COMM_WORLD, &err) != 0);
    expect(err.msg, "offload_optimizer.{nvme_path,", "the device is not nvme", NULL);
    harness_defaults(&r, 3);
    r.cfg.zero_optimization.offload_param.max_in_cpu = 5;
    ck_assert(harness_train(&r, MPI_COMM_WORLD, &err) != 0);
    expect(err.msg, "offload_param.{nvme_path,", "the device is not nvme", NULL);
    harness_defaults(&r, 2);
    r.cfg.aio.queue_depth = 32;
    ck_assert(harness_train(&r, MPI_COMM_WORLD, &err) != 0);
    expect(err.msg, "aio: set to other than DeepSpeed's defaults", NULL, NULL);
    harness_defaults(&r, 3);
    nvme(&r, scratch, 0);
    r.cfg.aio.block_size = 1000;
    ck_assert(harness_train(&r, MPI_COMM_WORLD, &err) != 0);
    expect(err.msg, "aio.block_size 1000", "4096", NULL);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("nvme_offload");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, make_scratch, remove_scratch);
    tcase_add_test(tc, test_nvme_training_is_bit_identical_fp32);
    tcase_add_test(tc, test_nvme_training_is_bit_identical_mixed_precision);
    tcase_add_test(tc, test_nvme_ledger_holds_the_states_the_theory_puts_on_disk);
    tcase_add_test(tc, test_bad_nvme_paths_are_named);
    tcase_add_test(tc, test_swap_paths_removed_early_and_taken_by_another_job_are_left_to_it);
    tcase_add_test(tc, test_stale_swap_files_of_ranks_past_the_world_are_removed_unless_locked);
    tcase_add_test(tc, test_a_full_disk_is_named_at_the_reservation_and_in_the_middle_of_a_step);
    tcase_add_test(tc, test_a_truncated_swap_file_is_named_with_its_unit);
    tcase_add_test(tc, test_one_rank_s_truncated_swap_file_stops_every_rank);
    tcase_add_test(tc, test_one_rank_s_unreadable_states_stop_every_rank_in_read_param);
    tcase_add_test(tc, test_one_rank_s_unreadable_parameter_shard_stops_every_rank_in_forward);
    tcase_add_test(tc, test_one_rank_s_failed_read_ahead_surfaces_at_its_gather_on_every_rank);
    tcase_add_test(tc, test_one_rank_s_unreadable_parameter_shard_stops_every_rank_in_backward);
    tcase_add_test(tc, test_a_swap_file_left_by_a_crash_is_rebuilt);
    tcase_add_test(tc, test_nvme_keys_the_build_cannot_honour_name_the_key);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_check_main(&argc, &argv, make_suite);
}

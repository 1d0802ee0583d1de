/* Sharded checkpoints with the engine (run at 1-4 ranks): resuming is
 * bit-identical to not stopping in every stage, fp32 and fp16 (with a loss
 * scale that changes), in either atom order; a checkpoint of N ranks continues at N' ranks exactly
 * as an uninterrupted run at N' (4 -> 2, 2 -> 3, across stages); export equals the live weights bit
 * for bit; every byte flip and truncation at a section boundary is rejected naming file, section
 * and tensor; a checkpoint of another model or of another atom order, a missing or foreign rank
 * file and a full disk are reported and leave the engine and the previous checkpoint untouched;
 * keep_last prunes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint/checkpoint_internal.h"
#include "mpi_check.h"
#include "zero/checkpoint.h"
#include "zero/zero.h"

#define MAX_STEPS 8

/* ---- a small training run on a communicator ---- */

struct run {
    struct zero_config cfg;
    int64_t hidden, classes;
    int layers;
    MPI_Comm comm;
    struct zero_device *dev;
    struct zero_model *model;
    struct zero_engine *e;
    float losses[MAX_STEPS];
    double scales[MAX_STEPS];
};

static void run_config(struct run *r, int stage, enum zero_dtype precision, int64_t accum)
{
    memset(r, 0, sizeof *r);
    zero_config_defaults(&r->cfg);
    r->cfg.zero_optimization.stage = stage;
    r->cfg.optimizer.type = ZERO_OPTIM_ADAMW;
    r->cfg.optimizer.lr = 1e-2;
    r->cfg.optimizer.weight_decay = 0.01;
    r->cfg.train_micro_batch_size_per_gpu = 2;
    r->cfg.gradient_accumulation_steps = accum;
    r->cfg.gradient_clipping = 0.5;
    r->cfg.libzero.align = 16; /* tiny units still split over 4 ranks */
    r->cfg.zero_optimization.stage3_param_persistence_threshold = 200; /* classifier persists */
    if (precision == ZERO_F16) {
        r->cfg.fp16.enabled = 1;
        r->cfg.fp16.initial_scale_power = 24; /* overflows at first: the scale halves */
        r->cfg.fp16.loss_scale_window = 2;    /* ... then doubles every 2 clean steps */
        r->cfg.fp16.hysteresis = 1;
    } else if (precision == ZERO_BF16) {
        r->cfg.bf16.enabled = 1;
    }
    r->hidden = 12;
    r->classes = 5;
    r->layers = 2;
}

static int run_open(struct run *r, MPI_Comm comm, struct zero_error *err)
{
    r->comm = comm;
    struct zero_backend_options opt = {.coll_mode = r->cfg.libzero.coll_mode, .device = -1};
    int rc = zero_device_open(&r->dev, "cpu", &comm, &opt, err);
    if (!rc)
        rc = zero_nn_build_mlp(&r->model, r->hidden, r->layers, r->classes, err);
    if (!rc)
        rc = zero_engine_create(&r->e, &r->cfg, r->model, r->dev, err);
    return rc;
}

static void run_close(struct run *r)
{
    zero_engine_destroy(r->e);
    zero_model_destroy(r->model);
    zero_device_close(r->dev);
    r->e = NULL;
    r->model = NULL;
    r->dev = NULL;
}

/* Trains steps [first, last) in the config's atom order; the data of step s is the
 * same at any world size. */
static int run_steps(struct run *r, int first, int last, struct zero_error *err)
{
    const struct zero_config *c = zero_engine_config(r->e);
    int64_t m = c->train_micro_batch_size_per_gpu, accum = c->gradient_accumulation_steps;
    float x[64 * 16];
    int32_t y[64];
    int rc = 0;
    for (int step = first; step < last && !rc; step++) {
        for (int64_t micro = 0; micro < accum && !rc; micro++) {
            int64_t at = zero_atom_first_sample_in(c->libzero.atom_order, step, micro, r->dev->rank,
                                                   r->dev->size, accum, m);
            zero_synthetic_samples(7, r->hidden, r->classes, at, m, x, y);
            struct zero_batch b = {.rows = m, .inputs = x, .labels = y};
            if (!(rc = zero_engine_forward(r->e, &b, NULL, err)) &&
                !(rc = zero_engine_backward(r->e, err)))
                rc = zero_engine_step(r->e, NULL, err);
        }
        if (!rc) {
            r->losses[step] = (float)zero_engine_last_step(r->e)->loss;
            r->scales[step] = zero_engine_last_step(r->e)->loss_scale;
        }
    }
    return rc;
}

/* Every parameter, whole, in model order (collective). */
static float *run_weights(struct run *r, int64_t *n, struct zero_error *err)
{
    *n = zero_model_numel(r->model);
    float *w = malloc((size_t)*n * sizeof *w);
    int64_t at = 0;
    for (int u = 0; w && u < r->model->nunits; u++)
        for (int p = 0; p < r->model->units[u]->nparams; p++) {
            if (zero_engine_read_param(r->e, u, p, w + at, err)) {
                free(w);
                return NULL;
            }
            at += zero_param_numel(&r->model->units[u]->params[p]);
        }
    return w;
}

static int report(int rc, const struct zero_error *err)
{
    if (rc)
        fprintf(stderr, "rank %d: %s\n", mpi_check_rank(), err->msg);
    return rc == 0;
}

/* ---- a scratch directory shared by all ranks ---- */

static char scratch[256];

static void make_scratch(void)
{
    if (mpi_check_rank() == 0) {
        snprintf(scratch, sizeof scratch, "%s/test_checkpoint.XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(scratch))
            scratch[0] = '\0';
    }
    MPI_Bcast(scratch, sizeof scratch, MPI_CHAR, 0, MPI_COMM_WORLD);
}

static void remove_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

static void drop_scratch(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (mpi_check_rank() == 0 && scratch[0])
        remove_tree(scratch);
}

static void path_in(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", scratch, name);
}

/* ---- resume ---- */

/* ZeRO-Offload on (optimizer, and the parameters in stage 3: 1 in host memory,
 * 2 on NVMe, in swap files under the scratch directory) or off (0). */
static void set_offload(struct run *r, int on, const char *swap)
{
    struct zero_optimization_config *z = &r->cfg.zero_optimization;
    enum zero_offload_device d = on == 2 ? ZERO_OFFLOAD_NVME : on ? ZERO_OFFLOAD_CPU : 0;
    z->offload_optimizer.device = d;
    z->offload_param.device = z->stage == 3 ? d : ZERO_OFFLOAD_NONE;
    if (on == 2) {
        char dir[320];
        path_in(dir, sizeof dir, swap); /* one per live engine: a swap file is locked */
        if (mpi_check_rank() == 0)
            mkdir(dir, 0700);
        MPI_Barrier(MPI_COMM_WORLD);
        snprintf(z->offload_optimizer.nvme_path, sizeof z->offload_optimizer.nvme_path, "%.200s",
                 dir);
        if (z->stage == 3) {
            snprintf(z->offload_param.nvme_path, sizeof z->offload_param.nvme_path, "%.200s", dir);
            z->offload_param.max_in_cpu = 0; /* every shard on NVMe */
        }
        z->sub_group_size = 2048;          /* several chunks per unit */
        setenv("ZERO_NVME_QUIET", "1", 1); /* the engine's line about its I/O choice */
    }
}

/* Trains 6 steps saving at step 3 (saving must not disturb training), then a
 * fresh engine loads step 3 and trains to 6: losses, scales and weights match.
 * The writer and the reader may differ in offload (states in host memory). */
static void check_resume_in(enum zero_atom_order order, int stage, enum zero_dtype precision,
                            int64_t accum, int offload_writer, int offload_reader)
{
    char dir[320];
    path_in(dir, sizeof dir, "resume");
    struct run a, b;
    struct zero_error err = {0};
    run_config(&a, stage, precision, accum);
    run_config(&b, stage, precision, accum);
    a.cfg.libzero.atom_order = b.cfg.libzero.atom_order = order;
    set_offload(&a, offload_writer, "swap-writer");
    set_offload(&b, offload_reader, "swap-reader");
    int64_t na = 0, nb = 0;
    float *wa = NULL, *wb = NULL;
    char *user = NULL;
    int rc = run_open(&a, MPI_COMM_WORLD, &err);
    if (!rc)
        rc = run_steps(&a, 0, 3, &err);
    int64_t applied_at_3 = a.e ? zero_engine_applied_steps(a.e) : 0;
    if (!rc)
        rc = zero_checkpoint_save(a.e, dir, 2, "{\"next_batch\": 3}", &err);
    if (!rc)
        rc = run_steps(&a, 3, 6, &err);
    if (!rc && !(wa = run_weights(&a, &na, &err)))
        rc = 1;
    ck_assert(mpi_check_all(report(rc, &err)));
    rc = run_open(&b, MPI_COMM_WORLD, &err);
    if (!rc)
        rc = zero_checkpoint_load(b.e, dir, &user, &err);
    ck_assert(mpi_check_all(report(rc, &err)));
    ck_assert_str_eq(user, "{\"next_batch\":3}");
    ck_assert_int_eq(zero_engine_global_steps(b.e), 3);
    ck_assert_int_eq(zero_engine_applied_steps(b.e), applied_at_3);
    rc = run_steps(&b, 3, 6, &err);
    if (!rc && !(wb = run_weights(&b, &nb, &err)))
        rc = 1;
    ck_assert(mpi_check_all(report(rc, &err)));
    int same = na == nb && memcmp(wa, wb, (size_t)na * sizeof *wa) == 0 &&
               memcmp(a.losses + 3, b.losses + 3, 3 * sizeof *a.losses) == 0 &&
               memcmp(a.scales + 3, b.scales + 3, 3 * sizeof *a.scales) == 0 &&
               zero_engine_applied_steps(a.e) == zero_engine_applied_steps(b.e);
    ck_assert_msg(mpi_check_all(same),
                  "stage %d %s: resumed run differs (losses %.9g/%.9g, "
                  "scales %g/%g)",
                  stage, zero_dtype_name(precision), a.losses[5], b.losses[5], a.scales[5],
                  b.scales[5]);
    if (precision == ZERO_F16) { /* the scaler's state mattered: it changed while resuming */
        ck_assert(a.scales[3] != a.scales[5] || a.scales[4] != a.scales[5]);
        ck_assert(zero_engine_applied_steps(a.e) < 6); /* some steps overflowed */
    }
    free(user);
    free(wa);
    free(wb);
    run_close(&a);
    run_close(&b);
}

static void check_resume_offload(int stage, enum zero_dtype precision, int64_t accum,
                                 int offload_writer, int offload_reader)
{
    check_resume_in(ZERO_ATOM_MICRO_STEP_MAJOR, stage, precision, accum, offload_writer,
                    offload_reader);
}

static void check_resume(int stage, enum zero_dtype precision, int64_t accum)
{
    check_resume_offload(stage, precision, accum, 0, 0);
}

START_TEST(test_checkpoints_move_between_offloaded_and_device_states)
{
    for (int stage = 1; stage <= 3; stage++) {
        check_resume_offload(stage, stage == 2 ? ZERO_BF16 : ZERO_F32, 1, 1, 0);
        check_resume_offload(stage, stage == 1 ? ZERO_F16 : ZERO_F32, 1, 0, 1);
    }
}
END_TEST

/* ZeRO-Infinity: a checkpoint saved from states streamed off NVMe loads into
 * states in memory and the other way round, and training goes on as if never
 * stopped. */
START_TEST(test_checkpoints_move_between_nvme_and_memory_states)
{
    for (int stage = 1; stage <= 3; stage++) {
        check_resume_offload(stage, stage == 2 ? ZERO_BF16 : ZERO_F32, 1, 2, 0);
        check_resume_offload(stage, stage == 3 ? ZERO_F16 : ZERO_F32, 1, 0, 2);
    }
    check_resume_offload(3, ZERO_BF16, 1, 2, 2);
}
END_TEST

START_TEST(test_resume_is_bit_identical_in_every_stage_fp32)
{
    for (int stage = 0; stage <= 3; stage++)
        check_resume(stage, ZERO_F32, stage == 2 ? 2 : 1);
}
END_TEST

/* Rank-major atoms (each rank sums its micro-steps, one reduction per step) resume
 * as exactly as the default order. */
START_TEST(test_rank_major_resume_is_bit_identical_in_every_stage)
{
    for (int stage = 0; stage <= 3; stage++)
        check_resume_in(ZERO_ATOM_RANK_MAJOR, stage, stage == 1 ? ZERO_BF16 : ZERO_F32,
                        stage == 3 ? 3 : 2, 0, 0);
}
END_TEST

START_TEST(test_resume_is_bit_identical_in_every_stage_fp16_with_changing_scale)
{
    for (int stage = 0; stage <= 3; stage++)
        check_resume(stage, ZERO_F16, stage == 1 ? 2 : 1);
}
END_TEST

/* ---- other world sizes ---- */

/* A sub-world of the first `n` ranks (MPI_COMM_NULL elsewhere). */
static MPI_Comm first_ranks(int n)
{
    MPI_Comm c;
    MPI_Comm_split(MPI_COMM_WORLD, mpi_check_rank() < n ? 0 : MPI_UNDEFINED, mpi_check_rank(), &c);
    return c;
}

/* Rank 0: both checkpoints hold the same bits in every tensor of every state
 * (fp32 master and optimizer states), the same counters and loss scale. */
static int same_states(const char *a_dir, const char *b_dir)
{
    struct zero_checkpoint *a = NULL, *b = NULL;
    struct zero_checkpoint_info ia, ib;
    struct zero_error err = {0};
    int ok =
        zero_checkpoint_open(&a, a_dir, &err) == 0 && zero_checkpoint_open(&b, b_dir, &err) == 0;
    if (ok) {
        zero_checkpoint_get_info(a, &ia);
        zero_checkpoint_get_info(b, &ib);
        ok = ia.ntensors == ib.ntensors && ia.nstates == ib.nstates &&
             ia.global_steps == ib.global_steps && ia.applied_steps == ib.applied_steps &&
             ia.loss_scale == ib.loss_scale && ia.world_size != ib.world_size;
    }
    for (int i = 0; ok && i < ia.ntensors; i++) {
        struct zero_checkpoint_tensor t;
        zero_checkpoint_tensor(a, i, &t);
        float *x = malloc((size_t)t.numel * sizeof *x), *y = malloc((size_t)t.numel * sizeof *y);
        for (int k = 0; ok && k < ia.nstates; k++) {
            const char *state = zero_checkpoint_state_name(a, k);
            ok = zero_checkpoint_read_tensor(a, i, state, x, &err) == 0 &&
                 zero_checkpoint_read_tensor(b, i, state, y, &err) == 0 &&
                 memcmp(x, y, (size_t)t.numel * sizeof *x) == 0;
            if (!ok)
                fprintf(stderr, "%s of %s differs: %s\n", state, t.name, err.msg);
        }
        free(x);
        free(y);
    }
    zero_checkpoint_close(a);
    zero_checkpoint_close(b);
    return ok;
}

/* Saves at step 3 on n_old ranks (stage s_old), loads on n_new ranks (stage
 * s_new), saves again at once and trains to step 6. Both checkpoints must hold
 * the same bits. The continued run must equal an uninterrupted run on n_new
 * ranks when the exact mode promises world-size invariance (fp32, both worlds
 * powers of two: the same tree over atoms), and otherwise a second continued
 * run in another stage (the loaded state does not depend on the stage).
 * Micro-batch 2 everywhere; global batch 2 * n_old * acc_old = 2 * n_new * acc_new. */
static void check_world_change(int n_old, int s_old, int64_t acc_old, int n_new, int s_new,
                               int64_t acc_new, enum zero_dtype precision, int exact_reference)
{
    char dir[320], again[330];
    snprintf(dir, sizeof dir, "%s/world_%d_to_%d_%s", scratch, n_old, n_new,
             zero_dtype_name(precision));
    snprintf(again, sizeof again, "%s.again", dir);
    struct zero_error err = {0};
    int rc = 0, same = 1;
    MPI_Comm old_comm = first_ranks(n_old), new_comm = first_ranks(n_new);
    if (old_comm != MPI_COMM_NULL) {
        struct run w;
        run_config(&w, s_old, precision, acc_old);
        if (!(rc = run_open(&w, old_comm, &err)) && !(rc = run_steps(&w, 0, 3, &err)))
            rc = zero_checkpoint_save(w.e, dir, 0, NULL, &err);
        run_close(&w);
    }
    ck_assert(mpi_check_all(report(rc, &err)));
    if (new_comm != MPI_COMM_NULL) {
        struct run resumed, other;
        run_config(&resumed, s_new, precision, acc_new);
        run_config(&other, (s_new + 1) % 4, precision, acc_new);
        int64_t n1 = 0, n2 = 0;
        float *w1 = NULL, *w2 = NULL;
        if (!(rc = run_open(&resumed, new_comm, &err)) &&
            !(rc = zero_checkpoint_load(resumed.e, dir, NULL, &err)) &&
            !(rc = zero_checkpoint_save(resumed.e, again, 0, NULL, &err)) &&
            !(rc = run_steps(&resumed, 3, 6, &err)) && !(w1 = run_weights(&resumed, &n1, &err)))
            rc = 1;
        if (!rc && !(rc = run_open(&other, new_comm, &err)) &&
            !(rc = exact_reference ? 0 : zero_checkpoint_load(other.e, dir, NULL, &err)) &&
            !(rc = run_steps(&other, exact_reference ? 0 : 3, 6, &err)) &&
            !(w2 = run_weights(&other, &n2, &err)))
            rc = 1;
        same = !rc && n1 == n2 && memcmp(w1, w2, (size_t)n1 * sizeof *w1) == 0 &&
               memcmp(resumed.losses + 3, other.losses + 3, 3 * sizeof(float)) == 0;
        for (int64_t i = 0; !same && !rc && mpi_check_rank() == 0 && i < n1 && i < n2; i++)
            if (w1[i] != w2[i]) {
                fprintf(stderr, "weight %lld of %lld: resumed %.9g, reference %.9g\n", (long long)i,
                        (long long)n1, w1[i], w2[i]);
                break;
            }
        free(w1);
        free(w2);
        run_close(&resumed);
        run_close(&other);
        MPI_Comm_free(&new_comm);
    }
    if (old_comm != MPI_COMM_NULL)
        MPI_Comm_free(&old_comm);
    ck_assert(mpi_check_all(report(rc, &err)));
    ck_assert_msg(mpi_check_all(same),
                  "%d ranks (stage %d) -> %d ranks (stage %d) %s: the "
                  "continued run differs from %s",
                  n_old, s_old, n_new, s_new, zero_dtype_name(precision),
                  exact_reference ? "an uninterrupted one" : "one in another stage");
    ck_assert_msg(mpi_check_all(mpi_check_rank() != 0 || same_states(dir, again)),
                  "%d -> %d ranks: the state saved after loading differs from the loaded one",
                  n_old, n_new);
}

START_TEST(test_checkpoint_of_4_ranks_continues_on_2_as_if_uninterrupted)
{
    if (mpi_check_size() < 4)
        return; /* runs in the np4 instance */
    check_world_change(4, 2, 1, 2, 3, 2, ZERO_F32, 1);
    check_world_change(2, 0, 2, 4, 1, 1, ZERO_F32, 1);
    check_world_change(4, 3, 1, 2, 0, 2, ZERO_BF16, 0);
}
END_TEST

/* 3 ranks sum atoms along another tree than 2 (no world-size invariance):
 * the loaded state is compared bit for bit instead. */
START_TEST(test_checkpoint_of_2_ranks_loads_on_3_with_the_same_state)
{
    if (mpi_check_size() < 3)
        return; /* runs in the np3 and np4 instances */
    check_world_change(2, 0, 3, 3, 2, 2, ZERO_F32, 0);
    check_world_change(2, 1, 3, 3, 3, 2, ZERO_F16, 0);
}
END_TEST

/* ---- export and inspect ---- */

START_TEST(test_export_equals_live_gathered_weights_bit_for_bit)
{
    char dir[320], out[320], out16[320];
    path_in(dir, sizeof dir, "export");
    path_in(out, sizeof out, "export.safetensors");
    path_in(out16, sizeof out16, "export_bf16.safetensors");
    struct run r;
    struct zero_error err = {0};
    run_config(&r, 3, ZERO_BF16, 1);
    int64_t n = 0;
    float *live = NULL;
    int rc = run_open(&r, MPI_COMM_WORLD, &err);
    if (!rc && !(rc = run_steps(&r, 0, 2, &err)) &&
        !(rc = zero_checkpoint_save(r.e, dir, 0, NULL, &err)) &&
        !(live = run_weights(&r, &n, &err)))
        rc = 1;
    ck_assert(mpi_check_all(report(rc, &err)));
    int ok = 1;
    if (mpi_check_rank() == 0) {
        struct zero_checkpoint *c = NULL;
        struct zero_st_file *f = NULL, *g = NULL;
        rc = zero_checkpoint_open(&c, dir, &err);
        if (!rc)
            rc = zero_checkpoint_export(c, out, ZERO_F32, &err);
        if (!rc)
            rc = zero_checkpoint_export(c, out16, ZERO_BF16, &err);
        if (!rc && !(rc = zero_st_open(&f, out, &err)))
            rc = zero_st_open(&g, out16, &err);
        ok = report(rc, &err);
        int64_t at = 0;
        float *buf = malloc((size_t)n * sizeof *buf);
        uint16_t *half = malloc((size_t)n * sizeof *half);
        for (int u = 0; ok && u < r.model->nunits; u++)
            for (int p = 0; ok && p < r.model->units[u]->nparams; p++) {
                char name[256];
                snprintf(name, sizeof name, "%s.%s", r.model->units[u]->name,
                         r.model->units[u]->params[p].name);
                int64_t k = zero_param_numel(&r.model->units[u]->params[p]);
                int i = zero_st_find(f, name), j = zero_st_find(g, name);
                ok = i >= 0 && j >= 0 && zero_st_tensor(g, j)->dtype == ZERO_BF16 &&
                     zero_st_read(f, i, buf, ZERO_F32, (size_t)k, &err) == 0 &&
                     memcmp(buf, live + at, (size_t)k * sizeof *buf) == 0 &&
                     zero_st_read(g, j, half, ZERO_BF16, (size_t)k, &err) == 0;
                for (int64_t x = 0; ok && x < k; x++)
                    ok = half[x] == zero_f32_to_bf16(live[at + x]);
                at += k;
            }
        ok = ok && at == n && zero_st_count(f) == zero_st_count(g);
        free(buf);
        free(half);
        zero_st_close(f);
        zero_st_close(g);
        zero_checkpoint_close(c);
    }
    ck_assert_msg(mpi_check_all(ok), "exported weights differ from the live ones");
    free(live);
    run_close(&r);
}
END_TEST

/* ---- faults ---- */

static void read_file(const char *path, unsigned char **data, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    *data = malloc(*n + 1);
    ck_assert(fread(*data, 1, *n, f) == *n);
    fclose(f);
}

static void write_file(const char *path, const unsigned char *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert(f != NULL && fwrite(data, 1, n, f) == n);
    fclose(f);
}

/* Verifying rank file `rank` fails with a message containing each of want[]. */
static int verify_fails_with(const char *dir, int rank, const char *const *want, int nwant,
                             char *got, size_t len)
{
    struct zero_checkpoint *c = NULL;
    struct zero_error err = {0};
    int rc = zero_checkpoint_open(&c, dir, &err);
    if (!rc)
        rc = zero_checkpoint_verify_rank(c, rank, &err);
    zero_checkpoint_close(c);
    snprintf(got, len, "%s", rc ? err.msg : "(no error)");
    for (int i = 0; rc && i < nwant; i++)
        if (!strstr(err.msg, want[i]))
            return 0;
    return rc != 0;
}

/* Every section boundary of every rank file: a flipped byte there and the file
 * cut there are both rejected, naming the file, the section and the tensor. */
static int check_every_boundary(const char *dir, const struct ckpt_meta *m, int rank)
{
    char path[500], got[ZERO_ERRMSG_LEN], file[64];
    snprintf(path, sizeof path, "%s/rank-%05d.bin", dir, rank);
    snprintf(file, sizeof file, "rank-%05d.bin", rank);
    unsigned char *data;
    size_t n;
    read_file(path, &data, &n);
    int ok = 1, checked = 0;
    int64_t at = CKPT_HEADER_BYTES;
    const char *const magic[] = {file, "file header: not a libzero checkpoint rank file"};
    const char *const header[] = {file, "file header: checksum mismatch"};
    /* the file header: its magic and a field under its CRC */
    for (int pos = 0; pos < 2 && ok; pos++) {
        data[pos * 20] ^= 0x40;
        write_file(path, data, n);
        ok = verify_fails_with(dir, rank, pos ? header : magic, 2, got, sizeof got);
        data[pos * 20] ^= 0x40;
        checked++;
    }
    for (int u = 0; u < m->nunits && ok; u++)
        for (int k = 0; k < m->nkinds && ok; k++) {
            char sect[256], tensor[256];
            snprintf(sect, sizeof sect, "section %s of unit %s", ckpt_kind_name(m->kinds[k]),
                     m->units[u].name);
            const char *const shead[] = {file, sect, "section header: checksum mismatch"};
            const char *const smagic[] = {file, sect, "bad section header"};
            /* flip in the section header (magic, then the count under the CRC) */
            for (int pos = 0; pos < 2 && ok; pos++) {
                data[at + pos * 24] ^= 0x01;
                write_file(path, data, n);
                ok = verify_fails_with(dir, rank, pos ? shead : smagic, 3, got, sizeof got);
                data[at + pos * 24] ^= 0x01;
                checked++;
            }
            int64_t shard = m->units[u].shard, c0 = at + CKPT_HEADER_BYTES;
            for (int64_t c = 0; c * m->chunk < shard && ok; c++) {
                int64_t cn = shard - c * m->chunk < m->chunk ? shard - c * m->chunk : m->chunk;
                int64_t first = rank * shard + c * m->chunk;
                ckpt_describe_range(m, u, first, first + cn, tensor, sizeof tensor);
                const char *const chunk[] = {file, sect, tensor, "checksum mismatch (stored"};
                /* first value byte and the chunk's CRC */
                int64_t spots[2] = {c0, c0 + cn * 4};
                for (int s = 0; s < 2 && ok; s++) {
                    data[spots[s]] ^= 0x80;
                    write_file(path, data, n);
                    ok = verify_fails_with(dir, rank, chunk, 4, got, sizeof got);
                    data[spots[s]] ^= 0x80;
                    checked++;
                }
                c0 += cn * 4 + 4;
            }
            /* the file cut at this section's start */
            const char *const cut[] = {file, "truncated"};
            write_file(path, data, (size_t)at);
            ok = ok && verify_fails_with(dir, rank, cut, 2, got, sizeof got);
            checked++;
            at = c0;
        }
    write_file(path, data, n);
    free(data);
    if (!ok)
        fprintf(stderr, "boundary check failed at byte %lld of %s: got \"%s\"\n", (long long)at,
                path, got);
    ck_assert_int_gt(checked, 10);
    return ok && at == (int64_t)n;
}

START_TEST(test_byte_flips_and_truncations_at_every_section_boundary_are_rejected)
{
    char dir[320];
    path_in(dir, sizeof dir, "corrupt");
    struct run r;
    struct zero_error err = {0};
    run_config(&r, 2, ZERO_F32, 1);
    zero_checkpoint_set_chunk_elements(40); /* several chunks per section */
    int rc = run_open(&r, MPI_COMM_WORLD, &err);
    if (!rc && !(rc = run_steps(&r, 0, 1, &err)))
        rc = zero_checkpoint_save(r.e, dir, 0, NULL, &err);
    zero_checkpoint_set_chunk_elements(0);
    ck_assert(mpi_check_all(report(rc, &err)));
    int ok = 1;
    if (mpi_check_rank() == 0) {
        char step[400];
        struct ckpt_meta m;
        snprintf(step, sizeof step, "%s/step_000001", dir);
        ck_assert_int_eq(ckpt_meta_load(&m, step, &err), 0);
        for (int rank = 0; rank < m.world && ok; rank++)
            ok = check_every_boundary(step, &m, rank);
        ckpt_meta_free(&m);
    }
    ck_assert(mpi_check_all(ok));
    run_close(&r);
}
END_TEST

/* A load that must fail on every rank with `want` in the message and leave
 * the engine's weights and counters as they were. */
static void check_load_refused(struct run *r, const char *dir, const char *want)
{
    struct zero_error err = {0};
    int64_t n0 = 0, n1 = 0, step = zero_engine_global_steps(r->e);
    float *before = run_weights(r, &n0, &err);
    int rc = zero_checkpoint_load(r->e, dir, NULL, &err);
    int named = rc != 0 && strstr(err.msg, want) != NULL;
    if (!named)
        fprintf(stderr, "rank %d: expected an error containing \"%s\", got \"%s\"\n",
                mpi_check_rank(), want, rc ? err.msg : "(none)");
    float *after = run_weights(r, &n1, &err);
    ck_assert_msg(mpi_check_all(named), "load of %s was not refused with \"%s\"", dir, want);
    ck_assert(mpi_check_all(before && after && n0 == n1 &&
                            memcmp(before, after, (size_t)n0 * sizeof *before) == 0 &&
                            zero_engine_global_steps(r->e) == step));
    free(before);
    free(after);
}

START_TEST(test_corrupt_missing_and_foreign_rank_files_fail_the_load_on_every_rank)
{
    char dir[320], other[320], step[400], path[500], foreign[500];
    path_in(dir, sizeof dir, "faults");
    path_in(other, sizeof other, "faults_other");
    struct run r;
    struct zero_error err = {0};
    run_config(&r, 1, ZERO_F32, 1);
    int rc = run_open(&r, MPI_COMM_WORLD, &err);
    if (!rc && !(rc = run_steps(&r, 0, 1, &err)) &&
        !(rc = zero_checkpoint_save(r.e, dir, 0, NULL, &err)))
        rc = zero_checkpoint_save(r.e, other, 0, NULL, &err);
    if (!rc)
        rc = run_steps(&r, 1, 2, &err); /* the engine moves on: a load would change it */
    ck_assert(mpi_check_all(report(rc, &err)));
    int last = mpi_check_size() - 1;
    snprintf(step, sizeof step, "%s/step_000001", dir);
    snprintf(path, sizeof path, "%s/rank-%05d.bin", step, last);
    snprintf(foreign, sizeof foreign, "%s/step_000001/rank-%05d.bin", other, last);
    unsigned char *data = NULL;
    size_t n = 0;
    if (mpi_check_rank() == 0) { /* a flipped master value in the last rank's file */
        read_file(path, &data, &n);
        data[2 * CKPT_HEADER_BYTES + 2] ^= 0x10;
        write_file(path, data, n);
        data[2 * CKPT_HEADER_BYTES + 2] ^= 0x10;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    char flipped[128];
    snprintf(flipped, sizeof flipped,
             "rank-%05d.bin: section master of unit layers.0: chunk 0 "
             "(elements",
             last);
    check_load_refused(&r, dir, flipped);
    if (mpi_check_rank() == 0) {
        write_file(path, data, n);
        ck_assert_int_eq(rename(foreign, path), 0); /* the same model, another checkpoint */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    check_load_refused(&r, dir, "belongs to another checkpoint");
    if (mpi_check_rank() == 0)
        ck_assert_int_eq(unlink(path), 0);
    MPI_Barrier(MPI_COMM_WORLD);
    char missing[64];
    snprintf(missing, sizeof missing, "rank-%05d.bin: rank file is missing", last);
    check_load_refused(&r, dir, missing);
    if (mpi_check_rank() == 0)
        write_file(path, data, n);
    MPI_Barrier(MPI_COMM_WORLD);
    rc = zero_checkpoint_load(r.e, dir, NULL, &err); /* repaired: loads */
    ck_assert(mpi_check_all(report(rc, &err)));
    ck_assert_int_eq(zero_engine_global_steps(r.e), 1);
    free(data);
    run_close(&r);
}
END_TEST

START_TEST(test_checkpoint_of_another_model_names_the_tensor_and_both_shapes)
{
    char dir[320];
    path_in(dir, sizeof dir, "model");
    struct run a, wide, sgd;
    struct zero_error err = {0};
    run_config(&a, 0, ZERO_F32, 1);
    run_config(&wide, 0, ZERO_F32, 1);
    run_config(&sgd, 0, ZERO_F32, 1);
    wide.hidden = 16;
    sgd.cfg.optimizer.type = ZERO_OPTIM_SGD;
    sgd.cfg.optimizer.momentum = 0.9;
    int rc = run_open(&a, MPI_COMM_WORLD, &err);
    if (!rc)
        rc = zero_checkpoint_save(a.e, dir, 0, NULL, &err);
    if (!rc)
        rc = run_open(&wide, MPI_COMM_WORLD, &err);
    if (!rc)
        rc = run_open(&sgd, MPI_COMM_WORLD, &err);
    ck_assert(mpi_check_all(report(rc, &err)));
    check_load_refused(&wide, dir,
                       "tensor layers.0.0.weight has shape [48, 12] in the "
                       "checkpoint, [64, 16] in the model");
    check_load_refused(&sgd, dir,
                       "the checkpoint holds master, optim.exp_avg, "
                       "optim.exp_avg_sq; this engine's optimizer needs master, "
                       "optim.momentum");
    run_close(&a);
    run_close(&wide);
    run_close(&sgd);
}
END_TEST

/* The atom order decides which samples a rank reads at each micro-step: a
 * checkpoint saved in one order refuses an engine in the other (both ways), names
 * the directory, the key and both orders, and leaves the engine as it was; an
 * engine in the checkpoint's order loads it. */
START_TEST(test_checkpoint_of_another_atom_order_is_refused_naming_both)
{
    char dir[320], step[340];
    path_in(dir, sizeof dir, "order");
    snprintf(step, sizeof step, "%s/step_000001", dir);
    for (int saved = 0; saved < 2; saved++) {
        struct run w, other, same;
        struct zero_error err = {0};
        enum zero_atom_order order = saved ? ZERO_ATOM_RANK_MAJOR : ZERO_ATOM_MICRO_STEP_MAJOR;
        run_config(&w, 2, ZERO_F32, 2);
        run_config(&other, 2, ZERO_F32, 2);
        run_config(&same, 1, ZERO_F32, 2);
        w.cfg.libzero.atom_order = same.cfg.libzero.atom_order = order;
        other.cfg.libzero.atom_order = saved ? ZERO_ATOM_MICRO_STEP_MAJOR : ZERO_ATOM_RANK_MAJOR;
        int rc = run_open(&w, MPI_COMM_WORLD, &err);
        if (!rc && !(rc = run_steps(&w, 0, 1, &err)))
            rc = zero_checkpoint_save(w.e, dir, 0, NULL, &err);
        if (!rc && !(rc = run_open(&other, MPI_COMM_WORLD, &err)))
            rc = run_steps(&other, 0, 2, &err); /* a load would change it */
        ck_assert(mpi_check_all(report(rc, &err)));
        char want[600];
        snprintf(want, sizeof want,
                 "%s: config.libzero.atom_order is %s in the checkpoint but %s in this run", step,
                 saved ? "rank_major" : "micro_step_major",
                 saved ? "micro_step_major" : "rank_major");
        check_load_refused(&other, dir, want);
        snprintf(want, sizeof want, "resume with libzero.atom_order = \"%s\"",
                 saved ? "rank_major" : "micro_step_major");
        check_load_refused(&other, dir, want);
        rc = run_open(&same, MPI_COMM_WORLD, &err);
        if (!rc)
            rc = zero_checkpoint_load(same.e, dir, NULL, &err);
        ck_assert(mpi_check_all(report(rc, &err)));
        ck_assert_int_eq(zero_engine_global_steps(same.e), 1);
        run_close(&w);
        run_close(&other);
        run_close(&same);
        MPI_Barrier(MPI_COMM_WORLD);
        if (mpi_check_rank() == 0)
            remove_tree(dir);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}
END_TEST

struct fault {
    const char *point;
    int rank, after, hits, errnum;
};

static int inject(const char *point, int rank, void *user)
{
    struct fault *f = user;
    if (strcmp(point, f->point) != 0 || rank != f->rank)
        return 0;
    return f->hits++ == f->after ? f->errnum : 0;
}

static int count_entries(const char *dir, const char *prefix)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -c '^%s' > /dev/null", dir, prefix);
    return system(cmd) == 0;
}

static void read_latest(const char *dir, char *out, size_t len)
{
    char path[400];
    snprintf(path, sizeof path, "%s/latest", dir);
    FILE *f = fopen(path, "r");
    out[0] = '\0';
    if (f) {
        if (!fgets(out, (int)len, f))
            out[0] = '\0';
        fclose(f);
    }
}

/* A failed save (full disk at a rank file's write, at meta.json's fsync, at the
 * latest pointer) is reported on every rank; the previous checkpoint stays
 * the one `latest` names and it verifies; no temporary directory is left. */
START_TEST(test_disk_full_during_save_is_reported_and_keeps_the_previous_checkpoint)
{
    char dir[320], latest[64];
    path_in(dir, sizeof dir, "diskfull");
    struct run r;
    struct zero_error err = {0};
    run_config(&r, 3, ZERO_F32, 1);
    zero_checkpoint_set_chunk_elements(40);
    int rc = run_open(&r, MPI_COMM_WORLD, &err);
    if (!rc && !(rc = run_steps(&r, 0, 1, &err)))
        rc = zero_checkpoint_save(r.e, dir, 0, NULL, &err);
    if (!rc)
        rc = run_steps(&r, 1, 2, &err);
    ck_assert(mpi_check_all(report(rc, &err)));
    int last = mpi_check_size() - 1;
    struct fault faults[] = {
        {"write", last, 3, 0, ENOSPC}, {"fsync", 0, 1, 0, EIO}, {"latest", 0, 0, 0, ENOSPC}};
    const char *want[] = {"write failed: No space left on device", "fsync failed",
                          "still names the previous checkpoint"};
    for (int i = 0; i < 3; i++) {
        zero_checkpoint_set_fault_hook(inject, &faults[i]);
        rc = zero_checkpoint_save(r.e, dir, 0, NULL, &err);
        zero_checkpoint_set_fault_hook(NULL, NULL);
        ck_assert_msg(mpi_check_all(rc != 0 && strstr(err.msg, want[i]) != NULL),
                      "fault %d: got \"%s\"", i, rc ? err.msg : "(no error)");
        if (mpi_check_rank() == 0) {
            read_latest(dir, latest, sizeof latest);
            ck_assert_str_eq(latest, "step_000001\n");
            ck_assert(!count_entries(dir, ".tmp-"));
            struct zero_checkpoint *c = NULL;
            ck_assert_int_eq(zero_checkpoint_open(&c, dir, &err), 0);
            for (int k = 0; k <= last; k++)
                ck_assert_int_eq(zero_checkpoint_verify_rank(c, k, &err), 0);
            zero_checkpoint_close(c);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    zero_checkpoint_set_chunk_elements(0);
    /* the disk has room again: the same step saves */
    rc = zero_checkpoint_save(r.e, dir, 0, NULL, &err);
    ck_assert(mpi_check_all(report(rc, &err)));
    if (mpi_check_rank() == 0) {
        read_latest(dir, latest, sizeof latest);
        ck_assert_str_eq(latest, "step_000002\n");
    }
    run_close(&r);
}
END_TEST

START_TEST(test_keep_last_prunes_older_checkpoints_and_latest_names_the_newest)
{
    char dir[320], latest[64], path[400];
    path_in(dir, sizeof dir, "prune");
    struct run r;
    struct zero_error err = {0};
    run_config(&r, 1, ZERO_F32, 1);
    int rc = run_open(&r, MPI_COMM_WORLD, &err);
    for (int s = 0; s < 4 && !rc; s++) {
        if (!(rc = run_steps(&r, s, s + 1, &err)))
            rc = zero_checkpoint_save(r.e, dir, 2, NULL, &err);
    }
    /* saved again at the same step: replaces it */
    if (!rc)
        rc = zero_checkpoint_save(r.e, dir, 2, "{\"again\": true}", &err);
    ck_assert(mpi_check_all(report(rc, &err)));
    if (mpi_check_rank() == 0) {
        struct stat st;
        for (int s = 1; s <= 4; s++) {
            snprintf(path, sizeof path, "%s/step_%06d", dir, s);
            ck_assert_msg((stat(path, &st) == 0) == (s >= 3), "%s", path);
        }
        read_latest(dir, latest, sizeof latest);
        ck_assert_str_eq(latest, "step_000004\n");
        ck_assert(!count_entries(dir, ".tmp-") && !count_entries(dir, ".del-") &&
                  !count_entries(dir, "latest.tmp"));
        struct zero_checkpoint *c = NULL;
        struct zero_checkpoint_info info;
        ck_assert_int_eq(zero_checkpoint_open(&c, dir, &err), 0);
        zero_checkpoint_get_info(c, &info);
        ck_assert_str_eq(info.user_json, "{\"again\":true}");
        zero_checkpoint_close(c);
    }
    run_close(&r);
}
END_TEST

START_TEST(test_save_and_load_refuse_the_middle_of_gradient_accumulation)
{
    char dir[320];
    path_in(dir, sizeof dir, "middle");
    struct run r;
    struct zero_error err = {0};
    run_config(&r, 2, ZERO_F32, 2);
    ck_assert(mpi_check_all(report(run_open(&r, MPI_COMM_WORLD, &err), &err)));
    float x[2 * 12];
    int32_t y[2];
    zero_synthetic_samples(7, 12, 5, 0, 2, x, y);
    struct zero_batch b = {.rows = 2, .inputs = x, .labels = y};
    int rc = zero_engine_forward(r.e, &b, NULL, &err);
    if (!rc && !(rc = zero_engine_backward(r.e, &err)))
        rc = zero_engine_step(r.e, NULL, &err);
    ck_assert(mpi_check_all(report(rc, &err)));
    rc = zero_checkpoint_save(r.e, dir, 0, NULL, &err);
    ck_assert(rc == ZERO_EINVAL && strstr(err.msg, "middle of gradient accumulation"));
    rc = zero_checkpoint_load(r.e, dir, NULL, &err);
    ck_assert(rc == ZERO_EINVAL && strstr(err.msg, "middle of gradient accumulation"));
    zero_synthetic_samples(7, 12, 5, 2, 2, x, y);
    rc = zero_engine_forward(r.e, &b, NULL, &err);
    if (!rc && !(rc = zero_engine_backward(r.e, &err)))
        rc = zero_engine_step(r.e, NULL, &err);
    ck_assert(mpi_check_all(report(rc, &err)));
    rc = zero_checkpoint_save(r.e, dir, 0, "{not json", &err);
    ck_assert(rc == ZERO_EINVAL && strstr(err.msg, "user metadata is not JSON"));
    run_close(&r);
}
END_TEST

static void setup(void)
{
    make_scratch();
    ck_assert_msg(scratch[0], "no scratch directory");
}

static Suite *make_suite(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *t = tcase_create("checkpoint");
    tcase_set_timeout(t, 120);
    tcase_add_checked_fixture(t, setup, drop_scratch);
    tcase_add_test(t, test_resume_is_bit_identical_in_every_stage_fp32);
    tcase_add_test(t, test_resume_is_bit_identical_in_every_stage_fp16_with_changing_scale);
    tcase_add_test(t, test_rank_major_resume_is_bit_identical_in_every_stage);
    tcase_add_test(t, test_checkpoints_move_between_offloaded_and_device_states);
    tcase_add_test(t, test_checkpoints_move_between_nvme_and_memory_states);
    tcase_add_test(t, test_checkpoint_of_4_ranks_continues_on_2_as_if_uninterrupted);
    tcase_add_test(t, test_checkpoint_of_2_ranks_loads_on_3_with_the_same_state);
    tcase_add_test(t, test_export_equals_live_gathered_weights_bit_for_bit);
    tcase_add_test(t, test_byte_flips_and_truncations_at_every_section_boundary_are_rejected);
    tcase_add_test(t, test_corrupt_missing_and_foreign_rank_files_fail_the_load_on_every_rank);
    tcase_add_test(t, test_checkpoint_of_another_model_names_the_tensor_and_both_shapes);
    tcase_add_test(t, test_checkpoint_of_another_atom_order_is_refused_naming_both);
    tcase_add_test(t, test_disk_full_during_save_is_reported_and_keeps_the_previous_checkpoint);
    tcase_add_test(t, test_keep_last_prunes_older_checkpoints_and_latest_names_the_newest);
    tcase_add_test(t, test_save_and_load_refuse_the_middle_of_gradient_accumulation);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_check_main(&argc, &argv, make_suite);
}

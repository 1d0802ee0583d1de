/* A checksum flipped in a chunk that holds only padding (alignment and shard
 * padding, which no parameter range covers) fails the load on every rank, as
 * it fails `zero ckpt inspect`: a load verifies every chunk of the checkpoint,
 * not only the ones it reads values from. Run at 1 and 3 ranks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint/checkpoint_internal.h"
#include "mpi_check.h"
#include "zero/checkpoint.h"
#include "zero/zero.h"

static char dir[256];

struct run {
    struct zero_device *dev;
    struct zero_model *model;
    struct zero_engine *e;
};

static int open_run(struct run *r, struct zero_error *err)
{
    struct zero_config cfg;
    zero_config_defaults(&cfg);
    cfg.zero_optimization.stage = 3;
    cfg.train_micro_batch_size_per_gpu = 2;
    cfg.gradient_accumulation_steps = 1;
    cfg.libzero.align = 64; /* padding of up to world * 64 elements per unit */
    memset(r, 0, sizeof *r);
    MPI_Comm comm = MPI_COMM_WORLD;
    struct zero_backend_options opt = {.coll_mode = cfg.libzero.coll_mode, .device = -1};
    int rc = zero_device_open(&r->dev, "cpu", &comm, &opt, err);
    if (!rc)
        rc = zero_nn_build_mlp(&r->model, 12, 1, 5, err);
    if (!rc)
        rc = zero_engine_create(&r->e, &cfg, r->model, r->dev, err);
    return rc;
}

static void close_run(struct run *r)
{
    zero_engine_destroy(r->e);
    zero_model_destroy(r->model);
    zero_device_close(r->dev);
}

/* Rank 0 flips the stored CRC of the first padding-only chunk it finds (unit,
 * rank file); returns 1 if there was one. */
static int flip_padding_checksum(const char *step_dir, char *what, size_t len)
{
    struct ckpt_meta m;
    struct zero_error err = {0};
    ck_assert_msg(ckpt_meta_load(&m, step_dir, &err) == 0, "%s", err.msg);
    int found = 0;
    for (int old = m.world - 1; old >= 0 && !found; old--) {
        int64_t at = CKPT_HEADER_BYTES;
        for (int u = 0; u < m.nunits && !found; u++) {
            const struct ckpt_unit *unit = &m.units[u];
            for (int64_t c = 0; c * m.chunk < unit->shard && !found; c++) {
                int64_t first = old * unit->shard + c * m.chunk;
                int64_t n =
                    unit->shard - c * m.chunk < m.chunk ? unit->shard - c * m.chunk : m.chunk;
                int holds = 0;
                for (int p = 0; p < unit->nparams; p++)
                    holds |= unit->params[p].offset < first + n &&
                             unit->params[p].offset + unit->params[p].numel > first;
                if (holds)
                    continue;
                /* the master section (kind 0) of unit u: its chunk c's CRC */
                int64_t crc_at = at + CKPT_HEADER_BYTES + c * (m.chunk * 4 + 4) + n * 4;
                char path[600];
                snprintf(path, sizeof path, "%s/rank-%05d.bin", step_dir, old);
                FILE *f = fopen(path, "r+b");
                ck_assert_ptr_nonnull(f);
                ck_assert_int_eq(fseek(f, crc_at, SEEK_SET), 0);
                int byte = fgetc(f);
                ck_assert_int_eq(fseek(f, crc_at, SEEK_SET), 0);
                fputc(byte ^ 0x01, f);
                fclose(f);
                snprintf(what, len, "rank-%05d.bin: section master of unit %s: chunk %lld", old,
                         unit->name, (long long)c);
                found = 1;
            }
            at += m.nkinds * ckpt_section_bytes(unit->shard, m.chunk);
        }
    }
    ckpt_meta_free(&m);
    return found;
}

START_TEST(test_flipped_checksum_in_a_padding_chunk_fails_the_load_and_inspect)
{
    struct run a, b;
    struct zero_error err = {0};
    zero_checkpoint_set_chunk_elements(8); /* many chunks; the tail ones are padding */
    int rc = open_run(&a, &err);
    if (!rc)
        rc = zero_checkpoint_save(a.e, dir, 0, NULL, &err);
    ck_assert_msg(mpi_check_all(rc == 0), "%s", err.msg);
    close_run(&a);
    char step_dir[400], what[400] = "";
    snprintf(step_dir, sizeof step_dir, "%s/step_000000", dir);
    int found = 1;
    if (mpi_check_rank() == 0)
        found = flip_padding_checksum(step_dir, what, sizeof what);
    MPI_Bcast(&found, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(what, sizeof what, MPI_CHAR, 0, MPI_COMM_WORLD);
    ck_assert_msg(found, "the model has no padding-only chunk");

    rc = open_run(&b, &err);
    ck_assert_msg(mpi_check_all(rc == 0), "%s", err.msg);
    rc = zero_checkpoint_load(b.e, dir, NULL, &err);
    int named = rc == ZERO_EFORMAT && strstr(err.msg, what) && strstr(err.msg, "checksum mismatch");
    if (!named)
        fprintf(stderr, "rank %d: load returned %d: %s (wanted '%s')\n", mpi_check_rank(), rc,
                err.msg, what);
    ck_assert(mpi_check_all(named)); /* every rank refuses, naming the chunk */
    close_run(&b);

    if (mpi_check_rank() == 0) { /* and inspect agrees */
        struct zero_checkpoint *c = NULL;
        ck_assert_int_eq(zero_checkpoint_open(&c, dir, &err), 0);
        struct zero_checkpoint_info info;
        zero_checkpoint_get_info(c, &info);
        int bad = 0;
        for (int r = 0; r < info.world_size; r++)
            bad |= zero_checkpoint_verify_rank(c, r, &err) != 0;
        zero_checkpoint_close(c);
        ck_assert(bad);
    }
    zero_checkpoint_set_chunk_elements(0);
}
END_TEST

static void setup(void)
{
    if (mpi_check_rank() == 0) {
        snprintf(dir, sizeof dir, "%s/test_checkpoint_padding.XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(dir))
            dir[0] = '\0';
    }
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    ck_assert_msg(dir[0], "no scratch directory");
}

static void teardown(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (mpi_check_rank() == 0 && dir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
}

static Suite *make_suite(void)
{
    Suite *s = suite_create("checkpoint_padding");
    TCase *t = tcase_create("padding");
    tcase_set_timeout(t, 60);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_flipped_checksum_in_a_padding_chunk_fails_the_load_and_inspect);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    return mpi_check_main(&argc, &argv, make_suite);
}

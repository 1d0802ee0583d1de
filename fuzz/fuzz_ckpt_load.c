/* libFuzzer harness for the engine's checkpoint load path (make fuzz-ckpt-load):
 * zero_checkpoint_load through DIR/latest into a live engine (one rank, cpu
 * backend, an MPI singleton), from a checkpoint of any world size. An input is
 * a list of files,
 *
 *     [u8 file][u32 little-endian n][n bytes] ...
 *
 * file 0 is DIR/latest, 1 is DIR/step_000002/meta.json, 2 + k is
 * DIR/step_000002/rank-0000k.bin (k < 4); files not given are absent. The byte
 * of the first record also picks the engine's stage (its bits 4-5). A load
 * either succeeds or fails with a status and a message and leaves the engine
 * usable; nothing may crash, leak or read out of bounds. The model is the one
 * of the seeds: train_mlp --hidden 4 --layers 1 --classes 3 (see
 * fuzz/corpus/ckpt_load/README). */
#include <mpi.h>

#include "fuzz_util.h"
#include "zero/zero.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RANK_FILES 4

static struct zero_device *dev;
static struct zero_model *model;
static struct zero_engine *engines[4]; /* stages 0-3 */

static void finalize(void)
{
    for (int s = 0; s < 4; s++)
        zero_engine_destroy(engines[s]);
    zero_model_destroy(model);
    zero_device_close(dev);
    MPI_Finalize();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    struct zero_error err = {0};
    MPI_Comm comm = MPI_COMM_SELF;
    struct zero_backend_options opt = {.coll_mode = ZERO_COLL_EXACT, .device = -1};
    FUZZ_CHECK(zero_device_open(&dev, "cpu", &comm, &opt, &err) == 0);
    FUZZ_CHECK(zero_nn_build_mlp(&model, 4, 1, 3, &err) == 0);
    for (int s = 0; s < 4; s++) {
        struct zero_config cfg;
        zero_config_defaults(&cfg);
        cfg.zero_optimization.stage = s;
        cfg.optimizer.type = ZERO_OPTIM_ADAMW;
        cfg.train_micro_batch_size_per_gpu = 4;
        cfg.gradient_accumulation_steps = 1;
        cfg.train_batch_size = 4;
        int rc = zero_engine_create(&engines[s], &cfg, model, dev, &err);
        if (rc)
            fprintf(stderr, "fuzz_ckpt_load: stage %d: %s\n", s, err.msg);
        FUZZ_CHECK(rc == 0);
    }
    /* no MPI_Finalize at exit: it unloads Open MPI's components, and their
     * allocations would then reach LeakSanitizer without a library name that
     * tests/lsan.supp could match */
    return 0;
}

static void file_path(char *out, size_t len, int file)
{
    if (file == 0)
        snprintf(out, len, "%s/latest", fuzz_dir);
    else if (file == 1)
        snprintf(out, len, "%s/step_000002/meta.json", fuzz_dir);
    else
        snprintf(out, len, "%s/step_000002/rank-%05d.bin", fuzz_dir, file - 2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char step_dir[300];
    if (!step_dir[0]) {
        snprintf(step_dir, sizeof step_dir, "%s/step_000002", fuzz_scratch("fuzz_ckpt_load"));
        FUZZ_CHECK(mkdir(step_dir, 0755) == 0);
    }
    char path[400];
    for (int f = 0; f < 2 + MAX_RANK_FILES; f++) { /* the previous input's files go */
        file_path(path, sizeof path, f);
        unlink(path);
    }
    int stage = size > 0 ? (data[0] >> 4) & 3 : 0;
    for (size_t at = 0; at + 5 <= size;) {
        int file = data[at] % (2 + MAX_RANK_FILES);
        size_t n = fuzz_u32(data + at + 1);
        at += 5;
        n = n < size - at ? n : size - at;
        file_path(path, sizeof path, file);
        fuzz_put(path, data + at, n);
        at += n;
    }
    struct zero_error err;
    memset(&err, 0x5a, sizeof err);
    char *user = NULL;
    int rc = zero_checkpoint_load(engines[stage], fuzz_dir, &user, &err);
    if (rc) {
        fuzz_check_error(rc, &err);
        FUZZ_CHECK(user == NULL);
    } else {
        FUZZ_CHECK(zero_engine_global_steps(engines[stage]) >= 0);
    }
    free(user);
    return 0;
}

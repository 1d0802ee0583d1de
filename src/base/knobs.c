/* See zero/knobs.h. The only getenv("ZERO_...") of the library. */
#include "zero/knobs.h"

#include <stdlib.h>
#include <string.h>

#include "zero/error.h"

static const struct zero_knob knobs[ZERO_KNOB_COUNT] = {
    [ZERO_KNOB_CPU_ISA] = {"ZERO_CPU_ISA",
                           "scalar|avx2|avx512|avx512bf16|amx (x86-64), scalar|neon (aarch64)",
                           "the best the CPU has", "cpu backend",
                           "forces one GEMM micro-kernel variant; every variant gives the same "
                           "bits (docs/exactness.md)",
                           0, 0},
    [ZERO_KNOB_CPU_THREADS] = {"ZERO_CPU_THREADS", "1..4096",
                               "the node's processors / ranks on the node", "cpu backend",
                               "threads of each rank's GEMMs and kernels", 0, 0},
    [ZERO_KNOB_CPU_CACHE_MB] = {"ZERO_CPU_CACHE_MB", "MiB", "4096 (0 under the sanitizers)",
                                "cpu backend",
                                "the cap of the block cache that reuses freed "
                                "buffers",
                                0, 0},
    [ZERO_KNOB_CPU_NO_SHM] = {"ZERO_CPU_NO_SHM", "1 (any value but 0)", "shared memory on one node",
                              "cpu backend",
                              "exact collectives over MPI even on one node (to compare paths)", 1,
                              0},
    [ZERO_KNOB_CPU_PROGRESS] = {"ZERO_CPU_PROGRESS", "0|1",
                                "a communication thread where MPI "
                                "allows it",
                                "cpu backend", "0: no communication thread (overlap off)", 1,
                                .enumerated = 1},
    [ZERO_KNOB_CPU_SHOW_NODES] = {"ZERO_CPU_SHOW_NODES", "0|1", "silent", "cpu backend",
                                  "prints each rank's node and collective path "
                                  "(tests/test_multihost.sh)",
                                  .enumerated = 1},
    [ZERO_KNOB_CUDA_COMM] = {"ZERO_CUDA_COMM", "nccl|mpi|auto", "nccl where built", "cuda backend",
                             "the collectives' transport", 1, .enumerated = 1},
    [ZERO_KNOB_CUDA_GEMM] = {"ZERO_CUDA_GEMM", "lt|cublas", "lt", "cuda backend",
                             "cuBLASLt with epilogues, or plain cuBLAS (native mode)", 1,
                             .enumerated = 1},
    [ZERO_KNOB_CUDA_FUSED] = {"ZERO_CUDA_FUSED", "on|off", "fused kernels on", "cuda backend",
                              "off: the unfused kernels (to compare)", 1, .enumerated = 1},
    [ZERO_KNOB_CUDA_BGRAD] = {"ZERO_CUDA_BGRAD", "fp32|lowp", "bias gradients summed in fp32",
                              "cuda backend",
                              "lowp: sum the rounded 16-bit dy, as llm.c and autocast do", 1,
                              .enumerated = 1},
    [ZERO_KNOB_CUDA_ATTENTION] = {"ZERO_CUDA_ATTENTION", "flash|reference",
                                  "flash attention where "
                                  "supported (native mode)",
                                  "cuda backend", "reference: the T x T attention", 1,
                                  .enumerated = 1},
    [ZERO_KNOB_CUDA_CACHE_MB] = {"ZERO_CUDA_CACHE_MB", "MiB", "no cap", "cuda backend",
                                 "the cap of the device block cache", 0, 0},
    [ZERO_KNOB_HOST_ISA] = {"ZERO_HOST_ISA", "base|avx2|avx512", "the best the CPU has",
                            "base (host kernels)",
                            "forces one variant of the host's optimizer and conversion loops; "
                            "the same bits",
                            .enumerated = 1},
    [ZERO_KNOB_DIRECT_LOWP_GRAD] = {"ZERO_DIRECT_LOWP_GRAD", "0|1",
                                    "16-bit gradients rounded by "
                                    "the GEMM's store",
                                    "engine",
                                    "0: the older route through an fp32 buffer (to "
                                    "compare)",
                                    1, .enumerated = 1},
    [ZERO_KNOB_FP32_LOGITS] = {"ZERO_FP32_LOGITS", "0|1", "bf16 logits in bf16 training",
                               "layers (GPT head)", "1: keep the logits in fp32", 1,
                               .enumerated = 1},
    [ZERO_KNOB_AIO] = {"ZERO_AIO", "io_uring|threads", "io_uring where the kernel has it",
                       "engine (NVMe)", "threads: the thread-pool fallback (to test it)",
                       .enumerated = 1},
    [ZERO_KNOB_NVME_NO_DIRECT] = {"ZERO_NVME_NO_DIRECT", "0|1",
                                  "O_DIRECT where the file system "
                                  "takes it",
                                  "engine (NVMe)", "1: buffered I/O (to test that path)",
                                  .enumerated = 1},
    [ZERO_KNOB_NVME_QUIET] = {"ZERO_NVME_QUIET", "any", "one line about the swap files",
                              "engine (NVMe)", "set: no line", 0, 0},
    [ZERO_KNOB_FAULT] = {"ZERO_FAULT", "SITE:RANKS[:NTH]", "no fault", "base (fault injection)",
                         "the NTH passage of SITE fails on RANKS (docs/faults.md)", 0, 0},
    [ZERO_KNOB_FAULT_LOG] = {"ZERO_FAULT_LOG", "FILE", "no log", "base (fault injection)",
                             "appends \"SITE RANK\" at each site's first passage", 0, 0},
};

const char *zero_knob(enum zero_knob_id id)
{
    return (unsigned)id < ZERO_KNOB_COUNT ? getenv(knobs[id].name) : NULL;
}

const struct zero_knob *zero_knob_info(enum zero_knob_id id)
{
    return (unsigned)id < ZERO_KNOB_COUNT ? &knobs[id] : NULL;
}

/* 1 when v is one of the words of list ("a|b|c") */
static int listed(const char *list, const char *v)
{
    const size_t n = strlen(v);
    for (const char *w = list; w;) {
        const char *bar = strchr(w, '|');
        const size_t len = bar ? (size_t)(bar - w) : strlen(w);
        if (len == n && strncmp(w, v, n) == 0)
            return 1;
        w = bar ? bar + 1 : NULL;
    }
    return 0;
}

int zero_knobs_check(struct zero_error *err)
{
    for (int k = 0; k < ZERO_KNOB_COUNT; k++) {
        const char *v = getenv(knobs[k].name);
        if (knobs[k].enumerated && v && v[0] && !listed(knobs[k].values, v))
            return zero_fail(err, ZERO_EINVAL,
                             "%s=%s: it takes %s, or unset for the default (%s; docs/"
                             "configuration.md, \"Environment knobs\")",
                             knobs[k].name, v, knobs[k].values, knobs[k].unset);
    }
    return ZERO_OK;
}

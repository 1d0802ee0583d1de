/* The environment knobs: every ZERO_* variable the library reads, in one table.
 *
 * A knob is an override for testing, tuning or comparing (never the configuration
 * of a run: that is ds_config.json). Each is read through zero_knob(), so that
 * `zero config --env` and docs/configuration.md list exactly what the code reads
 * (tests/test_knobs.sh finds any getenv("ZERO_...") outside src/base/knobs.c). */
#ifndef ZERO_KNOBS_H
#define ZERO_KNOBS_H

#ifdef __cplusplus
extern "C" {
#endif

enum zero_knob_id {
    /* the cpu backend */
    ZERO_KNOB_CPU_ISA,
    ZERO_KNOB_CPU_THREADS,
    ZERO_KNOB_CPU_CACHE_MB,
    ZERO_KNOB_CPU_NO_SHM,
    ZERO_KNOB_CPU_PROGRESS,
    ZERO_KNOB_CPU_SHOW_NODES,
    /* the cuda backend */
    ZERO_KNOB_CUDA_COMM,
    ZERO_KNOB_CUDA_GEMM,
    ZERO_KNOB_CUDA_FUSED,
    ZERO_KNOB_CUDA_BGRAD,
    ZERO_KNOB_CUDA_ATTENTION,
    ZERO_KNOB_CUDA_CACHE_MB,
    /* the host (base), the engine and the layers */
    ZERO_KNOB_HOST_ISA,
    ZERO_KNOB_DIRECT_LOWP_GRAD,
    ZERO_KNOB_FP32_LOGITS,
    ZERO_KNOB_AIO,
    ZERO_KNOB_NVME_NO_DIRECT,
    ZERO_KNOB_NVME_QUIET,
    /* fault injection (zero/fault.h) */
    ZERO_KNOB_FAULT,
    ZERO_KNOB_FAULT_LOG,
    ZERO_KNOB_COUNT
};

struct zero_knob {
    const char *name;    /* the variable, "ZERO_CPU_ISA" */
    const char *values;  /* what it takes, "scalar|avx2|avx512|neon" */
    const char *unset;   /* what happens without it */
    const char *read_by; /* the layer that reads it: "cpu backend", "engine", ... */
    const char *what;    /* one line: what it changes and why one sets it */
    int agreed;          /* 1: changes the bits or the collectives, so every rank must see the
                            same value (the engine refuses a run where they differ) */
    int enumerated;      /* 1: values lists every value it takes ("a|b"); any other (but the
                            empty one, the default) is an error (zero_knobs_check) */
};

/* The knob's value, or NULL when it is unset (an empty value counts as set). */
const char *zero_knob(enum zero_knob_id id);
/* The table entry of id (ZERO_KNOB_COUNT entries, in the enum's order). */
const struct zero_knob *zero_knob_info(enum zero_knob_id id);
struct zero_error;
/* ZERO_OK, or the first enumerated knob set to a value it does not take, named with its
 * values in err (the engine checks at creation, and the ranks agree on the outcome). */
int zero_knobs_check(struct zero_error *err);

#ifdef __cplusplus
}
#endif

#endif

/* The x86 instruction sets that host loops are compiled for, and the run-time pick.
 * A file compiles one body several times, once per variant (ZERO_HOST_VARIANTS), and
 * calls the one the processor runs (ZERO_HOST_PICK). Every variant performs the same
 * IEEE operations in the same order (no FMA: -ffp-contract=off), so they agree to
 * the bit and differ only in vector width. Not installed. */
#ifndef ZERO_HOST_ISA_H
#define ZERO_HOST_ISA_H

enum zero_host_isa {
    ZERO_ISA_BASE = 0, /* the compiler's baseline (x86-64: SSE2) */
    ZERO_ISA_AVX2,
    ZERO_ISA_AVX512, /* AVX-512F and AVX-512BW */
    ZERO_ISA_COUNT
};

const char *zero_host_isa_name(enum zero_host_isa isa); /* "base", "avx2", "avx512" */
/* 1 if this build has the variant and this processor runs it. */
int zero_host_isa_supported(enum zero_host_isa isa);
/* The widest supported variant, or the one ZERO_HOST_ISA (base|avx2|avx512) names
 * when that is supported (to compare variants on one machine). */
enum zero_host_isa zero_host_isa_best(void);
/* The widest supported variant not wider than isa (base at worst): same bits,
 * narrower vectors. */
enum zero_host_isa zero_host_isa_usable(enum zero_host_isa isa);

/* V(attribute, suffix) once for each variant this build has, e.g.
 *   #define SCALE_VARIANT(attr, suffix) attr static void scale_##suffix(...) { body }
 *   ZERO_HOST_VARIANTS(SCALE_VARIANT)
 * and ZERO_HOST_PICK(isa, scale) names scale_base, scale_avx2 or scale_avx512 for a
 * supported isa (zero_host_isa_best or zero_host_isa_usable gives one). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ZERO_HOST_X86 1
#define ZERO_TARGET_AVX2 __attribute__((target("avx2")))
/* avx512bw: 512-bit vectors of 16-bit elements too */
#ifdef __clang__
#define ZERO_TARGET_AVX512 __attribute__((target("avx512f,avx512bw")))
#else /* gcc keeps 256-bit vectors for AVX-512 targets unless told otherwise */
#define ZERO_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,prefer-vector-width=512")))
#endif
#define ZERO_HOST_VARIANTS(V) V(, base) V(ZERO_TARGET_AVX2, avx2) V(ZERO_TARGET_AVX512, avx512)
#define ZERO_HOST_PICK(isa, fn)                                                                    \
    ((isa) == ZERO_ISA_AVX512 ? fn##_avx512 : (isa) == ZERO_ISA_AVX2 ? fn##_avx2 : fn##_base)
#else
#define ZERO_HOST_VARIANTS(V) V(, base)
#define ZERO_HOST_PICK(isa, fn) ((void)(isa), fn##_base)
#endif

#endif

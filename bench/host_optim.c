/* Throughput of the host optimizer (src/base/host_optim.c), the loop ZeRO-Offload
 * runs on the CPU, per instruction-set variant, next to a memcpy of the same
 * bytes. One process: each variant on one thread, then the widest on every
 * processor (host_parallel_for, as the offloaded optimizer runs it).
 *
 *     bench/host_optim [millions of elements]      (default 16)
 *
 * Adam reads p, g, m, v and writes p, m, v (and the 16-bit copy): 28 bytes per
 * element with an fp32 gradient, 26 with a bf16 one plus 2 for the copy. The
 * table gives elements per second and the implied memory traffic in GB/s. Not
 * a test: nothing here can fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "base/host_optim.h"
#include "base/host_parallel.h"
#include "zero/dtype.h"

#define REPS 7

struct job {
    enum zero_host_isa isa;
    const struct zero_adam_consts *k;
    float *p, *m, *v;
    const void *g;
    void *copy;
    enum zero_dtype gt, ct;
};

static void adam_range(void *arg, size_t b, size_t e)
{
    const struct job *j = arg;
    size_t gs = zero_dtype_size(j->gt), cs = zero_dtype_size(j->ct);
    zero_host_adam(j->isa, j->k, j->p + b, (const char *)j->g + b * gs, j->gt, j->m + b, j->v + b,
                   e - b, j->copy ? (char *)j->copy + b * cs : NULL, j->ct);
}

/* Median seconds of one Adam update of n elements (gt gradient, ct copy or none)
 * on `threads` threads. */
static double time_adam(enum zero_host_isa isa, int threads, size_t n, float *p, void *g,
                        enum zero_dtype gt, float *m, float *v, void *copy, enum zero_dtype ct)
{
    struct zero_adam_args a = {.lr = 1e-4f,
                               .beta1 = 0.9f,
                               .beta2 = 0.999f,
                               .eps = 1e-8f,
                               .weight_decay = 0.01f,
                               .step = 1,
                               .adamw = 1,
                               .bias_correction = 1,
                               .grad_div = 1.0f};
    double t[REPS];
    for (int r = 0; r < REPS; r++) {
        struct zero_adam_consts k;
        char why[128];
        a.step = r + 1;
        zero_adam_prepare(&a, &k, why, sizeof why);
        struct job j = {isa, &k, p, m, v, g, copy, gt, ct};
        double t0 = bench_now();
        host_parallel_for(n, (size_t)1 << 14, threads, adam_range, &j);
        t[r] = bench_now() - t0;
    }
    qsort(t, REPS, sizeof t[0], bench_by_value);
    return t[REPS / 2];
}

int main(int argc, char **argv)
{
    size_t n = (size_t)((argc > 1 ? atof(argv[1]) : 16.0) * 1e6);
    float *p = malloc(n * 4), *m = calloc(n, 4), *v = calloc(n, 4), *g = malloc(n * 4);
    uint16_t *g16 = malloc(n * 2), *copy = malloc(n * 2);
    char *src = malloc(n * 28), *dst = malloc(n * 28);
    if (!p || !m || !v || !g || !g16 || !copy || !src || !dst) {
        fprintf(stderr, "bench/host_optim: out of memory for %zu elements\n", n);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        p[i] = (float)(i % 1000) * 1e-3f;
        g[i] = (float)(i % 77) * 1e-4f - 3e-3f;
        g16[i] = zero_f32_to_bf16(g[i]);
    }
    memset(src, 1, n * 28);
    memset(dst, 0, n * 28);
    double tm[REPS];
    for (int r = 0; r < REPS; r++) {
        double t0 = bench_now();
        memcpy(dst, src, n * 14); /* 14 bytes read + 14 written = 28 moved */
        tm[r] = bench_now() - t0;
    }
    qsort(tm, REPS, sizeof tm[0], bench_by_value);
    printf("host optimizer, %zu elements (median of %d)\n", n, REPS);
    printf("memcpy of 14 B/element: %.2f GB/s moved\n\n", 28.0 * (double)n / tm[REPS / 2] / 1e9);
    printf("%-8s %22s %22s\n", "isa", "adam fp32 grad", "adam bf16 grad + copy");
    printf("%-8s %11s %10s %11s %10s\n", "", "Melem/s", "GB/s", "Melem/s", "GB/s");
    double base[2] = {0, 0};
    int procs = host_processors();
    for (int row = ZERO_ISA_BASE; row <= ZERO_ISA_COUNT; row++) {
        /* the last row: the selected variant on every processor */
        enum zero_host_isa isa =
            row < ZERO_ISA_COUNT ? (enum zero_host_isa)row : zero_host_isa_best();
        int threads = row < ZERO_ISA_COUNT ? 1 : procs;
        char name[32];
        snprintf(name, sizeof name, "%s%s", zero_host_isa_name(isa), threads > 1 ? " xT" : "");
        if (!zero_host_isa_supported(isa)) {
            printf("%-10s (not supported here)\n", name);
            continue;
        }
        double t32 = time_adam(isa, threads, n, p, g, ZERO_F32, m, v, NULL, ZERO_F32);
        double t16 = time_adam(isa, threads, n, p, g16, ZERO_BF16, m, v, copy, ZERO_BF16);
        if (row == ZERO_ISA_BASE) {
            base[0] = t32;
            base[1] = t16;
        }
        printf("%-10s %9.0f %10.2f %11.0f %10.2f   (x%.2f, x%.2f of base)\n", name,
               (double)n / t32 / 1e6, 28.0 * (double)n / t32 / 1e9, (double)n / t16 / 1e6,
               28.0 * (double)n / t16 / 1e9, base[0] / t32, base[1] / t16);
    }
    printf("xT: %d threads, one per processor\n", procs);
    printf("\nselected: %s (ZERO_HOST_ISA=base|avx2|avx512 picks another)\n",
           zero_host_isa_name(zero_host_isa_best()));
    free(p);
    free(m);
    free(v);
    free(g);
    free(g16);
    free(copy);
    free(src);
    free(dst);
    return 0;
}

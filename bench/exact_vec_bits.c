/* backends/cpu/cpu_exact_vec.h against src/base/exact_math.h on every float: for erff,
 * expf and tanhf, each vector variant this processor runs must give the scalar
 * function's bits for all 2^32 inputs (NaN payloads included); then the speed of each
 * variant, ns per element, on GELU's arguments (x / sqrt2 and -x^2 / 2 for erf GELU,
 * sqrt(2/pi) (x + 0.044715 x^3) for tanh GELU, x roughly normal with sd 1.5).
 *
 *     bench/exact_vec_bits [--stride S] [--time-only]
 *
 * --stride S visits every S-th bit pattern instead (S odd covers all residues over
 * several runs); the exhaustive sweep takes about a CPU-minute per function and
 * variant. Exits 1 at the first difference, printing it: the exhaustive form of
 * tests/test_exact_vec.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cpu_exact_vec.h"
#include "base/exact_math.h"

static const struct {
    const char *name;
    float (*scalar)(float);
    void (*array)(enum zero_host_isa, float *, const float *, size_t);
} fns[] = {
    {"expf", exact_expf, cpu_exact_expf_n},
    {"erff", exact_erff, cpu_exact_erff_n},
    {"tanhf", exact_tanhf, cpu_exact_tanhf_n},
};
#define NFNS (sizeof fns / sizeof fns[0])
#define BLOCK 65536

/* every stride-th float through each variant; 0 when all agree with the scalar function */
static int sweep(uint32_t stride)
{
    static float x[BLOCK], want[BLOCK], got[BLOCK];
    for (size_t k = 0; k < NFNS; k++) {
        double t0 = bench_now();
        uint64_t count = 0;
        for (uint64_t base = 0; base < ((uint64_t)1 << 32); base += (uint64_t)BLOCK * stride) {
            size_t n = 0;
            for (uint64_t b = base; n < BLOCK && b < ((uint64_t)1 << 32); b += stride)
                x[n++] = exact_f32_from_bits((uint32_t)b);
            for (size_t i = 0; i < n; i++)
                want[i] = fns[k].scalar(x[i]);
            for (int isa = ZERO_ISA_AVX2; isa < ZERO_ISA_COUNT; isa++) {
                if (!zero_host_isa_supported((enum zero_host_isa)isa))
                    continue;
                fns[k].array((enum zero_host_isa)isa, got, x, n);
                for (size_t i = 0; i < n; i++)
                    if (exact_f32_bits(got[i]) != exact_f32_bits(want[i])) {
                        printf("%s, %s: x = %a (0x%08x): 0x%08x, the scalar function 0x%08x\n",
                               fns[k].name, zero_host_isa_name((enum zero_host_isa)isa),
                               (double)x[i], exact_f32_bits(x[i]), exact_f32_bits(got[i]),
                               exact_f32_bits(want[i]));
                        return 1;
                    }
            }
            count += n;
        }
        printf("%-6s %llu inputs (stride %u): every variant gives the scalar bits (%.0f s)\n",
               fns[k].name, (unsigned long long)count, stride, bench_now() - t0);
        fflush(stdout);
    }
    return 0;
}

/* the fastest of `reps` calls over n elements, ns per element */
static double ns_per_element(void (*array)(enum zero_host_isa, float *, const float *, size_t),
                             enum zero_host_isa isa, float *y, const float *x, size_t n, int reps)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        array(isa, y, x, n);
        double t = bench_now() - t0;
        best = t < best ? t : best;
    }
    return 1e9 * best / (double)n;
}

static void timing(void)
{
    enum { N = 65536, REPS = 50 };
    static float v[N], arg[3][N], y[N];
    uint32_t h = 12345u;
    for (size_t i = 0; i < N; i++) {
        float u = 0.0f;
        for (int k = 0; k < 4; k++) {
            h = h * 1664525u + 1013904223u;
            u += (float)(h >> 8) / 16777216.0f;
        }
        v[i] = (u - 2.0f) * 2.6f;
        arg[0][i] = -0.5f * v[i] * v[i];
        arg[1][i] = v[i] * 0.70710678118654752440f;
        arg[2][i] = 0.79788456080286535588f * (v[i] + 0.044715f * v[i] * v[i] * v[i]);
    }
    printf("\nns per element (fastest of %d calls of %d elements, GELU's arguments)\n", REPS, N);
    printf("  %-8s", "variant");
    for (size_t k = 0; k < NFNS; k++)
        printf(" %8s", fns[k].name);
    printf("\n");
    double base[NFNS];
    for (int isa = ZERO_ISA_BASE; isa < ZERO_ISA_COUNT; isa++) {
        if (!zero_host_isa_supported((enum zero_host_isa)isa))
            continue;
        printf("  %-8s", zero_host_isa_name((enum zero_host_isa)isa));
        double t[NFNS];
        for (size_t k = 0; k < NFNS; k++) {
            t[k] = ns_per_element(fns[k].array, (enum zero_host_isa)isa, y, arg[k], N, REPS);
            if (isa == ZERO_ISA_BASE)
                base[k] = t[k];
            printf(" %8.2f", t[k]);
        }
        if (isa != ZERO_ISA_BASE) {
            printf("   (");
            for (size_t k = 0; k < NFNS; k++)
                printf("%s%.1fx", k ? ", " : "", base[k] / t[k]);
            printf(" of base)");
        }
        printf("\n");
    }
}

int main(int argc, char **argv)
{
    uint32_t stride = 1;
    int time_only = 0;
    static const struct option longs[] = {{"stride", required_argument, NULL, 's'},
                                          {"time-only", no_argument, NULL, 't'},
                                          {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        if (c == 's' && atol(optarg) >= 1)
            stride = (uint32_t)atol(optarg);
        else if (c == 't')
            time_only = 1;
        else {
            fprintf(stderr, "usage: bench/exact_vec_bits [--stride S] [--time-only]\n");
            return 2;
        }
    }
    if (!time_only && sweep(stride) != 0)
        return 1;
    timing();
    return 0;
}

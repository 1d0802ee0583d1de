/* The measured error of src/base/exact_math.h's float functions over every float (2^32
 * inputs, or every stride-th bit pattern), against libm's long double functions:
 *
 *     bench/math_ulp [--stride S] [--only expf|logf|erff|tanhf] [--doubles N]
 *
 * Prints per function the largest error in ulps of the exact value, the input where
 * it occurs, how many results are not the correctly rounded float, and the rate. The
 * inputs go in the order i * 0x9e3779b1 mod 2^32 (every pattern once), so a line of
 * progress every 2^26 inputs reports a uniform sample of all floats so far.
 * --doubles N: also the double functions (exp, log, cos, powi) over the first N of
 * tests/exact_math_ref.h's sample arguments (the test checks the first 200,000).
 * Not a test: tests/test_exact_math.c asserts the bounds on a dense sample. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "../tests/exact_math_ref.h"

static void sweep(const struct exact_ref_f32 *f, uint64_t stride)
{
    double worst = 0.0, t0 = bench_now();
    uint32_t worst_bits = 0;
    uint64_t count = 0, not_rounded = 0;
    for (uint64_t i = 0; i <= 0xffffffffULL; i += stride) {
        uint32_t b = (uint32_t)i * 0x9e3779b1u; /* odd: a permutation of all patterns */
        float x = exact_ref_f32_of(b);
        float got = f->fn(x);
        long double ref = f->ref((long double)x);
        double err = exact_ulp_error_f32(got, ref);
        float rounded = (float)ref;
        if (!(got == rounded || (isnan(got) && isnan(rounded))))
            not_rounded++;
        if (err > worst) {
            worst = err;
            worst_bits = b;
        }
        if ((++count & 0x3ffffff) == 0) {
            printf("%-6s %11llu inputs so far: max error %.6f ulp at %a (0x%08x), %.1f "
                   "Minputs/s\n",
                   f->name, (unsigned long long)count, worst, (double)exact_ref_f32_of(worst_bits),
                   worst_bits, (double)count / (bench_now() - t0) / 1e6);
            fflush(stdout);
        }
    }
    double dt = bench_now() - t0;
    float wx = exact_ref_f32_of(worst_bits);
    printf("%-6s %11llu inputs  max error %.6f ulp at %a (0x%08x)  not correctly rounded "
           "%llu  %.1f Minputs/s\n",
           f->name, (unsigned long long)count, worst, (double)wx, worst_bits,
           (unsigned long long)not_rounded, (double)count / dt / 1e6);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    uint64_t stride = 1, doubles = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--stride") && i + 1 < argc)
            stride = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--doubles") && i + 1 < argc)
            doubles = strtoull(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: %s [--stride S] [--only expf|logf|erff|tanhf] [--doubles N]\n",
                    argv[0]);
            return 2;
        }
    }
    if (stride < 1)
        stride = 1;
    for (size_t k = 0; k < EXACT_REF_F32_COUNT; k++)
        if (!only || !strcmp(only, exact_ref_f32_fns[k].name))
            sweep(&exact_ref_f32_fns[k], stride);
    for (int f = 0; doubles && f < EXACT_F64_COUNT; f++) {
        double where, t0 = bench_now();
        double worst = exact_f64_max_error((enum exact_f64_fn)f, doubles, &where);
        printf("%-6s %11llu inputs  max error %.6f ulp at %a  %.1f Minputs/s\n", exact_f64_names[f],
               (unsigned long long)doubles, worst, where,
               (double)doubles / (bench_now() - t0) / 1e6);
    }
    return 0;
}

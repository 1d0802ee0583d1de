/* The GEMM-free half of tests/aarch64/run.sh's comparison: the hashes of
 * src/base/exact_math.h's outputs over tests/exact_math_ref.h's samples, one line per
 * function. The script runs it on x86-64 and, cross-built, on aarch64 under qemu and
 * compares the two outputs line by line: the same bits on both, or the contract
 * ("a function of the input alone") is broken. */
#include <inttypes.h>
#include <stdio.h>

#include "../exact_math_ref.h"

#define F64_SAMPLES 200000 /* as tests/test_exact_math.c */

int main(void)
{
    for (size_t k = 0; k < EXACT_REF_F32_COUNT; k++)
        printf("exact_math %-6s %u samples  %016" PRIx64 "\n", exact_ref_f32_fns[k].name,
               (unsigned)EXACT_SAMPLE_COUNT, exact_sample_hash_f32(exact_ref_f32_fns[k].fn));
    for (int f = 0; f < EXACT_F64_COUNT; f++)
        printf("exact_math %-6s %u samples  %016" PRIx64 "\n", exact_f64_names[f], F64_SAMPLES,
               exact_sample_hash_f64((enum exact_f64_fn)f, F64_SAMPLES));
    return 0;
}

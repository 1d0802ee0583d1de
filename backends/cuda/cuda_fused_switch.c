/* ZERO_CUDA_FUSED=off, the one switch every fused path of the cuda backend asks (the fused
 * entries, the GEMM epilogues, the bucketed embedding backward): a floor below them all. */
#include <string.h>

#include "cuda_ops.h"
#include "zero/knobs.h"

int cuda_fused_disabled(void)
{
    const char *env = zero_knob(ZERO_KNOB_CUDA_FUSED);
    return env != NULL && strcmp(env, "off") == 0;
}

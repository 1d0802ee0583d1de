/* See host_isa.h. */
#include "host_isa.h"

#include <stdlib.h>
#include <string.h>

#include "zero/knobs.h"

static const char *const names[ZERO_ISA_COUNT] = {"base", "avx2", "avx512"};

const char *zero_host_isa_name(enum zero_host_isa isa)
{
    return (unsigned)isa < ZERO_ISA_COUNT ? names[isa] : "unknown";
}

int zero_host_isa_supported(enum zero_host_isa isa)
{
    if (isa == ZERO_ISA_BASE)
        return 1;
#ifdef ZERO_HOST_X86
    __builtin_cpu_init();
    if (isa == ZERO_ISA_AVX2)
        return __builtin_cpu_supports("avx2");
    if (isa == ZERO_ISA_AVX512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#endif
    return 0;
}

enum zero_host_isa zero_host_isa_best(void)
{
    const char *want = zero_knob(ZERO_KNOB_HOST_ISA);
    for (int i = ZERO_ISA_COUNT - 1; i >= 0; i--)
        if (want != NULL && strcmp(want, names[i]) == 0 && zero_host_isa_supported(i))
            return (enum zero_host_isa)i;
    return zero_host_isa_usable(ZERO_ISA_COUNT - 1);
}

enum zero_host_isa zero_host_isa_usable(enum zero_host_isa isa)
{
    int i = (unsigned)isa < ZERO_ISA_COUNT ? (int)isa : ZERO_ISA_COUNT - 1;
    while (i > ZERO_ISA_BASE && !zero_host_isa_supported(i))
        i--;
    return (enum zero_host_isa)i;
}

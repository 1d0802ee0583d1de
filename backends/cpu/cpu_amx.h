/* Whether this process may run AMX tile instructions, and the tile configuration's
 * layout (not installed; header-only, so that tests/test_bf16_tile_hw.c shares it).
 *
 * Three things must hold: cpuid says amx_tile and amx_bf16 (leaf 7, edx bits 24 and
 * 22); the OS saves the tile state (XCR0 bits 17 and 18); and, on Linux, the process
 * asked for the tile data's large save area once (arch_prctl ARCH_REQ_XCOMP_PERM):
 * without that permission the first tile instruction raises SIGILL. */
#ifndef ZERO_CPU_AMX_H
#define ZERO_CPU_AMX_H

#include <stdint.h>

/* ldtilecfg's 64-byte operand, palette 1: tile t is rows[t] rows of colsb[t] bytes */
struct cpu_amx_config {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CPU_AMX_ARCH_REQ_XCOMP_PERM 0x1023
#define CPU_AMX_XFEATURE_XTILEDATA 18

/* NULL when AMX-BF16 may run here (asking Linux's permission the first time), else why
 * not. */
static inline const char *cpu_amx_usable(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & 1u << 24) || !(d & 1u << 22))
        return "this processor lacks amx_tile or amx_bf16";
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & 1u << 27))
        return "the OS does not enable xgetbv";
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17))
        return "the OS does not save the AMX tile state (XCR0)";
    if (syscall(SYS_arch_prctl, CPU_AMX_ARCH_REQ_XCOMP_PERM, CPU_AMX_XFEATURE_XTILEDATA) != 0)
        return "Linux refused the AMX tile data permission (arch_prctl)";
    return NULL;
}
#else
static inline const char *cpu_amx_usable(void)
{
    return "not an x86-64 Linux build";
}
#endif

#endif

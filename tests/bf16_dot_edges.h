/* Hand-picked cases of the bf16-product contract (src/base/bf16_dot.h): one VDPBF16PS
 * lane each, acc + x . y with x and y two bf16 (element 0 in the low half), and the
 * result. The results are the instruction's, read on an Intel Xeon with avx512_bf16
 * (tests/test_bf16_dot_hw.c checks them there again); a NaN result stands for any NaN
 * (payloads are not part of the contract). */
#ifndef ZERO_TESTS_BF16_DOT_EDGES_H
#define ZERO_TESTS_BF16_DOT_EDGES_H

#include <stdint.h>

struct bf16_dot_edge {
    const char *why;
    uint32_t acc, x, y, want; /* fp32 bits, two bf16, two bf16, fp32 bits */
};

static const struct bf16_dot_edge bf16_dot_edges[] = {
    {"order: 1 + 2^24 - 2^24 (odd element first gives 0, even first 1)", 0x3f800000u, 0x4b80cb80u,
     0x3f803f80u, 0x00000000u},
    {"order reversed: 1 - 2^24 + 2^24", 0x3f800000u, 0xcb804b80u, 0x3f803f80u, 0x3f800000u},
    {"round to nearest even: 1 + 1.5 * 2^-24", 0x3f800000u, 0x33c00000u, 0x3f800000u, 0x3f800001u},
    {"tie to even: 1 + 2^-24", 0x3f800000u, 0x33800000u, 0x3f800000u, 0x3f800000u},
    {"tie to even, odd: (1 + 2^-23) + 2^-24", 0x3f800001u, 0x33800000u, 0x3f800000u, 0x3f800002u},
    {"fused: 1.5 * 2^-126 - 2^-140 (product subnormal, sum exact)", 0x00c00000u, 0x00001c80u,
     0x00009c80u, 0x00bffe00u},
    {"FTZ after rounding: 2^-126 - 2^-160 stays 2^-126", 0x00800000u, 0x00001780u, 0x00009780u,
     0x00800000u},
    {"FTZ after rounding (unbounded exponent): 2^-126 - 0.75 * 2^-150 -> 0", 0x00800000u,
     0x19c00000u, 0x9a000000u, 0x00000000u},
    {"FTZ: 2^-126 - 1.5 * 2^-150 -> 0", 0x00800000u, 0x00001a40u, 0x00009a00u, 0x00000000u},
    {"FTZ keeps the sign: -2^-140 -> -0", 0x00000000u, 0x1c808000u, 0x9c803f80u, 0x80000000u},
    {"-1.5 * 2^-126 + 2^-127 = -2^-126 stays normal", 0x80c00000u, 0x20008000u, 0x1f803f80u,
     0x80800000u},
    {"DAZ on acc: subnormal 2^-127 + 2^-126 -> 2^-126", 0x00400000u, 0x00000d80u, 0x00003280u,
     0x00800000u},
    {"DAZ on acc, odd step: subnormal 2^-127 + 2^-63 * 2^-63 -> 2^-126", 0x00400000u, 0x20000000u,
     0x20000000u, 0x00800000u},
    {"DAZ on acc: smallest subnormal + 0 -> +0", 0x00000001u, 0x00000000u, 0x00000000u,
     0x00000000u},
    {"DAZ on acc keeps the sign: -subnormal + -0 * 1 -> -0", 0x80000001u, 0x80008000u, 0x3f803f80u,
     0x80000000u},
    {"DAZ on bf16: subnormal * 2^100 -> 0", 0x00000000u, 0x00400000u, 0x71800000u, 0x00000000u},
    {"DAZ on bf16 keeps the sign: -0 + -subnormal * 1 -> -0", 0x80000000u, 0x80408000u, 0x3f803f80u,
     0x80000000u},
    {"DAZ on bf16, low element: 1 + subnormal * 2^126", 0x3f800000u, 0x0000007fu, 0x00007e80u,
     0x3f800000u},
    {"-0 + (+0 * +0) -> +0 (odd K's padding)", 0x80000000u, 0x00008000u, 0x00003f80u, 0x00000000u},
    {"-0 + (-0 * 1) + (-0 * 1) -> -0", 0x80000000u, 0x80008000u, 0x3f803f80u, 0x80000000u},
    {"product beyond fp32: 2^127 * 2^127 -> inf", 0x00000000u, 0x7f000000u, 0x7f000000u,
     0x7f800000u},
    {"overflow of the sum: 2^127 + 2^127 * 2 -> inf", 0x7f000000u, 0x00007f00u, 0x00004000u,
     0x7f800000u},
    {"inf after the odd step, then + -2^254 (the product is never rounded): inf", 0x00000000u,
     0x7f007f00u, 0x7f00ff00u, 0x7f800000u},
    {"inf * 0 -> NaN", 0x00000000u, 0x7f800000u, 0x00000000u, 0xffc00000u},
    {"inf + finite -> inf", 0x7f800000u, 0x3f803f80u, 0x3f803f80u, 0x7f800000u},
    {"-inf * 1 + 1 -> -inf", 0x3f800000u, 0xff800000u, 0x3f800000u, 0xff800000u},
    {"NaN acc -> NaN", 0x7fc01234u, 0x00003f80u, 0x00003f80u, 0x7fc01234u},
    {"signaling NaN operand -> NaN", 0x00000000u, 0x00007f81u, 0x00003f80u, 0x7fc10000u},
    {"largest finite: 2^127 * (2 - 2^-7) + 0", 0x00000000u, 0x00007f7fu, 0x00003f80u, 0x7f7f0000u},
    {"smallest normal products: 2^-63 * 2^-63", 0x00000000u, 0x00002000u, 0x00002000u, 0x00800000u},
    {"product just below 2^-126 flushed: 2^-64 * 2^-63", 0x00000000u, 0x00001f80u, 0x00002000u,
     0x00000000u},
    {"cancellation: 3 - 1.5 * 2", 0x40400000u, 0x3fc00000u, 0xc0000000u, 0x00000000u},
    {"pair: 0.1 + 0.3 * 0.7 + 0.5 * 0.9 (bf16 values)", 0x3dcccccdu, 0x3e993f00u, 0x3f333f66u,
     0x3f42171au},
};

#define BF16_DOT_EDGES (int)(sizeof bf16_dot_edges / sizeof *bf16_dot_edges)

#endif

/* The bf16-product contract's scalar reference (src/base/bf16_dot.h) gives the
 * instruction's result on every hand-picked edge case (tests/bf16_dot_edges.h: pair
 * order, rounding, DAZ and FTZ with their signs, the unbounded-exponent tininess,
 * inf and NaN), and a GEMM chain's odd K is the pair padded with +0. Runs on every
 * processor; test_bf16_dot_hw.c checks the same against VDPBF16PS itself. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/bf16_dot.h"
#include "bf16_dot_edges.h"

static uint32_t bits_of(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static float from_bits(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static int is_nan_bits(uint32_t x)
{
    return (x & 0x7fffffffu) > 0x7f800000u;
}

static int fails;

static void expect(const char *what, uint32_t got, uint32_t want)
{
    if (got == want || (is_nan_bits(got) && is_nan_bits(want)))
        return;
    fprintf(stderr, "FAIL %s: got 0x%08" PRIx32 ", want 0x%08" PRIx32 "\n", what, got, want);
    fails++;
}

static void test_reference_gives_every_edge_case(void)
{
    for (int i = 0; i < BF16_DOT_EDGES; i++) {
        const struct bf16_dot_edge *e = &bf16_dot_edges[i];
        expect(e->why, bits_of(bf16_dot_pair(from_bits(e->acc), e->x, e->y)), e->want);
    }
}

/* x (3), y (3): pairs (x0, x1) then (x2, +0): -0 start and the padding's +0 * +0 */
static void test_odd_k_is_the_pair_padded_with_zero(void)
{
    const uint16_t x[3] = {0x3f80, 0x8000, 0x8000}, y[3] = {0x8000, 0x3f80, 0x3f80};
    /* -0 + (-0 * 1) + (1 * -0) = -0, then + (+0 * +0) = +0, then + (-0 * 1) = +0 */
    expect("odd K: chain of 3", bits_of(bf16_dot_chain(-0.0f, x, y, 3)), 0x00000000u);
    expect("even K: chain of 2 keeps -0", bits_of(bf16_dot_chain(-0.0f, x, y, 2)), 0x80000000u);
    const uint32_t pad = bits_of(
        bf16_dot_pair(bf16_dot_pair(-0.0f, 0x80003f80u, 0x3f808000u), 0x00008000u, 0x00003f80u));
    expect("odd K equals its padded pair", bits_of(bf16_dot_chain(-0.0f, x, y, 3)), pad);
}

int main(void)
{
    test_reference_gives_every_edge_case();
    test_odd_k_is_the_pair_padded_with_zero();
    if (fails) {
        fprintf(stderr, "%d failures\n", fails);
        return 1;
    }
    printf("bf16_dot reference: %d edge cases and the odd-K tail agree\n", BF16_DOT_EDGES);
    return 0;
}

/* The bf16-tile contract's scalar reference (src/base/bf16_tile.h) gives the
 * instruction's result on every hand-picked edge case (tests/bf16_tile_edges.h: the two
 * chains and their order, acc + (E + O), DAZ and FTZ with their signs, the padding's
 * steps, the block boundary at 32, inf and NaN). Runs on every processor;
 * test_bf16_tile_hw.c checks the same against TDPBF16PS itself. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/bf16_tile.h"
#include "bf16_tile_edges.h"

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

int main(void)
{
    int fails = 0;
    for (int i = 0; i < BF16_TILE_EDGES; i++) {
        const struct bf16_tile_edge *e = &bf16_tile_edges[i];
        const uint32_t got = bits_of(bf16_tile_chain(from_bits(e->acc), e->x, e->y, e->k));
        if (got == e->want || (is_nan_bits(got) && is_nan_bits(e->want)))
            continue;
        fprintf(stderr, "FAIL %s: got 0x%08" PRIx32 ", want 0x%08" PRIx32 "\n", e->why, got,
                e->want);
        fails++;
    }
    if (fails) {
        fprintf(stderr, "%d failures\n", fails);
        return 1;
    }
    printf("bf16_tile reference: %d edge cases agree\n", BF16_TILE_EDGES);
    return 0;
}

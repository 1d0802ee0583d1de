/* Hand-picked cases of the bf16-tile contract (src/base/bf16_tile.h): one output each,
 * acc + x (k) . y (k) through the blocks of 32, and the result. The results are the
 * instruction's, read on an Intel Xeon with amx_bf16 (`tests/test_bf16_tile_hw -v` prints
 * them; it checks them there again); a NaN result stands for any NaN. bf16 constants:
 * 0x3f80 1, 0xbf80 -1, 0x4b80 2^24, 0xcb80 -2^24, 0x2000 2^-63, 0x1f80 2^-64,
 * 0x2040 1.5 * 2^-63, 0x7f80 inf, 0xff80 -inf. */
#ifndef ZERO_TESTS_BF16_TILE_EDGES_H
#define ZERO_TESTS_BF16_TILE_EDGES_H

#include <stdint.h>

struct bf16_tile_edge {
    const char *why;
    uint32_t acc; /* fp32 bits */
    int k;
    uint16_t x[40], y[40];
    uint32_t want; /* fp32 bits */
};

#define ONES16                                                                                     \
    0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80,        \
        0x3f80, 0x3f80, 0x3f80, 0x3f80, 0x3f80
#define ONES32 ONES16, ONES16

static const struct bf16_tile_edge bf16_tile_edges[] = {
    {"even chain in increasing k: ((0 + 1) + 2^24) - 2^24 = 0, not 1",
     0,
     5,
     {0x3f80, 0, 0x4b80, 0, 0xcb80},
     {0x3f80, 0, 0x3f80, 0, 0x3f80},
     0x00000000u},
    {"odd chain apart: E = 2^24 - 2^24, O = 1 (one chain in k gives 0)",
     0,
     3,
     {0x4b80, 0x3f80, 0xcb80},
     {0x3f80, 0x3f80, 0x3f80},
     0x3f800000u},
    {"acc + (E + O), not (acc + E) + O: 1 + (2^24 - 2^24)",
     0x3f800000u,
     2,
     {0x4b80, 0xcb80},
     {0x3f80, 0x3f80},
     0x3f800000u},
    {"E + O rounded first: 1 + (2^24 + 1) = 2^24 (ties to even twice)",
     0x3f800000u,
     2,
     {0x4b80, 0x3f80},
     {0x3f80, 0x3f80},
     0x4b800000u},
    {"E and O start at +0: -0 + (-1 * 0 + -1 * 0) = +0",
     0x80000000u,
     2,
     {0xbf80, 0xbf80},
     {0, 0},
     0x00000000u},
    {"DAZ on acc: 2^-127 + 2^-126 = 2^-126", 0x00400000u, 1, {0x3f80}, {0x0080}, 0x00800000u},
    {"DAZ on acc: -smallest subnormal + (-1 * 0) = +0", 0x80000001u, 1, {0xbf80}, {0}, 0x00000000u},
    {"DAZ on bf16: subnormal * 2^100 = 0", 0, 1, {0x0040}, {0x7180}, 0x00000000u},
    {"FTZ inside E: 2^-64 * 2^-63 flushed, then + 2^-63 * 2^-63",
     0,
     3,
     {0x1f80, 0, 0x2000},
     {0x2000, 0, 0x2000},
     0x00800000u},
    {"FTZ of E + O: 1.5 * 2^-126 - 2^-126 = +0",
     0,
     2,
     {0x2040, 0xa000},
     {0x2000, 0x2000},
     0x00000000u},
    {"FTZ of E + O keeps the sign: -0 + (2^-126 - 1.5 * 2^-126) = -0",
     0x80000000u,
     2,
     {0x2000, 0xa040},
     {0x2000, 0x2000},
     0x80000000u},
    {"FTZ of acc + (E + O): -2^-126 + 1.5 * 2^-126 = +0",
     0x80800000u,
     1,
     {0x2040},
     {0x2000},
     0x00000000u},
    {"inf * 1 = inf", 0, 1, {0x7f80}, {0x3f80}, 0x7f800000u},
    {"inf * 0 = NaN", 0, 1, {0x7f80}, {0}, 0xffc00000u},
    {"E = inf, O = -inf: NaN", 0, 2, {0x7f80, 0xff80}, {0x3f80, 0x3f80}, 0xffc00000u},
    {"overflow of E + O: 2^127 + 2^127 = inf",
     0,
     2,
     {0x7f00, 0x7f00},
     {0x3f80, 0x3f80},
     0x7f800000u},
    {"NaN acc stays NaN", 0x7fc01234u, 1, {0x3f80}, {0x3f80}, 0x7fc01234u},
    {"the padding is a step: E = (+0 + t) + -t = -0, O = -t then +0 * +0 = +0",
     0x80000000u,
     3,
     {0x1f80, 0x1f80, 0x1f80},
     {0x2000, 0xa000, 0xa000},
     0x00000000u},
    {"a full block keeps -0: -0 + 32 flushed negative products",
     0x80000000u,
     32,
     {0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80,
      0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80,
      0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80, 0x1f80},
     {0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000,
      0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000,
      0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000, 0xa000},
     0x80000000u},
    {"16 + 16 ones: E = O = 16", 0, 32, {ONES32}, {ONES32}, 0x42000000u},
    {"a new block at k = 32: 2^24, then 1 + 1 in the next block",
     0,
     34,
     {0x4b80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,      0,
      0,      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3f80, 0x3f80},
     {ONES32, 0x3f80, 0x3f80},
     0x4b800001u},
    {"the blocks' chain: 1 + (2^24 - 2^24) + (2^-24 * 1)",
     0x3f800000u,
     33,
     {0x4b80, 0xcb80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,     0,
      0,      0,      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3380},
     {ONES32, 0x3f80},
     0x3f800000u},
};

#define BF16_TILE_EDGES (int)(sizeof bf16_tile_edges / sizeof *bf16_tile_edges)

#endif

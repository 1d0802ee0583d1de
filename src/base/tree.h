/* The canonical summation tree (docs/design.md, "Exactness contract").
 *
 *   tree(lo, n) = n == 1 ? leaf(lo) : tree(lo, p) + tree(lo + p, n - p)
 *
 * with p the largest power of two strictly less than n, so n = 3 is (g0 + g1) + g2 and
 * n = 7 is ((g0 + g1) + (g2 + g3)) + ((g4 + g5) + g6). Every exact sum over ranks or
 * atoms follows this one rule; fixing the order of the floating-point additions is what
 * makes results bit-identical across stages and world sizes.
 *
 * The same tree can be built online, one leaf at a time, as a binary counter of partial
 * sums (the engine's gradient accumulation): keep a stack of partial sums whose sizes are
 * the set bits of the number of leaves pushed, largest (oldest) at the bottom.
 *   - push leaf k (0-based), then zero_tree_merges_after(k) times:
 *       below = below + top (pop top)           -- the older partial sum on the left
 *   - finish: fold the stack from the top:  acc = top; acc = below + acc; ...
 * The result equals tree(0, n) bit for bit (tests/test_tree.c proves it). Pure math. */
#ifndef ZERO_TREE_H
#define ZERO_TREE_H

#include <stddef.h>

/* The split point p of tree(lo, n): the largest power of two strictly less than n;
 * 0 when n < 2. */
size_t zero_tree_split(size_t n);

/* Number of merges after pushing leaf k (0-based) onto the online counter: the number of
 * trailing one bits of k, i.e. how many equal-sized partial sums complete. */
unsigned zero_tree_merges_after(size_t k);

/* tree(0, n) of x (n) in fp32, recursively: the serial reference. 0 when n == 0. */
float zero_tree_sum(const float *x, size_t n);

#endif

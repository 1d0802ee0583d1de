/* The canonical summation tree: see tree.h. */
#include "tree.h"

size_t zero_tree_split(size_t n)
{
    size_t p = 1;
    if (n < 2)
        return 0;
    while (p * 2 < n)
        p *= 2;
    return p;
}

unsigned zero_tree_merges_after(size_t k)
{
    unsigned merges = 0;
    while (k & 1) {
        merges++;
        k >>= 1;
    }
    return merges;
}

float zero_tree_sum(const float *x, size_t n)
{
    if (n == 0)
        return 0.0f;
    if (n == 1)
        return x[0];
    size_t p = zero_tree_split(n);
    float left = zero_tree_sum(x, p);
    float right = zero_tree_sum(x + p, n - p);
    return left + right;
}

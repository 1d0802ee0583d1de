/* Two tensors' values compared element by element, each widened exactly (fp16 and
 * bf16 to fp32 are exact; every float to double is), with the distance in ulps counted
 * in the tensors' own dtype when both have one (else in fp32). Pure math, no I/O:
 * zero diff (diff.c) reads the files and prints the result. */
#ifndef ZERO_CLI_TENSOR_DIFF_H
#define ZERO_CLI_TENSOR_DIFF_H

#include <stdint.h>

#include "zero/dtype.h"

/* The ulp histogram: bucket 0 counts elements whose bits differ but whose values are
 * equal (+0 and -0, two NaNs with different payloads); bucket 1 one ulp, 2 two ulps, and
 * bucket k >= 3 distances in (2^(k-2), 2^(k-1)]; the last counts a NaN against a
 * number. */
#define TENSOR_DIFF_NAN_BUCKET 66
#define TENSOR_DIFF_BUCKETS 67

struct tensor_diff {
    int64_t numel;
    int64_t differing;  /* elements whose bits differ (histogram total) */
    double max_abs;     /* over the pairs of numbers (a NaN pair is counted in the histogram) */
    int64_t max_at;     /* flat index of max_abs, -1 when nothing differs */
    double sum_sq_diff; /* sum of (a - b)^2 over the pairs of numbers, in double */
    double sum_sq_a;    /* sum of a^2, the reference's */
    uint64_t max_ulps;  /* the largest distance in ulps over the pairs of numbers */
    int64_t hist[TENSOR_DIFF_BUCKETS];
    int64_t first; /* flat index (in a) of the first element whose bits differ, or -1 */
    double first_a, first_b;
    uint64_t first_bits_a, first_bits_b;
    enum zero_dtype ulp_dtype; /* what an ulp is counted in */
};

/* Compares a (n elements of ta) with b (n of tb). With b_transposed, a is (rows, n / rows)
 * and b its (n / rows, rows) layout: a[i][j] is compared with b[j][i]. Integer dtypes
 * compare as integers (an "ulp" is 1). */
void tensor_diff_compute(struct tensor_diff *d, const void *a, enum zero_dtype ta, const void *b,
                         enum zero_dtype tb, int64_t n, int b_transposed, int64_t rows);

/* sqrt(sum_sq_diff / sum_sq_a): 0 when equal, infinity when a is all zeros and b not */
double tensor_diff_rel_l2(const struct tensor_diff *d);

/* The bucket's label: "1", "2", "3-4", "5-8", ..., "nan" (bucket 0: "0"). */
void tensor_diff_bucket_label(int bucket, char *out, int len);

/* A value's bits as stored (raw, zero-extended) and its value widened to double. */
uint64_t tensor_bits(const void *p, enum zero_dtype t, int64_t i);
double tensor_value(const void *p, enum zero_dtype t, int64_t i);

#endif

/* See tensor_diff.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tensor_diff.h"

uint64_t tensor_bits(const void *p, enum zero_dtype t, int64_t i)
{
    switch (t) {
    case ZERO_F16:
    case ZERO_BF16:
        return ((const uint16_t *)p)[i];
    case ZERO_F32:
    case ZERO_I32:
        return ((const uint32_t *)p)[i];
    default:
        return ((const uint64_t *)p)[i];
    }
}

double tensor_value(const void *p, enum zero_dtype t, int64_t i)
{
    switch (t) {
    case ZERO_F16:
        return zero_f16_to_f32(((const uint16_t *)p)[i]);
    case ZERO_BF16:
        return zero_bf16_to_f32(((const uint16_t *)p)[i]);
    case ZERO_F32:
        return ((const float *)p)[i];
    case ZERO_F64:
        return ((const double *)p)[i];
    case ZERO_I32:
        return ((const int32_t *)p)[i];
    default:
        return (double)((const int64_t *)p)[i];
    }
}

static int is_integer(enum zero_dtype t)
{
    return t == ZERO_I32 || t == ZERO_I64;
}

/* Sign-magnitude bits of a float of `width` bits as an integer that counts ulps: adjacent
 * floats are adjacent integers, +0 and -0 both 0. */
static int64_t ordered(uint64_t bits, int width)
{
    uint64_t sign = (uint64_t)1 << (width - 1);
    int64_t mag = (int64_t)(bits & (sign - 1));
    return (bits & sign) ? -mag : mag;
}

static uint64_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The distance of two non-NaN values in ulps of d->ulp_dtype. */
static uint64_t ulp_distance(const void *a, enum zero_dtype ta, int64_t ia, const void *b,
                             enum zero_dtype tb, int64_t ib)
{
    int64_t oa, ob;
    if (is_integer(ta) || is_integer(tb)) {
        double x = tensor_value(a, ta, ia), y = tensor_value(b, tb, ib);
        return (uint64_t)fabs(x - y);
    }
    if (ta == tb) {
        int width = (int)zero_dtype_size(ta) * 8;
        oa = ordered(tensor_bits(a, ta, ia), width);
        ob = ordered(tensor_bits(b, tb, ib), width);
    } else { /* mixed dtypes: fp32 ulps (exact for 16-bit values; fp64 is rounded) */
        oa = ordered(f32_bits((float)tensor_value(a, ta, ia)), 32);
        ob = ordered(f32_bits((float)tensor_value(b, tb, ib)), 32);
    }
    return oa > ob ? (uint64_t)oa - (uint64_t)ob : (uint64_t)ob - (uint64_t)oa;
}

static int bucket_of(uint64_t ulps)
{
    if (ulps <= 2)
        return (int)ulps;
    int k = 0; /* ceil(log2(ulps)) */
    while (k < 64 && ((uint64_t)1 << k) < ulps)
        k++;
    return k + 1;
}

void tensor_diff_compute(struct tensor_diff *d, const void *a, enum zero_dtype ta, const void *b,
                         enum zero_dtype tb, int64_t n, int b_transposed, int64_t rows)
{
    memset(d, 0, sizeof *d);
    d->numel = n;
    d->first = d->max_at = -1;
    d->ulp_dtype = ta == tb ? ta : ZERO_F32;
    int64_t cols = rows > 0 ? n / rows : 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t ib = b_transposed ? (i % cols) * rows + i / cols : i;
        double x = tensor_value(a, ta, i), y = tensor_value(b, tb, ib);
        int both_numbers = !isnan(x) && !isnan(y);
        if (both_numbers) {
            d->sum_sq_a += x * x;
            d->sum_sq_diff += (x - y) * (x - y);
        } else if (!isnan(x)) {
            d->sum_sq_a += x * x;
        }
        uint64_t xa = tensor_bits(a, ta, i), yb = tensor_bits(b, tb, ib);
        int same = ta == tb ? xa == yb : (x == y && signbit(x) == signbit(y));
        if (same)
            continue;
        d->differing++;
        if (d->first < 0) {
            d->first = i;
            d->first_a = x;
            d->first_b = y;
            d->first_bits_a = xa;
            d->first_bits_b = yb;
        }
        int bucket;
        if (!both_numbers)
            bucket = isnan(x) && isnan(y) ? 0 : TENSOR_DIFF_NAN_BUCKET;
        else if (x == y)
            bucket = 0;
        else {
            uint64_t ulps = ulp_distance(a, ta, i, b, tb, ib);
            bucket = bucket_of(ulps);
            if (ulps > d->max_ulps)
                d->max_ulps = ulps;
        }
        d->hist[bucket]++;
        double diff = both_numbers ? fabs(x - y) : 0.0;
        if (both_numbers && (d->max_at < 0 || diff > d->max_abs)) {
            d->max_abs = diff;
            d->max_at = i;
        }
    }
}

double tensor_diff_rel_l2(const struct tensor_diff *d)
{
    if (d->sum_sq_diff == 0.0)
        return 0.0;
    if (d->sum_sq_a == 0.0)
        return INFINITY;
    return sqrt(d->sum_sq_diff / d->sum_sq_a);
}

void tensor_diff_bucket_label(int bucket, char *out, int len)
{
    if (bucket == TENSOR_DIFF_NAN_BUCKET)
        snprintf(out, (size_t)len, "nan");
    else if (bucket <= 2)
        snprintf(out, (size_t)len, "%d", bucket);
    else
        snprintf(out, (size_t)len, "%llu-%llu",
                 (unsigned long long)(((uint64_t)1 << (bucket - 2)) + 1),
                 (unsigned long long)((uint64_t)1 << (bucket - 1)));
}

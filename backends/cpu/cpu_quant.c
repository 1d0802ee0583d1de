/* The cpu backend's quant group (zero/backend_quant.h): block-wise int8 and int4 codes
 * of a flat buffer and their values, element by element through base/quant_int8.h and
 * base/quant_int4.h (the all-to-all is cpu_groups.c's, beside the groups). */
#include <math.h>

#include "cpu_internal.h"
#include "cpu_ops.h"
#include "base/backend_contract.h"
#include "base/dtype_convert.h"
#include "base/quant_int4.h"
#include "base/quant_int8.h"
#include "zero/backend_quant.h"

/* scales (ceil(n / block),) of x: max |x| over each block, through scale_of. */
static void block_scales(const void *x, enum zero_dtype t, size_t n, size_t block,
                         float (*scale_of)(float), float *scales)
{
    for (size_t b = 0, begin = 0; begin < n; b++, begin += block) {
        size_t end = n - begin < block ? n : begin + block;
        float amax = 0.0f;
        for (size_t i = begin; i < end; i++) {
            float a = fabsf(dtype_load_f32(x, t, i));
            amax = a > amax ? a : amax;
        }
        scales[b] = scale_of(amax);
    }
}

static int cpu_quantize_int8(void *self, const void *x, enum zero_dtype t, size_t n, size_t block,
                             float *scales, int8_t *q)
{
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_quant("quantize_int8", t, block, why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(self, rc, "%s", why);
    block_scales(x, t, n, block, quant_int8_scale, scales);
    for (size_t i = 0; i < n; i++)
        q[i] = quant_int8_code(dtype_load_f32(x, t, i), scales[i / block]);
    return ZERO_OK;
}

static int cpu_dequantize_int8(void *self, const float *scales, const int8_t *q, size_t n,
                               size_t block, void *y, enum zero_dtype t)
{
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_quant("dequantize_int8", t, block, why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(self, rc, "%s", why);
    for (size_t i = 0; i < n; i++)
        dtype_store_f32(y, t, i, quant_int8_value(q[i], scales[i / block]));
    return ZERO_OK;
}

static int cpu_quantize_int4(void *self, const void *x, enum zero_dtype t, size_t n, size_t block,
                             float *scales, uint8_t *q)
{
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_quant("quantize_int4", t, block, why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(self, rc, "%s", why);
    block_scales(x, t, n, block, quant_int4_scale, scales);
    for (size_t i = 0; i < n; i += 2) { /* byte i / 2: elements i and i + 1 */
        int lo = quant_int4_code(dtype_load_f32(x, t, i), scales[i / block]);
        int hi =
            i + 1 < n ? quant_int4_code(dtype_load_f32(x, t, i + 1), scales[(i + 1) / block]) : 0;
        q[i / 2] = quant_int4_pack(lo, hi);
    }
    return ZERO_OK;
}

static int cpu_dequantize_int4(void *self, const float *scales, const uint8_t *q, size_t n,
                               size_t block, void *y, enum zero_dtype t)
{
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_quant("dequantize_int4", t, block, why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(self, rc, "%s", why);
    for (size_t i = 0; i < n; i++)
        dtype_store_f32(y, t, i, quant_int4_value(quant_int4_unpack(q, i), scales[i / block]));
    return ZERO_OK;
}

const struct zero_quant_ops cpu_quant_ops = {
    .version = ZERO_QUANT_OPS_VERSION,
    .quantize_int8 = cpu_quantize_int8,
    .dequantize_int8 = cpu_dequantize_int8,
    .quantize_int4 = cpu_quantize_int4,
    .dequantize_int4 = cpu_dequantize_int4,
    .all_to_all = cpu_all_to_all,
};

/* The cpu backend's quant group (zero/backend_quant.h): block-wise int8 codes of a
 * flat buffer and their values, element by element through base/quant_int8.h. */
#include <math.h>

#include "cpu_internal.h"
#include "cpu_ops.h"
#include "base/backend_contract.h"
#include "base/dtype_convert.h"
#include "base/quant_int8.h"
#include "zero/backend_quant.h"

static int cpu_quantize_int8(void *self, const void *x, enum zero_dtype t, size_t n, size_t block,
                             float *scales, int8_t *q)
{
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_quant("quantize_int8", t, block, why, sizeof why);
    if (rc != ZERO_OK)
        return cpu_fail(self, rc, "%s", why);
    for (size_t b = 0, begin = 0; begin < n; b++, begin += block) {
        size_t end = n - begin < block ? n : begin + block;
        float amax = 0.0f;
        for (size_t i = begin; i < end; i++) {
            float a = fabsf(dtype_load_f32(x, t, i));
            amax = a > amax ? a : amax;
        }
        scales[b] = quant_int8_scale(amax);
        for (size_t i = begin; i < end; i++)
            q[i] = quant_int8_code(dtype_load_f32(x, t, i), scales[b]);
    }
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

const struct zero_quant_ops cpu_quant_ops = {
    .version = ZERO_QUANT_OPS_VERSION,
    .quantize_int8 = cpu_quantize_int8,
    .dequantize_int8 = cpu_dequantize_int8,
};

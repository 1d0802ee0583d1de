/* The cuda backend's quant group (zero/backend_quant.h): cuda_quant.cu's kernels on
 * the compute stream, after the contract's checks. */
#include "cuda_internal.h"
#include "cuda_launch.h"
#include "cuda_ops.h"
#include "base/backend_contract.h"
#include "zero/backend_quant.h"

static int cuda_quantize_int8(void *self, const void *x, enum zero_dtype t, size_t n, size_t block,
                              float *scales, int8_t *q)
{
    struct cuda_state *s = self;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_quant("quantize_int8", t, block, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    return cuda_check(s, cuda_launch_quantize_int8(s->compute, x, t, n, block, scales, q),
                      "quantize_int8");
}

static int cuda_dequantize_int8(void *self, const float *scales, const int8_t *q, size_t n,
                                size_t block, void *y, enum zero_dtype t)
{
    struct cuda_state *s = self;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_quant("dequantize_int8", t, block, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    return cuda_check(s, cuda_launch_dequantize_int8(s->compute, scales, q, n, block, y, t),
                      "dequantize_int8");
}

static int cuda_quantize_int4(void *self, const void *x, enum zero_dtype t, size_t n, size_t block,
                              float *scales, uint8_t *q)
{
    struct cuda_state *s = self;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_quant("quantize_int4", t, block, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    return cuda_check(s, cuda_launch_quantize_int4(s->compute, x, t, n, block, scales, q),
                      "quantize_int4");
}

static int cuda_dequantize_int4(void *self, const float *scales, const uint8_t *q, size_t n,
                                size_t block, void *y, enum zero_dtype t)
{
    struct cuda_state *s = self;
    char why[ZERO_ERRMSG_LEN];
    int rc = zero_contract_quant("dequantize_int4", t, block, why, sizeof why);
    if (rc != ZERO_OK)
        return cuda_fail(s, rc, "%s", why);
    return cuda_check(s, cuda_launch_dequantize_int4(s->compute, scales, q, n, block, y, t),
                      "dequantize_int4");
}

const struct zero_quant_ops cuda_quant_ops = {
    .version = ZERO_QUANT_OPS_VERSION,
    .quantize_int8 = cuda_quantize_int8,
    .dequantize_int8 = cuda_dequantize_int8,
    .quantize_int4 = cuda_quantize_int4,
    .dequantize_int4 = cuda_dequantize_int4,
    .all_to_all = cuda_all_to_all,
};

/* Element types that live in model-state buffers and on the wire. */
#ifndef ZERO_DTYPE_H
#define ZERO_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum zero_dtype {
    ZERO_F32 = 0,
    ZERO_F16 = 1,  /* IEEE 754 binary16 */
    ZERO_BF16 = 2, /* bfloat16: the top half of an fp32 */
    ZERO_F64 = 3,
    ZERO_I32 = 4,
    ZERO_I64 = 5,
    ZERO_DTYPE_COUNT
};

size_t zero_dtype_size(enum zero_dtype t);
const char *zero_dtype_name(enum zero_dtype t); /* "fp32", "fp16", "bf16", ... */
/* Parses "fp32"/"float32", "fp16"/"float16"/"half", "bf16"/"bfloat16"; -1 if unknown. */
int zero_dtype_parse(const char *s);

/* Scalar conversions, round-to-nearest-even, exact for subnormals, inf, NaN
 * (a NaN stays a NaN, quiet, sign kept). Pure C, used by the CPU backend's
 * cast kernels and by tests. */
float zero_f16_to_f32(uint16_t h);
uint16_t zero_f32_to_f16(float f);
float zero_bf16_to_f32(uint16_t b);
uint16_t zero_f32_to_bf16(float f);

#ifdef __cplusplus
}
#endif

#endif

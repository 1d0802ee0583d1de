/* Element types, and the fp16/bf16 <-> fp32 conversions done by bit manipulation.
 *
 * Portable C (no _Float16, no F16C intrinsics) so that every backend and test
 * sees the same bits. The bodies are in dtype_convert.h, inline, so that loops
 * over arrays (host_optim.c) can vectorize them. */
#include "zero/dtype.h"

#include <string.h>

#include "dtype_convert.h"

size_t zero_dtype_size(enum zero_dtype t)
{
    switch (t) {
    case ZERO_F32:
        return 4;
    case ZERO_F16:
        return 2;
    case ZERO_BF16:
        return 2;
    case ZERO_F64:
        return 8;
    case ZERO_I32:
        return 4;
    case ZERO_I64:
        return 8;
    default:
        return 0;
    }
}

const char *zero_dtype_name(enum zero_dtype t)
{
    switch (t) {
    case ZERO_F32:
        return "fp32";
    case ZERO_F16:
        return "fp16";
    case ZERO_BF16:
        return "bf16";
    case ZERO_F64:
        return "fp64";
    case ZERO_I32:
        return "int32";
    case ZERO_I64:
        return "int64";
    default:
        return "unknown";
    }
}

int zero_dtype_parse(const char *s)
{
    static const struct {
        const char *name;
        enum zero_dtype type;
    } names[] = {
        {"fp32", ZERO_F32},    {"float32", ZERO_F32}, {"float", ZERO_F32},  {"fp16", ZERO_F16},
        {"float16", ZERO_F16}, {"half", ZERO_F16},    {"bf16", ZERO_BF16},  {"bfloat16", ZERO_BF16},
        {"fp64", ZERO_F64},    {"float64", ZERO_F64}, {"double", ZERO_F64}, {"int32", ZERO_I32},
        {"int64", ZERO_I64},
    };
    if (s == NULL)
        return -1;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(s, names[i].name) == 0)
            return (int)names[i].type;
    return -1;
}

uint16_t zero_f32_to_f16(float f)
{
    return dtype_f32_to_f16(f);
}

float zero_f16_to_f32(uint16_t h)
{
    return dtype_f16_to_f32(h);
}

uint16_t zero_f32_to_bf16(float f)
{
    return dtype_f32_to_bf16(f);
}

float zero_bf16_to_f32(uint16_t b)
{
    return dtype_bf16_to_f32(b);
}

/* Element types, and the fp16/bf16 <-> fp32 conversions done by bit manipulation.
 *
 * Portable C (no _Float16, no F16C intrinsics) so that every backend and test
 * sees the same bits. All narrowing conversions round to nearest, ties to even;
 * NaNs come out quiet with their sign and the top payload bits kept. */
#include "zero/dtype.h"

#include <string.h>

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

static uint32_t f32_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    return x;
}

static float f32_from_bits(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}

/* Drops the low `shift` bits of v, rounding to nearest with ties to even. The
 * result may carry into the next bit (the next binade, or inf): that is wanted. */
static uint32_t round_shift_rne(uint32_t v, unsigned shift)
{
    uint32_t kept = v >> shift;
    uint32_t rest = v & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1)))
        kept++;
    return kept;
}

/* fp16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
uint16_t zero_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t mag = x & 0x7fffffff;

    if (mag >= 0x7f800000) {
        if (mag == 0x7f800000)
            return sign | 0x7c00;
        /* NaN: quiet bit set so a payload living only in the dropped bits stays NaN */
        return sign | 0x7e00 | (uint16_t)((mag >> 13) & 0x3ff);
    }
    /* 65520 = 0x477ff000 is halfway between 65504 (max fp16) and 65536: ties go to
     * the even neighbour, which is inf. */
    if (mag >= 0x477ff000)
        return sign | 0x7c00;
    if (mag >= 0x38800000) /* >= 2^-14: a normal fp16; rebias the exponent 127 -> 15 */
        return sign | (uint16_t)round_shift_rne(mag - (112u << 23), 13);
    if (mag < 0x33000000) /* < 2^-25 (half the smallest subnormal): rounds to zero */
        return sign;
    /* Subnormal fp16: value = q * 2^-24. With mant = 1.m * 2^23 and biased exponent
     * e, q = mant * 2^(e - 126), a right shift by 126 - e in [14, 24]. */
    uint32_t e = mag >> 23;
    uint32_t mant = (mag & 0x7fffff) | 0x800000;
    return sign | (uint16_t)round_shift_rne(mant, 126 - e);
}

float zero_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1f;
    uint32_t m = h & 0x3ff;

    if (e == 0x1f) /* inf, or NaN made quiet */
        return f32_from_bits(sign | 0x7f800000 | (m << 13) | (m ? 0x400000u : 0));
    if (e == 0) {
        if (m == 0)
            return f32_from_bits(sign);
        /* Subnormal (m / 2^10) * 2^-14: each shift that moves the leading one up to
         * the implicit bit 10 halves the exponent. */
        uint32_t exp = 113; /* biased fp32 exponent of 2^-14 */
        while (!(m & 0x400)) {
            m <<= 1;
            exp--;
        }
        return f32_from_bits(sign | (exp << 23) | ((m & 0x3ff) << 13));
    }
    return f32_from_bits(sign | ((e + 112) << 23) | (m << 13));
}

/* bf16 is the top half of an fp32: same exponent range, 7 mantissa bits. */
uint16_t zero_f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000) /* NaN: never let rounding carry it into inf */
        return (uint16_t)((x >> 16) | 0x0040);
    return (uint16_t)(round_shift_rne(x, 16));
}

float zero_bf16_to_f32(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    if ((x & 0x7fffffff) > 0x7f800000)
        x |= 0x400000;
    return f32_from_bits(x);
}

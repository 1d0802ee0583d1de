/* backends/cpu/cpu_combine.c: the exact collectives' owner combine gives, under every host
 * variant (base, AVX2, AVX-512; cpu_combine_isa), the bits of the canonical tree over the
 * pieces written out here element by element: widen each piece exactly, add along
 * zero_tree_split's tree in fp32, round once to the output type. Pieces of every wire type
 * (fp32, bf16, fp16), 1 to 9 of them, lengths around the block size, values with
 * subnormals, infinities, NaN and sums that overflow the 16-bit types; and in place. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_coll.h"
#include "base/dtype_convert.h"
#include "base/tree.h"

/* ck_assert_msg marks every passing assertion's place, which costs more than the check */
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg(__VA_ARGS__);                                                             \
    } while (0)

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* A value for a piece: mostly ordinary magnitudes of both signs, some large enough that
 * their sum overflows fp16, some subnormal, now and then an infinity or a NaN */
static float sample(void)
{
    uint32_t r = next_u32();
    switch (r % 64) {
    case 0:
        return dtype_f32_from_bits(0x7f800000u | ((r >> 8) & 1u) << 31); /* +-inf */
    case 1:
        return dtype_f32_from_bits(0x7fc00000u | (r >> 12)); /* a NaN with a payload */
    case 2:
    case 3:
        return dtype_f32_from_bits((r >> 9) | ((r >> 8) & 1u) << 31); /* subnormal */
    case 4:
    case 5:
        return (r & 256 ? 1.0f : -1.0f) * 60000.0f; /* near fp16's limit */
    default:
        return ((float)(int32_t)(r >> 4) - 134217728.0f) * 0x1p-20f;
    }
}

static void put(void *piece, enum zero_dtype t, size_t i, float v)
{
    if (t == ZERO_F32)
        ((float *)piece)[i] = v;
    else if (t == ZERO_BF16)
        ((uint16_t *)piece)[i] = dtype_f32_to_bf16(v);
    else
        ((uint16_t *)piece)[i] = dtype_f32_to_f16(v);
}

static float get(const void *piece, enum zero_dtype t, size_t i)
{
    if (t == ZERO_F32)
        return ((const float *)piece)[i];
    if (t == ZERO_BF16)
        return dtype_bf16_to_f32(((const uint16_t *)piece)[i]);
    return dtype_f16_to_f32(((const uint16_t *)piece)[i]);
}

/* element i of the tree over pieces [lo, lo + n), in fp32 */
static float tree_at(void *const *piece, enum zero_dtype t, int lo, int n, size_t i)
{
    if (n == 1)
        return get(piece[lo], t, i);
    int p = (int)zero_tree_split((size_t)n);
    return tree_at(piece, t, lo, p, i) + tree_at(piece, t, lo + p, n - p, i);
}

static uint32_t bits_of(const void *out, enum zero_dtype t, size_t i)
{
    if (t == ZERO_F32)
        return dtype_f32_bits(((const float *)out)[i]);
    return ((const uint16_t *)out)[i];
}

static int is_nan(const void *out, enum zero_dtype t, size_t i)
{
    float v = get(out, t, i);
    return v != v;
}

static const enum zero_dtype types[3] = {ZERO_F32, ZERO_BF16, ZERO_F16};
static const size_t lengths[] = {
    1, 7, CPU_COMBINE_CHUNK - 1, CPU_COMBINE_CHUNK, CPU_COMBINE_CHUNK + 1, 5003};

START_TEST(test_every_variant_gives_the_canonical_trees_bits)
{
    enum { MAX_PIECES = 9 };
    const size_t max_len = 5003;
    void *piece[MAX_PIECES];
    for (int j = 0; j < MAX_PIECES; j++)
        piece[j] = malloc(max_len * sizeof(float));
    float *scratch = malloc(cpu_combine_scratch_floats(MAX_PIECES) * sizeof(float));
    void *out = malloc(max_len * sizeof(float)), *want = malloc(max_len * sizeof(float));
    ck_assert(out && want && scratch);
    int variants = 0;
    for (int isa = ZERO_ISA_BASE; isa < ZERO_ISA_COUNT; isa++) {
        if (!zero_host_isa_supported((enum zero_host_isa)isa))
            continue;
        variants++;
        for (int wi = 0; wi < 3; wi++)
            for (int oi = 0; oi < 2; oi++) {
                enum zero_dtype wt = types[wi], ot = oi == 0 ? ZERO_F32 : wt;
                for (int n = 1; n <= MAX_PIECES; n++)
                    for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++) {
                        size_t len = lengths[li];
                        for (int j = 0; j < n; j++)
                            for (size_t i = 0; i < len; i++)
                                put(piece[j], wt, i, sample());
                        for (size_t i = 0; i < len; i++)
                            put(want, ot, i, tree_at(piece, wt, 0, n, i));
                        cpu_combine_isa((enum zero_host_isa)isa, out, ot,
                                        (const void *const *)piece, n, wt, len, scratch);
                        for (size_t i = 0; i < len; i++)
                            EXPECT(bits_of(out, ot, i) == bits_of(want, ot, i) ||
                                       (is_nan(out, ot, i) && is_nan(want, ot, i)),
                                   "%s: %d %s pieces into %s, length %zu: element %zu is "
                                   "0x%x, the tree gives 0x%x",
                                   zero_host_isa_name((enum zero_host_isa)isa), n,
                                   zero_dtype_name(wt), zero_dtype_name(ot), len, i,
                                   bits_of(out, ot, i), bits_of(want, ot, i));
                    }
            }
    }
    ck_assert_int_ge(variants, 1);
    for (int j = 0; j < MAX_PIECES; j++)
        free(piece[j]);
    free(scratch);
    free(out);
    free(want);
}
END_TEST

/* out may be a piece itself (the owner's own piece, reduced in place) */
START_TEST(test_the_combine_may_write_over_its_first_piece)
{
    const size_t len = 3 * CPU_COMBINE_CHUNK + 5;
    for (int isa = ZERO_ISA_BASE; isa < ZERO_ISA_COUNT; isa++) {
        if (!zero_host_isa_supported((enum zero_host_isa)isa))
            continue;
        for (int wi = 0; wi < 3; wi++) {
            enum zero_dtype t = types[wi];
            void *piece[3];
            for (int j = 0; j < 3; j++) {
                piece[j] = malloc(len * sizeof(float));
                for (size_t i = 0; i < len; i++)
                    put(piece[j], t, i, sample());
            }
            float *want = malloc(len * sizeof(float)),
                  *scratch = malloc(cpu_combine_scratch_floats(3) * sizeof(float));
            for (size_t i = 0; i < len; i++)
                put(want, t, i, tree_at(piece, t, 0, 3, i));
            cpu_combine_isa((enum zero_host_isa)isa, piece[0], t, (const void *const *)piece, 3, t,
                            len, scratch);
            for (size_t i = 0; i < len; i++)
                EXPECT(bits_of(piece[0], t, i) == bits_of(want, t, i) ||
                           (is_nan(piece[0], t, i) && is_nan(want, t, i)),
                       "%s, %s in place: element %zu differs",
                       zero_host_isa_name((enum zero_host_isa)isa), zero_dtype_name(t), i);
            for (int j = 0; j < 3; j++)
                free(piece[j]);
            free(want);
            free(scratch);
        }
    }
}
END_TEST

static Suite *combine_suite(void)
{
    Suite *s = suite_create("combine");
    TCase *tc = tcase_create("bits");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_every_variant_gives_the_canonical_trees_bits);
    tcase_add_test(tc, test_the_combine_may_write_over_its_first_piece);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(combine_suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* safetensors reader and writer: the bytes match the format's reference implementation,
 * every dtype and conversion round-trips, every kind of broken file is refused with a
 * message that names the problem, and a failed write never touches an existing file. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zero/safetensors.h"

static char dir[256];  /* a fresh directory per test */
static char path[512]; /* dir/model.safetensors */

static void make_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/zero_st_XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        char p[1024];
        snprintf(p, sizeof(p), "%s/%s", dir, ent->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static int count_dir_entries(void)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL)
        n += strcmp(ent->d_name, ".") != 0 && strcmp(ent->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void write_bytes(const char *p, const void *buf, size_t len)
{
    FILE *fp = fopen(p, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(buf, 1, len, fp), len);
    ck_assert_int_eq(fclose(fp), 0);
}

/* Whole file into a malloc'ed buffer. */
static unsigned char *slurp(const char *p, size_t *len)
{
    FILE *fp = fopen(p, "rb");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    *len = (size_t)n;
    return buf;
}

/* A file as the spec lays it out: u64 LE header length, the header text padded with
 * spaces to a multiple of 8 (when pad is set), then data. Returns the byte count. */
static size_t spec_bytes(unsigned char *out, const char *header, int pad, const void *data,
                         size_t data_len)
{
    size_t n = strlen(header);
    size_t padded = pad ? (n + 7) / 8 * 8 : n;
    for (int k = 0; k < 8; k++)
        out[k] = (unsigned char)((uint64_t)padded >> (8 * k));
    memcpy(out + 8, header, n);
    memset(out + 8 + n, ' ', padded - n);
    if (data_len > 0)
        memcpy(out + 8 + padded, data, data_len);
    return 8 + padded + data_len;
}

static void write_spec_file(const char *header, size_t data_len)
{
    unsigned char *data = calloc(data_len + 1, 1);
    unsigned char *buf = malloc(8 + strlen(header) + 8 + data_len);
    ck_assert_ptr_nonnull(data);
    ck_assert_ptr_nonnull(buf);
    write_bytes(path, buf, spec_bytes(buf, header, 1, data, data_len));
    free(buf);
    free(data);
}

static void assert_file_is(const char *p, const unsigned char *want, size_t want_len)
{
    size_t len = 0;
    unsigned char *got = slurp(p, &len);
    ck_assert_uint_eq(len, want_len);
    ck_assert_int_eq(memcmp(got, want, len), 0);
    free(got);
}

/* ---- interoperability with the reference implementation ---- */

/* safetensors' own test (serialize {"attn0": F32 [1,1,2,3] = 0..5}): a 65-byte header
 * padded with 7 spaces to 72, compact JSON, fields dtype, shape, data_offsets. */
START_TEST(test_writer_matches_reference_bytes_for_one_f32_tensor)
{
    const float values[6] = {0, 1, 2, 3, 4, 5};
    const int64_t shape[4] = {1, 1, 2, 3};
    const struct zero_st_tensor_desc desc = {"attn0", ZERO_F32, 4, shape};
    struct zero_error err = {0};
    struct zero_st_writer *w = NULL;
    ck_assert_int_eq(zero_st_writer_begin(&w, path, &desc, 1, NULL, 0, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_writer_put(w, 0, values, ZERO_F32, 6, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_writer_finish(w, &err), ZERO_OK);

    const char *header = "{\"attn0\":{\"dtype\":\"F32\",\"shape\":[1,1,2,3],"
                         "\"data_offsets\":[0,24]}}";
    ck_assert_uint_eq(strlen(header), 65);
    unsigned char want[128];
    size_t n = spec_bytes(want, header, 1, values, sizeof(values));
    ck_assert_uint_eq(want[0], 72);
    ck_assert_int_eq(memcmp(want + 8 + 65, "       ", 7), 0);
    assert_file_is(path, want, n);
}
END_TEST

/* safetensors' own test (empty dict, metadata {"framework": "pt"}): 40-byte header. */
START_TEST(test_writer_matches_reference_bytes_for_metadata_only_file)
{
    const struct zero_st_kv kv = {"framework", "pt"};
    struct zero_error err = {0};
    struct zero_st_writer *w = NULL;
    ck_assert_int_eq(zero_st_writer_begin(&w, path, NULL, 0, &kv, 1, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_writer_finish(w, &err), ZERO_OK);
    const unsigned char want[48] =
        "\x28\0\0\0\0\0\0\0{\"__metadata__\":{\"framework\":\"pt\"}}     ";
    assert_file_is(path, want, 48);

    struct zero_st_file *f = NULL;
    ck_assert_int_eq(zero_st_open(&f, path, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_count(f), 0);
    ck_assert_str_eq(zero_st_metadata(f, "framework"), "pt");
    zero_st_close(f);
}
END_TEST

/* What save_file({"bias": (2,), "weight": (2, 2)}, metadata={"format": "pt"}) writes:
 * __metadata__ first, then tensors in data order (the reference sorts by dtype, then
 * name; the caller passes that order). */
START_TEST(test_writer_puts_metadata_first_and_tensors_in_given_order)
{
    const float bias[2] = {0.5f, -1.0f};
    const float weight[4] = {1, 2, 3, 4};
    const int64_t bias_shape[1] = {2}, weight_shape[2] = {2, 2};
    const struct zero_st_tensor_desc descs[2] = {
        {"bias", ZERO_F32, 1, bias_shape},
        {"weight", ZERO_F32, 2, weight_shape},
    };
    const struct zero_st_kv kv = {"format", "pt"};
    struct zero_error err = {0};
    struct zero_st_writer *w = NULL;
    ck_assert_int_eq(zero_st_writer_begin(&w, path, descs, 2, &kv, 1, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_writer_put_named(w, "bias", bias, ZERO_F32, 2, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_writer_put(w, 1, weight, ZERO_F32, 4, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_writer_finish(w, &err), ZERO_OK);

    unsigned char data[24];
    memcpy(data, bias, 8);
    memcpy(data + 8, weight, 16);
    unsigned char want[256];
    size_t n = spec_bytes(want,
                          "{\"__metadata__\":{\"format\":\"pt\"},"
                          "\"bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                          "\"weight\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[8,24]}}",
                          1, data, sizeof(data));
    assert_file_is(path, want, n);
}
END_TEST

/* A file laid out as the reference writes {"ids": I64 (3,), "w": F32 (2,), "h": F16 (2,)}
 * (I64 first: it sorts by descending dtype), but with its JSON keys in another order,
 * several metadata keys and space padding; the reader indexes tensors in offset order. */
START_TEST(test_reader_reads_hand_built_file_with_metadata_and_padding)
{
    const char *header = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]},"
                         "\"__metadata__\":{\"format\":\"pt\",\"step\":\"300\"},"
                         "\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[32,36]},"
                         "\"ids\":{\"dtype\":\"I64\",\"shape\":[3],\"data_offsets\":[0,24]}}";
    unsigned char data[36] = {
        7,    0,    0,    0,    0,    0,    0,    0, /* ids: 7, -1, 2^40 */
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0,    0,
        0,    0,    0,    1,    0,    0,    0,    0,    0xc0, 0x3f, /* w: 1.5, -2 */
        0,    0,    0,    0xc0, 0x00, 0x3c, 0x00, 0xb8,             /* h: 1.0, -0.5 */
    };
    unsigned char buf[512];
    size_t n = spec_bytes(buf, header, 1, data, sizeof(data));
    ck_assert_uint_ne((n - 36 - 8), strlen(header)); /* padding really present */
    write_bytes(path, buf, n);

    struct zero_error err = {0};
    struct zero_st_file *f = NULL;
    ck_assert_msg(zero_st_open(&f, path, &err) == ZERO_OK, "%s", err.msg);
    ck_assert_int_eq(zero_st_count(f), 3);
    ck_assert_str_eq(zero_st_tensor(f, 0)->name, "ids");
    ck_assert_str_eq(zero_st_tensor(f, 1)->name, "w");
    ck_assert_str_eq(zero_st_tensor(f, 2)->name, "h");
    ck_assert_int_eq(zero_st_find(f, "h"), 2);
    ck_assert_int_eq(zero_st_find(f, "nope"), -1);
    ck_assert_ptr_null(zero_st_tensor(f, 3));
    const struct zero_st_tensor_desc *ids = zero_st_tensor(f, 0);
    ck_assert_int_eq(ids->dtype, ZERO_I64);
    ck_assert_int_eq(ids->ndim, 1);
    ck_assert_int_eq(ids->shape[0], 3);

    int64_t got_ids[3];
    ck_assert_int_eq(zero_st_read(f, 0, got_ids, ZERO_I64, 3, &err), ZERO_OK);
    ck_assert_int_eq(got_ids[0], 7);
    ck_assert_int_eq(got_ids[1], -1);
    ck_assert_int_eq(got_ids[2], (int64_t)1 << 40);
    float got_w[2], got_h[2];
    ck_assert_int_eq(zero_st_read(f, 1, got_w, ZERO_F32, 2, &err), ZERO_OK);
    ck_assert_float_eq(got_w[0], 1.5f);
    ck_assert_float_eq(got_w[1], -2.0f);
    ck_assert_int_eq(zero_st_read(f, 2, got_h, ZERO_F32, 2, &err), ZERO_OK);
    ck_assert_float_eq(got_h[0], 1.0f);
    ck_assert_float_eq(got_h[1], -0.5f);

    ck_assert_int_eq(zero_st_metadata_count(f), 2);
    ck_assert_str_eq(zero_st_metadata(f, "format"), "pt");
    ck_assert_str_eq(zero_st_metadata(f, "step"), "300");
    ck_assert_ptr_null(zero_st_metadata(f, "missing"));
    ck_assert_str_eq(zero_st_metadata_at(f, 1)->key, "step");
    ck_assert_ptr_null(zero_st_metadata_at(f, 2));
    zero_st_close(f);
}
END_TEST

/* The reference reader accepts a header without padding; so do we. */
START_TEST(test_reader_accepts_unpadded_header_and_empty_tensor)
{
    const char *header = "{\"e\":{\"dtype\":\"BF16\",\"shape\":[0,3],\"data_offsets\":[0,0]},"
                         "\"s\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]}}";
    const double scalar = 3.25;
    unsigned char buf[256];
    write_bytes(path, buf, spec_bytes(buf, header, 0, &scalar, 8));
    struct zero_error err = {0};
    struct zero_st_file *f = NULL;
    ck_assert_msg(zero_st_open(&f, path, &err) == ZERO_OK, "%s", err.msg);
    int s = zero_st_find(f, "s");
    ck_assert_int_eq(zero_st_tensor(f, s)->ndim, 0);
    ck_assert_uint_eq(zero_st_numel(zero_st_tensor(f, s)), 1);
    float v = 0;
    ck_assert_int_eq(zero_st_read(f, s, &v, ZERO_F32, 1, &err), ZERO_OK);
    ck_assert_float_eq(v, 3.25f);
    int e = zero_st_find(f, "e");
    ck_assert_uint_eq(zero_st_numel(zero_st_tensor(f, e)), 0);
    ck_assert_int_eq(zero_st_read(f, e, NULL, ZERO_F32, 0, &err), ZERO_OK);
    zero_st_close(f);
}
END_TEST

/* ---- round trips ---- */

START_TEST(test_round_trip_keeps_every_dtype_bit_exact)
{
    const float f32[3] = {1.0f / 3, -0.0f, INFINITY};
    const uint16_t f16[3] = {0x3c00, 0x0001, 0x7e00};  /* 1, smallest subnormal, NaN */
    const uint16_t bf16[3] = {0x3f80, 0x8000, 0xff80}; /* 1, -0, -inf */
    const double f64[3] = {1.0 / 3, -1e300, 5e-324};
    const int32_t i32[3] = {INT32_MIN, 0, INT32_MAX};
    const int64_t i64[3] = {INT64_MIN, -1, INT64_MAX};
    const void *src[6] = {f32, f16, bf16, f64, i32, i64};
    const enum zero_dtype types[6] = {ZERO_F32, ZERO_F16, ZERO_BF16, ZERO_F64, ZERO_I32, ZERO_I64};
    const char *names[6] = {"f32", "f16", "bf16", "f64", "i32", "i64"};
    const char *tags[6] = {"F32", "F16", "BF16", "F64", "I32", "I64"};
    const int64_t shape[1] = {3};
    struct zero_st_tensor_desc descs[6];
    for (int i = 0; i < 6; i++)
        descs[i] = (struct zero_st_tensor_desc){names[i], types[i], 1, shape};

    struct zero_error err = {0};
    struct zero_st_writer *w = NULL;
    ck_assert_int_eq(zero_st_writer_begin(&w, path, descs, 6, NULL, 0, &err), ZERO_OK);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(zero_st_writer_put(w, i, src[i], types[i], 3, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_writer_finish(w, &err), ZERO_OK);

    struct zero_st_file *f = NULL;
    ck_assert_msg(zero_st_open(&f, path, &err) == ZERO_OK, "%s", err.msg);
    ck_assert_int_eq(zero_st_count(f), 6);
    for (int i = 0; i < 6; i++) {
        const struct zero_st_tensor_desc *d = zero_st_tensor(f, i);
        ck_assert_str_eq(d->name, names[i]);
        ck_assert_int_eq(d->dtype, types[i]);
        ck_assert_str_eq(zero_st_dtype_tag(d->dtype), tags[i]);
        unsigned char got[24];
        ck_assert_int_eq(zero_st_read(f, i, got, types[i], 3, &err), ZERO_OK);
        ck_assert_int_eq(memcmp(got, src[i], 3 * zero_dtype_size(types[i])), 0);
    }
    zero_st_close(f);
}
END_TEST

/* Writing F32 data as F16/BF16/F64 rounds exactly as zero_f32_to_* do; reading converts
 * back the same way, across more than one conversion chunk. */
START_TEST(test_conversions_on_write_and_read_match_scalar_casts)
{
    enum { N = 300000 }; /* > 1 MiB of F32: several chunks */
    float *x = malloc(N * sizeof(float));
    float *back = malloc(N * sizeof(float));
    uint16_t *half = malloc(N * sizeof(uint16_t));
    double *wide = malloc(N * sizeof(double));
    ck_assert(x && back && half && wide);
    for (int i = 0; i < N; i++)
        x[i] = (float)(i - N / 2) * 0.001234567f;
    const int64_t shape[2] = {N / 100, 100};
    const struct zero_st_tensor_desc descs[3] = {
        {"as_f16", ZERO_F16, 2, shape},
        {"as_bf16", ZERO_BF16, 2, shape},
        {"as_f64", ZERO_F64, 2, shape},
    };
    struct zero_error err = {0};
    struct zero_st_writer *w = NULL;
    ck_assert_int_eq(zero_st_writer_begin(&w, path, descs, 3, NULL, 0, &err), ZERO_OK);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(zero_st_writer_put(w, i, x, ZERO_F32, N, &err) == ZERO_OK, "%s", err.msg);
    ck_assert_int_eq(zero_st_writer_finish(w, &err), ZERO_OK);

    struct zero_st_file *f = NULL;
    ck_assert_int_eq(zero_st_open(&f, path, &err), ZERO_OK);
    /* stored F16, read raw and read as F32 */
    ck_assert_int_eq(zero_st_read(f, 0, half, ZERO_F16, N, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_read(f, 0, back, ZERO_F32, N, &err), ZERO_OK);
    for (int i = 0; i < N; i++) {
        ck_assert_uint_eq(half[i], zero_f32_to_f16(x[i]));
        ck_assert_float_eq(back[i], zero_f16_to_f32(zero_f32_to_f16(x[i])));
    }
    /* stored BF16, read as F32 and as F16 (through F32: BF16 -> F32 is exact) */
    ck_assert_int_eq(zero_st_read(f, 1, back, ZERO_F32, N, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_read(f, 1, half, ZERO_F16, N, &err), ZERO_OK);
    for (int i = 0; i < N; i++) {
        float b = zero_bf16_to_f32(zero_f32_to_bf16(x[i]));
        ck_assert_float_eq(back[i], b);
        ck_assert_uint_eq(half[i], zero_f32_to_f16(b));
    }
    /* stored F64 holds the F32 values exactly; read back as F32 and F64 */
    ck_assert_int_eq(zero_st_read(f, 2, wide, ZERO_F64, N, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_read(f, 2, back, ZERO_F32, N, &err), ZERO_OK);
    for (int i = 0; i < N; i++) {
        ck_assert(wide[i] == (double)x[i]);
        ck_assert_float_eq(back[i], x[i]);
    }
    zero_st_close(f);
    free(x);
    free(back);
    free(half);
    free(wide);
}
END_TEST

START_TEST(test_integer_conversions_widen_and_range_check_narrowing)
{
    enum { N = 200001 }; /* the bad element lies past the first I64 chunk */
    int64_t *big = calloc(N, sizeof(int64_t));
    int32_t *narrow = malloc(N * sizeof(int32_t));
    ck_assert(big && narrow);
    for (int i = 0; i < N - 1; i++)
        big[i] = i - 100000;
    big[N - 1] = (int64_t)1 << 32;
    const int64_t shape_big[1] = {N}, shape_small[1] = {3};
    const int32_t small[3] = {-5, 0, INT32_MAX};
    const struct zero_st_tensor_desc descs[2] = {
        {"ids", ZERO_I64, 1, shape_big},
        {"small_as_i64", ZERO_I64, 1, shape_small},
    };
    struct zero_error err = {0};
    struct zero_st_writer *w = NULL;
    ck_assert_int_eq(zero_st_writer_begin(&w, path, descs, 2, NULL, 0, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_writer_put(w, 0, big, ZERO_I64, N, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_writer_put(w, 1, small, ZERO_I32, 3, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_writer_finish(w, &err), ZERO_OK);

    struct zero_st_file *f = NULL;
    ck_assert_int_eq(zero_st_open(&f, path, &err), ZERO_OK);
    int64_t wide[3];
    ck_assert_int_eq(zero_st_read(f, 1, wide, ZERO_I64, 3, &err), ZERO_OK);
    ck_assert_int_eq(wide[0], -5);
    ck_assert_int_eq(wide[2], INT32_MAX);
    int32_t back[3];
    ck_assert_int_eq(zero_st_read(f, 1, back, ZERO_I32, 3, &err), ZERO_OK);
    ck_assert_int_eq(back[0], -5);

    ck_assert_int_eq(zero_st_read(f, 0, narrow, ZERO_I32, N, &err), ZERO_EINVAL);
    ck_assert_msg(
        strstr(err.msg, "tensor 'ids': element 200000 = 4294967296 does not fit in I32") != NULL,
        "%s", err.msg);
    ck_assert_msg(strstr(err.msg, path) != NULL, "%s", err.msg);

    float fl[3];
    ck_assert_int_eq(zero_st_read(f, 1, fl, ZERO_F32, 3, &err), ZERO_ENOTSUP);
    ck_assert_msg(strstr(err.msg, "tensor 'small_as_i64': cannot convert I64 to F32") != NULL, "%s",
                  err.msg);
    ck_assert_int_eq(zero_st_read(f, 1, wide, ZERO_I64, 2, &err), ZERO_EINVAL);
    ck_assert_msg(strstr(err.msg, "destination holds 2 elements but shape [3] has 3") != NULL, "%s",
                  err.msg);
    ck_assert_int_eq(zero_st_read(f, 7, wide, ZERO_I64, 3, &err), ZERO_EINVAL);
    ck_assert_msg(strstr(err.msg, "tensor index 7 out of range") != NULL, "%s", err.msg);
    zero_st_close(f);
    free(big);
    free(narrow);
}
END_TEST

/* ---- broken files ---- */

struct bad_file {
    const char *header; /* JSON text, written space-padded */
    size_t data_len;
    int code;
    const char *message;
};

static const struct bad_file bad_files[] = {
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]", 8, ZERO_EFORMAT,
     "header is not valid JSON"},
    {"[1, 2]", 0, ZERO_EFORMAT, "header is not a JSON object"},
    {"{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, ZERO_EFORMAT,
     "tensor 'a': missing \"dtype\""},
    {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, ZERO_EFORMAT,
     "tensor 'a': missing \"shape\""},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, ZERO_EFORMAT,
     "tensor 'a': missing \"data_offsets\""},
    {"{\"a\":[1]}", 0, ZERO_EFORMAT, "tensor 'a': entry is not a JSON object"},
    {"{\"a\":{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,8]}}", 8, ZERO_EFORMAT,
     "tensor 'a': \"dtype\" is not a string"},
    {"{\"a\":{\"dtype\":\"F17\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, ZERO_EFORMAT,
     "tensor 'a': unknown dtype 'F17'"},
    {"{\"mask\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, ZERO_ENOTSUP,
     "tensor 'mask': dtype U8 is not supported"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2,-3],\"data_offsets\":[0,8]}}", 8, ZERO_EFORMAT,
     "tensor 'a': shape[1] is not a non-negative integer"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8, ZERO_EFORMAT,
     "tensor 'a': shape[0] is not a non-negative integer"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":{},\"data_offsets\":[0,8]}}", 8, ZERO_EFORMAT,
     "tensor 'a': \"shape\" is not an array"},
    {"{\"a\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
     ZERO_EFORMAT, "tensor 'a': shape [4294967296, 4294967296] of F64 overflows"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8, ZERO_EFORMAT,
     "tensor 'a': \"data_offsets\" is not two non-negative integers"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}", 8, ZERO_EFORMAT,
     "tensor 'a': \"data_offsets\" is not two non-negative integers"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 8, ZERO_EFORMAT,
     "tensor 'a': data_offsets [8, 0] end before they begin"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 8, ZERO_EFORMAT,
     "tensor 'a': data_offsets [8, 16] lie outside the data section of 8 bytes"},
    {"{\"layers.0.0.weight\":{\"dtype\":\"F32\",\"shape\":[4,8],\"data_offsets\":[0,100]}}", 100,
     ZERO_EFORMAT,
     "tensor 'layers.0.0.weight': data_offsets [0, 100] span 100 bytes but "
     "shape [4, 8] of F32 needs 128"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
     24, ZERO_EFORMAT, "tensors 'a' [0, 16] and 'b' [8, 24] overlap"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[0,32]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]}}",
     32, ZERO_EFORMAT, "tensors 'a' [0, 32] and 'b' [16, 24] overlap"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
     16, ZERO_EFORMAT, "duplicate object key"},
    {"{\"__metadata__\":{\"step\":300}}", 0, ZERO_EFORMAT,
     "__metadata__ key 'step': value is not a string"},
    {"{\"__metadata__\":[\"pt\"]}", 0, ZERO_EFORMAT, "\"__metadata__\" is not a JSON object"},
};

START_TEST(test_bad_header_is_refused_with_a_specific_message)
{
    const struct bad_file *b = &bad_files[_i];
    write_spec_file(b->header, b->data_len);
    struct zero_error err = {0};
    struct zero_st_file *f = (struct zero_st_file *)&err; /* must come back NULL */
    int rc = zero_st_open(&f, path, &err);
    ck_assert_msg(rc == b->code, "case %d: rc %d, want %d (%s)", _i, rc, b->code, err.msg);
    ck_assert_ptr_null(f);
    ck_assert_msg(strstr(err.msg, b->message) != NULL, "case %d: message '%s' lacks '%s'", _i,
                  err.msg, b->message);
    ck_assert_msg(strncmp(err.msg, path, strlen(path)) == 0, "message '%s' lacks the path",
                  err.msg);
}
END_TEST

START_TEST(test_file_shorter_than_length_field_is_refused)
{
    write_bytes(path, "\x10\0\0", 3);
    struct zero_error err = {0};
    struct zero_st_file *f = NULL;
    ck_assert_int_eq(zero_st_open(&f, path, &err), ZERO_EFORMAT);
    ck_assert_ptr_null(f);
    ck_assert_msg(strstr(err.msg, "file is 3 bytes, too short for the 8-byte header length"), "%s",
                  err.msg);
}
END_TEST

START_TEST(test_header_length_beyond_file_is_refused)
{
    unsigned char buf[24] = {0xe8, 0x03}; /* claims 1000 bytes of header */
    memcpy(buf + 8, "{}              ", 16);
    write_bytes(path, buf, sizeof(buf));
    struct zero_error err = {0};
    struct zero_st_file *f = NULL;
    ck_assert_int_eq(zero_st_open(&f, path, &err), ZERO_EFORMAT);
    ck_assert_msg(strstr(err.msg, "header length 1000 exceeds the 16 bytes that follow it"), "%s",
                  err.msg);

    memset(buf, 0xff, 8); /* 2^64 - 1: must not overflow into "fits" */
    write_bytes(path, buf, sizeof(buf));
    ck_assert_int_eq(zero_st_open(&f, path, &err), ZERO_EFORMAT);
    ck_assert_msg(strstr(err.msg, "header length 18446744073709551615 exceeds"), "%s", err.msg);
}
END_TEST

START_TEST(test_header_length_over_limit_is_refused_before_allocation)
{
    /* a sparse file big enough to hold the claimed header */
    unsigned char len[8] = {0};
    uint64_t n = 100000001;
    for (int k = 0; k < 8; k++)
        len[k] = (unsigned char)(n >> (8 * k));
    write_bytes(path, len, 8);
    ck_assert_int_eq(truncate(path, (off_t)(8 + n)), 0);
    struct zero_error err = {0};
    struct zero_st_file *f = NULL;
    ck_assert_int_eq(zero_st_open(&f, path, &err), ZERO_EFORMAT);
    ck_assert_msg(strstr(err.msg, "header length 100000001 exceeds the limit"), "%s", err.msg);
}
END_TEST

static void write_two_tensor_file(const char *p)
{
    const float a[4] = {1, 2, 3, 4};
    const int64_t shape[1] = {4};
    const struct zero_st_tensor_desc descs[2] = {
        {"a", ZERO_F32, 1, shape},
        {"b", ZERO_F32, 1, shape},
    };
    struct zero_error err = {0};
    struct zero_st_writer *w = NULL;
    ck_assert_int_eq(zero_st_writer_begin(&w, p, descs, 2, NULL, 0, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_writer_put(w, 0, a, ZERO_F32, 4, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_writer_put(w, 1, a, ZERO_F32, 4, &err), ZERO_OK);
    ck_assert_msg(zero_st_writer_finish(w, &err) == ZERO_OK, "%s", err.msg);
}

START_TEST(test_truncated_data_is_refused_on_open)
{
    write_two_tensor_file(path);
    size_t len = 0;
    unsigned char *bytes = slurp(path, &len);
    write_bytes(path, bytes, len - 3);
    free(bytes);
    struct zero_error err = {0};
    struct zero_st_file *f = NULL;
    ck_assert_int_eq(zero_st_open(&f, path, &err), ZERO_EFORMAT);
    ck_assert_msg(strstr(err.msg, "tensor 'b': data_offsets [16, 32] lie outside the data "
                                  "section of 29 bytes (file truncated?)"),
                  "%s", err.msg);
}
END_TEST

START_TEST(test_file_truncated_after_open_fails_the_read)
{
    write_two_tensor_file(path);
    struct zero_error err = {0};
    struct zero_st_file *f = NULL;
    ck_assert_int_eq(zero_st_open(&f, path, &err), ZERO_OK);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(truncate(path, st.st_size - 5), 0);
    float got[4];
    ck_assert_int_eq(zero_st_read(f, 0, got, ZERO_F32, 4, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_read(f, 1, got, ZERO_F32, 4, &err), ZERO_EFORMAT);
    ck_assert_msg(strstr(err.msg, "reading tensor 'b': file ends at byte"), "%s", err.msg);
    uint16_t half[4]; /* the converting path notices too */
    ck_assert_int_eq(zero_st_read(f, 1, half, ZERO_F16, 4, &err), ZERO_EFORMAT);
    zero_st_close(f);
}
END_TEST

START_TEST(test_missing_file_is_an_io_error)
{
    struct zero_error err = {0};
    struct zero_st_file *f = NULL;
    ck_assert_int_eq(zero_st_open(&f, path, &err), ZERO_EIO);
    ck_assert_msg(strstr(err.msg, "cannot open: No such file"), "%s", err.msg);
}
END_TEST

/* ---- failed writes leave the existing file alone ---- */

static const unsigned char old_bytes[] = "the previous model, which must survive";

static void put_old_file(void)
{
    write_bytes(path, old_bytes, sizeof(old_bytes));
}

static void assert_old_file_survived(void)
{
    assert_file_is(path, old_bytes, sizeof(old_bytes));
    ck_assert_int_eq(count_dir_entries(), 1); /* no temporary file left behind */
}

static const int64_t shape4[1] = {4};
static const struct zero_st_tensor_desc two_descs[2] = {
    {"a", ZERO_F32, 1, shape4},
    {"b", ZERO_I32, 1, shape4},
};

START_TEST(test_put_with_wrong_count_then_abort_keeps_old_file)
{
    put_old_file();
    const float a[5] = {0};
    struct zero_error err = {0};
    struct zero_st_writer *w = NULL;
    ck_assert_int_eq(zero_st_writer_begin(&w, path, two_descs, 2, NULL, 0, &err), ZERO_OK);
    ck_assert_int_eq(count_dir_entries(), 2); /* the temporary file exists meanwhile */
    ck_assert_int_eq(zero_st_writer_put(w, 0, a, ZERO_F32, 5, &err), ZERO_EINVAL);
    ck_assert_msg(strstr(err.msg, "tensor 'a': put of 5 elements but shape [4] has 4"), "%s",
                  err.msg);
    ck_assert_int_eq(zero_st_writer_put(w, 0, a, ZERO_I32, 4, &err), ZERO_ENOTSUP);
    ck_assert_msg(strstr(err.msg, "tensor 'a': cannot convert I32 to F32"), "%s", err.msg);
    zero_st_writer_abort(w);
    assert_old_file_survived();
}
END_TEST

START_TEST(test_out_of_order_and_missing_puts_fail_finish_and_keep_old_file)
{
    put_old_file();
    const int32_t b[4] = {1, 2, 3, 4};
    const float a[4] = {0};
    struct zero_error err = {0};
    struct zero_st_writer *w = NULL;
    ck_assert_int_eq(zero_st_writer_begin(&w, path, two_descs, 2, NULL, 0, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_writer_put(w, 1, b, ZERO_I32, 4, &err), ZERO_EINVAL);
    ck_assert_msg(strstr(err.msg, "tensor 'b' (index 1) put out of order: tensor 'a' (index 0) "
                                  "comes first"),
                  "%s", err.msg);
    ck_assert_int_eq(zero_st_writer_put_named(w, "c", b, ZERO_I32, 4, &err), ZERO_EINVAL);
    ck_assert_msg(strstr(err.msg, "tensor 'c', which is not in the header"), "%s", err.msg);
    ck_assert_int_eq(zero_st_writer_put(w, 0, a, ZERO_F32, 4, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_writer_put(w, 0, a, ZERO_F32, 4, &err), ZERO_EINVAL);
    ck_assert_msg(strstr(err.msg, "tensor 'a' was already put"), "%s", err.msg);
    ck_assert_int_eq(zero_st_writer_finish(w, &err), ZERO_EINVAL);
    ck_assert_msg(strstr(err.msg, "tensor 'b' (index 1 of 2) was never put"), "%s", err.msg);
    assert_old_file_survived();
}
END_TEST

START_TEST(test_range_error_midway_poisons_writer_and_keeps_old_file)
{
    put_old_file();
    enum { N = 300000 }; /* more than one chunk of 1 MiB of I32 output */
    int64_t *ids = calloc(N, sizeof(int64_t));
    ck_assert_ptr_nonnull(ids);
    ids[N - 1] = INT64_MIN; /* past the first chunk: some bytes are already written */
    const int64_t shape[1] = {N};
    const struct zero_st_tensor_desc desc = {"ids", ZERO_I32, 1, shape};
    struct zero_error err = {0};
    struct zero_st_writer *w = NULL;
    ck_assert_int_eq(zero_st_writer_begin(&w, path, &desc, 1, NULL, 0, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_writer_put(w, 0, ids, ZERO_I64, N, &err), ZERO_EINVAL);
    ck_assert_msg(strstr(err.msg, "tensor 'ids': element 299999 = -9223372036854775808 does not "
                                  "fit in I32"),
                  "%s", err.msg);
    ids[N - 1] = 0;
    ck_assert_int_eq(zero_st_writer_put(w, 0, ids, ZERO_I64, N, &err), ZERO_EINVAL);
    ck_assert_msg(strstr(err.msg, "an earlier put failed"), "%s", err.msg);
    ck_assert_int_eq(zero_st_writer_finish(w, &err), ZERO_EINVAL);
    assert_old_file_survived();
    free(ids);
}
END_TEST

START_TEST(test_bad_descriptors_are_refused_without_creating_files)
{
    put_old_file();
    const int64_t neg[2] = {2, -1};
    const struct zero_st_tensor_desc dup[2] = {
        {"a", ZERO_F32, 1, shape4},
        {"a", ZERO_F16, 1, shape4},
    };
    const struct zero_st_tensor_desc negative = {"n", ZERO_F32, 2, neg};
    const struct zero_st_tensor_desc reserved = {"__metadata__", ZERO_F32, 1, shape4};
    const struct zero_st_kv kv[2] = {{"k", "1"}, {"k", "2"}};
    struct zero_error err = {0};
    struct zero_st_writer *w = NULL;
    ck_assert_int_eq(zero_st_writer_begin(&w, path, dup, 2, NULL, 0, &err), ZERO_EINVAL);
    ck_assert_msg(strstr(err.msg, "tensor 'a' appears twice"), "%s", err.msg);
    ck_assert_ptr_null(w);
    ck_assert_int_eq(zero_st_writer_begin(&w, path, &negative, 1, NULL, 0, &err), ZERO_EINVAL);
    ck_assert_msg(strstr(err.msg, "tensor 'n': shape[1] is -1"), "%s", err.msg);
    ck_assert_int_eq(zero_st_writer_begin(&w, path, &reserved, 1, NULL, 0, &err), ZERO_EINVAL);
    ck_assert_msg(strstr(err.msg, "'__metadata__' is reserved"), "%s", err.msg);
    ck_assert_int_eq(zero_st_writer_begin(&w, path, NULL, 0, kv, 2, &err), ZERO_EINVAL);
    ck_assert_msg(strstr(err.msg, "__metadata__ key 'k' appears twice"), "%s", err.msg);
    assert_old_file_survived();
}
END_TEST

START_TEST(test_target_in_missing_directory_is_an_io_error)
{
    char missing[600];
    snprintf(missing, sizeof(missing), "%s/no/such/dir/model.safetensors", dir);
    struct zero_error err = {0};
    struct zero_st_writer *w = NULL;
    ck_assert_int_eq(zero_st_writer_begin(&w, missing, two_descs, 2, NULL, 0, &err), ZERO_EIO);
    ck_assert_ptr_null(w);
    ck_assert_msg(strstr(err.msg, "model.safetensors.tmp.") && strstr(err.msg, "cannot create"),
                  "%s", err.msg);
    ck_assert_int_eq(count_dir_entries(), 0);
}
END_TEST

START_TEST(test_successful_finish_replaces_old_file)
{
    put_old_file();
    write_two_tensor_file(path);
    ck_assert_int_eq(count_dir_entries(), 1);
    struct zero_error err = {0};
    struct zero_st_file *f = NULL;
    ck_assert_int_eq(zero_st_open(&f, path, &err), ZERO_OK);
    ck_assert_int_eq(zero_st_count(f), 2);
    zero_st_close(f);
}
END_TEST

static Suite *safetensors_suite(void)
{
    Suite *s = suite_create("safetensors");
    TCase *fmt = tcase_create("format");
    tcase_add_checked_fixture(fmt, make_dir, remove_dir);
    tcase_add_test(fmt, test_writer_matches_reference_bytes_for_one_f32_tensor);
    tcase_add_test(fmt, test_writer_matches_reference_bytes_for_metadata_only_file);
    tcase_add_test(fmt, test_writer_puts_metadata_first_and_tensors_in_given_order);
    tcase_add_test(fmt, test_reader_reads_hand_built_file_with_metadata_and_padding);
    tcase_add_test(fmt, test_reader_accepts_unpadded_header_and_empty_tensor);
    suite_add_tcase(s, fmt);

    TCase *rt = tcase_create("round_trip");
    tcase_add_checked_fixture(rt, make_dir, remove_dir);
    tcase_add_test(rt, test_round_trip_keeps_every_dtype_bit_exact);
    tcase_add_test(rt, test_conversions_on_write_and_read_match_scalar_casts);
    tcase_add_test(rt, test_integer_conversions_widen_and_range_check_narrowing);
    suite_add_tcase(s, rt);

    TCase *bad = tcase_create("bad_files");
    tcase_add_checked_fixture(bad, make_dir, remove_dir);
    tcase_add_loop_test(bad, test_bad_header_is_refused_with_a_specific_message, 0,
                        (int)(sizeof(bad_files) / sizeof(bad_files[0])));
    tcase_add_test(bad, test_file_shorter_than_length_field_is_refused);
    tcase_add_test(bad, test_header_length_beyond_file_is_refused);
    tcase_add_test(bad, test_header_length_over_limit_is_refused_before_allocation);
    tcase_add_test(bad, test_truncated_data_is_refused_on_open);
    tcase_add_test(bad, test_file_truncated_after_open_fails_the_read);
    tcase_add_test(bad, test_missing_file_is_an_io_error);
    suite_add_tcase(s, bad);

    TCase *wr = tcase_create("failed_writes");
    tcase_add_checked_fixture(wr, make_dir, remove_dir);
    tcase_add_test(wr, test_put_with_wrong_count_then_abort_keeps_old_file);
    tcase_add_test(wr, test_out_of_order_and_missing_puts_fail_finish_and_keep_old_file);
    tcase_add_test(wr, test_range_error_midway_poisons_writer_and_keeps_old_file);
    tcase_add_test(wr, test_bad_descriptors_are_refused_without_creating_files);
    tcase_add_test(wr, test_target_in_missing_directory_is_an_io_error);
    tcase_add_test(wr, test_successful_finish_replaces_old_file);
    suite_add_tcase(s, wr);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(safetensors_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

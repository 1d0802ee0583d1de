/* libFuzzer harness for the safetensors reader (make fuzz-safetensors). The
 * input is a .safetensors file; it is opened (the whole header validated),
 * every metadata entry and tensor description looked at, and every tensor of
 * up to 64 Ki elements read in its own dtype and converted to fp32. Every
 * failure must be a status with a message; nothing may crash, leak or read out
 * of bounds. Seeds: fuzz/corpus/safetensors/. */
#include "fuzz_util.h"
#include "zero/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[300];
    if (!path[0])
        snprintf(path, sizeof path, "%s/input.safetensors", fuzz_scratch("fuzz_safetensors"));
    fuzz_put(path, data, size);
    struct zero_st_file *f = NULL;
    struct zero_error err;
    memset(&err, 0x5a, sizeof err);
    int rc = zero_st_open(&f, path, &err);
    if (rc) {
        fuzz_check_error(rc, &err);
        FUZZ_CHECK(f == NULL);
        return 0;
    }
    for (int k = 0; k < zero_st_metadata_count(f); k++) {
        const struct zero_st_kv *kv = zero_st_metadata_at(f, k);
        FUZZ_CHECK(kv && kv->key && kv->value && zero_st_metadata(f, kv->key) != NULL);
    }
    for (int i = 0; i < zero_st_count(f); i++) {
        const struct zero_st_tensor_desc *d = zero_st_tensor(f, i);
        FUZZ_CHECK(d && d->name && d->ndim >= 0 && zero_st_find(f, d->name) == i);
        size_t n = zero_st_numel(d);
        if (n > (1 << 16))
            continue;
        float *as_f32 = malloc(n * sizeof *as_f32 + 1);
        double *raw = malloc(n * sizeof *raw + 1); /* room for any dtype */
        FUZZ_CHECK(as_f32 && raw);
        rc = zero_st_read(f, i, raw, d->dtype, n, &err);
        if (rc)
            fuzz_check_error(rc, &err);
        rc = zero_st_read(f, i, as_f32, ZERO_F32, n, &err);
        if (rc)
            fuzz_check_error(rc, &err);
        free(as_f32);
        free(raw);
    }
    zero_st_close(f);
    return 0;
}

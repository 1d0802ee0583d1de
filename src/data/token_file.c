/* Token streams from files: byte-level text and llm.c shards (include/zero/tokens.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file_replace.h"
#include "zero/size.h"
#include "zero/tokens.h"

#define LLMC_HEADER_BYTES (ZERO_LLMC_HEADER_INTS * 4)

/* Opens path and measures it; fills err naming the file on failure. Only a
 * regular file has a size to trust: a directory reads as LONG_MAX bytes and a
 * FIFO would block, so both are refused (the open does not wait for a writer). */
static int open_sized(const char *path, FILE **f, int64_t *bytes, struct zero_error *err)
{
    *f = NULL;
    int fd = zero_input_open(path, err);
    if (fd < 0)
        return err->code;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return zero_fail(err, ZERO_EIO, "%s: cannot measure its size: %s", path, strerror(errno));
    }
    if (!(*f = fdopen(fd, "rb"))) {
        close(fd);
        return zero_fail(err, ZERO_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    *bytes = (int64_t)st.st_size;
    return ZERO_OK;
}

static int read_all(FILE *f, void *buf, size_t bytes, const char *path, struct zero_error *err)
{
    if (fread(buf, 1, bytes, f) != bytes)
        return zero_fail(err, ZERO_EIO, "%s: short read (%zu bytes wanted)", path, bytes);
    return ZERO_OK;
}

static int alloc_ids(struct zero_tokens *t, int64_t n, const char *path, struct zero_error *err)
{
    t->ids = zero_size_alloc(n, sizeof(int32_t), "tokens", err);
    t->n = t->ids ? n : 0;
    return t->ids ? ZERO_OK : zero_error_wrap(err, "%s: ", path);
}

int zero_tokens_read_text(struct zero_tokens *t, const char *path, struct zero_error *err)
{
    memset(t, 0, sizeof *t);
    FILE *f;
    int64_t bytes;
    int rc = open_sized(path, &f, &bytes, err);
    if (rc != ZERO_OK)
        return rc;
    unsigned char *text = NULL;
    if (bytes == 0)
        rc = zero_fail(err, ZERO_EFORMAT, "%s: empty file, no tokens", path);
    else if ((text = zero_size_alloc(bytes, 1, "text", err)) == NULL)
        rc = zero_error_wrap(err, "%s: ", path);
    if (rc == ZERO_OK)
        rc = read_all(f, text, (size_t)bytes, path, err);
    if (rc == ZERO_OK)
        rc = alloc_ids(t, bytes, path, err);
    for (int64_t i = 0; rc == ZERO_OK && i < bytes; i++)
        t->ids[i] = text[i];
    free(text);
    fclose(f);
    if (rc != ZERO_OK)
        zero_tokens_free(t);
    return rc;
}

/* Little-endian int32 from 4 bytes. */
static int32_t le32(const unsigned char *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}

/* The header's token count and the bytes of one token (2: llm.c's uint16, 4: the
 * 32-bit variant), after checking magic, version and the file's size. */
static int check_llmc_header(const unsigned char *h, int64_t bytes, const char *path,
                             int64_t *count, int *width, struct zero_error *err)
{
    const int32_t magic = le32(h), version = le32(h + 4);
    if (magic != ZERO_LLMC_MAGIC && magic != ZERO_TOKENS32_MAGIC)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s: not an llm.c token shard: magic %d, expected "
                         "%d (uint16 tokens) or %d (32-bit tokens)",
                         path, (int)magic, ZERO_LLMC_MAGIC, ZERO_TOKENS32_MAGIC);
    *width = magic == ZERO_LLMC_MAGIC ? 2 : 4;
    const int32_t want = *width == 2 ? ZERO_LLMC_VERSION : ZERO_TOKENS32_VERSION;
    if (version != want)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s: %s shard version %d, only version %d (%s tokens) is supported", path,
                         *width == 2 ? "llm.c" : "32-bit token", (int)version, (int)want,
                         *width == 2 ? "uint16" : "uint32");
    *count = le32(h + 8);
    const int64_t body = bytes - LLMC_HEADER_BYTES;
    if (*count < 0 || *count * *width != body)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s: the header says %lld tokens (%lld bytes) but "
                         "%lld bytes follow it (%s)",
                         path, (long long)*count, (long long)(*count * *width), (long long)body,
                         *count * *width > body ? "truncated" : "trailing bytes");
    if (*count == 0)
        return zero_fail(err, ZERO_EFORMAT, "%s: the shard holds no tokens", path);
    return ZERO_OK;
}

int zero_tokens_read_llmc(struct zero_tokens *t, const char *path, int64_t vocab,
                          struct zero_error *err)
{
    memset(t, 0, sizeof *t);
    FILE *f;
    int64_t bytes, count = 0;
    int width = 2;
    int rc = open_sized(path, &f, &bytes, err);
    if (rc != ZERO_OK)
        return rc;
    unsigned char header[LLMC_HEADER_BYTES], *body = NULL;
    if (bytes < LLMC_HEADER_BYTES)
        rc = zero_fail(err, ZERO_EFORMAT,
                       "%s: %lld bytes, shorter than the %d-byte llm.c "
                       "header (truncated?)",
                       path, (long long)bytes, LLMC_HEADER_BYTES);
    if (rc == ZERO_OK)
        rc = read_all(f, header, sizeof header, path, err);
    if (rc == ZERO_OK)
        rc = check_llmc_header(header, bytes, path, &count, &width, err);
    if (rc == ZERO_OK && (body = zero_size_alloc(count, (size_t)width, "tokens", err)) == NULL)
        rc = zero_error_wrap(err, "%s: ", path);
    if (rc == ZERO_OK)
        rc = read_all(f, body, (size_t)count * (size_t)width, path, err);
    if (rc == ZERO_OK)
        rc = alloc_ids(t, count, path, err);
    for (int64_t i = 0; rc == ZERO_OK && i < count; i++) {
        const unsigned char *p = body + i * width;
        const int64_t id = width == 2 ? (int64_t)(p[0] | p[1] << 8) : (int64_t)(uint32_t)le32(p);
        if (id >= vocab)
            rc = zero_fail(err, ZERO_EFORMAT,
                           "%s: token %lld is %lld, outside the vocabulary of "
                           "%lld (--vocab-size)",
                           path, (long long)i, (long long)id, (long long)vocab);
        else
            t->ids[i] = (int32_t)id;
    }
    free(body);
    fclose(f);
    if (rc != ZERO_OK)
        zero_tokens_free(t);
    return rc;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

int zero_tokens_read(struct zero_tokens *t, const char *path, int64_t vocab, struct zero_error *err)
{
    if (ends_with(path, ".bin"))
        return zero_tokens_read_llmc(t, path, vocab, err);
    if (vocab < 256) {
        memset(t, 0, sizeof *t);
        return zero_fail(err, ZERO_EINVAL,
                         "%s: byte-level text needs a vocabulary of at least "
                         "256, not %lld",
                         path, (long long)vocab);
    }
    return zero_tokens_read_text(t, path, err);
}

/* Writes the shard: header, then each id in width (2 or 4) little-endian bytes. */
static int write_shard(const char *path, const int32_t *ids, int64_t n, int width,
                       struct zero_error *err)
{
    struct zero_replace out;
    FILE *f = NULL;
    if (zero_replace_begin(&out, path, err))
        return err->code;
    if (!(f = zero_replace_stream(&out, err))) {
        zero_replace_abort(&out);
        return err->code;
    }
    unsigned char header[LLMC_HEADER_BYTES] = {0};
    const uint32_t fields[3] = {width == 2 ? ZERO_LLMC_MAGIC : ZERO_TOKENS32_MAGIC,
                                width == 2 ? ZERO_LLMC_VERSION : ZERO_TOKENS32_VERSION,
                                (uint32_t)n};
    for (int k = 0; k < 3; k++)
        for (int b = 0; b < 4; b++)
            header[4 * k + b] = (unsigned char)(fields[k] >> (8 * b));
    int ok = fwrite(header, 1, sizeof header, f) == sizeof header;
    for (int64_t i = 0; ok && i < n; i++) {
        const uint32_t id = (uint32_t)ids[i];
        const unsigned char v[4] = {(unsigned char)id, (unsigned char)(id >> 8),
                                    (unsigned char)(id >> 16), (unsigned char)(id >> 24)};
        ok = fwrite(v, 1, (size_t)width, f) == (size_t)width;
    }
    if (!ok) {
        zero_replace_abort(&out);
        return zero_fail(err, ZERO_EIO, "%s: write failed: %s", path, strerror(errno));
    }
    return zero_replace_commit(&out, err);
}

/* Refuses what a shard header cannot say and ids outside 0..limit-1. */
static int check_ids(const char *path, const int32_t *ids, int64_t n, int64_t limit,
                     const char *what, struct zero_error *err)
{
    if (n < 0 || n > INT32_MAX)
        return zero_fail(err, ZERO_EINVAL, "%s: %lld tokens do not fit an llm.c header", path,
                         (long long)n);
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= limit)
            return zero_fail(err, ZERO_EINVAL, "%s: token %lld is %d, %s", path, (long long)i,
                             (int)ids[i], what);
    return ZERO_OK;
}

int zero_tokens_write_llmc(const char *path, const int32_t *ids, int64_t n, struct zero_error *err)
{
    if (check_ids(path, ids, n, 65536, "not a uint16", err))
        return err->code;
    return write_shard(path, ids, n, 2, err);
}

int zero_tokens_write(const char *path, const int32_t *ids, int64_t n, int64_t vocab,
                      struct zero_error *err)
{
    if (vocab < 1 || vocab > INT32_MAX)
        return zero_fail(err, ZERO_EINVAL, "%s: a vocabulary of %lld tokens", path,
                         (long long)vocab);
    char what[64];
    snprintf(what, sizeof what, "outside the vocabulary of %lld", (long long)vocab);
    if (check_ids(path, ids, n, vocab, what, err))
        return err->code;
    return write_shard(path, ids, n, vocab <= 65536 ? 2 : 4, err);
}

void zero_tokens_free(struct zero_tokens *t)
{
    free(t->ids);
    t->ids = NULL;
    t->n = 0;
}

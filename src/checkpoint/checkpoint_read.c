/* Reading a checkpoint: finding the step directory, loading meta.json, and
 * reading any flat range of a unit's state from the old ranks' files.
 *
 * Old rank r's section of unit u covers flat elements [r * shard, (r + 1) *
 * shard) of the writer's padded layout. A range is served piece by piece from
 * the files that hold it, one chunk at a time through one buffer; every chunk
 * read is checked against its CRC before any of its values are handed on. A
 * file is checked once when first opened (size, header, checkpoint id), and a
 * section header every time it is used (64 bytes). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint_internal.h"
#include "base/file_replace.h"
#include "base/crc32c.h"

#define META_MAX_BYTES ((off_t)256 << 20)

struct ckpt_reader {
    const struct ckpt_meta *m;
    char dir[4096];
    int rank;            /* >= 0: prefix messages with "rank R: " */
    int *fd;             /* per old rank; -1 until opened and checked */
    int64_t *section_at; /* byte offset of section (unit, kind index) in any rank file */
    unsigned char *buf;  /* one chunk and its CRC: chunk * 4 + 4 bytes */
};

static const char *who(const struct ckpt_reader *r, char *buf, size_t len)
{
    if (r->rank < 0)
        buf[0] = '\0';
    else
        snprintf(buf, len, "rank %d: ", r->rank);
    return buf;
}

static void rank_path(const struct ckpt_reader *r, int old, char *out, size_t len)
{
    snprintf(out, len, "%s/rank-%05d.bin", r->dir, old);
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

int ckpt_reader_open(struct ckpt_reader **out, const struct ckpt_meta *m, const char *step_dir,
                     int rank, struct zero_error *err)
{
    *out = NULL;
    if (!host_is_little_endian())
        return zero_fail(err, ZERO_ENOTSUP, "checkpoints are little-endian; this host is not");
    struct ckpt_reader *r = calloc(1, sizeof *r);
    if (!r)
        return zero_fail(err, ZERO_ENOMEM, "checkpoint reader");
    r->m = m;
    r->rank = rank;
    snprintf(r->dir, sizeof r->dir, "%s", step_dir);
    r->fd = malloc((size_t)m->world * sizeof *r->fd);
    r->section_at = malloc((size_t)(m->nunits * m->nkinds + 1) * sizeof *r->section_at);
    int64_t largest = 0; /* no chunk is longer than the largest shard */
    for (int u = 0; u < m->nunits; u++)
        largest = m->units[u].shard > largest ? m->units[u].shard : largest;
    r->buf = malloc((size_t)(largest < m->chunk ? largest : m->chunk) * 4 + 4);
    if (!r->fd || !r->section_at || !r->buf) {
        ckpt_reader_close(r);
        return zero_fail(err, ZERO_ENOMEM, "checkpoint reader buffers (chunk of %lld elements)",
                         (long long)m->chunk);
    }
    for (int i = 0; i < m->world; i++)
        r->fd[i] = -1;
    int64_t at = CKPT_HEADER_BYTES;
    for (int u = 0; u < m->nunits; u++)
        for (int k = 0; k < m->nkinds; k++) {
            r->section_at[u * m->nkinds + k] = at;
            at += ckpt_section_bytes(m->units[u].shard, m->chunk);
        }
    *out = r;
    return ZERO_OK;
}

void ckpt_reader_close(struct ckpt_reader *r)
{
    if (!r)
        return;
    for (int i = 0; r->fd && i < r->m->world; i++)
        if (r->fd[i] >= 0)
            close(r->fd[i]);
    free(r->fd);
    free(r->section_at);
    free(r->buf);
    free(r);
}

/* Exactly n bytes at off, or an error that says the file is short. */
static int read_at(const struct ckpt_reader *r, int old, void *dst, size_t n, int64_t off,
                   const char *what, struct zero_error *err)
{
    char path[4200], w[32];
    size_t got = 0;
    while (got < n) {
        ssize_t k = ckpt_fault("read", r->rank) ? -1
                                                : pread(r->fd[old], (char *)dst + got, n - got,
                                                        (off_t)(off + (int64_t)got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            rank_path(r, old, path, sizeof path);
            return zero_fail(err, k < 0 ? ZERO_EIO : ZERO_EFORMAT, "%s%s: %s: %s", who(r, w, 32),
                             path, what, k < 0 ? strerror(errno) : "file is truncated");
        }
        got += (size_t)k;
    }
    return ZERO_OK;
}

static int check_file_header(struct ckpt_reader *r, int old, const char *path, int64_t size,
                             struct zero_error *err)
{
    const struct ckpt_meta *m = r->m;
    char w[32];
    who(r, w, sizeof w);
    int64_t want = ckpt_rank_file_bytes(m);
    if (size < CKPT_HEADER_BYTES || size != want)
        return zero_fail(err, ZERO_EFORMAT, "%s%s: %s: %lld bytes, meta.json implies %lld", w, path,
                         size < want ? "truncated" : "trailing data", (long long)size,
                         (long long)want);
    unsigned char h[CKPT_HEADER_BYTES];
    int rc = read_at(r, old, h, sizeof h, 0, "file header", err);
    if (rc)
        return rc;
    if (memcmp(h, CKPT_FILE_MAGIC, 8) != 0)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s%s: file header: not a libzero checkpoint rank "
                         "file (bad magic)",
                         w, path);
    uint32_t stored = ckpt_get_u32(h + 60), computed = zero_crc32c(0, h, 60);
    if (stored != computed)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s%s: file header: checksum mismatch (stored "
                         "0x%08x, computed 0x%08x)",
                         w, path, stored, computed);
    if (ckpt_get_u32(h + 8) != CKPT_FORMAT_VERSION)
        return zero_fail(err, ZERO_ENOTSUP,
                         "%s%s: file header: format version %u; this "
                         "libzero reads version %d",
                         w, path, ckpt_get_u32(h + 8), CKPT_FORMAT_VERSION);
    if (ckpt_get_u64(h + 24) != m->id)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s%s: file header: belongs to another checkpoint "
                         "(id %016llx; meta.json has %016llx)",
                         w, path, (unsigned long long)ckpt_get_u64(h + 24),
                         (unsigned long long)m->id);
    if (ckpt_get_u32(h + 12) != (uint32_t)old || ckpt_get_u32(h + 16) != (uint32_t)m->world ||
        ckpt_get_u32(h + 20) != (uint32_t)(m->nunits * m->nkinds) ||
        ckpt_get_u64(h + 32) != (uint64_t)m->chunk ||
        ckpt_get_u64(h + 40) != (uint64_t)m->global_steps)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s%s: file header: says rank %u of %u, %u "
                         "sections, chunk %llu, step %llu; meta.json implies rank %d of %d, %d, "
                         "%lld, %lld",
                         w, path, ckpt_get_u32(h + 12), ckpt_get_u32(h + 16), ckpt_get_u32(h + 20),
                         (unsigned long long)ckpt_get_u64(h + 32),
                         (unsigned long long)ckpt_get_u64(h + 40), old, m->world,
                         m->nunits * m->nkinds, (long long)m->chunk, (long long)m->global_steps);
    return ZERO_OK;
}

static int open_rank(struct ckpt_reader *r, int old, struct zero_error *err)
{
    if (r->fd[old] >= 0)
        return ZERO_OK;
    char path[4200], w[32];
    rank_path(r, old, path, sizeof path);
    int fd = zero_input_open(path, err); /* a FIFO or directory is refused, not waited on */
    if (fd < 0 && errno == ENOENT)
        return zero_fail(err, ZERO_EFORMAT, "%s%s: rank file is missing", who(r, w, 32), path);
    if (fd < 0)
        return zero_error_wrap(err, "%s", who(r, w, 32));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return zero_fail(err, ZERO_EIO, "%s%s: %s", who(r, w, 32), path, strerror(e));
    }
    r->fd[old] = fd;
    int rc = check_file_header(r, old, path, (int64_t)st.st_size, err);
    if (rc) {
        close(fd);
        r->fd[old] = -1;
    }
    return rc;
}

/* "rank 1: dir/rank-00003.bin: section optim.exp_avg of unit layers.3" */
static void where(const struct ckpt_reader *r, int old, int u, int ki, char *out, size_t len)
{
    char path[4200], w[32];
    rank_path(r, old, path, sizeof path);
    snprintf(out, len, "%s%s: section %s of unit %s", who(r, w, 32), path,
             ckpt_kind_name(r->m->kinds[ki]), r->m->units[u].name);
}

static int check_section_header(struct ckpt_reader *r, int old, int u, int ki,
                                struct zero_error *err)
{
    const struct ckpt_meta *m = r->m;
    unsigned char h[CKPT_HEADER_BYTES];
    char at[4600];
    int rc = read_at(r, old, h, sizeof h, r->section_at[u * m->nkinds + ki], "section header", err);
    if (rc)
        return rc;
    where(r, old, u, ki, at, sizeof at);
    if (memcmp(h, CKPT_SECTION_MAGIC, 4) != 0)
        return zero_fail(err, ZERO_EFORMAT, "%s: bad section header (no magic)", at);
    uint32_t stored = ckpt_get_u32(h + 60), computed = zero_crc32c(0, h, 60);
    if (stored != computed)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s: section header: checksum mismatch (stored "
                         "0x%08x, computed 0x%08x)",
                         at, stored, computed);
    const struct ckpt_unit *unit = &m->units[u];
    if (ckpt_get_u32(h + 4) != (uint32_t)u || ckpt_get_u32(h + 8) != (uint32_t)m->kinds[ki] ||
        ckpt_get_u64(h + 16) != (uint64_t)(old * unit->shard) ||
        ckpt_get_u64(h + 24) != (uint64_t)unit->shard || ckpt_get_u64(h + 32) != (uint64_t)m->chunk)
        return zero_fail(err, ZERO_EFORMAT,
                         "%s: section header describes unit %u, kind %u, "
                         "elements %llu + %llu; meta.json implies unit %d, kind %d, elements "
                         "%lld + %lld",
                         at, ckpt_get_u32(h + 4), ckpt_get_u32(h + 8),
                         (unsigned long long)ckpt_get_u64(h + 16),
                         (unsigned long long)ckpt_get_u64(h + 24), u, m->kinds[ki],
                         (long long)(old * unit->shard), (long long)unit->shard);
    return ZERO_OK;
}

/* Reads and verifies chunk c of old rank's section (u, ki); values at r->buf. */
static int read_chunk(struct ckpt_reader *r, int old, int u, int ki, int64_t c, int64_t *n,
                      struct zero_error *err)
{
    const struct ckpt_meta *m = r->m;
    int64_t shard = m->units[u].shard;
    *n = shard - c * m->chunk < m->chunk ? shard - c * m->chunk : m->chunk;
    int64_t off = r->section_at[u * m->nkinds + ki] + CKPT_HEADER_BYTES + c * (m->chunk * 4 + 4);
    int rc = read_at(r, old, r->buf, (size_t)(*n * 4 + 4), off, "chunk", err);
    if (rc)
        return rc;
    uint32_t stored = ckpt_get_u32(r->buf + *n * 4);
    uint32_t computed = zero_crc32c(0, r->buf, (size_t)(*n * 4));
    if (stored != computed) {
        char at[4600], what[2 * ZERO_NAME_LEN + 64];
        int64_t first = old * shard + c * m->chunk;
        where(r, old, u, ki, at, sizeof at);
        ckpt_describe_range(m, u, first, first + *n, what, sizeof what);
        return zero_fail(err, ZERO_EFORMAT,
                         "%s: chunk %lld (elements %lld..%lld, %s): checksum "
                         "mismatch (stored 0x%08x, computed 0x%08x)",
                         at, (long long)c, (long long)first, (long long)(first + *n - 1), what,
                         stored, computed);
    }
    return ZERO_OK;
}

static int kind_index(const struct ckpt_reader *r, int kind, struct zero_error *err)
{
    for (int k = 0; k < r->m->nkinds; k++)
        if (r->m->kinds[k] == kind)
            return k;
    return -zero_fail(err, ZERO_EINVAL, "%s: the checkpoint holds no %s state", r->dir,
                      ckpt_kind_name(kind));
}

int ckpt_read_range(struct ckpt_reader *r, int u, int kind, int64_t begin, int64_t end,
                    ckpt_sink_fn sink, void *user, struct zero_error *err)
{
    const struct ckpt_meta *m = r->m;
    int ki = kind_index(r, kind, err);
    if (ki < 0)
        return -ki;
    int64_t shard = m->units[u].shard;
    if (begin < 0 || end > m->units[u].used || begin > end)
        return zero_fail(err, ZERO_EINVAL, "%s: unit %s: range %lld..%lld outside 0..%lld", r->dir,
                         m->units[u].name, (long long)begin, (long long)end,
                         (long long)m->units[u].used);
    int rc = ZERO_OK;
    for (int64_t pos = begin; pos < end && !rc;) {
        int old = (int)(pos / shard);
        int64_t base = (int64_t)old * shard;
        int64_t piece_end = end < base + shard ? end : base + shard;
        if ((rc = open_rank(r, old, err)) || (rc = check_section_header(r, old, u, ki, err)))
            break;
        for (int64_t c = (pos - base) / m->chunk; base + c * m->chunk < piece_end && !rc; c++) {
            int64_t n, first = base + c * m->chunk;
            if ((rc = read_chunk(r, old, u, ki, c, &n, err)))
                break;
            int64_t lo = pos > first ? pos : first;
            int64_t hi = piece_end < first + n ? piece_end : first + n;
            if (sink && hi > lo)
                rc = sink(user, lo - begin, (const float *)r->buf + (lo - first), hi - lo, err);
        }
        pos = piece_end;
    }
    return rc;
}

/* 1 if some parameter of unit u has an element in [first, first + n) */
static int holds_parameter(const struct ckpt_unit *unit, int64_t first, int64_t n)
{
    for (int p = 0; p < unit->nparams; p++) {
        const struct ckpt_param *q = &unit->params[p];
        if (q->numel > 0 && q->offset < first + n && q->offset + q->numel > first)
            return 1;
    }
    return 0;
}

int ckpt_verify_padding(struct ckpt_reader *r, int u, int reader, int nreaders,
                        struct zero_error *err)
{
    const struct ckpt_meta *m = r->m;
    const struct ckpt_unit *unit = &m->units[u];
    int rc = ZERO_OK;
    for (int old = 0; old < m->world && !rc; old++) {
        int header_checked = 0;
        for (int64_t c = 0; c * m->chunk < unit->shard && !rc; c++) {
            int64_t first = (int64_t)old * unit->shard + c * m->chunk, n;
            int64_t len =
                unit->shard - c * m->chunk < m->chunk ? unit->shard - c * m->chunk : m->chunk;
            if ((old + c) % nreaders != reader || holds_parameter(unit, first, len))
                continue;
            for (int ki = 0; ki < m->nkinds && !rc; ki++) {
                if (!header_checked && ((rc = open_rank(r, old, err)) ||
                                        (rc = check_section_header(r, old, u, ki, err))))
                    break;
                rc = read_chunk(r, old, u, ki, c, &n, err);
            }
            header_checked = 1; /* the section headers of every kind */
        }
    }
    return rc;
}

int ckpt_verify_rank_file(struct ckpt_reader *r, int rank, struct zero_error *err)
{
    const struct ckpt_meta *m = r->m;
    int rc = open_rank(r, rank, err);
    for (int u = 0; u < m->nunits && !rc; u++)
        for (int ki = 0; ki < m->nkinds && !rc; ki++) {
            rc = check_section_header(r, rank, u, ki, err);
            int64_t n;
            for (int64_t c = 0; c * m->chunk < m->units[u].shard && !rc; c++)
                rc = read_chunk(r, rank, u, ki, c, &n, err);
        }
    return rc;
}

/* ---- finding and loading the metadata ---- */

static int exists(const char *dir, const char *name)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

static int valid_step_name(const char *s)
{
    if (strncmp(s, "step_", 5) != 0 || !s[5] || strlen(s) > 24)
        return 0;
    for (const char *p = s + 5; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

int ckpt_resolve(const char *path, char *step_dir, size_t len, struct zero_error *err)
{
    if (exists(path, CKPT_META)) {
        snprintf(step_dir, len, "%s", path);
        return ZERO_OK;
    }
    char latest[4200], name[64] = {0};
    snprintf(latest, sizeof latest, "%s/%s", path, CKPT_LATEST);
    int fd = zero_input_open(latest, err);
    if (fd < 0 && errno != ENOENT)
        return err->code; /* latest is a FIFO, a directory, unreadable */
    FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
    if (!f) {
        if (fd >= 0)
            close(fd);
        struct stat st;
        if (stat(path, &st) != 0)
            return zero_fail(err, ZERO_EIO, "%s: %s", path, strerror(errno));
        return zero_fail(err, ZERO_EFORMAT, "%s: no checkpoint here (neither %s nor %s)", path,
                         CKPT_META, CKPT_LATEST);
    }
    size_t n = fread(name, 1, sizeof name - 1, f);
    fclose(f);
    while (n > 0 && (name[n - 1] == '\n' || name[n - 1] == '\r' || name[n - 1] == ' '))
        name[--n] = '\0';
    if (!valid_step_name(name))
        return zero_fail(err, ZERO_EFORMAT, "%s: does not name a step directory (step_N)", latest);
    snprintf(step_dir, len, "%s/%s", path, name);
    if (!exists(step_dir, CKPT_META))
        return zero_fail(err, ZERO_EFORMAT, "%s names %s, which has no %s", latest, name,
                         CKPT_META);
    return ZERO_OK;
}

int ckpt_meta_load(struct ckpt_meta *m, const char *step_dir, struct zero_error *err)
{
    memset(m, 0, sizeof *m);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", step_dir, CKPT_META);
    int fd = zero_input_open(path, err);
    if (fd < 0 && errno == ENOENT)
        return zero_fail(err, ZERO_EFORMAT, "%s: %s", path, strerror(ENOENT));
    if (fd < 0)
        return err->code;
    struct stat st;
    char *text = NULL;
    int rc =
        fstat(fd, &st) != 0 ? zero_fail(err, ZERO_EIO, "%s: %s", path, strerror(errno))
        : st.st_size > META_MAX_BYTES
            ? zero_fail(err, ZERO_EFORMAT, "%s: %lld bytes: too large", path, (long long)st.st_size)
            : ZERO_OK;
    if (!rc && !(text = malloc((size_t)st.st_size + 1)))
        rc = zero_fail(err, ZERO_ENOMEM, "%s", path);
    size_t got = 0;
    while (!rc && got < (size_t)st.st_size) {
        ssize_t k = read(fd, text + got, (size_t)st.st_size - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            rc = zero_fail(err, ZERO_EIO, "%s: %s", path, k < 0 ? strerror(errno) : "short read");
        else
            got += (size_t)k;
    }
    close(fd);
    if (!rc)
        rc = ckpt_meta_parse(m, text, got, path, err);
    free(text);
    return rc;
}

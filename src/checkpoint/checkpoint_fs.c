/* The file-system steps that make a save atomic, and the fault hook tests use
 * to fail or kill a save at each of them.
 *
 * Order of a save (src/engine/engine_checkpoint.c): every rank writes and fsyncs its file
 * in DIR/.tmp-step_N-<random>/; rank 0 writes meta.json there, fsyncs the
 * directory, renames it to DIR/step_N and fsyncs DIR (publish), then writes
 * DIR/latest.tmp.<random>, fsyncs it, renames it onto DIR/latest (only if that is a
 * regular file or absent: file_replace.h) and fsyncs DIR again.
 * Until the rename of the directory nothing a reader looks at has changed;
 * after it the new step directory is complete; `latest` moves last. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint_internal.h"
#include "base/file_replace.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1) /* linux/fs.h */
#endif

static zero_checkpoint_fault_fn fault_fn;
static void *fault_user;
static int64_t chunk_override;

void zero_checkpoint_set_fault_hook(zero_checkpoint_fault_fn fn, void *user)
{
    fault_fn = fn;
    fault_user = user;
}

void zero_checkpoint_set_chunk_elements(int64_t n)
{
    chunk_override = n > 0 && n <= CKPT_MAX_CHUNK ? n : 0;
}

int64_t ckpt_chunk_elements(void)
{
    return chunk_override ? chunk_override : CKPT_DEFAULT_CHUNK;
}

int ckpt_fault(const char *point, int rank)
{
    return fault_fn ? fault_fn(point, rank, fault_user) : 0;
}

/* "rank 2: " for messages of a collective save, "" otherwise */
static const char *who(int rank, char *buf, size_t len)
{
    if (rank < 0)
        buf[0] = '\0';
    else
        snprintf(buf, len, "rank %d: ", rank);
    return buf;
}

static int io_fail(int rank, const char *path, const char *what, int e, struct zero_error *err)
{
    char w[32];
    return zero_fail(err, ZERO_EIO, "%s%s: %s failed: %s", who(rank, w, sizeof w), path, what,
                     strerror(e));
}

int ckpt_write_all(int fd, const void *buf, size_t n, int rank, const char *path,
                   struct zero_error *err)
{
    const char *p = buf;
    while (n > 0) {
        int injected = ckpt_fault("write", rank);
        if (injected)
            return io_fail(rank, path, "write", injected, err);
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return io_fail(rank, path, "write", w < 0 ? errno : ENOSPC, err);
        p += w;
        n -= (size_t)w;
    }
    return ZERO_OK;
}

int ckpt_fsync_fd(int fd, int rank, const char *path, struct zero_error *err)
{
    int injected = ckpt_fault("fsync", rank);
    if (injected)
        return io_fail(rank, path, "fsync", injected, err);
    if (fsync(fd) != 0)
        return io_fail(rank, path, "fsync", errno, err);
    return ZERO_OK;
}

int ckpt_fsync_dir(const char *dir, int rank, struct zero_error *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return io_fail(rank, dir, "open", errno, err);
    int rc = ckpt_fsync_fd(fd, rank, dir, err);
    close(fd);
    return rc;
}

int ckpt_write_file(const char *path, const void *data, size_t n, int rank, struct zero_error *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return io_fail(rank, path, "create", errno, err);
    int rc = ckpt_write_all(fd, data, n, rank, path, err);
    if (!rc)
        rc = ckpt_fsync_fd(fd, rank, path, err);
    if (close(fd) != 0 && !rc)
        rc = io_fail(rank, path, "close", errno, err);
    return rc;
}

int ckpt_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    struct dirent *ent;
    char path[4096];
    int rc = 0;
    while ((ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        if (unlink(path) != 0)
            rc = -1;
    }
    closedir(d);
    return rmdir(dir) != 0 ? -1 : rc;
}

uint64_t ckpt_random64(void)
{
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd >= 0) {
        ssize_t n = read(fd, &v, sizeof v);
        close(fd);
        if (n == (ssize_t)sizeof v)
            return v;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_sec * 1000000007ULL) ^ (uint64_t)ts.tv_nsec ^
           ((uint64_t)getpid() << 32);
}

/* Swaps two directory entries atomically (Linux); -1 with errno otherwise. */
static int exchange(const char *a, const char *b)
{
#ifdef SYS_renameat2
    return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
#else
    (void)a;
    (void)b;
    errno = ENOSYS;
    return -1;
#endif
}

int ckpt_publish(const char *dir, const char *tmp_name, const char *name, int rank,
                 struct zero_error *err)
{
    char tmp[4096], final[4096], w[32];
    snprintf(tmp, sizeof tmp, "%s/%s", dir, tmp_name);
    snprintf(final, sizeof final, "%s/%s", dir, name);
    int injected = ckpt_fault("publish", rank);
    if (injected)
        return io_fail(rank, final, "rename", injected, err);
    if (rename(tmp, final) != 0) {
        if (errno != EEXIST && errno != ENOTEMPTY)
            return io_fail(rank, final, "rename", errno, err);
        /* a checkpoint of this step exists (saved again after a resume): the new
         * one takes its place in one step; the old one lands at tmp */
        if (exchange(tmp, final) != 0) {
            /* no atomic exchange here: move the old one aside first; a crash
             * between the two renames leaves it under .old-* */
            char old[4096];
            snprintf(old, sizeof old, "%s/.old-%s-%016llx", dir, name,
                     (unsigned long long)ckpt_random64());
            if (rename(final, old) != 0)
                return io_fail(rank, final, "rename", errno, err);
            if (rename(tmp, final) != 0) {
                int e = errno;
                rename(old, final);
                return io_fail(rank, final, "rename", e, err);
            }
            ckpt_remove_dir(old);
        } else {
            ckpt_remove_dir(tmp);
        }
    }
    int rc = ckpt_fsync_dir(dir, rank, err);
    if (!rc && (injected = ckpt_fault("published", rank)))
        rc = zero_fail(err, ZERO_EIO, "%s%s: after publishing: %s", who(rank, w, sizeof w), final,
                       strerror(injected));
    return rc;
}

int ckpt_set_latest(const char *dir, const char *name, int rank, struct zero_error *err)
{
    char latest[4096], text[256], w[32];
    snprintf(latest, sizeof latest, "%s/%s", dir, CKPT_LATEST);
    int n = snprintf(text, sizeof text, "%s\n", name);
    /* a temporary next to it, renamed on only if latest is a regular file (or absent) */
    struct zero_replace out;
    int rc = zero_replace_begin(&out, latest, err);
    if (rc)
        return zero_error_wrap(err, "%s", who(rank, w, sizeof w));
    rc = ckpt_write_all(out.fd, text, (size_t)n, rank, out.tmp, err);
    if (!rc)
        rc = ckpt_fsync_fd(out.fd, rank, out.tmp, err);
    int injected = rc ? 0 : ckpt_fault("latest", rank);
    if (injected)
        rc = io_fail(rank, latest, "rename", injected, err);
    if (rc) {
        zero_replace_abort(&out);
        return rc;
    }
    if (zero_replace_commit(&out, err))
        return zero_error_wrap(err, "%s", who(rank, w, sizeof w));
    return ZERO_OK;
}

/* "step_000300" -> 300; -1 if name is not a step directory name */
static int64_t step_of(const char *name)
{
    if (strncmp(name, "step_", 5) != 0 || !name[5] || strlen(name) > 24)
        return -1;
    int64_t v = 0;
    for (const char *p = name + 5; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

static int stale_temporary(const char *name)
{
    return strncmp(name, ".tmp-step_", 10) == 0 || strncmp(name, ".old-step_", 10) == 0 ||
           strncmp(name, ".del-step_", 10) == 0;
}

struct step_dir {
    int64_t step;
    char name[32];
};

static int by_step_descending(const void *a, const void *b)
{
    int64_t x = ((const struct step_dir *)a)->step, y = ((const struct step_dir *)b)->step;
    return x < y ? 1 : x > y ? -1 : 0;
}

int ckpt_prune(const char *dir, const char *current, int keep_last, int rank,
               struct zero_error *err)
{
    int injected = ckpt_fault("prune", rank);
    if (injected)
        return io_fail(rank, dir, "prune", injected, err);
    int64_t now = step_of(current);
    DIR *d = opendir(dir);
    if (!d)
        return io_fail(rank, dir, "opendir", errno, err);
    struct step_dir *older = NULL;
    size_t n = 0, cap = 0;
    struct dirent *ent;
    char path[4096], gone[4096];
    while ((ent = readdir(d)) != NULL) {
        int64_t s = step_of(ent->d_name);
        if (stale_temporary(ent->d_name)) {
            snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
            ckpt_remove_dir(path);
        } else if (s >= 0 && s < now) {
            if (n == cap) {
                cap = cap ? 2 * cap : 16;
                struct step_dir *bigger = realloc(older, cap * sizeof *older);
                if (!bigger)
                    break;
                older = bigger;
            }
            older[n].step = s;
            snprintf(older[n].name, sizeof older[n].name, "%s", ent->d_name);
            n++;
        }
    }
    closedir(d);
    if (keep_last > 0 && n > 0) {
        qsort(older, n, sizeof *older, by_step_descending);
        /* the new checkpoint counts as one of keep_last */
        for (size_t i = (size_t)keep_last - 1; i < n; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, older[i].name);
            snprintf(gone, sizeof gone, "%s/.del-%s-%016llx", dir, older[i].name,
                     (unsigned long long)ckpt_random64());
            /* rename first: a crash mid-delete leaves a stale temporary, not a
             * half-deleted step directory */
            if (rename(path, gone) == 0)
                ckpt_remove_dir(gone);
        }
    }
    free(older);
    return ZERO_OK;
}

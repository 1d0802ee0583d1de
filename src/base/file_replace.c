/* Inputs that must be regular files; outputs written to a temporary and renamed onto a
 * regular file (file_replace.h). */
#include "zero/fault.h"
#include "file_replace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *kind_name(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

int zero_replace_check(const char *path, struct zero_error *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT
                   ? ZERO_OK
                   : zero_fail(err, ZERO_EIO, "%s: cannot examine it: %s", path, strerror(errno));
    if (S_ISREG(st.st_mode))
        return ZERO_OK;
    if (S_ISLNK(st.st_mode)) {
        if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
            return ZERO_OK; /* dangling or to a regular file: the link is replaced */
        return zero_fail(err, ZERO_EINVAL,
                         "%s: is a symlink to %s, not a regular file: refusing to replace it", path,
                         kind_name(st.st_mode));
    }
    return zero_fail(err, ZERO_EINVAL, "%s: is %s, not a regular file: refusing to replace it",
                     path, kind_name(st.st_mode));
}

int zero_input_check(const char *path, struct zero_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
        return ZERO_OK;
    return zero_fail(err, ZERO_EINVAL, "%s: is %s, not a regular file", path,
                     kind_name(st.st_mode));
}

int zero_input_open(const char *path, struct zero_error *err)
{
    int fd = zero_fault("input.open") ? -1 : open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno; /* kept for callers that treat ENOENT their own way */
        zero_fail(err, ZERO_EIO, "%s: cannot open: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    struct stat st;
    int bad = fstat(fd, &st) != 0
                  ? zero_fail(err, ZERO_EIO, "%s: cannot examine it: %s", path, strerror(errno))
              : !S_ISREG(st.st_mode) ? zero_fail(err, ZERO_EINVAL, "%s: is %s, not a regular file",
                                                 path, kind_name(st.st_mode))
                                     : ZERO_OK;
    if (bad) {
        close(fd);
        errno = EINVAL; /* not ENOENT: the file is there */
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK); /* ordinary blocking reads from here on */
    return fd;
}

/* Distinct per call, per process and per thread of time: the O_EXCL create retries on a clash. */
static uint64_t salt(void)
{
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_nsec << 20) ^ ((uint64_t)getpid() << 40) ^ (uint64_t)ts.tv_sec ^
           ++counter * 0x9e3779b97f4a7c15ULL;
}

int zero_replace_begin(struct zero_replace *r, const char *path, struct zero_error *err)
{
    memset(r, 0, sizeof *r);
    r->fd = -1;
    int rc = zero_replace_check(path, err);
    if (rc)
        return rc;
    size_t len = strlen(path) + 32;
    r->path = strdup(path);
    r->tmp = malloc(len);
    if (!r->path || !r->tmp) {
        zero_replace_abort(r);
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", path);
    }
    for (int attempt = 0; r->fd < 0 && attempt < 16; attempt++) {
        snprintf(r->tmp, len, "%s.tmp.%016llx", path, (unsigned long long)salt());
        r->fd = zero_fault("output.open")
                    ? -1
                    : open(r->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (r->fd < 0 && errno != EEXIST)
            break;
    }
    if (r->fd < 0) {
        rc = zero_fail(err, ZERO_EIO, "%s: cannot create %s: %s", path, r->tmp, strerror(errno));
        free(r->tmp); /* not ours: nothing to remove */
        r->tmp = NULL;
        zero_replace_abort(r);
    }
    return rc;
}

FILE *zero_replace_stream(struct zero_replace *r, struct zero_error *err)
{
    if (!r->f && r->fd >= 0 && !(r->f = fdopen(r->fd, "w")))
        zero_fail(err, ZERO_EIO, "%s: %s", r->tmp, strerror(errno));
    return r->f;
}

/* The directory entry of a rename is durable only once the directory is synced. */
static int sync_parent_dir(const char *path, struct zero_error *err)
{
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash == NULL ? 0 : slash == path ? 1 : (size_t)(slash - path);
    char *dir = slash == NULL ? strdup(".") : strndup(path, dir_len);
    if (dir == NULL)
        return zero_fail(err, ZERO_ENOMEM, "%s: out of memory", path);
    int rc = ZERO_OK;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    /* some file systems cannot fsync a directory (EINVAL): nothing more to do there */
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL))
        rc = zero_fail(err, ZERO_EIO, "%s: written, but syncing directory %s failed: %s", path, dir,
                       strerror(errno));
    if (fd >= 0)
        close(fd);
    free(dir);
    return rc;
}

int zero_replace_commit(struct zero_replace *r, struct zero_error *err)
{
    int rc = ZERO_OK;
    if (r->f && (fflush(r->f) != 0 || ferror(r->f)))
        rc = zero_fail(err, ZERO_EIO, "%s: write failed: %s", r->tmp, strerror(errno));
    if (!rc && fsync(r->fd) != 0)
        rc = zero_fail(err, ZERO_EIO, "%s: fsync: %s", r->tmp, strerror(errno));
    int closed = r->f ? fclose(r->f) : close(r->fd);
    r->f = NULL;
    r->fd = -1;
    if (!rc && closed != 0)
        rc = zero_fail(err, ZERO_EIO, "%s: close: %s", r->tmp, strerror(errno));
    /* again: something may have appeared at path while we wrote */
    if (!rc)
        rc = zero_replace_check(r->path, err);
    if (!rc && (zero_fault("output.rename") || rename(r->tmp, r->path) != 0))
        rc = zero_fail(err, ZERO_EIO, "%s: cannot rename %s onto it: %s", r->path, r->tmp,
                       strerror(errno));
    if (rc) {
        zero_replace_abort(r);
        return rc;
    }
    free(r->tmp); /* renamed: nothing to remove */
    r->tmp = NULL;
    rc = sync_parent_dir(r->path, err);
    zero_replace_abort(r);
    return rc;
}

void zero_replace_abort(struct zero_replace *r)
{
    if (r->f)
        fclose(r->f);
    else if (r->fd >= 0)
        close(r->fd);
    r->f = NULL;
    r->fd = -1;
    if (r->tmp)
        unlink(r->tmp);
    free(r->tmp);
    free(r->path);
    r->tmp = NULL;
    r->path = NULL;
}

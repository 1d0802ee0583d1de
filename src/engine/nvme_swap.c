/* See nvme_swap.h.
 *
 * The optimizer file holds, for every unit, its shard in chunks of at most
 * `chunk` elements (sub_group_size, rounded to 2048 elements so every offset
 * stays 4 KiB-aligned for O_DIRECT); a chunk of n elements is one record
 *   [master (fp32, n) | exp_avg (n) | exp_avg_sq (n)]   each part padded to 4 KiB
 * so a chunk moves in one read and one write. The parameter file holds each
 * unit's shard (cdt, shard), padded to 4 KiB. Files are per rank,
 * <nvme_path>/libzero-{optim,param}-rank<r>.swap, locked while in use,
 * emptied when opened (the states are rebuilt from initialization or a
 * checkpoint, so a file left by a crash is rebuilt, never trusted), fully
 * allocated up front unless fast_init (then sparse: the optimizer state's
 * zeros cost no writes), and removed on close. */
#define _GNU_SOURCE /* O_DIRECT */
#include "nvme_swap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "io/aio.h"
#include "zero/fault.h"
#include "engine/engine_internal.h"
#include "zero/knobs.h"

#define PAGE 4096
#define CHUNK_QUANTUM 2048 /* elements: 4 KiB of fp16/bf16, 8 KiB of fp32 */

static int64_t pad(int64_t bytes)
{
    return (bytes + PAGE - 1) / PAGE * PAGE;
}

struct swap_file {
    char path[512];
    const char *key; /* the nvme_path key it lives under */
    int fd, direct;
    int owned; /* this job locked it: close_file removes it */
    int64_t bytes;
};

struct slot {
    void *base; /* allocation; buf is base rounded up to PAGE */
    char *buf;
    struct aio_op *read, *write, *pwrite;
    int unit;    /* param ring: whose shard (-1: none) */
    int used;    /* param ring: handed out since read (a copy may be reading it) */
    int64_t age; /* param ring: last use */
    int64_t bytes;
    void *ev;   /* param ring, pinned: the gather's copy out of it; optimizer ring:
                   the copies in and out of its stage */
    int pinned; /* host_alloc memory (pin_memory), else malloc */
};

struct nvme_swap {
    struct aio_queue *aio;
    struct swap_file opt, par;
    int nparts; /* master + optimizer buffers */
    int64_t chunk;
    int64_t *opt_off, *par_off; /* per unit; -1: not on NVMe */
    char *loaded;
    int pinned; /* offload_param.pin_memory: the parameter ring is page-locked */
    /* the step's walk */
    int nchunks, *chunk_unit;
    int64_t *chunk_begin;
    int next_out, next_read;
    int nslots;
    struct slot *slots;
    /* stage-3 parameter ring */
    int npslots;
    struct slot *pslots;
    int64_t clock;
    /* rare paths */
    struct slot bounce;
    int64_t bounce_bytes;
    struct zero_ledger disk;
};

static struct nvme_swap *nv(const struct zero_engine *e)
{
    return e->nvme.swap;
}

static int optim_count(const struct zero_engine *e)
{
    if (e->cfg.optimizer.type == ZERO_OPTIM_SGD)
        return e->cfg.optimizer.momentum != 0.0 ? 1 : 0;
    return 2;
}

int nvme_holds_optim(const struct zero_engine *e, int u)
{
    return e->nvme.swap && nv(e)->opt_off[u] >= 0;
}

/* offload_param's rule: the first shards, in unit order, stay in host memory up to
 * max_in_cpu elements; the rest are on NVMe */
static int param_shard_on_nvme(const struct zero_engine *e, int u)
{
    int64_t in_cpu = 0;
    for (int v = 0; v <= u && e->nvme.param; v++) {
        int64_t shard = e->us[v].layout.shard;
        int stays =
            shard > 0 && in_cpu + shard <= e->cfg.zero_optimization.offload_param.max_in_cpu;
        in_cpu += stays ? shard : 0;
        if (v == u)
            return shard > 0 && !stays;
    }
    return 0;
}

int nvme_holds_params(const struct zero_engine *e, int u)
{
    /* before nvme_open (the memory plan's theory): where it will put the shard */
    return e->nvme.swap ? nv(e)->par_off[u] >= 0 : param_shard_on_nvme(e, u);
}

/* ---- configuration ---- */

int nvme_configure(struct zero_engine *e, struct zero_error *err)
{
    const struct zero_optimization_config *z = &e->cfg.zero_optimization;
    const struct zero_aio_config *a = &e->cfg.aio;
    e->nvme.opt = z->offload_optimizer.device == ZERO_OFFLOAD_NVME;
    e->nvme.param = z->offload_param.device == ZERO_OFFLOAD_NVME;
    /* the NVMe-only keys elsewhere are zero_config_validate's, checked before this */
    if (!e->nvme.opt && !e->nvme.param)
        return ZERO_OK;
    if (e->nvme.param && !e->nvme.opt)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.offload_param.device = nvme needs "
                         "offload_optimizer.device = nvme as well (the NVMe step writes the "
                         "parameter shards it updates; optimizer state in host memory next to "
                         "parameters on NVMe is not implemented yet in this build)");
    if (e->nvme.opt && !z->offload_optimizer.nvme_path[0])
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.offload_optimizer.device = nvme needs "
                         "zero_optimization.offload_optimizer.nvme_path (a directory)");
    if (e->nvme.param && !z->offload_param.nvme_path[0])
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.offload_param.device = nvme needs "
                         "zero_optimization.offload_param.nvme_path (a directory)");
    if (e->nvme.opt && z->offload_optimizer.buffer_count < 1)
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.offload_optimizer.buffer_count %lld: NVMe offload "
                         "streams through at least 1 buffer",
                         (long long)z->offload_optimizer.buffer_count);
    if (e->nvme.param && (z->offload_param.buffer_count < 1 || z->offload_param.buffer_size < 1))
        return zero_fail(err, ZERO_EINVAL,
                         "zero_optimization.offload_param.buffer_count %lld and buffer_size %lld: "
                         "NVMe parameter offload reads through at least 1 buffer of 1 element",
                         (long long)z->offload_param.buffer_count,
                         (long long)z->offload_param.buffer_size);
    if (a->block_size < PAGE || a->block_size % PAGE != 0)
        return zero_fail(err, ZERO_EINVAL,
                         "aio.block_size %lld: NVMe offload needs a multiple of %d bytes "
                         "(O_DIRECT requests are page-aligned)",
                         (long long)a->block_size, PAGE);
    if (a->queue_depth < 1 || a->thread_count < 1)
        return zero_fail(err, ZERO_EINVAL,
                         "aio.queue_depth %lld and aio.thread_count %lld: "
                         "each must be at least 1",
                         (long long)a->queue_depth, (long long)a->thread_count);
    return ZERO_OK;
}

/* ---- errors ---- */

static int io_fail(struct zero_engine *e, struct zero_error *err, int code,
                   const struct swap_file *f, const char *doing, int u, const char *what,
                   int64_t off, int64_t len)
{
    const char *why = strerror(code);
    char extra[160] = "";
    if (code == ENODATA) {
        why = "the file ends early (truncated by someone else?)";
        struct stat st;
        if (fstat(f->fd, &st) == 0)
            snprintf(extra, sizeof extra, ": it has %lld bytes, %lld expected",
                     (long long)st.st_size, (long long)f->bytes);
    } else if (code == ENOSPC || code == EDQUOT) {
        snprintf(extra, sizeof extra, " (the file system under %s is full)", f->key);
    }
    return zero_fail(err, ZERO_EIO,
                     "rank %d: NVMe swap file %s: %s unit %s (%s, %lld bytes at offset %lld): "
                     "%s%s",
                     e->rank, f->path, doing, u >= 0 ? e->model->units[u]->name : "-", what,
                     (long long)len, (long long)off, why, extra);
}

/* ---- buffers ---- */

/* A staging buffer of the swap file f: "buffer I of N" of the ring whose count is the
 * key ring (NULL: the bounce buffer). Its failure says which buffer of which file,
 * how many bytes and what to change: under ulimit -v the whole message was "16797696
 * bytes for an NVMe buffer". */
static int slot_alloc(struct zero_engine *e, struct slot *s, int64_t bytes, int pinned,
                      const struct swap_file *f, const char *ring, int i, int n,
                      struct zero_error *err)
{
    memset(s, 0, sizeof *s);
    s->unit = -1;
    s->bytes = bytes;
    s->pinned = pinned;
    size_t total = (size_t)bytes + PAGE;
    char what[sizeof f->path + 128];
    if (ring)
        snprintf(what, sizeof what, "staging buffer %d of %d (%s) of the NVMe swap file %s", i + 1,
                 n, ring, f->path);
    else
        snprintf(what, sizeof what, "bounce buffer of the NVMe swap file %s", f->path);
    int rc = ZERO_OK;
    if (pinned) {
        rc = engine_host_alloc(e, total, ZERO_TAG_WORKSPACE, &s->base, what, err);
    } else if (!(s->base = malloc(total))) {
        rc = zero_fail(err, ZERO_ENOMEM,
                       "rank %d: not enough host memory for NVMe offload: the %s needs %zu "
                       "bytes: %s",
                       e->rank, what, total, strerror(errno));
    } else {
        zero_ledger_add(&e->dev->host_ledger, ZERO_TAG_WORKSPACE, (int64_t)total);
    }
    if (rc) {
        char tail[200];
        snprintf(tail, sizeof tail,
                 "; lower %s, raise the memory this process may use (ulimit -v, the "
                 "cgroup) or offload less",
                 ring ? ring : "the offload's buffer sizes");
        size_t len = strlen(err->msg);
        snprintf(err->msg + len, sizeof err->msg - len, "%s", tail);
        return rc;
    }
    s->buf = (char *)(((uintptr_t)s->base + PAGE - 1) / PAGE * PAGE);
    memset(s->buf, 0, (size_t)bytes); /* padding written to the files is zero */
    return ZERO_OK;
}

static void slot_free(struct zero_engine *e, struct slot *s)
{
    int64_t bytes = s->bytes;
    int pinned = s->pinned;
    if (!s->base)
        return;
    if (pinned) {
        engine_host_free(e, s->base);
    } else {
        free(s->base);
        zero_ledger_add(&e->dev->host_ledger, ZERO_TAG_WORKSPACE, -(bytes + PAGE));
    }
    if (s->ev)
        e->be->event_destroy(e->bself, s->ev);
    s->base = NULL;
}

/* ---- files ---- */

static void swap_file_name(char *path, size_t len, const char *dir, const char *kind, int rank)
{
    snprintf(path, len, "%s/libzero-%s-rank%05d.swap", dir, kind, rank);
}

static int open_file(struct zero_engine *e, struct swap_file *f, const char *dir, const char *key,
                     const char *kind, int64_t bytes, int fast_init, struct zero_error *err)
{
    struct stat st;
    f->fd = -1;
    f->key = key;
    f->bytes = bytes;
    if (stat(dir, &st) != 0)
        return zero_fail(err, ZERO_EIO, "rank %d: %s %s: %s", e->rank, key, dir,
                         errno == ENOENT ? "does not exist" : strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return zero_fail(err, ZERO_EINVAL, "rank %d: %s %s is not a directory", e->rank, key, dir);
    swap_file_name(f->path, sizeof f->path, dir, kind, e->rank);
    const char *no_direct = zero_knob(ZERO_KNOB_NVME_NO_DIRECT); /* to test the buffered path */
    f->direct = !(no_direct && no_direct[0] == '1');
    f->fd = zero_fault("nvme.open") ? -1
            : f->direct             ? open(f->path, O_RDWR | O_CREAT | O_DIRECT, 0600)
                                    : -1;
    if (f->fd < 0 && errno != EIO &&
        (!f->direct || errno == EINVAL)) { /* tmpfs and others refuse O_DIRECT */
        f->direct = 0;
        f->fd = open(f->path, O_RDWR | O_CREAT, 0600);
    }
    if (f->fd < 0)
        return zero_fail(err, ZERO_EIO, "rank %d: %s %s is not writable: creating %s: %s", e->rank,
                         key, dir, f->path, strerror(errno));
    if (flock(f->fd, LOCK_EX | LOCK_NB) != 0) {
        close(f->fd); /* the file is the other job's: ours is neither to keep nor to remove */
        f->fd = -1;
        return zero_fail(err, ZERO_EIO,
                         "rank %d: NVMe swap file %s is in use by another process (another job "
                         "with the same %s?)",
                         e->rank, f->path, key);
    }
    f->owned = 1; /* locked: from here on the path is ours to remove */
    int rc = zero_fault("nvme.reserve") ? ENOSPC : ftruncate(f->fd, 0) == 0 ? 0 : errno;
    if (!rc && fast_init)
        rc = ftruncate(f->fd, (off_t)bytes) == 0 ? 0 : errno;
    else if (!rc && (rc = posix_fallocate(f->fd, 0, (off_t)bytes)) == EOPNOTSUPP)
        rc = ftruncate(f->fd, (off_t)bytes) == 0 ? 0 : errno;
    if (rc) {
        struct statvfs vs;
        char room[96] = "";
        if (fstatvfs(f->fd, &vs) == 0)
            snprintf(room, sizeof room, " (%lld bytes free)",
                     (long long)vs.f_bavail * (long long)vs.f_frsize);
        return zero_fail(err, ZERO_EIO,
                         "rank %d: NVMe swap file %s: reserving %lld bytes%s: %s (%s is on a file "
                         "system without room)",
                         e->rank, f->path, (long long)bytes, room, strerror(rc), key);
    }
    return ZERO_OK;
}

/* Removes f's path if it still names our file: a program's signal handler may have
 * removed it already (zero_engine_swap_paths), and another job may have made a file of
 * its own there since, which is not ours to remove. */
static void unlink_ours(const struct swap_file *f)
{
    struct stat ours, there;
    if (fstat(f->fd, &ours) == 0 && stat(f->path, &there) == 0 && ours.st_dev == there.st_dev &&
        ours.st_ino == there.st_ino)
        unlink(f->path);
}

/* The swap files of ranks past this job's world in dir (a job killed at more ranks, then
 * resumed at fewer, left them): each one no process holds a lock on is removed; a locked
 * one is another job's, and stays. Every rank tries (ranks on other nodes may see other
 * disks); a file another rank removed first is simply gone. */
static void remove_stale_files(const struct zero_engine *e, const char *dir, const char *kind)
{
    char prefix[64];
    const int plen = snprintf(prefix, sizeof prefix, "libzero-%s-rank", kind);
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        char tail[16];
        int r = -1;
        if (strncmp(de->d_name, prefix, (size_t)plen) != 0 ||
            sscanf(de->d_name + plen, "%d%15s", &r, tail) != 2 || strcmp(tail, ".swap") ||
            r < e->world)
            continue;
        struct swap_file f = {.fd = -1};
        swap_file_name(f.path, sizeof f.path, dir, kind, r);
        if ((f.fd = open(f.path, O_RDWR)) < 0)
            continue;
        if (flock(f.fd, LOCK_EX | LOCK_NB) == 0)
            unlink_ours(&f); /* locked by us now: nobody's, unless it was replaced meanwhile */
        close(f.fd);
    }
    closedir(d);
}

/* Unlinked while the lock is still held: a job that opens the path after the
 * unlink creates a file of its own, one that opened it before fails to lock. */
static void close_file(struct swap_file *f)
{
    if (f->fd < 0)
        return;
    if (f->owned)
        unlink_ours(f);
    close(f->fd);
    f->fd = -1;
    f->owned = 0;
}

/* The record of chunk j (n elements) of a unit: its offset in the unit's record. */
static int64_t chunk_record_off(const struct nvme_swap *s, int64_t begin)
{
    return begin / s->chunk * s->nparts * pad(s->chunk * 4);
}

static int64_t unit_record_bytes(const struct nvme_swap *s, int64_t shard)
{
    int64_t full = shard / s->chunk, rest = shard % s->chunk;
    return full * s->nparts * pad(s->chunk * 4) + s->nparts * pad(rest * 4);
}

/* The optimizer ring's chunk: sub_group_size elements (a multiple of CHUNK_QUANTUM), never
 * more than the largest shard needs */
static int64_t chunk_elements(const struct zero_engine *e)
{
    int64_t maxshard = 0;
    for (int u = 0; u < e->nunits; u++)
        if (e->us[u].layout.shard > maxshard)
            maxshard = e->us[u].layout.shard;
    int64_t sub = e->cfg.zero_optimization.sub_group_size / CHUNK_QUANTUM * CHUNK_QUANTUM;
    int64_t chunk = sub < CHUNK_QUANTUM ? CHUNK_QUANTUM : sub;
    int64_t need = (maxshard + CHUNK_QUANTUM - 1) / CHUNK_QUANTUM * CHUNK_QUANTUM;
    if (need < chunk)
        chunk = need > 0 ? need : CHUNK_QUANTUM; /* the ring never outgrows the largest shard */
    return chunk;
}

/* The largest parameter shard on NVMe: what a parameter buffer holds; 0 when none is */
static int64_t largest_nvme_param_shard(const struct zero_engine *e)
{
    int64_t largest = 0;
    for (int u = 0; u < e->nunits; u++)
        if (param_shard_on_nvme(e, u) && e->us[u].layout.shard > largest)
            largest = e->us[u].layout.shard;
    return largest;
}

int64_t nvme_buffer_bytes(const struct zero_engine *e)
{
    if (!e->nvme.opt && !e->nvme.param)
        return 0;
    const struct zero_optimization_config *z = &e->cfg.zero_optimization;
    const int64_t chunk = chunk_elements(e), nparts = 1 + optim_count(e);
    const int64_t part = pad(chunk * 4), maxpar = largest_nvme_param_shard(e);
    int64_t bytes = 0;
    if (e->nvme.opt) /* the ring: the optimizer record and the gradient's stage per buffer */
        bytes += z->offload_optimizer.buffer_count * (nparts * part + part + PAGE);
    if (maxpar > 0) /* the parameter ring: one shard per buffer */
        bytes += z->offload_param.buffer_count * (pad(maxpar * (int64_t)e->csize) + PAGE);
    int64_t pbounce = pad(chunk * (int64_t)e->csize);
    return bytes + (nparts * part > pbounce ? nparts * part : pbounce) + PAGE; /* the bounce */
}

void nvme_unit_load_peak(const struct zero_engine *e, int64_t peak[ZERO_TAG_COUNT])
{
    int64_t opt = 0; /* the largest shards nvme_unit_load brings in */
    for (int u = 0; u < e->nunits; u++)
        if (e->nvme.opt && e->us[u].layout.shard > opt)
            opt = e->us[u].layout.shard;
    peak[ZERO_TAG_MASTER] += 4 * opt;
    peak[ZERO_TAG_OPTIM] += 4 * opt * optim_count(e);
    peak[ZERO_TAG_PARAMS] += largest_nvme_param_shard(e) * (int64_t)e->csize;
}

int nvme_open(struct zero_engine *e, struct zero_error *err)
{
    if (!e->nvme.opt && !e->nvme.param)
        return ZERO_OK;
    const struct zero_optimization_config *z = &e->cfg.zero_optimization;
    struct nvme_swap *s = calloc(1, sizeof *s);
    if (!s)
        return zero_fail(err, ZERO_ENOMEM, "rank %d: NVMe offload state", e->rank);
    e->nvme.swap = s;
    s->opt.fd = s->par.fd = -1;
    s->nparts = 1 + optim_count(e);
    s->pinned = z->offload_param.pin_memory;
    s->opt_off = malloc((size_t)e->nunits * sizeof *s->opt_off);
    s->par_off = malloc((size_t)e->nunits * sizeof *s->par_off);
    s->loaded = calloc((size_t)e->nunits, 1);
    s->chunk_unit = malloc((size_t)e->nunits * sizeof(int));
    s->chunk_begin = malloc((size_t)e->nunits * sizeof(int64_t));
    if (!s->opt_off || !s->par_off || !s->loaded || !s->chunk_unit || !s->chunk_begin)
        return zero_fail(err, ZERO_ENOMEM, "rank %d: NVMe offload tables", e->rank);
    int64_t in_cpu = 0, maxpar = 0;
    s->chunk = chunk_elements(e);
    int64_t obytes = 0, pbytes = 0;
    int nchunks = 0;
    for (int u = 0; u < e->nunits; u++) {
        int64_t shard = e->us[u].layout.shard;
        s->opt_off[u] = s->par_off[u] = -1;
        if (e->nvme.opt && shard > 0) {
            s->opt_off[u] = obytes;
            obytes += unit_record_bytes(s, shard);
            nchunks += (int)((shard + s->chunk - 1) / s->chunk);
        }
        /* max_in_cpu: the first shards, in unit order, stay in host memory */
        if (e->nvme.param && shard > 0 && in_cpu + shard <= z->offload_param.max_in_cpu) {
            in_cpu += shard;
        } else if (e->nvme.param && shard > 0) {
            if (shard > z->offload_param.buffer_size)
                return zero_fail(err, ZERO_EINVAL,
                                 "zero_optimization.offload_param.buffer_size %lld is smaller "
                                 "than unit %s's shard of %lld elements (a shard is read whole)",
                                 (long long)z->offload_param.buffer_size, e->model->units[u]->name,
                                 (long long)shard);
            s->par_off[u] = pbytes;
            pbytes += pad(shard * (int64_t)e->csize);
            maxpar = shard > maxpar ? shard : maxpar;
        }
    }
    free(s->chunk_unit);
    free(s->chunk_begin);
    s->chunk_unit = malloc((size_t)(nchunks > 0 ? nchunks : 1) * sizeof(int));
    s->chunk_begin = malloc((size_t)(nchunks > 0 ? nchunks : 1) * sizeof(int64_t));
    if (!s->chunk_unit || !s->chunk_begin)
        return zero_fail(err, ZERO_ENOMEM, "rank %d: NVMe chunk table", e->rank);
    for (int u = 0; u < e->nunits; u++)
        for (int64_t b = 0; s->opt_off[u] >= 0 && b < e->us[u].layout.shard; b += s->chunk) {
            s->chunk_unit[s->nchunks] = u;
            s->chunk_begin[s->nchunks++] = b;
        }
    const struct zero_aio_config *a = &e->cfg.aio;
    const char *force = zero_knob(ZERO_KNOB_AIO); /* "threads": test the fallback */
    struct aio_options ao = {.block_size = a->block_size,
                             .queue_depth = a->queue_depth,
                             .thread_count = a->thread_count,
                             .single_submit = a->single_submit,
                             .overlap_events = a->overlap_events,
                             .use_threads = force && strcmp(force, "threads") == 0};
    char msg[256];
    int rc = aio_create(&s->aio, &ao, msg, sizeof msg);
    if (rc)
        return zero_fail(err, ZERO_EIO, "rank %d: NVMe offload: %s", e->rank, msg);
    if (e->nvme.opt && (rc = open_file(e, &s->opt, z->offload_optimizer.nvme_path,
                                       "zero_optimization.offload_optimizer.nvme_path", "optim",
                                       obytes, z->offload_optimizer.fast_init, err)))
        return rc;
    if (pbytes > 0 &&
        (rc = open_file(e, &s->par, z->offload_param.nvme_path,
                        "zero_optimization.offload_param.nvme_path", "param", pbytes, 0, err)))
        return rc;
    if (e->nvme.opt)
        remove_stale_files(e, z->offload_optimizer.nvme_path, "optim");
    if (pbytes > 0)
        remove_stale_files(e, z->offload_param.nvme_path, "param");
    /* the third tier of the ledger: the states' bytes on disk (as the other
     * ledgers count what was asked for, the files' 4 KiB padding is left out) */
    for (int u = 0; u < e->nunits; u++) {
        int64_t shard = e->us[u].layout.shard;
        if (s->opt_off[u] >= 0) {
            zero_ledger_add(&s->disk, ZERO_TAG_MASTER, 4 * shard);
            if (s->nparts > 1)
                zero_ledger_add(&s->disk, ZERO_TAG_OPTIM, 4 * shard * (s->nparts - 1));
        }
        if (s->par_off[u] >= 0)
            zero_ledger_add(&s->disk, ZERO_TAG_PARAMS, shard * (int64_t)e->csize);
    }
    /* rings */
    /* a slot: the optimizer record, then the stage the gradient (at most fp32)
     * comes in through and the compute-dtype parameters go out of */
    int64_t part = pad(s->chunk * 4), ppart = pad(s->chunk * 4);
    s->nslots = e->nvme.opt ? (int)z->offload_optimizer.buffer_count : 0;
    s->slots = calloc((size_t)(s->nslots > 0 ? s->nslots : 1), sizeof *s->slots);
    s->npslots = pbytes > 0 ? (int)z->offload_param.buffer_count : 0;
    s->pslots = calloc((size_t)(s->npslots > 0 ? s->npslots : 1), sizeof *s->pslots);
    if (!s->slots || !s->pslots)
        return zero_fail(err, ZERO_ENOMEM, "rank %d: NVMe rings", e->rank);
    for (int i = 0; i < s->nslots; i++) {
        if ((rc = slot_alloc(
                 e, &s->slots[i], s->nparts * part + ppart, z->offload_optimizer.pin_memory,
                 &s->opt, "zero_optimization.offload_optimizer.buffer_count", i, s->nslots, err)))
            return rc;
        if ((rc = e->be->event_create(e->bself, &s->slots[i].ev)))
            return engine_backend_error(e, rc, err, "NVMe buffer event");
    }
    for (int i = 0; i < s->npslots; i++) {
        if ((rc = slot_alloc(e, &s->pslots[i], pad(maxpar * (int64_t)e->csize), s->pinned, &s->par,
                             "zero_optimization.offload_param.buffer_count", i, s->npslots, err)))
            return rc;
        if (s->pinned && (rc = e->be->event_create(e->bself, &s->pslots[i].ev)))
            return engine_backend_error(e, rc, err, "NVMe parameter buffer event");
    }
    int64_t pbounce = pad(s->chunk * (int64_t)e->csize);
    s->bounce_bytes = s->nparts * part > pbounce ? s->nparts * part : pbounce;
    if ((rc = slot_alloc(e, &s->bounce, s->bounce_bytes, 0, s->opt.fd >= 0 ? &s->opt : &s->par,
                         NULL, 0, 0, err)))
        return rc;
    if (e->rank == 0 && !e->cfg.quiet && !zero_knob(ZERO_KNOB_NVME_QUIET)) {
        const struct swap_file *f = s->opt.fd >= 0 ? &s->opt : &s->par;
        fprintf(stderr,
                "libzero: NVMe offload: %s%s%s per rank (%lld + %lld bytes), %s, %s, chunks of "
                "%lld elements, %d + %d buffers\n",
                f->path, s->par.fd >= 0 && f != &s->par ? " and " : "",
                s->par.fd >= 0 && f != &s->par ? s->par.path : "", (long long)obytes,
                (long long)pbytes, aio_engine_name(s->aio),
                f->direct ? "O_DIRECT" : "buffered (the file system refuses O_DIRECT)",
                (long long)s->chunk, s->nslots, s->npslots);
    }
    return ZERO_OK;
}

static void finish_slot(struct nvme_swap *s, struct slot *sl)
{
    aio_finish(s->aio, sl->read);
    aio_finish(s->aio, sl->write);
    aio_finish(s->aio, sl->pwrite);
    sl->read = sl->write = sl->pwrite = NULL;
}

void nvme_close(struct zero_engine *e)
{
    struct nvme_swap *s = nv(e);
    if (!s)
        return;
    for (int i = 0; s->slots && i < s->nslots; i++) {
        finish_slot(s, &s->slots[i]);
        slot_free(e, &s->slots[i]);
    }
    for (int i = 0; s->pslots && i < s->npslots; i++) {
        finish_slot(s, &s->pslots[i]);
        slot_free(e, &s->pslots[i]);
    }
    slot_free(e, &s->bounce);
    aio_destroy(s->aio);
    close_file(&s->opt);
    close_file(&s->par);
    free(s->slots);
    free(s->pslots);
    free(s->opt_off);
    free(s->par_off);
    free(s->loaded);
    free(s->chunk_unit);
    free(s->chunk_begin);
    free(s);
    e->nvme.swap = NULL;
}

static void remove_file(struct swap_file *f)
{
    if (f->fd >= 0 && f->owned)
        unlink_ours(f);
    f->owned = 0;
}

void zero_engine_remove_swap_files(struct zero_engine *e)
{
    if (e && nv(e)) {
        remove_file(&nv(e)->opt);
        remove_file(&nv(e)->par);
    }
}

size_t zero_engine_swap_paths(const struct zero_engine *e, const char **paths, size_t cap)
{
    size_t n = 0;
    if (e && nv(e)) {
        const struct swap_file *files[2] = {&nv(e)->opt, &nv(e)->par};
        for (int i = 0; i < 2; i++)
            if (files[i]->fd >= 0 && files[i]->owned) {
                if (n < cap)
                    paths[n] = files[i]->path;
                n++;
            }
    }
    return n;
}

const struct zero_ledger *zero_engine_nvme_ledger(const struct zero_engine *e)
{
    static const struct zero_ledger none;
    return e->nvme.swap ? &nv(e)->disk : &none;
}

void zero_engine_nvme_io(const struct zero_engine *e, int64_t *read, int64_t *written)
{
    *read = *written = 0;
    if (e->nvme.swap)
        aio_counters(nv(e)->aio, read, written);
}

/* Every swap-file transfer starts here: ZERO_FAULT's nvme.read and nvme.write. */
static int start_io(struct aio_queue *aio, int fd, int write, void *buf, int64_t len, int64_t off,
                    struct aio_op **op)
{
    *op = NULL;
    if (zero_fault(write ? "nvme.write" : "nvme.read"))
        return EIO;
    return aio_start(aio, fd, write, buf, (size_t)len, off, op);
}

/* ---- synchronous transfers for the rare paths ---- */

static int sync_io(struct zero_engine *e, struct swap_file *f, int write, void *buf, int64_t len,
                   int64_t off, int u, const char *what, struct zero_error *err)
{
    struct aio_op *op;
    int rc = start_io(nv(e)->aio, f->fd, write, buf, len, off, &op);
    if (!rc)
        rc = aio_finish(nv(e)->aio, op);
    return rc ? io_fail(e, err, rc, f, write ? "writing" : "reading", u, what, off, len) : ZERO_OK;
}

static float **part_ptr(struct unit_states *us, int p)
{
    return p == 0 ? &us->master : p == 1 ? &us->exp_avg : &us->exp_avg_sq;
}

static const char *part_name(int p)
{
    return p == 0 ? "fp32 master" : "optimizer state";
}

int nvme_unit_load(struct zero_engine *e, int u, int read, struct zero_error *err)
{
    struct nvme_swap *s = nv(e);
    if (!s || s->loaded[u] || (s->opt_off[u] < 0 && s->par_off[u] < 0))
        return ZERO_OK;
    struct unit_states *us = &e->us[u];
    int64_t shard = us->layout.shard;
    int rc;
    s->loaded[u] = 1;
    for (int p = 0; s->opt_off[u] >= 0 && p < s->nparts; p++) {
        if ((rc = engine_host_alloc(e, (size_t)shard * 4, p ? ZERO_TAG_OPTIM : ZERO_TAG_MASTER,
                                    (void **)part_ptr(us, p), "unit states from NVMe", err)))
            return rc;
        memset(*part_ptr(us, p), 0, (size_t)shard * 4);
    }
    if (s->par_off[u] >= 0) {
        if ((rc = engine_host_alloc(e, (size_t)shard * e->csize, ZERO_TAG_PARAMS, &us->params,
                                    "parameter shard from NVMe", err)))
            return rc;
        memset(us->params, 0, (size_t)shard * e->csize);
    }
    for (int64_t b = 0; read && b < shard; b += s->chunk) {
        int64_t n = shard - b < s->chunk ? shard - b : s->chunk, stride = pad(n * 4);
        if (s->opt_off[u] >= 0) {
            int64_t off = s->opt_off[u] + chunk_record_off(s, b);
            if ((rc = sync_io(e, &s->opt, 0, s->bounce.buf, s->nparts * stride, off, u,
                              "optimizer chunk", err)))
                return rc;
            for (int p = 0; p < s->nparts; p++)
                memcpy(*part_ptr(us, p) + b, s->bounce.buf + p * stride, (size_t)n * 4);
        }
        if (s->par_off[u] >= 0) {
            int64_t off = s->par_off[u] + b * (int64_t)e->csize, len = pad(n * (int64_t)e->csize);
            if ((rc = sync_io(e, &s->par, 0, s->bounce.buf, len, off, u, "parameter shard", err)))
                return rc;
            memcpy(engine_at(e, us->params, b), s->bounce.buf, (size_t)n * e->csize);
        }
    }
    return ZERO_OK;
}

int nvme_unit_load_agreed(struct zero_engine *e, int u, int read, struct zero_error *err)
{
    if (!nv(e)) /* no NVMe offload on any rank: nothing to read, nothing to exchange */
        return ZERO_OK;
    int rc = nvme_unit_load(e, u, read, err);
    int first, xrc = engine_first_failed(e, rc, &first, err);
    if (rc || xrc || first < 0) /* rc's message names the swap file, the unit and the cause */
        return rc ? rc : xrc;
    nvme_unit_store(e, u, 0, &(struct zero_error){0}); /* drop what this rank read */
    const struct zero_optimization_config *z = &e->cfg.zero_optimization;
    char dirs[2 * sizeof z->offload_param.nvme_path + 8];
    snprintf(dirs, sizeof dirs, "%s%s%s", e->nvme.opt ? z->offload_optimizer.nvme_path : "",
             e->nvme.opt && e->nvme.param ? " and " : "",
             e->nvme.param ? z->offload_param.nvme_path : "");
    return zero_fail(err, ZERO_EIO,
                     "rank %d: rank %d could not read unit %s's states from its NVMe swap "
                     "files (libzero-*-rank%05d.swap under %s; rank %d's error names the "
                     "cause), so no rank went on to the collective that needs them",
                     e->rank, first, e->model->units[u]->name, first, dirs, first);
}

int nvme_unit_store(struct zero_engine *e, int u, int write, struct zero_error *err)
{
    struct nvme_swap *s = nv(e);
    if (!s || !s->loaded[u])
        return ZERO_OK;
    struct unit_states *us = &e->us[u];
    int64_t shard = us->layout.shard;
    int rc = ZERO_OK;
    /* write 2 (fast_init): the master and parameters only; the optimizer state
     * stays the sparse file's zeros */
    int parts = write == 2 ? 1 : s->nparts;
    for (int64_t b = 0; write && b < shard && !rc; b += s->chunk) {
        int64_t n = shard - b < s->chunk ? shard - b : s->chunk, stride = pad(n * 4);
        if (s->opt_off[u] >= 0) {
            memset(s->bounce.buf, 0, (size_t)(s->nparts * stride));
            for (int p = 0; p < parts; p++)
                memcpy(s->bounce.buf + p * stride, *part_ptr(us, p) + b, (size_t)n * 4);
            rc = sync_io(e, &s->opt, 1, s->bounce.buf, parts * stride,
                         s->opt_off[u] + chunk_record_off(s, b), u, part_name(parts - 1), err);
        }
        if (!rc && s->par_off[u] >= 0) {
            int64_t len = pad(n * (int64_t)e->csize);
            memset(s->bounce.buf, 0, (size_t)len);
            memcpy(s->bounce.buf, engine_at(e, us->params, b), (size_t)n * e->csize);
            rc = sync_io(e, &s->par, 1, s->bounce.buf, len, s->par_off[u] + b * (int64_t)e->csize,
                         u, "parameter shard", err);
        }
    }
    for (int p = 0; p < 3; p++) {
        engine_host_free(e, *part_ptr(us, p));
        *part_ptr(us, p) = NULL;
    }
    if (s->par_off[u] >= 0) {
        engine_host_free(e, us->params);
        us->params = NULL;
    }
    s->loaded[u] = 0;
    if (!rc && write && s->par_off[u] >= 0)
        rc = nvme_param_invalidate(e, err);
    return rc;
}

/* ---- the step's walk ---- */

static int64_t chunk_n(const struct zero_engine *e, int k)
{
    const struct nvme_swap *s = nv(e);
    int64_t left = e->us[s->chunk_unit[k]].layout.shard - s->chunk_begin[k];
    return left < s->chunk ? left : s->chunk;
}

static int issue_read(struct zero_engine *e, int k, struct zero_error *err)
{
    struct nvme_swap *s = nv(e);
    struct slot *sl = &s->slots[k % s->nslots];
    int u = s->chunk_unit[k];
    int64_t len = s->nparts * pad(chunk_n(e, k) * 4);
    int64_t off = s->opt_off[u] + chunk_record_off(s, s->chunk_begin[k]);
    int rc;
    /* the slot's previous chunk must be on disk before it is overwritten */
    if ((rc = aio_finish(s->aio, sl->write)) || (rc = aio_finish(s->aio, sl->pwrite))) {
        sl->write = sl->pwrite = NULL;
        return io_fail(e, err, rc, &s->opt, "writing", s->chunk_unit[k], "an earlier chunk", -1,
                       -1);
    }
    sl->write = sl->pwrite = NULL;
    rc = start_io(s->aio, s->opt.fd, 0, sl->buf, len, off, &sl->read);
    return rc ? io_fail(e, err, rc, &s->opt, "reading", u, "optimizer chunk", off, len) : ZERO_OK;
}

int nvme_stream_next(struct zero_engine *e, struct nvme_chunk *c, int *got, struct zero_error *err)
{
    struct nvme_swap *s = nv(e);
    *got = 0;
    if (!s || s->next_out >= s->nchunks)
        return ZERO_OK;
    int k = s->next_out, rc;
    /* pipeline_read: the chunks that follow are read while this one is updated,
     * leaving one buffer for the write behind */
    int ahead = e->cfg.zero_optimization.offload_optimizer.pipeline_read ? s->nslots - 1 : 1;
    if (ahead < 1)
        ahead = 1;
    while (s->next_read < s->nchunks && s->next_read < k + ahead)
        if ((rc = issue_read(e, s->next_read++, err)))
            return rc;
    struct slot *sl = &s->slots[k % s->nslots];
    int u = s->chunk_unit[k];
    int64_t n = chunk_n(e, k), stride = pad(n * 4);
    rc = aio_finish(s->aio, sl->read);
    sl->read = NULL;
    if (rc)
        return io_fail(e, err, rc, &s->opt, "reading", u, "optimizer chunk",
                       s->opt_off[u] + chunk_record_off(s, s->chunk_begin[k]), s->nparts * stride);
    *c = (struct nvme_chunk){.unit = u, .begin = s->chunk_begin[k], .n = n, .slot = k};
    c->master = (float *)sl->buf;
    c->exp_avg = s->nparts > 1 ? (float *)(sl->buf + stride) : NULL;
    c->exp_avg_sq = s->nparts > 2 ? (float *)(sl->buf + 2 * stride) : NULL;
    c->stage = sl->buf + s->nparts * pad(s->chunk * 4);
    c->params = s->par_off[u] >= 0 ? c->stage : NULL;
    c->ev = sl->ev;
    c->pinned = sl->pinned;
    s->next_out++;
    *got = 1;
    return ZERO_OK;
}

int nvme_stream_put(struct zero_engine *e, const struct nvme_chunk *c, struct zero_error *err)
{
    struct nvme_swap *s = nv(e);
    struct slot *sl = &s->slots[c->slot % s->nslots];
    int u = c->unit;
    int64_t len = s->nparts * pad(c->n * 4), off = s->opt_off[u] + chunk_record_off(s, c->begin);
    int rc = start_io(s->aio, s->opt.fd, 1, sl->buf, len, off, &sl->write);
    if (rc)
        return io_fail(e, err, rc, &s->opt, "writing", u, "optimizer chunk", off, len);
    if (c->params) {
        int64_t plen = pad(c->n * (int64_t)e->csize), poff = s->par_off[u] + c->begin * e->csize;
        if ((rc = start_io(s->aio, s->par.fd, 1, c->params, plen, poff, &sl->pwrite)))
            return io_fail(e, err, rc, &s->par, "writing", u, "parameter shard", poff, plen);
    }
    if (!e->cfg.zero_optimization.offload_optimizer.pipeline_write) {
        rc = aio_finish(s->aio, sl->write);
        sl->write = NULL;
        if (rc)
            return io_fail(e, err, rc, &s->opt, "writing", u, "optimizer chunk", off, len);
        rc = aio_finish(s->aio, sl->pwrite);
        sl->pwrite = NULL;
        if (rc)
            return io_fail(e, err, rc, &s->par, "writing", u, "parameter shard",
                           s->par_off[u] + c->begin * e->csize, pad(c->n * (int64_t)e->csize));
    }
    return ZERO_OK;
}

int nvme_stream_end(struct zero_engine *e, struct zero_error *err)
{
    struct nvme_swap *s = nv(e);
    if (!s)
        return ZERO_OK;
    int first = ZERO_OK;
    for (int i = 0; i < s->nslots; i++) {
        struct slot *sl = &s->slots[i];
        int r = aio_finish(s->aio, sl->read), w = aio_finish(s->aio, sl->write);
        int p = aio_finish(s->aio, sl->pwrite);
        sl->read = sl->write = sl->pwrite = NULL;
        if (!first && (r || w))
            first = io_fail(e, err, r ? r : w, &s->opt, r ? "reading" : "writing", -1,
                            "the last chunks", -1, -1);
        if (!first && p)
            first = io_fail(e, err, p, &s->par, "writing", -1, "the last parameter chunks", -1, -1);
    }
    s->next_out = s->next_read = 0;
    return first;
}

/* ---- stage-3 parameter reads ----
 *
 * A read's failure surfaces in nvme_param_shard of its own unit only: the
 * gather agrees on that status across the ranks before its all-gather
 * (stage3.c), so one rank's disk error stops every rank there. A read ahead
 * that is dropped unused (its buffer taken for another shard, or the step
 * invalidating the ring) is waited for but its error is moot: the shard is
 * read again for its gather, and fails there. */

static int pslot_of(const struct nvme_swap *s, int u)
{
    for (int i = 0; i < s->npslots; i++)
        if (s->pslots[i].unit == u)
            return i;
    return -1;
}

/* Empties slot sl: its read (if any) has landed and the gather's copy out of
 * it (if handed out) is done. */
static int pslot_drop(struct zero_engine *e, struct slot *sl, struct zero_error *err)
{
    struct nvme_swap *s = nv(e);
    aio_finish(s->aio, sl->read); /* a read ahead dropped unused: see above */
    sl->read = NULL;
    sl->unit = -1;
    int rc = sl->used && sl->ev ? e->be->event_synchronize(e->bself, sl->ev) : ZERO_OK;
    sl->used = 0;
    return rc ? engine_backend_error(e, rc, err, "waiting for a parameter copy") : ZERO_OK;
}

/* *slot: a buffer to read into: an empty one, else the least recently used
 * one that was handed out (its copy finished first), else (forced) the
 * oldest; -1 when none is free (not forced). */
static int pslot_free(struct zero_engine *e, int keep, int force, int *slot, struct zero_error *err)
{
    struct nvme_swap *s = nv(e);
    int best = -1;
    *slot = -1;
    for (int i = 0; i < s->npslots; i++) {
        struct slot *sl = &s->pslots[i];
        if (i == keep)
            continue;
        if (sl->unit < 0) {
            *slot = i;
            return ZERO_OK;
        }
        if ((sl->used || force) && (best < 0 || sl->age < s->pslots[best].age))
            best = i;
    }
    int rc = best >= 0 ? pslot_drop(e, &s->pslots[best], err) : ZERO_OK;
    if (!rc)
        *slot = best;
    return rc;
}

/* Queues the read of u's shard into slot i: 0 or an errno value. */
static int pread_start(struct zero_engine *e, int i, int u)
{
    struct nvme_swap *s = nv(e);
    struct slot *sl = &s->pslots[i];
    int64_t len = pad(e->us[u].layout.shard * (int64_t)e->csize);
    int rc = start_io(s->aio, s->par.fd, 0, sl->buf, len, s->par_off[u], &sl->read);
    if (rc)
        return rc;
    sl->unit = u;
    sl->used = 0;
    sl->age = ++s->clock;
    return 0;
}

int nvme_param_shard(struct zero_engine *e, int u, const void **shard, int *pinned,
                     struct zero_error *err)
{
    struct nvme_swap *s = nv(e);
    int64_t len = pad(e->us[u].layout.shard * (int64_t)e->csize);
    int i = pslot_of(s, u), rc;
    if (i < 0) {
        if ((rc = pslot_free(e, -1, 1, &i, err)))
            return rc;
        if ((rc = pread_start(e, i, u)))
            return io_fail(e, err, rc, &s->par, "reading", u, "parameter shard", s->par_off[u],
                           len);
    }
    /* read ahead: the units that follow in the recorded fetch order (one
     * that cannot be queued is left to its gather) */
    for (int pos = e->stage3.trace_pos;
         e->stage3.trace_recorded && !e->stage3.untraced && pos < e->stage3.trace_len; pos++) {
        int v = e->stage3.trace[pos], j;
        if (v == u || s->par_off[v] < 0 || pslot_of(s, v) >= 0)
            continue;
        if ((rc = pslot_free(e, i, 0, &j, err)))
            return rc;
        if (j < 0 || pread_start(e, j, v))
            break;
    }
    struct slot *sl = &s->pslots[i];
    rc = aio_finish(s->aio, sl->read);
    sl->read = NULL;
    if (rc) {
        sl->unit = -1;
        return io_fail(e, err, rc, &s->par, "reading", u, "parameter shard", s->par_off[u], len);
    }
    if (sl->used && sl->ev && (rc = e->be->event_synchronize(e->bself, sl->ev)))
        return engine_backend_error(e, rc, err, "waiting for a parameter copy");
    sl->used = 1;
    sl->age = ++s->clock;
    *shard = sl->buf;
    *pinned = s->pinned;
    return ZERO_OK;
}

void *nvme_param_consumed_event(struct zero_engine *e, int u)
{
    struct nvme_swap *s = nv(e);
    int i = s ? pslot_of(s, u) : -1;
    return i >= 0 ? s->pslots[i].ev : NULL;
}

int nvme_param_invalidate(struct zero_engine *e, struct zero_error *err)
{
    struct nvme_swap *s = nv(e);
    int first = ZERO_OK;
    for (int i = 0; s && i < s->npslots; i++) {
        int rc = pslot_drop(e, &s->pslots[i], first ? NULL : err);
        first = first ? first : rc;
    }
    return first;
}

void nvme_param_file(const struct zero_engine *e, int rank, char *path, size_t len)
{
    swap_file_name(path, len, e->cfg.zero_optimization.offload_param.nvme_path, "param", rank);
}

/* Inputs that must be regular files, and writing an output file so that nothing already on disk is
 * lost and nothing that is not a regular file is ever replaced: every writer of the library
 * (safetensors, checkpoints' `latest`, traces, SVG charts, token shards) goes
 * through this.
 *
 *     struct zero_replace r;
 *     if (zero_replace_begin(&r, path, err)) return err->code;  // refuses a FIFO, device, dir
 *     ... write(r.fd, ...) or fprintf(zero_replace_stream(&r, err), ...) ...
 *     return zero_replace_commit(&r, err);                        // fsync, re-check, rename
 *
 * The bytes go to "<path>.tmp.<random>" next to path (created O_EXCL, so a FIFO
 * or link planted there is never opened); commit fsyncs it, checks path once
 * more just before the rename, renames it onto path and fsyncs the directory.
 * Any failure removes the temporary and leaves path as it was. */
#ifndef ZERO_FILE_REPLACE_H
#define ZERO_FILE_REPLACE_H

#include <stdio.h>

#include "zero/error.h"

struct zero_replace {
    char *path; /* the output */
    char *tmp;  /* the temporary next to it */
    int fd;     /* open on tmp, -1 once closed */
    FILE *f;    /* a stream over fd, when zero_replace_stream made one */
};

/* ZERO_OK when path does not exist, is a regular file, or is a symlink to a
 * regular file or to nothing (the link is what gets replaced); ZERO_EINVAL
 * "PATH: is a FIFO, not a regular file: refusing to replace it" for a
 * directory, device node, FIFO, socket or a symlink to one of those. */
int zero_replace_check(const char *path, struct zero_error *err);

/* For inputs: ZERO_OK when path is (or links to) a regular file; a directory,
 * FIFO (whose open would wait for a writer) or device is ZERO_EINVAL "PATH: is
 * a directory, not a regular file"; a missing file is left to the open (ZERO_OK). */
int zero_input_check(const char *path, struct zero_error *err);

/* Opens an input for reading: a file descriptor, or -1 with err (ZERO_EIO
 * "PATH: cannot open: why", or ZERO_EINVAL as zero_input_check for anything
 * but a regular file, found without waiting for a FIFO's writer). A failed
 * open leaves errno set (ENOENT: the file is missing). */
int zero_input_open(const char *path, struct zero_error *err);

/* Checks path and creates the temporary. */
int zero_replace_begin(struct zero_replace *r, const char *path, struct zero_error *err);

/* A stdio stream over the temporary (made once); NULL with err on failure. */
FILE *zero_replace_stream(struct zero_replace *r, struct zero_error *err);

/* Flushes, fsyncs and closes the temporary, checks path again and renames the
 * temporary onto it; on failure the temporary is removed and path untouched. */
int zero_replace_commit(struct zero_replace *r, struct zero_error *err);

/* Closes and removes the temporary; path is untouched. Safe to call twice. */
void zero_replace_abort(struct zero_replace *r);

#endif

/* What this process may still allocate: the one place the core asks the
 * operating system (memory_limit.c). Not installed. */
#ifndef ZERO_MEMORY_LIMIT_H
#define ZERO_MEMORY_LIMIT_H

#include <stdint.h>

struct memory_limit {
    int64_t bytes;    /* the smallest of the limits found; -1 when none is known */
    char source[160]; /* which one, with its numbers: "RLIMIT_AS 4.00 GiB, 1.21 GiB mapped" */
};

/* The least of: the cgroup's limit less its usage (v2 memory.max -
 * memory.current, v1 memory.limit_in_bytes - memory.usage_in_bytes),
 * /proc/meminfo's MemAvailable, and RLIMIT_AS less the address space already
 * mapped (/proc/self/status VmSize). Limits that cannot be read are skipped. */
void memory_limit_query(struct memory_limit *out);

#endif

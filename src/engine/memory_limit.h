/* What this process may still allocate, and with whom it shares each limit: the one
 * place the core asks the operating system (memory_limit.c). Not installed. */
#ifndef ZERO_MEMORY_LIMIT_H
#define ZERO_MEMORY_LIMIT_H

#include <stdint.h>

/* Who a limit binds: this process alone (RLIMIT_AS), every process of its memory
 * cgroup (the cgroup's limit less its usage), every process of the machine
 * (/proc/meminfo's MemAvailable). */
enum memory_scope { MEMORY_PROCESS = 0, MEMORY_CGROUP, MEMORY_NODE, MEMORY_SCOPES };

struct memory_limits {
    int64_t bytes[MEMORY_SCOPES];    /* what is left; -1 when that limit is not known */
    char source[MEMORY_SCOPES][160]; /* which one, with its numbers: "RLIMIT_AS 4.00 GiB, ..." */
    /* equal on the processes that share the limit (0 for the process's own): the
     * machine's boot id hashed, with the cgroup's path for the cgroup */
    uint64_t shared_by[MEMORY_SCOPES];
};

/* Fills every scope; a limit that cannot be read (another OS) is -1. */
void memory_limits_query(struct memory_limits *out);

#endif

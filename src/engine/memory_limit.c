/* See memory_limit.h. Linux's files and POSIX's getrlimit; elsewhere only
 * RLIMIT_AS is consulted (without the mapped part). */
#include "memory_limit.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

/* The first number after "key" in a text file (a line starting with key), in
 * bytes (scale: 1024 for "kB" files); -1 if absent. */
static int64_t number_after(const char *path, const char *key, int64_t scale)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[512];
    int64_t v = -1;
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, klen) == 0) {
            long long x;
            if (sscanf(line + klen, " %lld", &x) == 1 && x >= 0 && x <= INT64_MAX / scale)
                v = (int64_t)x * scale;
            break;
        }
    fclose(f);
    return v;
}

/* A file holding one number ("max" or a huge one: no limit, -1). */
static int64_t file_number(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long long x = -1;
    if (fscanf(f, "%lld", &x) != 1)
        x = -1;
    fclose(f);
    return x >= 0 && x < (1LL << 60) ? (int64_t)x : -1;
}

/* FNV-1a over s, continued from h */
static uint64_t hash_text(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

/* The machine this process runs on: its boot id (network namespaces on one machine share
 * it, and their memory too); the host name where there is none. */
static uint64_t machine_id(void)
{
    char id[128] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f || !fgets(id, sizeof id, f))
        gethostname(id, sizeof id - 1);
    if (f)
        fclose(f);
    return hash_text(0xcbf29ce484222325ULL, id);
}

/* /proc/self/cgroup: "0::/path" (v2) or "N:memory:/path" (v1); the tightest memory
 * cgroup line with a limit. */
static void cgroup_limit(struct memory_limits *out, uint64_t machine)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return;
    char line[1024], path[1200];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        const char *rel;
        int v2 = strncmp(line, "0::", 3) == 0;
        if (v2)
            rel = line + 3;
        else if ((rel = strstr(line, ":memory:")) != NULL)
            rel += 8;
        else
            continue;
        int64_t max, used;
        if (v2) {
            snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max", rel);
            max = file_number(path);
            snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.current", rel);
            used = file_number(path);
        } else {
            snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", rel);
            max = file_number(path);
            snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.usage_in_bytes", rel);
            used = file_number(path);
        }
        if (max < 0)
            continue;
        if (used < 0 || used > max)
            used = used > max ? max : 0;
        if (out->bytes[MEMORY_CGROUP] >= 0 && max - used >= out->bytes[MEMORY_CGROUP])
            continue;
        out->bytes[MEMORY_CGROUP] = max - used;
        snprintf(out->source[MEMORY_CGROUP], sizeof out->source[MEMORY_CGROUP],
                 "cgroup %s %.60s limit %.2f GiB, %.2f GiB in use",
                 v2 ? "v2 memory.max" : "v1 memory.limit_in_bytes", rel, (double)max / GIB,
                 (double)used / GIB);
        out->shared_by[MEMORY_CGROUP] = hash_text(machine, rel);
    }
    fclose(f);
}

void memory_limits_query(struct memory_limits *out)
{
    memset(out, 0, sizeof *out);
    for (int s = 0; s < MEMORY_SCOPES; s++)
        out->bytes[s] = -1;
    const uint64_t machine = machine_id();
    cgroup_limit(out, machine);
    out->bytes[MEMORY_NODE] = number_after("/proc/meminfo", "MemAvailable:", 1024);
    out->shared_by[MEMORY_NODE] = machine;
    snprintf(out->source[MEMORY_NODE], sizeof out->source[MEMORY_NODE],
             "/proc/meminfo MemAvailable %.2f GiB", (double)out->bytes[MEMORY_NODE] / GIB);
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
        int64_t cap = r.rlim_cur > (rlim_t)INT64_MAX ? INT64_MAX : (int64_t)r.rlim_cur;
        int64_t mapped = number_after("/proc/self/status", "VmSize:", 1024);
        if (mapped < 0 || mapped > cap)
            mapped = mapped > cap ? cap : 0;
        out->bytes[MEMORY_PROCESS] = cap - mapped;
        snprintf(out->source[MEMORY_PROCESS], sizeof out->source[MEMORY_PROCESS],
                 "RLIMIT_AS (ulimit -v) %.2f GiB, %.2f GiB already mapped", (double)cap / GIB,
                 (double)mapped / GIB);
    }
}

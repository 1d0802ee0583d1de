/* See zero/fault.h. The specification is parsed once; passages are counted per
 * site name in a small table (a few dozen sites exist), under a mutex because
 * the host's threads may pass sites too. */
#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zero/error.h"
#include "zero/fault.h"
#include "zero/knobs.h"

#define MAX_SITES 128
#define SITE_LEN 48

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int parsed, active; /* active: ZERO_FAULT or ZERO_FAULT_LOG is set */
static int rank_now, world_now = 1;
static char want_site[SITE_LEN], want_ranks[128];
static long want_nth = 1;
static const char *log_path;
static struct {
    char name[SITE_LEN];
    long passages;
} sites[MAX_SITES];
static int nsites;
static int bad_spec; /* ZERO_FAULT is set but not SITE:RANKS[:NTH]: zero_fault_check fails */

/* RANKS: "all", "last" or a list of ranks like "0,2" */
static int ranks_valid(const char *ranks)
{
    if (strcmp(ranks, "all") == 0 || strcmp(ranks, "last") == 0)
        return 1;
    for (const char *p = ranks;;) {
        char *end;
        if (*p < '0' || *p > '9')
            return 0;
        (void)strtol(p, &end, 10);
        if (*end == '\0')
            return 1;
        if (*end != ',')
            return 0;
        p = end + 1;
    }
}

static void parse(void)
{
    parsed = 1;
    const char *spec = zero_knob(ZERO_KNOB_FAULT);
    log_path = zero_knob(ZERO_KNOB_FAULT_LOG);
    if (log_path && !log_path[0])
        log_path = NULL;
    active = log_path != NULL;
    if (!spec || !spec[0])
        return;
    const char *c1 = strchr(spec, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    size_t slen = c1 ? (size_t)(c1 - spec) : 0;
    size_t rlen = c1 ? (c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1)) : 0;
    char *end = NULL;
    long nth = c2 ? strtol(c2 + 1, &end, 10) : 1;
    if (!c1 || slen == 0 || slen >= SITE_LEN || rlen == 0 || rlen >= sizeof want_ranks ||
        (c2 && (*end != '\0' || nth < 1))) {
        bad_spec = 1;
        return;
    }
    memcpy(want_site, spec, slen);
    memcpy(want_ranks, c1 + 1, rlen);
    if (!ranks_valid(want_ranks)) {
        bad_spec = 1;
        want_site[0] = '\0';
        return;
    }
    want_nth = nth;
    active = 1;
}

static int rank_chosen(void)
{
    if (strcmp(want_ranks, "all") == 0)
        return 1;
    if (strcmp(want_ranks, "last") == 0)
        return rank_now == world_now - 1;
    for (const char *p = want_ranks; *p;) {
        char *end;
        long r = strtol(p, &end, 10);
        if (end == p)
            return 0;
        if (r == rank_now)
            return 1;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return 0;
    }
    return 0;
}

void zero_fault_set_rank(int rank, int world)
{
    pthread_mutex_lock(&lock);
    rank_now = rank;
    world_now = world > 0 ? world : 1;
    pthread_mutex_unlock(&lock);
}

/* the site's passage count after this passage; logs a site's first passage */
static long pass(const char *site)
{
    int i = 0;
    while (i < nsites && strcmp(sites[i].name, site) != 0)
        i++;
    if (i == nsites) {
        if (nsites == MAX_SITES)
            return 0;
        snprintf(sites[nsites++].name, SITE_LEN, "%s", site);
        FILE *f = log_path ? fopen(log_path, "a") : NULL;
        if (f) {
            fprintf(f, "%s %d\n", site, rank_now);
            fclose(f);
        }
    }
    return ++sites[i].passages;
}

int zero_fault(const char *site)
{
    if (parsed && !active)
        return 0;
    pthread_mutex_lock(&lock);
    if (!parsed)
        parse();
    int fire = 0;
    if (active) {
        long n = pass(site);
        fire = want_site[0] && strcmp(site, want_site) == 0 && n == want_nth && rank_chosen();
        if (fire)
            fprintf(stderr, "libzero: rank %d: ZERO_FAULT: %s fails here (passage %ld)\n", rank_now,
                    site, n);
    }
    pthread_mutex_unlock(&lock);
    if (fire)
        errno = EIO;
    return fire;
}

int zero_fault_fail_text(char *why, size_t why_len, const char *who, const char *site)
{
    snprintf(why, why_len, "%s: rank %d: injected fault at %s (ZERO_FAULT)", who, rank_now, site);
    return ZERO_EIO;
}

int zero_fault_check(struct zero_error *err)
{
    pthread_mutex_lock(&lock);
    if (!parsed)
        parse();
    const int bad = bad_spec;
    pthread_mutex_unlock(&lock);
    if (bad)
        return zero_fail(err, ZERO_EINVAL,
                         "ZERO_FAULT=%s: expected SITE:RANKS[:NTH] (RANKS all, last or a list "
                         "like 0,2; NTH from 1; docs/faults.md)",
                         zero_knob(ZERO_KNOB_FAULT));
    return ZERO_OK;
}

/*
 * source_rapl.c - CPU package and DRAM energy from the powercap RAPL
 * counters (/sys/class/powercap/intel-rapl:N[:M]/energy_uj; AMD Zen
 * processors are served by the same driver and names).
 *
 * Energy is a total since open(): open() takes every counter's value as the
 * baseline (and so finds out whether the counters are readable at all).
 * Power needs the time of both ends of an interval, and open() is not given
 * the sampler's clock, so the first read() is the power baseline: power is
 * NAN on the first read and the energy used since the previous read divided
 * by the time since it afterwards.
 *
 * The counters are unsigned and wrap at max_energy_range_uj (minutes at
 * full power on big packages); a reading below the previous one is taken as
 * one wrap.  Reads are far more frequent than wraps, so more than one wrap
 * between two reads is not considered.
 */
#include "sources/source.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sources/sysfs.h"

/* Eight sockets with a package and a dram domain each fit easily. */
enum { MAX_RAPL_DOMAINS = 64 };

enum domain_kind { DOMAIN_PACKAGE, DOMAIN_DRAM };

struct rapl_domain {
    int package;       /* N of intel-rapl:N */
    int subzone;       /* M of intel-rapl:N:M; -1 for the package itself */
    enum domain_kind kind;
    char *energy_path;
    uint64_t max_range_uj; /* where the counter wraps; 0: unknown */
    uint64_t last_uj;      /* the counter at the last successful read (or open) */
    uint64_t total_uj;     /* energy since open */
    int64_t last_ns;       /* now_ns of the last successful read */
    int timed;             /* last_ns is set: power can be computed */
};

struct rapl_state {
    int count;
    int has_dram;
    struct rapl_domain domain[];
};

/*
 * "intel-rapl:N" or "intel-rapl:N:M".  The "intel-rapl-mmio:N" zones of
 * some Intel client parts expose the same package counter a second time
 * (for power limits, not accounting) and do not match.
 */
static int parse_zone_name(const char *name, int *package, int *subzone) {
    static const char prefix[] = "intel-rapl:";
    if (strncmp(name, prefix, sizeof prefix - 1) != 0)
        return -1;
    const char *p = name + sizeof prefix - 1;
    int numbers[2] = {-1, -1}, count = 0;
    while (count < 2) {
        if (*p < '0' || *p > '9')
            return -1;
        long n = 0;
        while (*p >= '0' && *p <= '9') {
            n = n * 10 + (*p++ - '0');
            if (n > INT_MAX)
                return -1;
        }
        numbers[count++] = (int)n;
        if (*p == '\0')
            break;
        if (*p++ != ':')
            return -1;
    }
    if (*p != '\0')
        return -1;
    *package = numbers[0];
    *subzone = numbers[1];
    return 0;
}

static int domain_order(const void *a_, const void *b_) {
    const struct rapl_domain *a = a_, *b = b_;
    if (a->package != b->package)
        return a->package < b->package ? -1 : 1;
    return a->subzone < b->subzone ? -1 : a->subzone > b->subzone;
}

/*
 * Why energy_uj cannot be read.  Since the fix for CVE-2020-8694 (Linux
 * 5.10 and the stable kernels it went back to) the file is mode 0400: the
 * permission error is the usual case and has a known remedy.
 */
static void unreadable_reason(char *reason, size_t cap, const char *path, int neg_errno) {
    if (neg_errno == -EACCES || neg_errno == -EPERM)
        snprintf(reason, cap,
                 "energy_uj is readable by root only since Linux 5.10 (CVE-2020-8694): run as root or grant read "
                 "access with a udev rule");
    else
        sps__reason_errno(reason, cap, "energy_uj", path, neg_errno);
}

static void free_domains(struct rapl_domain *domain, int count) {
    for (int i = 0; i < count; i++)
        free(domain[i].energy_path);
}

static void rapl_close(void *state_) {
    struct rapl_state *state = state_;
    if (!state)
        return;
    free_domains(state->domain, state->count);
    free(state);
}

/* The package and dram zones under dir, unsorted.  Returns how many, or -1
 * when out of memory. */
static int find_domains(const char *dir, struct rapl_domain *domain) {
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && count < MAX_RAPL_DOMAINS) {
        int package, subzone;
        char path[PATH_MAX], name[32];
        if (parse_zone_name(e->d_name, &package, &subzone) != 0)
            continue;
        if (sps__path(path, sizeof path, "", "%s/%s/name", dir, e->d_name) != 0 ||
            sps__read_line(path, name, sizeof name) <= 0)
            continue;
        struct rapl_domain *dom = &domain[count];
        memset(dom, 0, sizeof *dom);
        if (strncmp(name, "package-", 8) == 0)
            dom->kind = DOMAIN_PACKAGE;
        else if (strcmp(name, "dram") == 0)
            dom->kind = DOMAIN_DRAM;
        else
            continue; /* core and uncore are parts of the package; psys is the whole platform */
        if (sps__path(path, sizeof path, "", "%s/%s/energy_uj", dir, e->d_name) != 0)
            continue;
        dom->energy_path = strdup(path);
        if (!dom->energy_path) {
            closedir(d);
            free_domains(domain, count);
            return -1;
        }
        dom->package = package;
        dom->subzone = subzone;
        uint64_t range;
        if (sps__path(path, sizeof path, "", "%s/%s/max_energy_range_uj", dir, e->d_name) == 0 &&
            sps__read_u64(path, &range) == 0)
            dom->max_range_uj = range;
        count++;
    }
    closedir(d);
    return count;
}

static int rapl_open(const struct sps__source_ctx *ctx, void **state_out, char *reason, size_t cap) {
    *state_out = NULL;
    char dir[PATH_MAX];
    struct rapl_state *state = calloc(1, sizeof *state + MAX_RAPL_DOMAINS * sizeof state->domain[0]);
    if (!state) {
        snprintf(reason, cap, "out of memory");
        return -1;
    }
    int count = 0;
    if (sps__path(dir, sizeof dir, ctx->root, "/sys/class/powercap") == 0)
        count = find_domains(dir, state->domain);
    if (count < 0) {
        free(state);
        snprintf(reason, cap, "out of memory");
        return -1;
    }
    qsort(state->domain, (size_t)count, sizeof state->domain[0], domain_order);

    /* The baseline of every counter.  A package domain that cannot be read
     * makes the source unavailable; a dram domain that cannot is left out
     * (its metrics NAN). */
    int packages = 0;
    char dram_note[160] = "";
    for (int i = 0; i < count; i++) {
        struct rapl_domain *dom = &state->domain[i];
        int rc = sps__read_u64(dom->energy_path, &dom->last_uj);
        if (rc != 0 && dom->kind == DOMAIN_PACKAGE) {
            unreadable_reason(reason, cap, dom->energy_path, rc);
            free_domains(state->domain, count);
            free(state);
            return -1;
        }
        if (rc != 0) {
            if (!dram_note[0])
                unreadable_reason(dram_note, sizeof dram_note, dom->energy_path, rc);
            free(dom->energy_path);
            dom->energy_path = NULL;
            continue;
        }
        packages += dom->kind == DOMAIN_PACKAGE;
        state->has_dram |= dom->kind == DOMAIN_DRAM;
    }
    int kept = 0;
    for (int i = 0; i < count; i++)
        if (state->domain[i].energy_path)
            state->domain[kept++] = state->domain[i];
    state->count = kept;
    if (packages == 0) {
        snprintf(reason, cap,
                 "no RAPL domains under /sys/class/powercap (the intel_rapl driver is not loaded, or this is a "
                 "virtual machine)");
        rapl_close(state);
        return -1;
    }
    if (dram_note[0])
        snprintf(reason, cap, "dram left out: %s", dram_note);
    else if (!state->has_dram)
        snprintf(reason, cap, "no dram domain: dram metrics unavailable");
    else if (cap > 0)
        reason[0] = '\0';
    *state_out = state;
    return 0;
}

/* Energy used since the previous reading of a counter that wraps at
 * max_range_uj (0: unknown, when a lower reading can only be a reset). */
static uint64_t energy_delta_uj(uint64_t previous, uint64_t now, uint64_t max_range_uj) {
    if (now >= previous)
        return now - previous;
    if (max_range_uj == 0)
        return now;
    return now + max_range_uj - previous;
}

struct group_sum {
    int domains;    /* of this kind */
    int failed;     /* could not be read this time */
    int untimed;    /* no previous timed read: no power */
    uint64_t total_uj;
    double watts;
};

/*
 * A domain that cannot be read makes its group's energy and power NAN for
 * this read (a sum without it would be too low); its counter keeps its last
 * value, so the next good read counts the energy of the gap.  The read
 * fails only when no domain could be read.
 */
static int rapl_read(void *state_, const struct sps__source_ctx *ctx, struct sps__sample *s, int64_t now_ns,
                     char *reason, size_t cap) {
    (void)ctx;
    struct rapl_state *state = state_;
    struct group_sum group[2] = {{0}, {0}};
    int read_ok = 0, first_error = 0;
    const char *first_failed = NULL;
    for (int i = 0; i < state->count; i++) {
        struct rapl_domain *dom = &state->domain[i];
        struct group_sum *g = &group[dom->kind];
        g->domains++;
        uint64_t value;
        int rc = sps__read_u64(dom->energy_path, &value);
        if (rc != 0) {
            g->failed++;
            if (!first_failed) {
                first_failed = dom->energy_path;
                first_error = rc;
            }
            continue;
        }
        read_ok++;
        uint64_t delta = energy_delta_uj(dom->last_uj, value, dom->max_range_uj);
        dom->total_uj += delta;
        g->total_uj += dom->total_uj;
        if (dom->timed && now_ns > dom->last_ns)
            g->watts += (double)delta / 1e6 / ((double)(now_ns - dom->last_ns) / 1e9);
        else
            g->untimed++;
        dom->last_uj = value;
        dom->last_ns = now_ns;
        dom->timed = 1;
    }
    static const int energy_slot[2] = {SPS_M_CPU_PACKAGE_ENERGY_JOULES, SPS_M_DRAM_ENERGY_JOULES};
    static const int power_slot[2] = {SPS_M_CPU_PACKAGE_POWER_WATTS, SPS_M_DRAM_POWER_WATTS};
    for (int k = 0; k < 2; k++) {
        const struct group_sum *g = &group[k];
        int complete = g->domains > 0 && g->failed == 0;
        s->host[energy_slot[k]] = complete ? (double)g->total_uj / 1e6 : NAN;
        s->host[power_slot[k]] = complete && g->untimed == 0 ? g->watts : NAN;
    }
    if (read_ok == 0) {
        unreadable_reason(reason, cap, first_failed, first_error);
        return -1;
    }
    return 0;
}

const struct sps__source sps__source_rapl = {
    .id = SPS_SOURCE_RAPL,
    .name = "rapl",
    .what = "CPU package and DRAM energy from the powercap RAPL counters",
    .is_gpu = 0,
    .slow = 0,
    .open = rapl_open,
    .read = rapl_read,
    .close = rapl_close,
};

/*
 * bench_sites.c - sps_site_get() for names known only at run time (the
 * Python module makes a site per new name through it): the cost per lookup
 * of a new name and of an existing one, with 1k, 100k and 1M distinct
 * names, against the linked list the library searched before (the
 * baseline, copied below: list_site_get), and the workload's whole cost
 * of a new name with the library (the site and its first zone, which
 * interns the name in the record; past the record's 4096 names the zone
 * finds the table full and goes to the sink, which is what a workload
 * with that many names pays).
 *
 * Each round runs in a fresh fork child (the library's sites live as long
 * as the process), the table and the list alternating, and times the
 * child's CPU.  Medians of the rounds with their ranges, and the ratio.
 * The list is quadratic: past --list-max names (default 100,000; 80k took
 * 21 s of a workload) it is not run and the line says so.
 *
 *     bench_sites [--rounds R] [--list-max N]
 */
#define _GNU_SOURCE

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_rounds.h"
#include "stepscope.h"

/* ---- the baseline: sps_site_get() as it was (a list searched in full
 * for each name, under the process lock), kept here only to compare ---- */
struct list_site {
    struct sps_site site;
    struct list_site *next;
    char name[];
};
static struct list_site *list_sites;
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;

static struct sps_site *list_site_get(const char *name, enum sps_kind kind) {
    if (!name || !name[0])
        return NULL;
    pthread_mutex_lock(&list_lock);
    struct list_site *d = list_sites;
    for (; d; d = d->next)
        if (d->site.kind == (uint32_t)kind && strcmp(d->name, name) == 0)
            break;
    if (!d) {
        size_t len = strlen(name);
        d = calloc(1, sizeof *d + len + 1);
        if (d) {
            memcpy(d->name, name, len + 1);
            d->site.name = d->name;
            d->site.file = "";
            d->site.func = "";
            d->site.kind = (uint32_t)kind;
            d->next = list_sites;
            list_sites = d;
        }
    }
    pthread_mutex_unlock(&list_lock);
    return d ? &d->site : NULL;
}
/* ---- end of the baseline ---- */

enum impl { TABLE, LIST, TABLE_FIRST_ZONE };

/* What one child measures: ns per new name, ns per existing name. */
struct figures {
    double new_ns, existing_ns;
};

static void name_of(char *buf, size_t cap, size_t k) {
    snprintf(buf, cap, "layer.%zu.forward", k);
}

/* In the child: n new names, then each of them again (in another order). */
static struct figures measure(enum impl impl, size_t n) {
    char name[48];
    struct figures f;
    uint64_t t = bench_thread_ns();
    for (size_t k = 0; k < n; k++) {
        name_of(name, sizeof name, k);
        struct sps_site *s = impl == LIST ? list_site_get(name, SPS_KIND_ZONE) : sps_site_get(name, SPS_KIND_ZONE);
        if (!s)
            exit(3);
        if (impl == TABLE_FIRST_ZONE)
            sps_zone_end(sps_zone_begin(s));
    }
    f.new_ns = (double)(bench_thread_ns() - t) / (double)n;
    t = bench_thread_ns();
    for (size_t i = 0; i < n; i++) {
        name_of(name, sizeof name, (i * 7919u) % n);
        struct sps_site *s = impl == LIST ? list_site_get(name, SPS_KIND_ZONE) : sps_site_get(name, SPS_KIND_ZONE);
        if (!s)
            exit(3);
    }
    f.existing_ns = (double)(bench_thread_ns() - t) / (double)n;
    return f;
}

/* One round of impl with n names in a fresh child. */
static struct figures run_child(enum impl impl, size_t n) {
    int fds[2];
    struct figures f = {-1, -1};
    if (pipe(fds) != 0)
        return f;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        struct figures got = measure(impl, n);
        _exit(write(fds[1], &got, sizeof got) == (ssize_t)sizeof got ? 0 : 2);
    }
    close(fds[1]);
    if (pid < 0 || read(fds[0], &f, sizeof f) != (ssize_t)sizeof f)
        f.new_ns = f.existing_ns = -1;
    close(fds[0]);
    int status;
    if (pid > 0)
        waitpid(pid, &status, 0);
    return f;
}

static void print_line(const char *what, size_t n, const char *impl, struct bench_summary s, double total_s) {
    printf("%-9s %8zu names  %-28s %10.1f ns/lookup (range %.1f..%.1f)  all %zu: %.3f s\n", what, n, impl, s.median,
           s.min, s.max, n, total_s);
}

int main(int argc, char **argv) {
    int rounds = 5;
    size_t list_max = 100000;
    for (int i = 1; i < argc; i++) {
        char *end;
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > BENCH_MAX_ROUNDS) {
                fprintf(stderr, "bench_sites: --rounds wants 1..%d, not %s\n", BENCH_MAX_ROUNDS, argv[i]);
                return 2;
            }
            rounds = (int)v;
        } else if (strcmp(argv[i], "--list-max") == 0 && i + 1 < argc) {
            unsigned long long v = strtoull(argv[++i], &end, 10);
            if (*end || !argv[i][0] || argv[i][0] == '-') {
                fprintf(stderr, "bench_sites: --list-max wants a number of names, not %s\n", argv[i]);
                return 2;
            }
            list_max = (size_t)v;
        } else {
            fprintf(stderr, "usage: bench_sites [--rounds R] [--list-max N]\n");
            return 2;
        }
    }
    unsetenv("STEPSCOPE_RUN_DIR"); /* the record in memory: no files */
    const size_t sizes[] = {1000, 100000, 1000000};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        int with_list = n <= list_max;
        double tn[BENCH_MAX_ROUNDS], te[BENCH_MAX_ROUNDS], ln[BENCH_MAX_ROUNDS], le[BENCH_MAX_ROUNDS],
            zn[BENCH_MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            /* alternate which goes first: the machine's noise is shared */
            struct figures l = {0, 0}, t, z;
            if (with_list && r % 2)
                l = run_child(LIST, n);
            t = run_child(TABLE, n);
            z = run_child(TABLE_FIRST_ZONE, n);
            if (with_list && !(r % 2))
                l = run_child(LIST, n);
            if (t.new_ns < 0 || z.new_ns < 0 || l.new_ns < 0) {
                fprintf(stderr, "bench_sites: a round's child failed\n");
                return 1;
            }
            tn[r] = t.new_ns, te[r] = t.existing_ns, zn[r] = z.new_ns;
            ln[r] = l.new_ns, le[r] = l.existing_ns;
        }
        struct bench_summary stn = bench_summarise(tn, rounds), ste = bench_summarise(te, rounds),
                             szn = bench_summarise(zn, rounds);
        print_line("new", n, "table (sps_site_get)", stn, stn.median * (double)n * 1e-9);
        print_line("new", n, "table + first zone", szn, szn.median * (double)n * 1e-9);
        if (with_list) {
            struct bench_summary sln = bench_summarise(ln, rounds), sle = bench_summarise(le, rounds);
            print_line("new", n, "list (baseline)", sln, sln.median * (double)n * 1e-9);
            print_line("existing", n, "table (sps_site_get)", ste, ste.median * (double)n * 1e-9);
            print_line("existing", n, "list (baseline)", sle, sle.median * (double)n * 1e-9);
            printf("  ratio list/table at %zu names: new %.1fx, existing %.1fx\n", n, sln.median / stn.median,
                   sle.median / ste.median);
        } else {
            print_line("existing", n, "table (sps_site_get)", ste, ste.median * (double)n * 1e-9);
            printf("  list (baseline) not run at %zu names: quadratic (over --list-max %zu)\n", n, list_max);
        }
    }
    return 0;
}

/*
 * bench_compare.c - `stepscope compare` on big runs: what reading two
 * reports and comparing them costs, in time and peak memory, at 100,000
 * and 1,000,000 steps a side, against the method it replaced.
 *
 * Each size gets two synthetic report.json files laid out as stepscope
 * writes them (indented rows with pid, tid, start, a duration of whole
 * nanoseconds, warm-up, four zones' self times, a value and a counter:
 * about 515 bytes a row).  Each case runs in a child process, so its peak
 * RSS is its own (wait4):
 *
 *   new  sps__cmp_sides_load (the report model's streaming reader, rows
 *        handed over as read, the two sides on two threads), then
 *        sps__cmp_build (run summaries: selection, no resampling);
 *   old  the reader before it (jansson's whole document tree, rows walked
 *        from it) and the comparison before it (Mann-Whitney U over the
 *        pooled steps and a 2000-resample bootstrap of the medians, for the
 *        step and every zone), kept here as the baseline.
 *
 * Both readers must read the same numbers: the benchmark compares the
 * arrays they return and the verdicts computed from each.  The old method
 * takes minutes at a million steps (304 s measured for issue 15); it runs
 * at 100,000 steps, and at a million only with --old-1m.
 *
 *     bench_compare [--quick] [--old-1m]     (--quick: 10,000 and 100,000)
 */
#define _GNU_SOURCE

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compare/compare.h"
#include "compare/inference.h"
#include "compare/sides.h"
#include "stats.h"
#include "stepscope.h"

#define NZONES 4
static const char *const zone_names[NZONES] = {"forward", "backward", "data", "optimizer"};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A report of n steps (the first 5 marked warm-up), step times lognormal
 * around median with an AR(1) wander, written as stepscope lays it out. */
static int write_report(const char *path, size_t n, double median, uint64_t seed) {
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    struct sps_rng r;
    sps__rng_seed(&r, seed);
    fprintf(f, "{\n  \"schema\": \"stepscope.report/1\",\n  \"command\": [\"train\", \"--steps\"],\n"
               "  \"memory\": {\"peak_rss_bytes\": 1073741824},\n"
               "  \"steps\": {\n    \"count\": %zu,\n    \"rows_kept\": %zu,\n    \"warmup_steps\": 5,\n"
               "    \"rows\": [\n",
            n, n);
    double e = 0, t = 0;
    for (size_t i = 0; i < n; i++) {
        e = 0.6 * e + 0.08 * sps__rng_normal(&r);
        double d = (double)llround(median * exp(e) * 1e9) / 1e9; /* whole ns, as stepscope writes a step */
        double z[NZONES] = {0.45 * d, 0.35 * d, 0.15 * d, 0.05 * d};
        fprintf(f,
                "      {\n        \"index\": %zu,\n        \"name\": \"step\",\n        \"pid\": 4242,\n"
                "        \"tid\": 4242,\n        \"start_s\": %.9g,\n        \"duration_s\": %.9g,\n"
                "        \"warmup\": %s,\n        \"zones_self_s\": {\n",
                i, t, d, i < 5 ? "true" : "false");
        for (int k = 0; k < NZONES; k++)
            fprintf(f, "          \"%s\": %.9g%s\n", zone_names[k], z[k], k + 1 < NZONES ? "," : "");
        fprintf(f, "        },\n        \"values\": {\n          \"loss\": %.15g\n        },\n"
                   "        \"counters\": {\n          \"samples\": 64\n        }\n      }%s\n",
                1.0 / (double)(i + 1), i + 1 < n ? "," : "");
        t += d;
    }
    fprintf(f, "    ]\n  },\n  \"analysis\": {\"bottleneck\": {\"verdict\": \"cpu-bound\"}}\n}\n");
    return fclose(f);
}

/* ---------------------------------------------------- the old method */

/* The old reader: the whole report as a jansson tree, the kept rows'
 * durations and zone times copied out of it. */
struct old_run {
    size_t n;
    double *step, *zone[NZONES];
};

static int old_read(const char *path, struct old_run *o) {
    json_error_t jerr;
    json_t *report = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!report)
        return -1;
    json_t *rows = json_object_get(json_object_get(report, "steps"), "rows");
    size_t n = json_array_size(rows);
    o->n = 0;
    o->step = malloc(n * sizeof *o->step);
    for (int k = 0; k < NZONES; k++)
        o->zone[k] = calloc(n, sizeof *o->zone[k]);
    for (size_t i = 0; i < n; i++) {
        json_t *row = json_array_get(rows, i);
        if (json_is_true(json_object_get(row, "warmup")))
            continue;
        o->step[o->n] = json_number_value(json_object_get(row, "duration_s"));
        json_t *zones = json_object_get(row, "zones_self_s");
        for (int k = 0; k < NZONES; k++)
            o->zone[k][o->n] = json_number_value(json_object_get(zones, zone_names[k]));
        o->n++;
    }
    json_decref(report);
    return 0;
}

struct tagged {
    double v;
    int from_b;
};

static int cmp_tagged(const void *pa, const void *pb) {
    double x = ((const struct tagged *)pa)->v, y = ((const struct tagged *)pb)->v;
    return (x > y) - (x < y);
}

/* The old p: Mann-Whitney U over the pooled steps, normal approximation. */
static double old_mann_whitney_p(const double *a, size_t na, const double *b, size_t nb) {
    size_t n = na + nb;
    struct tagged *t = malloc(n * sizeof *t);
    for (size_t i = 0; i < na; i++)
        t[i] = (struct tagged){a[i], 0};
    for (size_t i = 0; i < nb; i++)
        t[na + i] = (struct tagged){b[i], 1};
    qsort(t, n, sizeof *t, cmp_tagged);
    double rank_sum_b = 0, tie_term = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1, in_b = 0;
        while (j < n && t[j].v == t[i].v)
            j++;
        for (size_t k = i; k < j; k++)
            in_b += (size_t)t[k].from_b;
        rank_sum_b += ((double)(i + 1) + (double)j) / 2 * (double)in_b;
        double ties = (double)(j - i);
        tie_term += ties * ties * ties - ties;
        i = j;
    }
    free(t);
    double dna = (double)na, dnb = (double)nb, dn = (double)n;
    double u = rank_sum_b - dnb * (dnb + 1) / 2;
    double var = dna * dnb / 12 * ((dn + 1) - tie_term / (dn * (dn - 1)));
    double d = fabs(u - dna * dnb / 2) - 0.5;
    return var > 0 && d > 0 ? erfc(d / sqrt(var) / sqrt(2.0)) : 1;
}

/* The old interval: 2000 bootstrap medians of each side (one run a side:
 * n draws from its steps, then an O(n) median). */
static void old_bootstrap(const double *a, size_t na, const double *b, size_t nb, double *lo, double *hi) {
    enum { RESAMPLES = 2000 };
    double *buf = malloc((na > nb ? na : nb) * sizeof *buf), *ratios = malloc(RESAMPLES * sizeof *ratios);
    struct sps_rng r;
    sps__rng_seed(&r, 0x5eed5eed2024ULL);
    for (int i = 0; i < RESAMPLES; i++) {
        for (size_t k = 0; k < na; k++)
            buf[k] = a[sps__rng_below(&r, na)];
        double ma = sps__median_inplace(buf, na);
        for (size_t k = 0; k < nb; k++)
            buf[k] = b[sps__rng_below(&r, nb)];
        ratios[i] = sps__median_inplace(buf, nb) / ma;
    }
    qsort(ratios, RESAMPLES, sizeof *ratios, sps__cmp_double);
    *lo = ratios[(size_t)(0.025 * (RESAMPLES - 1))];
    *hi = ratios[(size_t)(0.975 * (RESAMPLES - 1))];
    free(buf);
    free(ratios);
}

static void old_case(const char *base, const char *new_path) {
    struct old_run b, n;
    if (old_read(base, &b) || old_read(new_path, &n))
        exit(3);
    double lo, hi, p = old_mann_whitney_p(b.step, b.n, n.step, n.n);
    old_bootstrap(b.step, b.n, n.step, n.n, &lo, &hi);
    for (int k = 0; k < NZONES; k++) {
        double zl, zh;
        old_mann_whitney_p(b.zone[k], b.n, n.zone[k], n.n);
        old_bootstrap(b.zone[k], b.n, n.zone[k], n.n, &zl, &zh);
    }
    printf("        old says: p=%.3g, step ratio interval %.4f to %.4f\n", p, lo, hi);
}

/* ---------------------------------------------------- the new method */

static void new_case(const char *base, const char *new_path, int check_old) {
    struct sps_cmp_load_options opt = {NULL, -1};
    struct sps_cmp_side sb = {0}, sn = {0};
    char err[1024];
    const char *which = "", *bp[] = {base}, *np[] = {new_path};
    if (sps__cmp_sides_load(&sb, bp, 1, &sn, np, 1, &opt, &which, err, sizeof err)) {
        fprintf(stderr, "bench_compare: %s: %s\n", which, err);
        exit(3);
    }
    struct sps_compare_params p;
    sps__compare_params_default(&p);
    struct sps_cmp_result r;
    if (sps__cmp_build(&sb, &sn, &p, &r))
        exit(3);
    if (check_old) {
        /* the old reader's numbers, the same verdicts from them */
        struct old_run ob, on;
        if (old_read(base, &ob) || old_read(new_path, &on))
            exit(3);
        int same = ob.n == sb.runs[0].nsteps && on.n == sn.runs[0].nsteps &&
                   !memcmp(ob.step, sb.runs[0].step_s, ob.n * sizeof *ob.step) &&
                   !memcmp(on.step, sn.runs[0].step_s, on.n * sizeof *on.step);
        for (int k = 0; k < NZONES && same; k++) {
            const struct sps_cmp_zone *z = sps__cmp_run_zone(&sb.runs[0], zone_names[k]);
            same = z && !memcmp(ob.zone[k], z->self_s, ob.n * sizeof *ob.zone[k]);
        }
        const double *rb[] = {ob.step}, *rn[] = {on.step};
        size_t lb[] = {ob.n}, ln[] = {on.n};
        struct sps_sample_side xb = {rb, lb, 1}, xn = {rn, ln, 1};
        struct sps_comparison c;
        same = same && !sps__compare(&xb, &xn, &p, &c) && c.verdict == r.step.c.verdict && c.ratio == r.step.c.ratio;
        printf("        the streaming reader and jansson's tree read %s numbers and verdicts\n",
               same ? "the same" : "DIFFERENT");
        if (!same)
            exit(4);
    }
    if (check_old)
        printf("        new says: %s, step ratio %.4f, interval %.4f to %.4f\n", sps__verdict_name(r.step.c.verdict),
               r.step.c.ratio, r.step.c.ratio_lo, r.step.c.ratio_hi);
    sps__cmp_result_free(&r);
    sps__cmp_side_free(&sb);
    sps__cmp_side_free(&sn);
}

/* Run one case in a child: its wall time, CPU time (user + system: what a
 * busy machine does not inflate as much) and peak RSS (MiB).  check: the
 * new case also reads both reports the old way and compares (not timed). */
static double last_cpu_s;
static int measure(int old, const char *base, const char *new_path, int check, double *secs, double *rss_mib) {
    fflush(stdout);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (old)
            old_case(base, new_path);
        else
            new_case(base, new_path, check);
        fflush(stdout);
        _exit(0);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    *secs = now_s() - t0;
    *rss_mib = (double)ru.ru_maxrss / 1024.0;
    last_cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
                 (double)ru.ru_stime.tv_usec * 1e-6;
    return 0;
}

static int cmp_d(const void *a, const void *b) {
    return sps__cmp_double(a, b);
}

int main(int argc, char **argv) {
    int quick = 0, old_1m = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--old-1m"))
            old_1m = 1;
        else {
            fprintf(stderr, "usage: bench_compare [--quick] [--old-1m]\n");
            return 2;
        }
    }
    char dir[] = "/tmp/bench_compare-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    const size_t sizes[2] = {quick ? 10000 : 100000, quick ? 100000 : 1000000};
    enum { REPEATS = 3 };
    int rc = 0;
    for (int si = 0; si < 2 && !rc; si++) {
        size_t n = sizes[si];
        char base[256], new_path[256];
        snprintf(base, sizeof base, "%s/base-%zu.json", dir, n);
        snprintf(new_path, sizeof new_path, "%s/new-%zu.json", dir, n);
        double t0 = now_s();
        if (write_report(base, n, 0.100, 1) || write_report(new_path, n, 0.101, 2)) {
            perror("bench_compare: writing a report");
            rc = 1;
            break;
        }
        struct stat st;
        stat(base, &st);
        printf("%zu steps a side: two reports of %.0f MiB each (written in %.1f s)\n", n,
               (double)st.st_size / 1048576.0, now_s() - t0);
        /* new, REPEATS times (the first also checks the readers agree),
         * interleaved with the old where it runs */
        int run_old = si == 0 || old_1m;
        double tn[REPEATS], rn[REPEATS], cn[REPEATS], to = NAN, ro = NAN, co = NAN, tc, rcheck;
        if (measure(0, base, new_path, 1, &tc, &rcheck))
            rc = 1;
        for (int k = 0; k < REPEATS && !rc; k++) {
            if (measure(0, base, new_path, 0, &tn[k], &rn[k]))
                rc = 1;
            cn[k] = last_cpu_s;
            if (k == 0 && run_old && !rc && measure(1, base, new_path, 0, &to, &ro))
                rc = 1;
            if (k == 0 && run_old)
                co = last_cpu_s;
        }
        if (rc) {
            fprintf(stderr, "bench_compare: a case failed\n");
            break;
        }
        double sorted[REPEATS];
        memcpy(sorted, tn, sizeof sorted);
        qsort(sorted, REPEATS, sizeof *sorted, cmp_d);
        double rss = rn[0];
        for (int k = 1; k < REPEATS; k++)
            rss = rn[k] > rss ? rn[k] : rss;
        double csorted[REPEATS];
        memcpy(csorted, cn, sizeof csorted);
        qsort(csorted, REPEATS, sizeof *csorted, cmp_d);
        printf("    new: %.2f s (median of %d, range %.2f to %.2f), CPU %.2f s, peak RSS %.0f MiB\n", sorted[REPEATS / 2],
               REPEATS, sorted[0], sorted[REPEATS - 1], csorted[REPEATS / 2], rss);
        if (run_old)
            printf("    old: %.2f s (one run), CPU %.2f s, peak RSS %.0f MiB\n"
                   "    ratio old/new: %.0fx the time, %.0fx the CPU, %.1fx the memory\n",
                   to, co, ro, to / sorted[REPEATS / 2], co / csorted[REPEATS / 2], ro / rss);
        else
            printf("    old: not run at this size (%s)\n", quick ? "--quick" : "minutes; --old-1m runs it");
        if (n >= 1000000)
            printf("    target at 1M steps a side: 5 s and 500 MB: %s\n",
                   sorted[REPEATS / 2] <= 5 && rss * 1048576.0 <= 500e6 ? "met" : "NOT MET");
        unlink(base);
        unlink(new_path);
    }
    rmdir(dir);
    return rc;
}

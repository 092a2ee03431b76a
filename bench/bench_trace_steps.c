/*
 * bench_trace_steps.c - naming trace.json's steps tracks
 * (sps__trace_name_step_tracks, src/render/trace_gather.c) against the
 * loop it replaced (the baseline, kept here): for each step, a scan of
 * every step of the run for its process's other threads and for an
 * earlier step of its own thread, O(steps^2).
 *
 * The steps are those of a run with three steps tracks: one thread of
 * one process, two of another, interleaved in time.  Both versions name
 * the same tracks (checked: the same metadata, in the same order).  Each
 * size is the median of REPEATS runs of each, alternating (on a busy
 * machine, interleaving shares its noise between them), with the range
 * beside it; the baseline stops at the sizes where it still takes
 * seconds, the new version goes on to show how it grows.
 *
 *     bench_trace_steps
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "render/trace_parts.h"
#include "stats.h" /* sps__cmp_double */

#define REPEATS 5

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What naming produced: the metadata added, in order. */
struct named {
    struct meta *m;
    size_t n, cap;
};

static void named_add(struct named *out, uint8_t what, int pid, int tid, int64_t sort, const char *label) {
    if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 16;
        out->m = realloc(out->m, out->cap * sizeof *out->m);
        if (!out->m) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
    }
    struct meta *m = &out->m[out->n++];
    memset(m, 0, sizeof *m);
    m->what = what;
    m->pid = pid;
    m->tid = tid;
    m->sort = sort;
    m->seq = out->n;
    if (label)
        snprintf(m->label, sizeof m->label, "%s", label);
}

/* The baseline: the loop trace.c had before issue 16. */
static void quadratic_names(const struct trace_step *steps, size_t nsteps, struct named *out) {
    for (size_t i = 0; i < nsteps; i++) {
        const struct trace_step *s = &steps[i];
        int seen = 0, others = 0;
        for (size_t j = 0; j < nsteps; j++) {
            if (steps[j].pid != s->pid)
                continue;
            if (steps[j].tid == s->tid && j < i)
                seen = 1;
            if (steps[j].tid != s->tid)
                others = 1;
        }
        if (seen)
            continue;
        char label[64];
        if (others)
            snprintf(label, sizeof label, "steps (tid %d)", s->tid);
        else
            snprintf(label, sizeof label, "steps");
        named_add(out, META_THREAD_NAME, s->pid, TRACE_STEPS_TID_BASE + s->tid, 0, label);
        named_add(out, META_THREAD_SORT, s->pid, TRACE_STEPS_TID_BASE + s->tid, -1, NULL);
    }
}

static int same_names(const struct meta *a, size_t na, const struct meta *b, size_t nb) {
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (a[i].what != b[i].what || a[i].pid != b[i].pid || a[i].tid != b[i].tid || a[i].sort != b[i].sort ||
            strcmp(a[i].label, b[i].label) != 0)
            return 0;
    return 1;
}

static void steps_fill(struct trace_step *steps, size_t n) {
    for (size_t r = 0; r < n; r++)
        steps[r] = (struct trace_step){.pid = r % 3 ? 20 : 10,
                                       .tid = r % 3 == 0 ? 11 : 20 + (int)(r % 3),
                                       .index = r / 3,
                                       .start = (int64_t)r * 1000,
                                       .end = (int64_t)r * 1000 + 900};
}

static double median(double *v, int n, double *lo, double *hi) {
    qsort(v, (size_t)n, sizeof *v, sps__cmp_double);
    *lo = v[0];
    *hi = v[n - 1];
    return v[n / 2];
}

/* Seconds the new naming takes; *check gets its metadata (caller frees). */
static double time_new(struct trace_step *steps, size_t n, struct meta **check, size_t *ncheck) {
    struct trace t;
    memset(&t, 0, sizeof t);
    t.steps = steps;
    t.nsteps = n;
    double t0 = now_s();
    sps__trace_name_step_tracks(&t);
    double dt = now_s() - t0;
    if (t.oom) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    *check = t.meta;
    *ncheck = t.nmeta;
    return dt;
}

int main(void) {
    static const size_t both[] = {5000, 10000, 20000, 40000};
    static const size_t new_only[] = {160000, 640000, 2560000};
    printf("steps tracks naming, median of %d (range), baseline = the O(steps^2) loop it replaced\n", REPEATS);
    printf("%10s  %-28s  %-28s  %s\n", "steps", "new", "baseline", "baseline/new");
    for (size_t k = 0; k < sizeof both / sizeof both[0]; k++) {
        size_t n = both[k];
        struct trace_step *steps = malloc(n * sizeof *steps);
        if (!steps)
            return 1;
        steps_fill(steps, n);
        double a[REPEATS], b[REPEATS];
        int same = 1;
        for (int rep = 0; rep < REPEATS; rep++) {
            struct meta *m;
            size_t nm;
            a[rep] = time_new(steps, n, &m, &nm);
            struct named ref = {0};
            double t0 = now_s();
            quadratic_names(steps, n, &ref);
            b[rep] = now_s() - t0;
            same &= same_names(m, nm, ref.m, ref.n);
            free(m);
            free(ref.m);
        }
        double alo, ahi, blo, bhi;
        double am = median(a, REPEATS, &alo, &ahi), bm = median(b, REPEATS, &blo, &bhi);
        char ca[64], cb[64];
        snprintf(ca, sizeof ca, "%.3f ms (%.3f-%.3f)", am * 1e3, alo * 1e3, ahi * 1e3);
        snprintf(cb, sizeof cb, "%.1f ms (%.1f-%.1f)", bm * 1e3, blo * 1e3, bhi * 1e3);
        printf("%10zu  %-28s  %-28s  %.0fx%s\n", n, ca, cb, bm / am, same ? "" : "  OUTPUTS DIFFER");
        free(steps);
        if (!same)
            return 1;
    }
    for (size_t k = 0; k < sizeof new_only / sizeof new_only[0]; k++) {
        size_t n = new_only[k];
        struct trace_step *steps = malloc(n * sizeof *steps);
        if (!steps)
            return 1;
        steps_fill(steps, n);
        double a[REPEATS], lo, hi;
        for (int rep = 0; rep < REPEATS; rep++) {
            struct meta *m;
            size_t nm;
            a[rep] = time_new(steps, n, &m, &nm);
            free(m);
        }
        double am = median(a, REPEATS, &lo, &hi);
        char ca[64];
        snprintf(ca, sizeof ca, "%.3f ms (%.3f-%.3f)", am * 1e3, lo * 1e3, hi * 1e3);
        printf("%10zu  %-28s  %-28s  (%.1f ns per step)\n", n, ca, "(not run: minutes)", am * 1e9 / (double)n);
        free(steps);
    }
    return 0;
}

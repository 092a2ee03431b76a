/*
 * bench_ranks.c - what the per-rank view costs the end of a run
 * (sps__ranks_build, once per report): a synthetic run of R ranks, each a
 * process of S steps with Z zones and one wait a step, built in memory.
 *
 * The baseline, in the same run and on the same rows: one pass over the
 * step table's every cell (what any renderer of the table pays at least).
 * A and B are interleaved, 9 rounds each; printed per size: the medians
 * (and ranges) of both, their ratio, and the per-rank view's time per
 * million cells against the smallest size's (1.0 = linear in ranks x
 * steps x names).
 *
 *     bench_ranks [--sizes R:S,R:S,...]   (default 4:1000,64:1000,64:8000)
 */
#define _GNU_SOURCE

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/ranks.h"
#include "stats.h"
#include "stepscope.h"

#define ZONES 10
#define ROUNDS 9

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct synth {
    struct sps_run run;
    double *cells;
};

/* R ranks, S steps each: names step, ZONES zones, allreduce (a wait). */
static void make(struct synth *s, int ranks, int steps) {
    struct sps_run *run = &s->run;
    memset(s, 0, sizeof *s);
    size_t nnames = ZONES + 2;
    run->nnames = nnames;
    run->names = calloc(nnames, sizeof *run->names);
    snprintf(run->names[0].name, sizeof run->names[0].name, "step");
    run->names[0].kind = SPS_KIND_STEP;
    for (int z = 1; z <= ZONES; z++) {
        snprintf(run->names[z].name, sizeof run->names[z].name, "zone%d", z);
        run->names[z].kind = SPS_KIND_ZONE;
    }
    snprintf(run->names[ZONES + 1].name, sizeof run->names[0].name, "allreduce");
    run->names[ZONES + 1].kind = SPS_KIND_WAIT;
    run->nprocs = (size_t)ranks;
    run->procs = calloc((size_t)ranks, sizeof *run->procs);
    for (int r = 0; r < ranks; r++) {
        run->procs[r].pid = 1000 + r;
        run->procs[r].ppid = 1;
        run->procs[r].rank = run->procs[r].local_rank = r;
        run->procs[r].world_size = ranks;
        snprintf(run->procs[r].hostname, sizeof run->procs[r].hostname, "node%d", r / 8);
    }
    run->nsteps = (size_t)ranks * (size_t)steps;
    run->steps = calloc(run->nsteps, sizeof *run->steps);
    s->cells = malloc(run->nsteps * nnames * sizeof *s->cells);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < run->nsteps; i++) {
        struct sps_step_row *row = &run->steps[i];
        row->process = i / (size_t)steps;
        row->index = i % (size_t)steps;
        row->name = 0;
        row->start_ns = 1000000000ull + row->index * 100000000ull;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        row->end_ns = row->start_ns + 90000000ull + x % 10000000ull;
        row->warmup = row->index < 2;
        row->by_name = s->cells + i * nnames;
        row->by_name[0] = NAN;
        for (size_t k = 1; k < nnames; k++)
            row->by_name[k] = 0.001 * (double)k + 1e-9 * (double)(x % 1000);
    }
}

static void unmake(struct synth *s) {
    free(s->run.names);
    free(s->run.procs);
    free(s->run.steps);
    free(s->cells);
}

/* The baseline: every cell of the table read once. */
static double one_pass(const struct sps_run *run) {
    double sum = 0;
    for (size_t i = 0; i < run->nsteps; i++)
        for (size_t k = 0; k < run->nnames; k++)
            if (!isnan(run->steps[i].by_name[k]))
                sum += run->steps[i].by_name[k];
    return sum;
}

static double median_range(double *x, size_t n, double *lo, double *hi) {
    qsort(x, n, sizeof *x, sps__cmp_double);
    *lo = x[0];
    *hi = x[n - 1];
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

int main(int argc, char **argv) {
    const char *sizes = argc > 2 && !strcmp(argv[1], "--sizes") ? argv[2] : "4:1000,64:1000,64:8000";
    if (argc > 1 && !(argc == 3 && !strcmp(argv[1], "--sizes"))) {
        fprintf(stderr, "usage: bench_ranks [--sizes R:S,R:S,...]\n");
        return 2;
    }
    printf("%6s %7s %10s  %-24s %-24s %7s %9s\n", "ranks", "steps", "cells", "ranks view ms (range)",
           "one pass ms (range)", "ratio", "per-cell");
    double first_per_cell = 0;
    volatile double sink = 0;
    for (const char *p = sizes; *p;) {
        int r, st, used;
        if (sscanf(p, "%d:%d%n", &r, &st, &used) != 2 || r <= 0 || st <= 0) {
            fprintf(stderr, "bench_ranks: --sizes: R:S pairs expected at \"%s\"\n", p);
            return 2;
        }
        p += used + (p[used] == ',');
        struct synth s;
        make(&s, r, st);
        double a[ROUNDS], b[ROUNDS];
        for (int k = 0; k < ROUNDS; k++) { /* interleaved: A then B, each round */
            uint64_t t0 = now_ns();
            struct sps_ranks v;
            if (sps__ranks_build(&s.run, &v) != 0)
                return 1;
            uint64_t t1 = now_ns();
            sink += v.pooled.step_median_s;
            sps__ranks_free(&v);
            uint64_t t2 = now_ns();
            sink += one_pass(&s.run);
            uint64_t t3 = now_ns();
            a[k] = (double)(t1 - t0) / 1e6;
            b[k] = (double)(t3 - t2) / 1e6;
        }
        double alo, ahi, blo, bhi;
        double am = median_range(a, ROUNDS, &alo, &ahi), bm = median_range(b, ROUNDS, &blo, &bhi);
        double cells = (double)s.run.nsteps * (double)s.run.nnames;
        double per_cell = am / cells;
        if (first_per_cell == 0)
            first_per_cell = per_cell;
        char as[40], bs[40];
        snprintf(as, sizeof as, "%.2f (%.2f-%.2f)", am, alo, ahi);
        snprintf(bs, sizeof bs, "%.3f (%.3f-%.3f)", bm, blo, bhi);
        printf("%6d %7d %10.0f  %-24s %-24s %7.1f %9.2f\n", r, st, cells, as, bs, am / bm, per_cell / first_per_cell);
        unmake(&s);
    }
    return sink == 12345.678;
}

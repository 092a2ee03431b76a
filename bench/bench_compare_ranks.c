/*
 * bench_compare_ranks.c - what comparing rank by rank costs `stepscope
 * compare`: each rank's step time only (the work compare did per rank
 * before the phases) against each rank's step time and every phase's self
 * time and collective wait (what it does now), on sides built in memory,
 * interleaved, with the whole comparison (sps__cmp_build: pooled lines,
 * ranks, figures) beside them for scale.  Reading the reports, which
 * bench_compare measures, is not included: it is the same either way.
 *
 * Each side: 3 runs of N steps, step i on rank i % R, 6 zones (one a
 * collective wait).  Printed: each case's median and range over the
 * repetitions, and the ratio of the medians.
 *
 *     bench_compare_ranks [--quick]     (--quick: fewer steps and repetitions)
 */
#define _GNU_SOURCE

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compare/compare.h"
#include "compare/inference.h"
#include "compare/ranks.h"
#include "compare/sides.h"
#include "stats.h"
#include "stepscope.h"

#define NRUNS 3
#define NZONES 6
static const char *const zone_names[NZONES] = {"forward", "backward", "data", "optimizer", "loss",
                                               "all_reduce (wait)"};
static const double zone_frac[NZONES] = {0.3, 0.3, 0.05, 0.1, 0.05, 0.2};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One side: runs of n steps over r ranks, lognormal step times; slow_rank
 * (>= 0) spends extra seconds more in data. */
static int make_side(struct sps_cmp_side *side, size_t n, int r, uint64_t seed, int slow_rank, double extra) {
    struct sps_rng rng;
    sps__rng_seed(&rng, seed);
    side->nruns = NRUNS;
    side->runs = calloc(NRUNS, sizeof *side->runs);
    if (!side->runs)
        return -1;
    for (size_t i = 0; i < NRUNS; i++) {
        struct sps_cmp_run *run = &side->runs[i];
        snprintf(run->path, sizeof run->path, "synthetic-%zu", i);
        snprintf(run->step_name, sizeof run->step_name, "step");
        run->nsteps = run->rows = run->steps_counted = n;
        run->step_s = malloc(n * sizeof *run->step_s);
        run->step_rank = malloc(n * sizeof *run->step_rank);
        run->zones = calloc(NZONES, sizeof *run->zones);
        if (!run->step_s || !run->step_rank || !run->zones)
            return -1;
        run->nzones = NZONES;
        for (int z = 0; z < NZONES; z++) {
            run->zones[z].name = strdup(zone_names[z]);
            run->zones[z].self_s = malloc(n * sizeof *run->zones[z].self_s);
            run->zones[z].wait = z == NZONES - 1;
            if (!run->zones[z].name || !run->zones[z].self_s)
                return -1;
        }
        run->started_unix_s = run->peak_rss_bytes = run->peak_gpu_bytes = NAN;
        run->energy_j = run->energy_per_step_j = NAN;
        for (size_t k = 0; k < n; k++) {
            int rank = (int)(k % (size_t)r);
            double d = 0.1 * exp(0.1 * sps__rng_normal(&rng));
            run->step_rank[k] = rank;
            for (int z = 0; z < NZONES; z++)
                run->zones[z].self_s[k] = d * zone_frac[z];
            if (rank == slow_rank)
                run->zones[2].self_s[k] += extra;
            run->step_s[k] = d + (rank == slow_rank ? extra : 0);
        }
    }
    return 0;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void stats_of(double *t, int n, double *med, double *lo, double *hi) {
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    *med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    *lo = t[0];
    *hi = t[n - 1];
}

static int bench_case(size_t n, int r, int reps) {
    struct sps_cmp_side base, new_side;
    memset(&base, 0, sizeof base);
    memset(&new_side, 0, sizeof new_side);
    if (make_side(&base, n, r, 1, -1, 0) || make_side(&new_side, n, r, 2, r / 2, 0.02)) {
        fprintf(stderr, "bench_compare_ranks: out of memory\n");
        return 1;
    }
    struct sps_compare_params p;
    sps__compare_params_default(&p);
    /* the pooled zone rows, as sps__cmp_build hands them to the ranks */
    struct sps_cmp_row zones[NZONES];
    memset(zones, 0, sizeof zones);
    for (int z = 0; z < NZONES; z++) {
        zones[z].name = (char *)zone_names[z];
        zones[z].wait = z == NZONES - 1;
    }
    double *ta = calloc((size_t)reps, sizeof *ta), *tb = calloc((size_t)reps, sizeof *tb),
           *tc = calloc((size_t)reps, sizeof *tc);
    int named = 0;
    for (int i = 0; i < reps; i++) {
        struct sps_cmp_row *rows;
        size_t nrows;
        double t0 = now_s();
        if (sps__cmp_ranks(&base, &new_side, &p, NULL, 0, &rows, &nrows))
            return 1;
        ta[i] = now_s() - t0;
        sps__cmp_rank_rows_free(rows, nrows);
        t0 = now_s();
        if (sps__cmp_ranks(&base, &new_side, &p, zones, NZONES, &rows, &nrows))
            return 1;
        tb[i] = now_s() - t0;
        /* the slow rank's data is the one phase called slower */
        named = 0;
        for (size_t k = 0; k < nrows; k++)
            for (size_t z = 0; z < rows[k].nphases; z++)
                named += rows[k].phases[z].c.verdict == SPS_VERDICT_SLOWER;
        sps__cmp_rank_rows_free(rows, nrows);
        struct sps_cmp_result res;
        t0 = now_s();
        if (sps__cmp_build(&base, &new_side, &p, &res))
            return 1;
        tc[i] = now_s() - t0;
        sps__cmp_result_free(&res);
    }
    double ma, la, ha, mb, lb, hb, mc, lc, hc;
    stats_of(ta, reps, &ma, &la, &ha);
    stats_of(tb, reps, &mb, &lb, &hb);
    stats_of(tc, reps, &mc, &lc, &hc);
    printf("%2d ranks, %zu steps x %d runs a side, %d zones, %d reps (interleaved):\n", r, n, NRUNS, NZONES, reps);
    printf("  ranks, step time only (before)     median %8.2f ms  range %8.2f .. %8.2f\n", ma * 1e3, la * 1e3,
           ha * 1e3);
    printf("  ranks, step + phases + waits (now) median %8.2f ms  range %8.2f .. %8.2f   ratio %.2fx\n", mb * 1e3,
           lb * 1e3, hb * 1e3, mb / ma);
    printf("  whole comparison (sps__cmp_build)  median %8.2f ms  range %8.2f .. %8.2f   (phases add %.2f ms)\n",
           mc * 1e3, lc * 1e3, hc * 1e3, (mb - ma) * 1e3);
    printf("  phases called slower: %d (want 1: rank %d's data)\n", named, r / 2);
    free(ta);
    free(tb);
    free(tc);
    sps__cmp_side_free(&base);
    sps__cmp_side_free(&new_side);
    return named == 1 ? 0 : 1;
}

int main(int argc, char **argv) {
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    size_t n = quick ? 20000 : 200000;
    int reps = quick ? 3 : 7;
    int rc = bench_case(n, 4, reps);
    rc |= bench_case(n, 64, reps);
    return rc;
}

/*
 * bench_leaks.c - the leak analysis of a run with no steps (against time)
 * against the same analysis of a run with steps (the baseline: against
 * the step number), on the same sampler series: the end of `stepscope
 * run` must not cost more for a command that records nothing.
 *
 * The series are the largest the sampler keeps: the tree's RSS sum and
 * PSS, and SPS_SAMPLER_MAX_PROCESSES processes, each a full series of 512
 * points (a long run's, each point merging readings), every one growing a
 * little with noise, so that each is judged.  The baseline's run has
 * 20,000 steps over the same time.  Each pass analyses both, alternating
 * which goes first (on a busy machine interleaving shares the noise); the
 * medians of PASSES passes are printed with their ranges, and the ratio.
 *
 *     bench_leaks [--passes N]
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/leaks.h"
#include "model/run.h"
#include "sampler/sampler.h"
#include "stats.h" /* sps__median_inplace */

#define SERIES_POINTS 512
#define RUN_SECONDS 3600.0
#define STEPS 20000
#define T0 1000000000LL

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A deterministic wobble in [-1, 1]. */
static double wobble(size_t i) {
    return (double)((i * 7919u) % 101u) / 50.0 - 1.0;
}

static void fill(struct sps__series *s, double level, size_t seed) {
    sps__series_init(s, SERIES_POINTS);
    for (size_t i = 0; i < SERIES_POINTS; i++) {
        double t = RUN_SECONDS * (double)i / (SERIES_POINTS - 1);
        sps__series_add(s, T0 + (int64_t)(t * 1e9), level + 1000.0 * t + 5e5 * wobble(i + seed));
    }
}

static double analyse_s(const struct sps_run *run, const struct sps__sampler_result *r, size_t *nseries) {
    struct sps_leaks l;
    double t = now_s();
    if (sps__leaks_analyze(run, r, &l) != 0) {
        fprintf(stderr, "bench_leaks: out of memory\n");
        exit(1);
    }
    t = now_s() - t;
    *nseries = l.nseries;
    sps__leaks_free(&l);
    return t;
}

int main(int argc, char **argv) {
    int passes = 9;
    if (argc == 3 && !strcmp(argv[1], "--passes"))
        passes = atoi(argv[2]);
    if (passes < 1) {
        fprintf(stderr, "usage: bench_leaks [--passes N]\n");
        return 2;
    }
    struct sps__sampler_result *r = calloc(1, sizeof *r);
    r->started_ns = T0;
    r->tree_pid = 100;
    r->interval_ms = 100;
    r->machine_interval_ms = 500;
    fill(&r->host[SPS_M_WORKLOAD_RSS_BYTES], 4e9, 0);
    fill(&r->host[SPS_M_WORKLOAD_PSS_BYTES], 3e9, 1);
    r->nprocesses = SPS_SAMPLER_MAX_PROCESSES;
    for (int k = 0; k < r->nprocesses; k++) {
        r->process[k].pid = 100 + k;
        snprintf(r->process[k].comm, sizeof r->process[k].comm, "worker%d", k);
        fill(&r->process[k].rss_bytes, 5e7, (size_t)k + 2);
    }

    struct sps_run none, steps;
    memset(&none, 0, sizeof none);
    memset(&steps, 0, sizeof steps);
    steps.nprocs = 1;
    steps.procs = calloc(1, sizeof *steps.procs);
    steps.procs[0].pid = 100;
    steps.nnames = 1;
    steps.names = calloc(1, sizeof *steps.names);
    strcpy(steps.names[0].name, "step");
    steps.nsteps = STEPS;
    steps.steps = calloc(STEPS, sizeof *steps.steps);
    int64_t step_ns = (int64_t)(RUN_SECONDS * 1e9 / STEPS);
    for (size_t i = 0; i < STEPS; i++) {
        steps.steps[i].index = i;
        steps.steps[i].tid = 100;
        steps.steps[i].start_ns = (uint64_t)(T0 + (int64_t)i * step_ns);
        steps.steps[i].end_ns = steps.steps[i].start_ns + (uint64_t)step_ns;
        steps.steps[i].warmup = i < 20;
    }

    double *on_time = calloc((size_t)passes, sizeof *on_time), *on_steps = calloc((size_t)passes, sizeof *on_steps);
    double *ratio = calloc((size_t)passes, sizeof *ratio);
    size_t ntime = 0, nsteps = 0;
    for (int p = 0; p < passes; p++) {
        if (p % 2) {
            on_time[p] = analyse_s(&none, r, &ntime);
            on_steps[p] = analyse_s(&steps, r, &nsteps);
        } else {
            on_steps[p] = analyse_s(&steps, r, &nsteps);
            on_time[p] = analyse_s(&none, r, &ntime);
        }
        ratio[p] = on_time[p] / on_steps[p];
    }
    printf("leak analysis, %zu series of %d points, %d passes (median, range):\n", ntime, SERIES_POINTS, passes);
    double lo, hi;
#define RANGE(v)                                                                                                       \
    do {                                                                                                               \
        lo = hi = (v)[0];                                                                                              \
        for (int i = 1; i < passes; i++) {                                                                             \
            lo = (v)[i] < lo ? (v)[i] : lo;                                                                            \
            hi = (v)[i] > hi ? (v)[i] : hi;                                                                            \
        }                                                                                                              \
    } while (0)
    RANGE(on_steps);
    printf("  against steps (baseline, %zu series): %8.2f ms  (%.2f to %.2f)\n", nsteps,
           1e3 * sps__median_inplace(on_steps, (size_t)passes), 1e3 * lo, 1e3 * hi);
    RANGE(on_time);
    printf("  against time (no steps):          %8.2f ms  (%.2f to %.2f)\n",
           1e3 * sps__median_inplace(on_time, (size_t)passes), 1e3 * lo, 1e3 * hi);
    RANGE(ratio);
    printf("  time / steps, per pass:            %8.2fx    (%.2f to %.2f)\n", sps__median_inplace(ratio, (size_t)passes),
           lo, hi);
    for (int k = 0; k < SPS_HOST_METRIC_COUNT; k++)
        sps__series_free(&r->host[k]);
    for (int k = 0; k < r->nprocesses; k++)
        sps__series_free(&r->process[k].rss_bytes);
    free(r);
    free(steps.procs);
    free(steps.names);
    free(steps.steps);
    free(on_time);
    free(on_steps);
    free(ratio);
    return 0;
}

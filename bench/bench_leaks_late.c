/*
 * bench_leaks_late.c - what judging a series' last half (a leak that
 * starts mid-run) adds to the leak analysis: the verdict on a level, noisy
 * series, which the whole run clears and whose last half is then judged
 * too, against the verdict on a series of the same size that leaks
 * throughout (the baseline: judged once, over the whole run).  Both are
 * 512 readings, the most the sampler keeps of a series, over 20,000 steps.
 * Each pass judges SERIES of each, alternating which goes first (on a busy
 * machine interleaving shares the noise); the medians of the passes are
 * printed with their ranges, and the ratio.
 *
 *     bench_leaks_late [--passes N]
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/leaks.h"
#include "stats.h" /* sps__median_inplace */

#define POINTS 512
#define STEPS 20000
#define SERIES 65 /* the tree's, and the 64 processes the sampler keeps */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A deterministic wobble in [-1, 1]. */
static double wobble(size_t i) {
    return (double)((i * 7919u) % 101u) / 50.0 - 1.0;
}

/* Judges SERIES series of POINTS readings growing `per_step` bytes a step
 * under 4 MiB of noise; returns the seconds taken, and the verdicts'
 * count of leaks in *leaks. */
static double judge_s(double per_step, int *leaks) {
    static double x[POINTS], y[POINTS];
    struct sps_leak_series s;
    *leaks = 0;
    double t = now_s();
    for (size_t k = 0; k < SERIES; k++) {
        for (size_t i = 0; i < POINTS; i++) {
            x[i] = (double)STEPS * (double)i / (POINTS - 1);
            y[i] = 2e9 + per_step * x[i] + 4.0 * 1048576.0 * wobble(i + k);
        }
        memset(&s, 0, sizeof s);
        if (sps__leak_judge(x, y, POINTS, STEPS, 0.0, &s) != 0) {
            fprintf(stderr, "bench_leaks_late: out of memory\n");
            exit(1);
        }
        *leaks += s.verdict == SPS_LEAK_FOUND;
    }
    return now_s() - t;
}

int main(int argc, char **argv) {
    int passes = 9;
    if (argc == 3 && !strcmp(argv[1], "--passes"))
        passes = atoi(argv[2]);
    if (passes < 1) {
        fprintf(stderr, "usage: bench_leaks_late [--passes N]\n");
        return 2;
    }
    double *level = malloc((size_t)passes * sizeof *level), *leak = malloc((size_t)passes * sizeof *leak);
    double *ratio = malloc((size_t)passes * sizeof *ratio);
    if (!level || !leak || !ratio)
        return 1;
    int level_leaks = 0, leak_leaks = 0;
    for (int p = 0; p < passes; p++) {
        if (p % 2) {
            level[p] = judge_s(0.0, &level_leaks);
            leak[p] = judge_s(4096.0, &leak_leaks);
        } else {
            leak[p] = judge_s(4096.0, &leak_leaks);
            level[p] = judge_s(0.0, &level_leaks);
        }
        ratio[p] = level[p] / leak[p];
    }
    /* what the two measure: the level series are cleared (whole and last
     * half), the leaking ones found over the whole run */
    printf("%d level series judged a leak (0 expected), %d of %d leaking ones\n", level_leaks, leak_leaks, SERIES);
    double lv[3], lk[3], r[3];
    double *sets[3] = {level, leak, ratio}, *out[3] = {lv, lk, r};
    for (int k = 0; k < 3; k++) {
        double lo = sets[k][0], hi = sets[k][0];
        for (int p = 1; p < passes; p++) {
            lo = sets[k][p] < lo ? sets[k][p] : lo;
            hi = sets[k][p] > hi ? sets[k][p] : hi;
        }
        out[k][1] = lo;
        out[k][2] = hi;
        out[k][0] = sps__median_inplace(sets[k], (size_t)passes);
    }
    printf("bench_leaks_late: %d series of %d readings over %d steps, %d passes (medians, ranges)\n", SERIES, POINTS,
           STEPS, passes);
    printf("  leaking throughout (baseline, whole run only): %8.2f ms  (%.2f to %.2f)\n", lk[0] * 1e3, lk[1] * 1e3,
           lk[2] * 1e3);
    printf("  level (whole run, then its last half):         %8.2f ms  (%.2f to %.2f)\n", lv[0] * 1e3, lv[1] * 1e3,
           lv[2] * 1e3);
    printf("  level / leaking, per pass:                     %8.2fx    (%.2f to %.2f)\n", r[0], r[1], r[2]);
    free(level);
    free(leak);
    free(ratio);
    return 0;
}

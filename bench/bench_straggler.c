/*
 * bench_straggler.c - what the straggler verdict costs at the end of a
 * run, against ranks x steps (docs/analysis.md, "Stragglers"): it must
 * grow about linearly with the step rows (a sort of the ranks per step,
 * so ranks x log ranks), and stay a small multiple of the least any
 * per-rank figure costs.
 *
 * Each size is a Run model built in memory: RANKS processes with a rank,
 * each STEPS step rows with five zones' self times and a wait, the ranks
 * computing alike with noise and one 20 ms slower in a zone.  The
 * baseline, in the same run on the same rows: each rank's median step
 * duration (one pass over the rows grouping them by rank and a median
 * each: the floor of any per-rank analysis).  Each pass times both,
 * alternating which goes first (on a busy machine interleaving shares the
 * noise); the medians of PASSES passes are printed with their ranges, the
 * ratio, and the time per step row against the smallest size's (1.0 =
 * linear).
 *
 *     bench_straggler [--passes N]
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/straggler.h"
#include "model/run.h"
#include "stats.h" /* sps__median_inplace */
#include "stepscope.h"

enum { STEP, DATA, FORWARD, BACKWARD, OPTIMIZER, OTHER, WAIT, NNAMES };

struct job {
    struct sps_run run;
    struct sps_name_summary names[NNAMES];
    double *cells;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double noise(unsigned *x) {
    *x = *x * 1103515245u + 12345u;
    return (double)(*x >> 16 & 0x7fff) / 32768.0 - 0.5;
}

static int build(struct job *j, size_t ranks, size_t steps) {
    static const char *const names[NNAMES] = {"step", "data", "forward", "backward", "optimizer", "other", "all_reduce"};
    memset(j, 0, sizeof *j);
    for (int i = 0; i < NNAMES; i++) {
        snprintf(j->names[i].name, sizeof j->names[i].name, "%s", names[i]);
        j->names[i].kind = i == STEP ? SPS_KIND_STEP : i == WAIT ? SPS_KIND_WAIT : SPS_KIND_ZONE;
    }
    j->run.procs = calloc(ranks, sizeof *j->run.procs);
    j->run.steps = calloc(ranks * steps, sizeof *j->run.steps);
    j->cells = calloc(ranks * steps * NNAMES, sizeof *j->cells);
    if (!j->run.procs || !j->run.steps || !j->cells)
        return -1;
    unsigned seed = 1;
    double t = 0;
    for (size_t s = 0; s < steps; s++) {
        double end = 0;
        for (size_t r = 0; r < ranks; r++) {
            double *c = &j->cells[(s * ranks + r) * NNAMES];
            double sum = 0;
            for (int z = DATA; z <= OTHER; z++)
                sum += c[z] = (2.0 + noise(&seed)) / 1e3;
            if (r == 1)
                sum += 0.020, c[DATA] += 0.020;
            c[STEP] = NAN;
            c[WAIT] = sum; /* compute so far; made a wait below */
            if (sum > end)
                end = sum;
        }
        end += 0.002;
        for (size_t r = 0; r < ranks; r++) {
            struct sps_step_row *row = &j->run.steps[s * ranks + r];
            double *c = &j->cells[(s * ranks + r) * NNAMES];
            c[WAIT] = end - c[WAIT];
            row->index = s;
            row->process = r;
            row->tid = (int)r + 1;
            row->name = STEP;
            row->start_ns = (uint64_t)(t * 1e9);
            row->end_ns = (uint64_t)((t + end) * 1e9);
            row->by_name = c;
        }
        t += end;
    }
    for (size_t r = 0; r < ranks; r++) {
        j->run.procs[r].pid = 1000 + (int)r;
        j->run.procs[r].rank = (int)r;
    }
    j->run.nprocs = ranks;
    j->run.names = j->names;
    j->run.nnames = NNAMES;
    j->run.nsteps = ranks * steps;
    return 0;
}

static void job_free(struct job *j) {
    free(j->run.procs);
    free(j->run.steps);
    free(j->cells);
}

/* The baseline: each rank's median step duration. */
static double rank_medians(const struct sps_run *run, size_t ranks, double *scratch) {
    double sum = 0;
    size_t per = run->nsteps / ranks;
    size_t *fill = calloc(ranks, sizeof *fill);
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct sps_step_row *row = &run->steps[i];
        int rk = run->procs[row->process].rank;
        scratch[(size_t)rk * per + fill[rk]++] = (double)(row->end_ns - row->start_ns);
    }
    for (size_t r = 0; r < ranks; r++)
        sum += sps__median_inplace(&scratch[r * per], per);
    free(fill);
    return sum;
}

static int by_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int passes = 7;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--passes") && i + 1 < argc) {
            passes = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: bench_straggler [--passes N]\n");
            return 2;
        }
    }
    if (passes < 1 || passes > 1000) {
        fprintf(stderr, "bench_straggler: --passes: 1 to 1000\n");
        return 2;
    }
    static const size_t sizes[][2] = {{4, 1000}, {16, 1000}, {64, 1000}, {64, 4000}};
    double first_per_row = NAN;
    printf("%6s %6s %10s %12s %12s %8s %10s\n", "ranks", "steps", "rows", "straggler ms", "baseline ms", "ratio",
           "per row");
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t ranks = sizes[k][0], steps = sizes[k][1];
        struct job j;
        double *scratch = malloc(ranks * steps * sizeof *scratch);
        double *a = malloc((size_t)passes * sizeof *a), *b = malloc((size_t)passes * sizeof *b);
        if (!scratch || !a || !b || build(&j, ranks, steps) != 0) {
            fprintf(stderr, "bench_straggler: out of memory\n");
            return 1;
        }
        volatile double sink = 0;
        for (int p = 0; p < passes; p++) {
            for (int half = 0; half < 2; half++) {
                double t0 = now_s();
                if ((p + half) % 2 == 0) {
                    struct sps_straggler s;
                    if (sps__straggler_analyze(&j.run, &s) != 0 || s.slowest < 0 || s.ranks[s.slowest].rank != 1) {
                        fprintf(stderr, "bench_straggler: wrong verdict\n");
                        return 1;
                    }
                    sps__straggler_free(&s);
                    a[p] = now_s() - t0;
                } else {
                    sink += rank_medians(&j.run, ranks, scratch);
                    b[p] = now_s() - t0;
                }
            }
        }
        (void)sink;
        qsort(a, (size_t)passes, sizeof *a, by_double);
        qsort(b, (size_t)passes, sizeof *b, by_double);
        double ma = a[passes / 2], mb = b[passes / 2];
        double per_row = ma / (double)(ranks * steps);
        if (k == 0)
            first_per_row = per_row;
        printf("%6zu %6zu %10zu %6.2f [%.2f-%.2f] %6.3f [%.3f-%.3f] %6.1fx %8.2f\n", ranks, steps, ranks * steps,
               ma * 1e3, a[0] * 1e3, a[passes - 1] * 1e3, mb * 1e3, b[0] * 1e3, b[passes - 1] * 1e3, ma / mb,
               per_row / first_per_row);
        job_free(&j);
        free(scratch);
        free(a);
        free(b);
    }
    return 0;
}

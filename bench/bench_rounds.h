/*
 * bench_rounds.h - what the interleaved-rounds benchmarks of the hot path
 * (bench_phase, bench_wait) share: the thread's CPU clock, the
 * median/min/max of a round's figures, and their two options
 * (--iterations N, --rounds R).  Header-only: each benchmark is one file.
 */
#ifndef SPS_BENCH_ROUNDS_H
#define SPS_BENCH_ROUNDS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_MAX_ROUNDS 201

/* The thread's CPU time, not the wall clock: on a shared machine the time
 * the thread spent waiting for a CPU is not what a case costs, and with it
 * left out the spread between rounds falls from tens of percent to a few
 * (the caches other processes disturb still count). */
static inline uint64_t bench_thread_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct bench_summary {
    double median, min, max;
};

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* v's median, min and max (v is sorted in place). */
static inline struct bench_summary bench_summarise(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    struct bench_summary s = {v[n / 2], v[0], v[n - 1]};
    return s;
}

/* --iterations N (at least 1000) and --rounds R (3..BENCH_MAX_ROUNDS) into
 * *iterations and *rounds; one line on stderr and -1 for anything else. */
static inline int bench_parse_rounds(const char *name, int argc, char **argv, uint64_t *iterations, int *rounds) {
    for (int i = 1; i < argc; i++) {
        char *end;
        if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
            unsigned long long v = strtoull(argv[++i], &end, 10);
            if (*end || v < 1000) {
                fprintf(stderr, "%s: --iterations wants a number >= 1000, not %s\n", name, argv[i]);
                return -1;
            }
            *iterations = v;
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 3 || v > BENCH_MAX_ROUNDS) {
                fprintf(stderr, "%s: --rounds wants 3..%d, not %s\n", name, BENCH_MAX_ROUNDS, argv[i]);
                return -1;
            }
            *rounds = (int)v;
        } else {
            fprintf(stderr, "usage: %s [--iterations N] [--rounds R]\n", name);
            return -1;
        }
    }
    return 0;
}

#endif

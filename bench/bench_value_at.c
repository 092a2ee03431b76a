/*
 * bench_value_at.c - what a value at an explicit time costs against a
 * plain value, in the same run.
 *
 * sps_value_at does what sps_value does (the name's aggregates, one event
 * in the thread's value ring) plus the conversion of its time onto the
 * record's ticks: a read of the header's clock anchors, a long-double
 * multiply and a clock read for the cut to now.  MemoryTracker records its
 * timeline's rows with it, at most 10000 a block, at the block's end.
 * Measured, not assumed:
 *
 *   - value       sps_value(site, v)
 *   - value_at    sps_value_at(site, v, t) with t a recent sps_clock_ns()
 *
 * Each round runs both for N iterations in an order that alternates from
 * round to round, timed by the thread's CPU clock (a busy machine's waits
 * for a CPU stay out).  Reported: median and range over the rounds in ns
 * per call, then the ratio value_at / value, computed per round and
 * summarised the same way.
 *
 *     bench_value_at [--iterations N] [--rounds R]
 *
 * Records into memory (STEPSCOPE_RUN_DIR unset), the hot path measured.
 */
#define _GNU_SOURCE

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stepscope.h>

#include "bench_rounds.h"

#define DEFAULT_ITERATIONS 200000u
#define DEFAULT_ROUNDS 21

#define NOINLINE __attribute__((noinline))

static struct sps_site *value_site, *value_at_site;
static uint64_t t_ns; /* a time of the record's clock, taken before each round */

static NOINLINE void case_value(uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        sps_value(value_site, (double)i);
}

static NOINLINE void case_value_at(uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        sps_value_at(value_at_site, (double)i, t_ns + i);
}

enum { VALUE, VALUE_AT, N_CASES };
static const struct {
    const char *name;
    void (*fn)(uint64_t);
} cases[N_CASES] = {
    [VALUE] = {"value", case_value},
    [VALUE_AT] = {"value_at", case_value_at},
};

int main(int argc, char **argv) {
    uint64_t n = DEFAULT_ITERATIONS;
    int rounds = DEFAULT_ROUNDS;
    if (bench_parse_rounds("bench_value_at", argc, argv, &n, &rounds) != 0)
        return 2;
    value_site = sps_site_get("v_plain", SPS_KIND_VALUE);
    value_at_site = sps_site_get("v_at", SPS_KIND_VALUE);
    if (!value_site || !value_at_site) {
        fprintf(stderr, "bench_value_at: no sites (out of memory)\n");
        return 1;
    }
    t_ns = sps_clock_ns();
    for (int c = 0; c < N_CASES; c++)
        cases[c].fn(n / 10);
    struct sps_status st;
    if (sps_status(&st) != 0 || st.mode == SPS_MODE_FAILED || st.events_recorded == 0) {
        fprintf(stderr, "bench_value_at: the library recorded nothing (%s): nothing to measure\n", st.reason);
        return 1;
    }

    static double ns[N_CASES][BENCH_MAX_ROUNDS], ratio[BENCH_MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        t_ns = sps_clock_ns();
        for (int k = 0; k < N_CASES; k++) {
            int c = (r + k) % N_CASES;
            uint64_t t0 = bench_thread_ns();
            cases[c].fn(n);
            ns[c][r] = (double)(bench_thread_ns() - t0) / (double)n;
        }
        ratio[r] = ns[VALUE_AT][r] / ns[VALUE][r];
    }

    printf("bench_value_at: %d rounds x %llu per case, interleaved, thread CPU time (ns each: median, range)\n",
           rounds, (unsigned long long)n);
    for (int c = 0; c < N_CASES; c++) {
        struct bench_summary s = bench_summarise(ns[c], rounds);
        printf("  %-10s %7.2f ns   [%.2f .. %.2f]\n", cases[c].name, s.median, s.min, s.max);
    }
    struct bench_summary s = bench_summarise(ratio, rounds);
    printf("value_at / value: %.2fx   [%.2f .. %.2f]\n", s.median, s.min, s.max);
    return 0;
}

/*
 * bench_phase.c - a step of four chained phases against a step of four
 * zones, in the same run.
 *
 * Four zones in a step read the clock eight times; four chained phases
 * (SPS_PHASE) read it four times, because the end of one phase is the
 * start of the next and the step's end closes the last.  What that saves
 * is measured here, not assumed:
 *
 *   - a step holding four zones    (SPS_STEP + 4 x SPS_ZONE)
 *   - a step holding four phases   (SPS_STEP + 4 x SPS_PHASE)
 *   - an empty step                (SPS_STEP alone: what both contain)
 *
 * Each round runs every case for N iterations, in an order that rotates
 * from round to round, so a busy machine's slow spells fall on all of
 * them alike; each is timed by the thread's CPU clock (see bench_rounds.h).
 * Reported per case: the median and the range (min..max)
 * over the rounds, in ns per step.  Then the ratios, each computed per
 * round and summarised the same way:
 *
 *   four phases / four zones   = (phase step - empty step) / (zone step - empty step)
 *   whole step                 = phase step / zone step
 *
 * The first is the target (at most 0.6): what the four parts of a
 * step cost as phases against as zones.  The second includes the step's
 * own begin and end, which both cases pay.
 *
 *     bench_phase [--iterations N] [--rounds R]
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
#define TARGET_RATIO 0.6

#define NOINLINE __attribute__((noinline))

/* ------------------------------------------------------------------- cases */

static NOINLINE void case_empty_step(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        SPS_STEP();
    }
}

static NOINLINE void case_zone_step(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        SPS_STEP();
        { SPS_ZONE("data"); }
        { SPS_ZONE("forward"); }
        { SPS_ZONE("backward"); }
        { SPS_ZONE("optimizer"); }
    }
}

static NOINLINE void case_phase_step(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        SPS_STEP();
        SPS_PHASE("data");
        SPS_PHASE("forward");
        SPS_PHASE("backward");
        SPS_PHASE("optimizer");
    }
}

enum { EMPTY, ZONES, PHASES, N_CASES };
static const struct {
    const char *name;
    void (*fn)(uint64_t);
} cases[N_CASES] = {
    [EMPTY] = {"empty step", case_empty_step},
    [ZONES] = {"step + 4 zones", case_zone_step},
    [PHASES] = {"step + 4 chained phases", case_phase_step},
};

/* -------------------------------------------------------------- measuring */

int main(int argc, char **argv) {
    uint64_t n = DEFAULT_ITERATIONS;
    int rounds = DEFAULT_ROUNDS;
    if (bench_parse_rounds("bench_phase", argc, argv, &n, &rounds) != 0)
        return 2;

    /* warm up: the record, the thread's segment, every site */
    for (int c = 0; c < N_CASES; c++)
        cases[c].fn(n / 10);
    struct sps_status st;
    if (sps_status(&st) != 0 || st.mode == SPS_MODE_FAILED || st.events_recorded == 0) {
        fprintf(stderr, "bench_phase: the library recorded nothing (%s): nothing to measure\n", st.reason);
        return 1;
    }

    static double ns[N_CASES][BENCH_MAX_ROUNDS], parts[BENCH_MAX_ROUNDS], whole[BENCH_MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < N_CASES; k++) {
            int c = (r + k) % N_CASES; /* rotate the order */
            uint64_t t0 = bench_thread_ns();
            cases[c].fn(n);
            ns[c][r] = (double)(bench_thread_ns() - t0) / (double)n;
        }
        parts[r] = (ns[PHASES][r] - ns[EMPTY][r]) / (ns[ZONES][r] - ns[EMPTY][r]);
        whole[r] = ns[PHASES][r] / ns[ZONES][r];
    }

    printf("bench_phase: %d rounds x %llu steps per case, interleaved, thread CPU time "
           "(ns per step: median, range)\n",
           rounds, (unsigned long long)n);
    struct bench_summary s[N_CASES];
    for (int c = 0; c < N_CASES; c++) {
        s[c] = bench_summarise(ns[c], rounds);
        printf("  %-26s %8.1f ns   [%.1f .. %.1f]\n", cases[c].name, s[c].median, s[c].min, s[c].max);
    }
    printf("  %-26s %8.1f ns\n", "4 zones alone", s[ZONES].median - s[EMPTY].median);
    printf("  %-26s %8.1f ns\n", "4 phases alone", s[PHASES].median - s[EMPTY].median);
    struct bench_summary p = bench_summarise(parts, rounds), w = bench_summarise(whole, rounds);
    printf("four phases / four zones: %.2fx   [%.2f .. %.2f]   (target <= %.1fx)\n", p.median, p.min, p.max,
           TARGET_RATIO);
    printf("whole step (phases / zones): %.2fx   [%.2f .. %.2f]\n", w.median, w.min, w.max);
    if (sps_status(&st) == 0)
        printf("events recorded %llu, dropped by the rings (keep-latest) %llu\n",
               (unsigned long long)st.events_recorded, (unsigned long long)st.events_dropped);
    return 0;
}

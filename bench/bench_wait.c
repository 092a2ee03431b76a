/*
 * bench_wait.c - what a wait costs against a plain zone, in the same run.
 *
 * A wait (SPS_KIND_WAIT) goes through the zone's own begin and end, so it
 * should cost what a zone costs; a wait recorded afterwards with explicit
 * times (two sps_clock_now() reads, then sps_wait_record() on the blocked
 * thread, as the DDP path does) should cost about the same too.  Measured,
 * not assumed:
 *
 *   - zone          { SPS_ZONE("z"); }
 *   - wait          { SPS_WAIT("w"); }
 *   - wait_record   t0 = sps_clock_now(); t1 = sps_clock_now(); sps_wait_record(site, t0, t1);
 *
 * each inside one outer zone left open (a wait's home is a zone such as
 * backward).  Each round runs every case for N iterations in an order that
 * rotates from round to round, timed by the thread's CPU clock (a busy
 * machine's waits for a CPU stay out).  Reported: median and range over
 * the rounds in ns per iteration, then the ratios wait / zone and
 * wait_record / zone, each computed per round and summarised the same way.
 *
 *     bench_wait [--iterations N] [--rounds R]
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

static struct sps_site *record_site;

static NOINLINE void case_zone(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        SPS_ZONE("z");
    }
}

static NOINLINE void case_wait(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        SPS_WAIT("w");
    }
}

static NOINLINE void case_wait_record(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        uint64_t t0 = sps_clock_now();
        uint64_t t1 = sps_clock_now();
        sps_wait_record(record_site, t0, t1 + 1); /* never empty: a 1-tick wait at least */
    }
}

enum { ZONE, WAIT, RECORD, N_CASES };
static const struct {
    const char *name;
    void (*fn)(uint64_t);
} cases[N_CASES] = {
    [ZONE] = {"zone", case_zone},
    [WAIT] = {"wait", case_wait},
    [RECORD] = {"wait_record (2 clock reads)", case_wait_record},
};

int main(int argc, char **argv) {
    uint64_t n = DEFAULT_ITERATIONS;
    int rounds = DEFAULT_ROUNDS;
    if (bench_parse_rounds("bench_wait", argc, argv, &n, &rounds) != 0)
        return 2;
    record_site = sps_site_get("w_record", SPS_KIND_WAIT);
    if (!record_site) {
        fprintf(stderr, "bench_wait: no site for the recorded wait (out of memory)\n");
        return 1;
    }
    SPS_ZONE_BEGIN(outer, "backward"); /* the waits' parent, open throughout */
    for (int c = 0; c < N_CASES; c++)
        cases[c].fn(n / 10);
    struct sps_status st;
    if (sps_status(&st) != 0 || st.mode == SPS_MODE_FAILED || st.events_recorded == 0) {
        fprintf(stderr, "bench_wait: the library recorded nothing (%s): nothing to measure\n", st.reason);
        return 1;
    }

    static double ns[N_CASES][BENCH_MAX_ROUNDS], wait_ratio[BENCH_MAX_ROUNDS], record_ratio[BENCH_MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < N_CASES; k++) {
            int c = (r + k) % N_CASES;
            uint64_t t0 = bench_thread_ns();
            cases[c].fn(n);
            ns[c][r] = (double)(bench_thread_ns() - t0) / (double)n;
        }
        wait_ratio[r] = ns[WAIT][r] / ns[ZONE][r];
        record_ratio[r] = ns[RECORD][r] / ns[ZONE][r];
    }
    SPS_ZONE_END(outer);

    printf("bench_wait: %d rounds x %llu per case, interleaved, thread CPU time (ns each: median, range)\n", rounds,
           (unsigned long long)n);
    for (int c = 0; c < N_CASES; c++) {
        struct bench_summary s = bench_summarise(ns[c], rounds);
        printf("  %-28s %7.2f ns   [%.2f .. %.2f]\n", cases[c].name, s.median, s.min, s.max);
    }
    struct bench_summary w = bench_summarise(wait_ratio, rounds), rr = bench_summarise(record_ratio, rounds);
    printf("wait / zone:        %.2fx   [%.2f .. %.2f]\n", w.median, w.min, w.max);
    printf("wait_record / zone: %.2fx   [%.2f .. %.2f]\n", rr.median, rr.min, rr.max);
    return 0;
}

/* clock.c - choosing and calibrating the recording clock (see clock.h). */
#include "clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#if SPS__HAVE_TSC
#include <cpuid.h>
#endif

struct sps__clock sps__clock = {SPS_CLOCK_MONOTONIC, 1e9, (uint64_t)1 << 32};
int64_t sps__clock_shift_ns;

void sps__clock_shift_init(void) {
    const char *s = getenv("STEPSCOPE_TEST_CLOCK_SHIFT_NS");
    if (!s || !*s)
        return;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!errno && !*end && v >= -1000000000000000LL && v <= 1000000000000000LL)
        sps__clock_shift_ns = (int64_t)v;
}

static int tsc_is_invariant(void) {
#if SPS__HAVE_TSC
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d))
        return 0;
    return (d >> 8) & 1u; /* "Invariant TSC" */
#else
    return 0;
#endif
}

void sps__clock_anchor(uint64_t *ticks, uint64_t *mono_ns) {
    /* Keep the pair whose two tick reads are closest: the monotonic read
     * between them is then pinned to within that gap. */
    uint64_t best_gap = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t t0 = sps__ticks();
        uint64_t m = sps__mono_ns();
        uint64_t t1 = sps__ticks();
        if (t1 - t0 < best_gap) {
            best_gap = t1 - t0;
            *ticks = t0 + (t1 - t0) / 2;
            *mono_ns = m;
        }
    }
}

void sps__clock_init(void) {
    static int done; /* called once, through pthread_once in the recorder */
    if (done)
        return;
    done = 1;
    sps__clock_shift_init();

    const char *want = getenv("STEPSCOPE_CLOCK");
    int use_tsc = tsc_is_invariant();
    if (want && strcmp(want, "monotonic") == 0)
        use_tsc = 0;
    else if (want && strcmp(want, "tsc") == 0)
        use_tsc = SPS__HAVE_TSC;
    if (!use_tsc)
        return; /* the defaults above describe CLOCK_MONOTONIC */

    sps__clock.source = SPS_CLOCK_TSC;
    uint64_t t0, m0, t1, m1;
    sps__clock_anchor(&t0, &m0);
    /* 2 ms of calibration gives a rate good to about 1e-5 (the anchors are
     * pinned to tens of ns); the reader refines it with the record's latest
     * anchor over the whole run. */
    do {
        sps__clock_anchor(&t1, &m1);
    } while (m1 - m0 < 2000000u);
    double hz = (double)(t1 - t0) * 1e9 / (double)(m1 - m0);
    if (!(hz > 1e6)) { /* nonsense: a TSC that does not tick */
        sps__clock.source = SPS_CLOCK_MONOTONIC;
        return;
    }
    sps__clock.ticks_per_second = hz;
    sps__clock.ns_mult = (uint64_t)(1e9 / hz * 4294967296.0 + 0.5);
}

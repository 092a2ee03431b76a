/*
 * clock.h - the recording clock: raw ticks on the hot path, nanoseconds in
 * the record.
 *
 * Ticks come from the invariant time-stamp counter on x86-64 when the CPU
 * says it is invariant (constant rate, runs in all sleep states), otherwise
 * from CLOCK_MONOTONIC in nanoseconds.  STEPSCOPE_CLOCK=monotonic|tsc in the
 * environment overrides the choice.  The choice is made once per process
 * tree (a fork child inherits it) and written into every record.
 */
#ifndef SPS_CLOCK_H
#define SPS_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "stepscope.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define SPS__HAVE_TSC 1
#else
#define SPS__HAVE_TSC 0
#endif

struct sps__clock {
    enum sps_clock_source source;
    double ticks_per_second;
    uint64_t ns_mult; /* ns = (ticks * ns_mult) >> 32 */
};

/* Set once by sps__clock_init() before any thread records; read-only after. */
extern struct sps__clock sps__clock;

/* Choose and calibrate the clock (about 2 ms of spinning for the TSC).
 * Idempotent but not thread-safe: the recorder calls it once, through
 * pthread_once, before it takes any lock. */
void sps__clock_init(void);

/* STEPSCOPE_TEST_CLOCK_SHIFT_NS, read once (sps__clock_shift_init): what
 * every clock read of stepscope's in this process adds, so a test can run
 * two "nodes" on one machine with a known offset between them.  0 unless
 * a test sets it. */
extern int64_t sps__clock_shift_ns;

/* Read STEPSCOPE_TEST_CLOCK_SHIFT_NS into sps__clock_shift_ns (an integer
 * of at most +-1e15 ns; anything else is ignored).  sps__clock_init calls
 * it; a process that reads the clock without recording (the stepscope
 * command) calls it first.  Not thread-safe: before any thread reads. */
void sps__clock_shift_init(void);

static inline uint64_t sps__mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + (uint64_t)sps__clock_shift_ns;
}

/* CLOCK_REALTIME in ns, shifted like sps__mono_ns. */
static inline int64_t sps__realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + sps__clock_shift_ns;
}

static inline uint64_t sps__ticks(void) {
#if SPS__HAVE_TSC
    if (__builtin_expect(sps__clock.source == SPS_CLOCK_TSC, 1))
        return __rdtsc();
#endif
    return sps__mono_ns();
}

static inline uint64_t sps__ticks_to_ns(uint64_t ticks, uint64_t mult) {
    return (uint64_t)(((unsigned __int128)ticks * mult) >> 32);
}

/* A (ticks, monotonic ns) pair read as close together as possible. */
void sps__clock_anchor(uint64_t *ticks, uint64_t *mono_ns);

#endif /* SPS_CLOCK_H */

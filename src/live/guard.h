/*
 * guard.h - the overhead guard's decision (`stepscope run --max-overhead
 * PCT`): from what the workload has recorded and the CPU time it has
 * used, is recording costing it more than the budget, and should the
 * records thin (enum sps_thin_level) one level further?
 *
 * The guard judges windows of at least SPS_GUARD_MIN_WINDOW_CPU_S of the
 * workload's CPU time (min_window_cpu_s, which a test may shorten):
 * recording's cost in a window is the zones offered
 * in it times the measured cost of one, plus the values times theirs,
 * plus the zones left out times theirs (a left-out zone still costs a
 * begin and an end that return early), and its share is that over the
 * window's CPU time.  A window over
 * budget raises the level by one (none -> phases -> steps).  Threads
 * take a new level up at their next step end, so after a raise the guard
 * waits until zones are being left out (or SPS_GUARD_SETTLE_READINGS
 * readings, when the new level has nothing to leave out) and opens the
 * next window there: no window mixes two levels.
 * The level never goes back down, so every step after the first raise is
 * recorded alike and stays comparable.
 *
 * Pure: no I/O, no clock; the caller feeds it readings.  One thread owns
 * a struct sps__guard.
 */
#ifndef SPS_LIVE_GUARD_H
#define SPS_LIVE_GUARD_H

#include <stdint.h>

#include "analysis/overhead.h" /* SPS_GUARD_MIN_WINDOW_CPU_S, which the overhead's text names too */
#define SPS_GUARD_SETTLE_READINGS 4

struct sps__guard {
    /* set by sps__guard_init */
    double budget;   /* fraction of the workload's CPU time, e.g. 0.01 */
    double zone_ns;  /* one zone begin+end */
    double value_ns; /* one value or counter increment */
    double thinned_ns; /* one zone left out */
    double min_window_cpu_s; /* SPS_GUARD_MIN_WINDOW_CPU_S; set it after init to judge shorter windows */
    /* state */
    uint32_t level;  /* enum sps_thin_level now asked for */
    int have_prev, settling; /* settling: readings left to wait after a raise */
    uint64_t prev_zones, prev_values, prev_thinned, thinned_at_raise;
    double prev_python_ns, prev_cpu_s;
    /* what happened, for the report */
    uint64_t windows, windows_over;
    double peak_share;        /* the costliest judged window's share; 0 before one */
    double last_share;        /* the latest judged window's; NAN before one */
    int64_t first_over_ns;    /* the reading time of the first window over budget; -1 none */
    int over_at_steps;        /* a window over budget with the level already at steps */
};

/* Start a guard with a budget (a fraction in (0, 1]) and the measured
 * costs in ns of one zone, one value and one zone left out. */
void sps__guard_init(struct sps__guard *g, double budget, double zone_ns, double value_ns, double thinned_ns);

/*
 * One reading at now_ns: the totals so far of zones and values offered and
 * zones left out by every workload process, what the Python module's own
 * work has cost so far (ns, priced by each process: see
 * sps__live_steps.python_ns), and the workload's CPU seconds.  Returns the
 * level to write into the records when it rose, else -1.
 */
int sps__guard_observe(struct sps__guard *g, int64_t now_ns, uint64_t zones, uint64_t values, uint64_t thinned,
                       double python_ns, double cpu_s);

#endif /* SPS_LIVE_GUARD_H */

/*
 * guard.c - the overhead guard's decision (see guard.h).
 */
#include "live/guard.h"

#include <math.h>

#include "record_format.h"

void sps__guard_init(struct sps__guard *g, double budget, double zone_ns, double value_ns, double thinned_ns) {
    *g = (struct sps__guard){0};
    g->budget = budget;
    g->zone_ns = zone_ns;
    g->value_ns = value_ns;
    g->thinned_ns = thinned_ns;
    g->min_window_cpu_s = SPS_GUARD_MIN_WINDOW_CPU_S;
    g->level = SPS_THIN_NONE;
    g->last_share = NAN;
    g->first_over_ns = -1;
}

int sps__guard_observe(struct sps__guard *g, int64_t now_ns, uint64_t zones, uint64_t values, uint64_t thinned,
                       double python_ns, double cpu_s) {
    if (g->settling && (thinned > g->thinned_at_raise || --g->settling == 0))
        g->have_prev = g->settling = 0; /* the new level is in force: a new window from here */
    if (!g->have_prev || g->settling || zones < g->prev_zones || values < g->prev_values ||
        thinned < g->prev_thinned || !(python_ns >= g->prev_python_ns) || !(cpu_s >= g->prev_cpu_s)) {
        /* the first reading, one while a raise settles, or totals that
         * went back (a record read before is unreadable now): start a
         * new window from here */
        g->have_prev = 1;
        g->prev_zones = zones;
        g->prev_values = values;
        g->prev_thinned = thinned;
        g->prev_python_ns = isfinite(python_ns) ? python_ns : 0;
        g->prev_cpu_s = isfinite(cpu_s) ? cpu_s : 0;
        return -1;
    }
    double cpu = cpu_s - g->prev_cpu_s;
    if (cpu < g->min_window_cpu_s)
        return -1; /* the window grows until it is long enough to judge */
    double cost_s = ((double)(zones - g->prev_zones) * g->zone_ns + (double)(values - g->prev_values) * g->value_ns +
                     (double)(thinned - g->prev_thinned) * g->thinned_ns + (python_ns - g->prev_python_ns)) *
                    1e-9;
    g->prev_python_ns = python_ns;
    g->prev_zones = zones;
    g->prev_values = values;
    g->prev_thinned = thinned;
    g->prev_cpu_s = cpu_s;
    double share = cost_s / cpu;
    g->windows++;
    g->last_share = share;
    if (share > g->peak_share)
        g->peak_share = share;
    if (share <= g->budget)
        return -1;
    g->windows_over++;
    if (g->first_over_ns < 0)
        g->first_over_ns = now_ns;
    if (g->level >= SPS_THIN_STEPS) {
        g->over_at_steps = 1; /* steps and values are never thinned: nothing more to give */
        return -1;
    }
    g->level++;
    g->settling = SPS_GUARD_SETTLE_READINGS;
    g->thinned_at_raise = thinned;
    return (int)g->level;
}

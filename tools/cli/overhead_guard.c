/*
 * overhead_guard.c - the --max-overhead thread (see overhead_guard.h).
 */
#include "overhead_guard.h"

#include <math.h>
#include <stdlib.h>

#include "clock.h"
#include "live/guard.h"
#include "live/peek.h"
#include "stepscope.h"
#include "ticker.h"

struct sps_overhead_guard {
    struct sps_ticker *ticker;
    const struct sps__published *published;
    struct sps__live_peek *peek;
    struct sps__live_steps steps; /* scratch for the peek */
    struct sps__sample sample;    /* scratch for the published sample */
    struct sps__guard decision;
    uint64_t start_ns;
};

/* One reading: count, judge, and write the level where it is not yet.
 * On the ticker's thread. */
static void check(void *arg) {
    struct sps_overhead_guard *g = arg;
    if (sps__live_peek_read(g->peek, &g->steps) != 0 || !g->steps.records)
        return;
    if (sps__published_read(g->published, &g->sample, NULL) != 0)
        return;
    double cpu_s = g->sample.host[SPS_M_WORKLOAD_CPU_SECONDS];
    if (!isfinite(cpu_s))
        return;
    uint64_t now = sps__mono_ns();
    sps__guard_observe(&g->decision, (int64_t)now, g->steps.zones_offered, g->steps.values_offered,
                       g->steps.zones_thinned, g->steps.python_ns, cpu_s);
    /* every tick, not only when the level rose: a record that appeared
     * since (a process started later, not forked) gets it too */
    if (g->decision.level > g->steps.thin_level)
        sps__live_peek_set_thin(g->peek, g->decision.level, now);
}

struct sps_overhead_guard *sps_overhead_guard_start(const char *records_dir, const struct sps__published *published,
                                                    double budget, double zone_ns, double value_ns,
                                                    double thinned_ns, uint64_t start_ns) {
    if (!published)
        return NULL;
    struct sps_overhead_guard *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->published = published;
    g->start_ns = start_ns;
    sps__guard_init(&g->decision, budget, zone_ns, value_ns, thinned_ns);
    uint64_t period_ns = (uint64_t)SPS_OVERHEAD_GUARD_PERIOD_MS * 1000000u;
    if (getenv(SPS_OVERHEAD_GUARD_PERIOD_ENV)) {
        period_ns = sps_ticker_period_from_env(SPS_OVERHEAD_GUARD_PERIOD_ENV, period_ns);
        g->decision.min_window_cpu_s = (double)period_ns * 1e-9;
    }
    g->peek = sps__live_peek_open(records_dir);
    /* the first reading at once: the first window opens now, not a period later */
    if (!g->peek || !(g->ticker = sps_ticker_start(period_ns, 1, check, g))) {
        sps__live_peek_close(g->peek);
        free(g);
        return NULL;
    }
    return g;
}

void sps_overhead_guard_stop(struct sps_overhead_guard *g, struct sps_guard_report *out) {
    if (!g)
        return;
    double cpu_seconds = 0;
    sps_ticker_stop(g->ticker, &cpu_seconds);
    if (out) {
        const struct sps__guard *d = &g->decision;
        *out = (struct sps_guard_report){
            .on = 1,
            .budget = d->budget,
            .first_over_s = d->first_over_ns >= 0 && (uint64_t)d->first_over_ns >= g->start_ns
                                ? (double)((uint64_t)d->first_over_ns - g->start_ns) * 1e-9
                                : NAN,
            .peak_share = d->windows ? d->peak_share : NAN,
            .last_share = d->last_share,
            .windows = d->windows,
            .windows_over = d->windows_over,
            .over_at_steps = d->over_at_steps,
            .cpu_seconds = cpu_seconds,
        };
    }
    sps__live_peek_close(g->peek);
    free(g);
}

/*
 * overhead_guard.c - the --max-overhead thread (see overhead_guard.h).
 */
#include "overhead_guard.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "live/guard.h"
#include "live/peek.h"
#include "stepscope.h"

struct sps_overhead_guard {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stopping;
    const struct sps__published *published;
    struct sps__live_peek *peek;
    struct sps__live_steps steps; /* scratch for the peek */
    struct sps__sample sample;    /* scratch for the published sample */
    struct sps__guard decision;
    uint64_t start_ns;
    double cpu_seconds;
};

/* One reading: count, judge, and write the level where it is not yet. */
static void check(struct sps_overhead_guard *g) {
    if (sps__live_peek_read(g->peek, &g->steps) != 0 || !g->steps.records)
        return;
    if (sps__published_read(g->published, &g->sample, NULL) != 0)
        return;
    double cpu_s = g->sample.host[SPS_M_WORKLOAD_CPU_SECONDS];
    if (!isfinite(cpu_s))
        return;
    uint64_t now = sps__mono_ns();
    sps__guard_observe(&g->decision, (int64_t)now, g->steps.zones_offered, g->steps.values_offered,
                       g->steps.zones_thinned, cpu_s);
    /* every tick, not only when the level rose: a record that appeared
     * since (a process started later, not forked) gets it too */
    if (g->decision.level > g->steps.thin_level)
        sps__live_peek_set_thin(g->peek, g->decision.level, now);
}

static void *run_guard(void *arg) {
    struct sps_overhead_guard *g = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    check(g); /* the first window opens now, not a period later */
    pthread_mutex_lock(&g->lock);
    while (!g->stopping) {
        next.tv_nsec += SPS_OVERHEAD_GUARD_PERIOD_MS * 1000000L;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        while (!g->stopping && pthread_cond_timedwait(&g->wake, &g->lock, &next) != ETIMEDOUT)
            ;
        if (g->stopping)
            break;
        pthread_mutex_unlock(&g->lock);
        check(g);
        pthread_mutex_lock(&g->lock);
        struct timespec now; /* after a stop (Ctrl-Z), start afresh rather than catch up */
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec + 1)
            next = now;
    }
    pthread_mutex_unlock(&g->lock);
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        g->cpu_seconds = (double)cpu.tv_sec + (double)cpu.tv_nsec * 1e-9;
    return NULL;
}

struct sps_overhead_guard *sps_overhead_guard_start(const char *records_dir, const struct sps__published *published,
                                                    double budget, double zone_ns, double value_ns,
                                                    uint64_t start_ns) {
    if (!published)
        return NULL;
    struct sps_overhead_guard *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->published = published;
    g->start_ns = start_ns;
    sps__guard_init(&g->decision, budget, zone_ns, value_ns);
    g->peek = sps__live_peek_open(records_dir);
    pthread_condattr_t ca;
    int ok = g->peek && pthread_condattr_init(&ca) == 0;
    if (ok) {
        ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&g->wake, &ca) == 0;
        pthread_condattr_destroy(&ca);
    }
    if (!ok || pthread_mutex_init(&g->lock, NULL) != 0) {
        if (ok)
            pthread_cond_destroy(&g->wake);
        sps__live_peek_close(g->peek);
        free(g);
        return NULL;
    }
    /* the thread takes no signal: they are the run command's to forward */
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    int rc = pthread_create(&g->thread, NULL, run_guard, g);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (rc != 0) {
        pthread_mutex_destroy(&g->lock);
        pthread_cond_destroy(&g->wake);
        sps__live_peek_close(g->peek);
        free(g);
        return NULL;
    }
    return g;
}

void sps_overhead_guard_stop(struct sps_overhead_guard *g, struct sps_guard_report *out) {
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    g->stopping = 1;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->thread, NULL);
    if (out) {
        const struct sps__guard *d = &g->decision;
        *out = (struct sps_guard_report){
            .on = 1,
            .budget = d->budget,
            .level = d->level,
            .first_over_s = d->first_over_ns >= 0 && (uint64_t)d->first_over_ns >= g->start_ns
                                ? (double)((uint64_t)d->first_over_ns - g->start_ns) * 1e-9
                                : NAN,
            .peak_share = d->windows ? d->peak_share : NAN,
            .last_share = d->last_share,
            .windows = d->windows,
            .windows_over = d->windows_over,
            .over_at_steps = d->over_at_steps,
            .cpu_seconds = g->cpu_seconds,
        };
    }
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->wake);
    sps__live_peek_close(g->peek);
    free(g);
}

/*
 * ticker.c - a periodic thread (see ticker.h).
 */
#include "ticker.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct sps_ticker {
    pthread_t thread;
    pthread_mutex_t lock; /* guards stopping */
    pthread_cond_t wake;
    int stopping, now;
    uint64_t period_ns;
    void (*tick)(void *arg);
    void *arg;
    double cpu_seconds; /* written by the thread before it ends */
};

static void advance(struct timespec *t, uint64_t ns) {
    t->tv_sec += (time_t)(ns / 1000000000u);
    t->tv_nsec += (long)(ns % 1000000000u);
    if (t->tv_nsec >= 1000000000L) {
        t->tv_nsec -= 1000000000L;
        t->tv_sec++;
    }
}

static void *run_ticker(void *arg) {
    struct sps_ticker *t = arg;
    if (t->now)
        t->tick(t->arg);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&t->lock);
    while (!t->stopping) {
        advance(&next, t->period_ns);
        while (!t->stopping && pthread_cond_timedwait(&t->wake, &t->lock, &next) != ETIMEDOUT)
            ;
        if (t->stopping)
            break;
        pthread_mutex_unlock(&t->lock);
        t->tick(t->arg);
        pthread_mutex_lock(&t->lock);
        struct timespec now; /* after a long stall, start afresh rather than catch up */
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec + 1)
            next = now;
    }
    pthread_mutex_unlock(&t->lock);
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        t->cpu_seconds = (double)cpu.tv_sec + (double)cpu.tv_nsec * 1e-9;
    return NULL;
}

struct sps_ticker *sps_ticker_start(uint64_t period_ns, int now, void (*tick)(void *arg), void *arg) {
    struct sps_ticker *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->period_ns = period_ns;
    t->now = now;
    t->tick = tick;
    t->arg = arg;
    pthread_condattr_t ca;
    int ok = pthread_condattr_init(&ca) == 0;
    if (ok) {
        ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&t->wake, &ca) == 0;
        pthread_condattr_destroy(&ca);
    }
    if (!ok || pthread_mutex_init(&t->lock, NULL) != 0) {
        if (ok)
            pthread_cond_destroy(&t->wake);
        free(t);
        return NULL;
    }
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    int rc = pthread_create(&t->thread, NULL, run_ticker, t);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (rc != 0) {
        pthread_mutex_destroy(&t->lock);
        pthread_cond_destroy(&t->wake);
        free(t);
        return NULL;
    }
    return t;
}

void sps_ticker_stop(struct sps_ticker *t, double *cpu_seconds) {
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->stopping = 1;
    pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    if (cpu_seconds)
        *cpu_seconds = t->cpu_seconds;
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->wake);
    free(t);
}

uint64_t sps_ticker_period_from_env(const char *var, uint64_t default_ns) {
    const char *v = getenv(var);
    if (!v || !*v)
        return default_ns;
    char *end;
    errno = 0;
    unsigned long ms = strtoul(v, &end, 10);
    if (errno || *end || *v == '-' || ms < 10 || ms > 10000) {
        fprintf(stderr, "stepscope: %s='%s' ignored: not a period from 10 to 10000 ms\n", var, v);
        return default_ns;
    }
    return (uint64_t)ms * 1000000u;
}

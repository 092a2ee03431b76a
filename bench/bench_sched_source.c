/*
 * bench_sched_source.c - what the sched source (CPU pressure and the
 * tree's run delay) costs the sampler, next to the proc source's full read
 * of the same tree in the same run (the baseline: what every machine tick
 * already paid before it).
 *
 * The tree is this process with T threads that sleep (T = 1, 10, 100):
 * the sched source lists the task folder and reads each thread's
 * schedstat through a kept descriptor, so its cost grows with T.  Each
 * case is the median of 7 repeats of 200 reads, the two sources read
 * alternately (on a busy machine, interleaving shares its noise between
 * them); the range of the repeats is printed beside it.  The share of a
 * core assumes one read per 500 ms machine interval.
 *
 *     bench_sched_source
 */
#define _GNU_SOURCE

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sources/source.h"
#include "stats.h" /* sps__cmp_double */

#define READS 200
#define REPEATS 7
#define MAX_THREADS 100

static int stop;

static void *sleeper(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
        usleep(20000);
    return NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds per read of src, READS reads. */
static double time_reads(const struct sps__source *src, void *st, const struct sps__source_ctx *ctx,
                         struct sps__sample *s) {
    char reason[192];
    double t0 = now_s();
    for (int i = 0; i < READS; i++)
        src->read(st, ctx, s, (int64_t)(now_s() * 1e9), reason, sizeof reason);
    return (now_s() - t0) / READS;
}

int main(void) {
    static pthread_t threads[MAX_THREADS];
    int started = 0;
    struct sps__source_ctx ctx = {.root = "", .tree_pid = (int)getpid()};
    void *sched_state, *proc_state;
    char reason[192];
    if (sps__source_sched.open(&ctx, &sched_state, reason, sizeof reason) != 0) {
        fprintf(stderr, "bench_sched_source: the sched source is unavailable: %s\n", reason);
        return 1;
    }
    if (sps__source_proc.open(&ctx, &proc_state, reason, sizeof reason) != 0) {
        fprintf(stderr, "bench_sched_source: the proc source is unavailable: %s\n", reason);
        return 1;
    }
    struct sps__sample *s = malloc(sizeof *s);
    if (!s)
        return 1;
    sps__sample_clear(s);
    printf("bench_sched_source: median (min-max) of %d repeats of %d reads; baseline: the proc source's full read "
           "of the same tree, interleaved\n",
           REPEATS, READS);
    printf("  %-8s %-28s %-28s %-8s %s\n", "threads", "sched read", "proc read [baseline]", "ratio",
           "sched at 500 ms, % of a core");
    const int counts[] = {1, 10, 100};
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
        while (started + 1 < counts[c] && started < MAX_THREADS)
            if (pthread_create(&threads[started], NULL, sleeper, NULL) == 0)
                started++;
        double sched[REPEATS], proc[REPEATS];
        /* warm: descriptors opened, the tree listed */
        time_reads(&sps__source_sched, sched_state, &ctx, s);
        time_reads(&sps__source_proc, proc_state, &ctx, s);
        for (int r = 0; r < REPEATS; r++) {
            sched[r] = time_reads(&sps__source_sched, sched_state, &ctx, s);
            proc[r] = time_reads(&sps__source_proc, proc_state, &ctx, s);
        }
        qsort(sched, REPEATS, sizeof *sched, sps__cmp_double);
        qsort(proc, REPEATS, sizeof *proc, sps__cmp_double);
        double ms = sched[REPEATS / 2], mp = proc[REPEATS / 2];
        char a[64], b[64];
        snprintf(a, sizeof a, "%.2f us (%.2f-%.2f)", ms * 1e6, sched[0] * 1e6, sched[REPEATS - 1] * 1e6);
        snprintf(b, sizeof b, "%.2f us (%.2f-%.2f)", mp * 1e6, proc[0] * 1e6, proc[REPEATS - 1] * 1e6);
        printf("  %-8d %-28s %-28s %-8.2f %.4f%%\n", started + 1, a, b, ms / mp, 100 * ms / 0.5);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    sps__source_sched.close(sched_state);
    sps__source_proc.close(proc_state);
    free(s);
    return 0;
}
